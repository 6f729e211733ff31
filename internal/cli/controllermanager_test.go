package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kroll-dev/kroll/pkg/gates"
	"github.com/kroll-dev/kroll/pkg/manager"
)

// TestDefaultDelegationKubeconfigs: the endpoints' reviews go through the controllers'
// own kubeconfig file unless told otherwise, and a merged $KUBECONFIG is refused.
func TestDefaultDelegationKubeconfigs(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	for _, f := range []string{a, b} {
		if err := os.WriteFile(f, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name              string
		kubeconfig, env   string
		inCluster         bool
		authn, authz      string // given by flags
		port              int
		wantN, wantZ, err string
	}{
		{name: "--kubeconfig", kubeconfig: a, port: 10270, wantN: a, wantZ: a},
		{name: "the flags win", kubeconfig: a, authn: b, port: 10270, wantN: b, wantZ: a},
		{name: "one file of $KUBECONFIG", env: a + string(os.PathListSeparator) + filepath.Join(dir, "missing"), port: 10270, wantN: a, wantZ: a},
		{name: "in a pod: the library's in-cluster configuration", inCluster: true, port: 10270},
		{name: "nothing served, nothing needed", env: a + string(os.PathListSeparator) + b},
		{name: "a merged $KUBECONFIG", env: a + string(os.PathListSeparator) + b, port: 10270, err: "$KUBECONFIG merges 2 files; pass --authentication-kubeconfig"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("KUBECONFIG", tt.env)
			s := manager.NewServing()
			s.SecureServing.BindPort = tt.port
			s.Authentication.RemoteKubeConfigFile, s.Authorization.RemoteKubeConfigFile = tt.authn, tt.authz
			err := defaultDelegationKubeconfigs(s, tt.kubeconfig, tt.inCluster)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("got %v, want an error with %q", err, tt.err)
				}
				return
			}
			if err != nil || s.Authentication.RemoteKubeConfigFile != tt.wantN || s.Authorization.RemoteKubeConfigFile != tt.wantZ {
				t.Errorf("got %q, %q (%v); want %q, %q", s.Authentication.RemoteKubeConfigFile, s.Authorization.RemoteKubeConfigFile, err, tt.wantN, tt.wantZ)
			}
		})
	}
}

// --feature-gates of kroll controller-manager reads as kroll up's: a bad form or a
// gate Kubernetes does not have is one line, and the command stops before it connects
// to any cluster; good gates reach the controllers' options.
func TestControllerManager_featureGates(t *testing.T) {
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "missing"))
	for _, tc := range []struct{ gates, err string }{
		{"MaxUnavailableStatefulSet", `--feature-gates: "MaxUnavailableStatefulSet" is not Name=true or Name=false`},
		{"MaxUnavailableStatefulSet=off", "--feature-gates: MaxUnavailableStatefulSet=off: the value must be true or false"},
		{"NoSuchGate=true", "--feature-gates: unrecognized feature gate: NoSuchGate (Kubernetes v1.36.3's gates: kube-apiserver --help lists them)"},
	} {
		var out, errOut strings.Builder
		cmd := newControllerManagerCommand(&out, &errOut)
		cmd.SetArgs([]string{"--feature-gates", tc.gates})
		cmd.SetOut(&out)
		cmd.SetErr(&errOut)
		cmd.SilenceUsage, cmd.SilenceErrors = true, true
		if err := cmd.Execute(); err == nil || err.Error() != tc.err || strings.Contains(err.Error(), "\n") {
			t.Errorf("--feature-gates %s: %v; want the one line %q", tc.gates, err, tc.err)
		}
	}

	o := &controllerManagerOptions{featureGates: "MaxUnavailableStatefulSet=false"}
	if err := o.setFeatureGates(); err != nil {
		t.Fatal(err)
	}
	if g := gates.Defaults().With(o.manager.FeatureGates); g.MaxUnavailableStatefulSet || !g.DeploymentReplicaSetTerminatingReplicas {
		t.Errorf("--feature-gates MaxUnavailableStatefulSet=false: the controllers run with %+v", g)
	}
	o = &controllerManagerOptions{}
	if err := o.setFeatureGates(); err != nil || len(o.manager.FeatureGates) != 0 {
		t.Errorf("no --feature-gates: %v, gates %v; want none over the defaults", err, o.manager.FeatureGates)
	}
}

// --prometheus-url and its flags: a URL that is not one, a token file without a
// URL, a CA file that holds no certificate are each one line before any cluster is
// reached; good flags reach the manager's options, and no URL leaves analyze steps
// to `kroll rollout promote`.
func TestControllerManager_prometheus(t *testing.T) {
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "missing"))
	notPEM := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(notPEM, []byte("no"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		err  string
	}{
		{[]string{"--prometheus-url", "prometheus:9090"}, `--prometheus-url: Prometheus URL "prometheus:9090": want http:// or https:// and a host, like http://prometheus.monitoring:9090`},
		{[]string{"--prometheus-bearer-token-file", "/var/run/token"}, "--prometheus-bearer-token-file needs --prometheus-url: it says how to reach that Prometheus"},
		{[]string{"--prometheus-url", "https://p:9090", "--prometheus-ca-file", notPEM}, "--prometheus-url: Prometheus CA file " + notPEM + " holds no PEM certificate"},
		{[]string{"--prometheus-url", "https://p:9090", "--prometheus-cert-file", notPEM}, "--prometheus-url: Prometheus client certificate: give both the certificate and its key file"},
	} {
		var out, errOut strings.Builder
		cmd := newControllerManagerCommand(&out, &errOut)
		cmd.SetArgs(tc.args)
		cmd.SetOut(&out)
		cmd.SetErr(&errOut)
		cmd.SilenceUsage, cmd.SilenceErrors = true, true
		if err := cmd.Execute(); err == nil || err.Error() != tc.err {
			t.Errorf("%v: %v; want the one line %q", tc.args, err, tc.err)
		}
	}

	o := &controllerManagerOptions{}
	o.prometheus.URL, o.prometheus.BearerTokenFile = "http://prometheus.monitoring:9090", "/var/run/secrets/token"
	if err := o.setPrometheus(); err != nil || o.manager.Prometheus == nil || o.manager.Prometheus.URL != "http://prometheus.monitoring:9090" || o.manager.Prometheus.BearerTokenFile != "/var/run/secrets/token" {
		t.Errorf("--prometheus-url: %v, %+v", err, o.manager.Prometheus)
	}
	o = &controllerManagerOptions{}
	if err := o.setPrometheus(); err != nil || o.manager.Prometheus != nil {
		t.Errorf("no --prometheus-url: %v, %+v; want no Prometheus", err, o.manager.Prometheus)
	}
}
