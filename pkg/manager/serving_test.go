package manager

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/request/anonymous"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/path"
)

// TestServingFlags parses the serving flags as `kroll controller-manager` does and
// validates the result: each bad value is refused in one line naming its flag.
func TestServingFlags(t *testing.T) {
	dir := t.TempDir()
	cert := filepath.Join(dir, "tls.crt")
	if err := os.WriteFile(cert, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		// err is a part of the error, from parsing or validating; empty for none.
		err string
		// check, when set, looks at the options parsed.
		check func(*Serving) string
	}{
		{"defaults: 0.0.0.0:10270, in-memory certificate, probes open", nil, "", func(s *Serving) string {
			if got := s.SecureServing.BindAddress.String() + " " + strings.Join(s.Authorization.AlwaysAllowPaths, ","); got != "0.0.0.0 /healthz,/readyz,/livez" || s.SecureServing.BindPort != 10270 {
				return got
			}
			if s.SecureServing.ServerCert.CertDirectory != "" || s.Profiling {
				return "cert-dir or profiling set by default"
			}
			return ""
		}},
		{"an IP and a port", []string{"--bind-address=127.0.0.1", "--secure-port=10300", "--profiling"}, "", func(s *Serving) string {
			if s.SecureServing.BindAddress.String() != "127.0.0.1" || s.SecureServing.BindPort != 10300 || !s.Profiling {
				return s.SecureServing.BindAddress.String()
			}
			return ""
		}},
		{"port 0 serves nothing", []string{"--secure-port=0"}, "", func(s *Serving) string {
			if s.enabled() {
				return "enabled"
			}
			return ""
		}},
		{"the old host:port form says what to use now", []string{"--bind-address=0.0.0.0:10270"}, "use --bind-address=0.0.0.0 --secure-port=10270", nil},
		{"the old empty form says how to serve nothing", []string{"--bind-address="}, "--secure-port=0", nil},
		{"not an IP", []string{"--bind-address=localhost"}, "not an IP address", nil},
		{"port out of range", []string{"--secure-port=70000"}, "--secure-port 70000: want a port from 1 to 65535, or 0 to serve nothing", nil},
		{"negative port", []string{"--secure-port=-1"}, "--secure-port -1", nil},
		{"certificate without key", []string{"--tls-cert-file=" + cert}, "--tls-cert-file and --tls-private-key-file go together", nil},
		{"key file missing", []string{"--tls-cert-file=" + cert, "--tls-private-key-file=" + filepath.Join(dir, "none.key")}, "--tls-private-key-file " + filepath.Join(dir, "none.key") + ": no such file or directory", nil},
		{"an always-allow path with * inside", []string{"--authorization-always-allow-paths=/healthz,/debug/*/x"}, `--authorization-always-allow-paths: only trailing * allowed`, nil},
		{"kube-controller-manager's other flags are there", []string{"--authentication-skip-lookup", "--authentication-kubeconfig=a", "--authorization-kubeconfig=b", "--cert-dir=" + dir}, "", func(s *Serving) string {
			if !s.Authentication.SkipInClusterLookup || s.Authentication.RemoteKubeConfigFile != "a" || s.Authorization.RemoteKubeConfigFile != "b" || s.SecureServing.ServerCert.CertDirectory != dir {
				return "not parsed"
			}
			return ""
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewServing()
			fs := pflag.NewFlagSet("controller-manager", pflag.ContinueOnError)
			s.AddFlags(fs)
			err := fs.Parse(tt.args)
			if err == nil {
				err = s.Validate()
			}
			switch {
			case tt.err == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
				t.Fatalf("got error %v, want one with %q", err, tt.err)
			case err != nil && strings.Contains(err.Error(), "\n"):
				t.Fatalf("error of more than one line: %q", err)
			}
			if tt.check != nil {
				if bad := tt.check(s); bad != "" {
					t.Errorf("options parsed: %s", bad)
				}
			}
		})
	}
}

// TestAnonymousOnlyOnAlwaysAllowedPaths: a request without credentials is anonymous on
// the probes and unauthenticated (401) elsewhere; an authenticated one is untouched.
func TestAnonymousOnlyOnAlwaysAllowedPaths(t *testing.T) {
	allowed, err := path.NewAuthorizer([]string{"/healthz", "/readyz", "/livez", "/open/*"})
	if err != nil {
		t.Fatal(err)
	}
	alice := authenticator.RequestFunc(func(req *http.Request) (*authenticator.Response, bool, error) {
		if req.Header.Get("Authorization") == "Bearer alice" {
			return &authenticator.Response{User: &user.DefaultInfo{Name: "alice"}}, true, nil
		}
		return nil, false, nil
	})
	// What the delegating options build: the token authenticator, then anonymous.
	union := authenticator.RequestFunc(func(req *http.Request) (*authenticator.Response, bool, error) {
		if resp, ok, err := alice.AuthenticateRequest(req); ok || err != nil {
			return resp, ok, err
		}
		return anonymous.NewAuthenticator(nil).AuthenticateRequest(req)
	})
	a := anonymousOnlyOn(union, allowed)
	tests := []struct {
		path, token string
		want        string // the user, or "" for unauthenticated
	}{
		{"/healthz", "", user.Anonymous},
		{"/readyz", "", user.Anonymous},
		{"/open/x", "", user.Anonymous},
		{"/metrics", "", ""},
		{"/debug/pprof/", "", ""},
		{"/healthz/extra", "", ""},
		{"/metrics", "alice", "alice"},
		{"/healthz", "alice", "alice"},
	}
	for _, tt := range tests {
		req, _ := http.NewRequest(http.MethodGet, "https://127.0.0.1:10270"+tt.path, nil)
		if tt.token != "" {
			req.Header.Set("Authorization", "Bearer "+tt.token)
		}
		resp, ok, err := a.AuthenticateRequest(req)
		got := ""
		if ok {
			got = resp.User.GetName()
		}
		if err != nil || got != tt.want {
			t.Errorf("GET %s with token %q: user %q (err %v), want %q", tt.path, tt.token, got, err, tt.want)
		}
	}
}
