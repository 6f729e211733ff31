package cli

import (
	"strings"
	"testing"

	"github.com/kroll-dev/kroll/pkg/cluster"
	"github.com/kroll-dev/kroll/pkg/gates"
	"github.com/kroll-dev/kroll/pkg/kubelet"
)

func TestUp_emptyDataDirIsRefused(t *testing.T) {
	defaults := kubelet.DefaultConfig()
	o := &upOptions{dataDir: "", kubelet: defaults, nodes: defaults.Nodes, nodePods: defaults.Pods,
		nodeCPU: defaults.CPU.String(), nodeMemory: defaults.Memory.String(), workloadControllers: "kroll", unknownImages: "pull"}
	if _, err := o.clusterConfig(); err == nil || err.Error() != "--data-dir must not be empty; pass a directory for the cluster's state, such as .kroll" {
		t.Errorf("clusterConfig with --data-dir \"\": %v", err)
	}
	o.dataDir = ".kroll"
	if _, err := o.clusterConfig(); err != nil {
		t.Errorf("clusterConfig with --data-dir .kroll: %v", err)
	}
}

// --feature-gates: a bad form or a gate Kubernetes does not have is one line and no
// configuration (nothing starts); good gates reach the cluster and, over kroll's
// defaults, kroll's controllers.
func TestUp_featureGates(t *testing.T) {
	defaults := kubelet.DefaultConfig()
	o := &upOptions{dataDir: ".kroll", kubelet: defaults, nodes: defaults.Nodes, nodePods: defaults.Pods,
		nodeCPU: defaults.CPU.String(), nodeMemory: defaults.Memory.String(), workloadControllers: "kroll", unknownImages: "pull"}
	for _, tc := range []struct{ gates, err string }{
		{"MaxUnavailableStatefulSet", `--feature-gates: "MaxUnavailableStatefulSet" is not Name=true or Name=false`},
		{"MaxUnavailableStatefulSet=off", "--feature-gates: MaxUnavailableStatefulSet=off: the value must be true or false"},
		{"NoSuchGate=true", "--feature-gates: unrecognized feature gate: NoSuchGate (Kubernetes v1.36.3's gates: kube-apiserver --help lists them)"},
		// GA and locked on in v1.36: kube-apiserver refuses to turn it off.
		{"InPlacePodVerticalScaling=false", "--feature-gates: cannot set feature gate InPlacePodVerticalScaling to false, feature is locked to true (Kubernetes v1.36.3's gates: kube-apiserver --help lists them)"},
	} {
		o.featureGates = tc.gates
		if _, err := o.clusterConfig(); err == nil || err.Error() != tc.err || strings.Contains(err.Error(), "\n") {
			t.Errorf("--feature-gates %s: %v; want the one line %q", tc.gates, err, tc.err)
		}
	}
	o.featureGates = "MaxUnavailableStatefulSet=false,DeploymentReplicaSetTerminatingReplicas=false"
	cfg, err := o.clusterConfig()
	if err != nil {
		t.Fatalf("--feature-gates %s: %v", o.featureGates, err)
	}
	if got := gates.Format(cfg.FeatureGates); got != "DeploymentReplicaSetTerminatingReplicas=false,MaxUnavailableStatefulSet=false" {
		t.Errorf("the cluster's gates: %s", got)
	}
	if got := gates.Format(cluster.EffectiveFeatureGates(nil)); got != "MaxUnavailableStatefulSet=true" {
		t.Errorf("kroll up's gates without --feature-gates: %s", got)
	}
}

// --prometheus-port: out of range, or without --prometheus, is one line.
func TestUp_prometheusPort(t *testing.T) {
	defaults := kubelet.DefaultConfig()
	for _, tc := range []struct {
		on   bool
		port int
		err  string
	}{
		{on: true, port: 9090},
		{on: true, port: 0}, // a free port, chosen up front
		{on: true, port: 70000, err: "--prometheus-port must be between 0 and 65535, got 70000"},
		{on: false, port: 9090, err: "--prometheus-port needs --prometheus"},
	} {
		o := &upOptions{dataDir: ".kroll", kubelet: defaults, nodes: defaults.Nodes, nodePods: defaults.Pods,
			nodeCPU: defaults.CPU.String(), nodeMemory: defaults.Memory.String(), workloadControllers: "kroll", unknownImages: "pull",
			prometheus: tc.on, prometheusPort: tc.port}
		cfg, err := o.clusterConfig()
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != tc.err {
			t.Errorf("--prometheus=%v --prometheus-port=%d: error %q, want %q", tc.on, tc.port, got, tc.err)
		}
		if err != nil {
			continue
		}
		if cfg.Prometheus != tc.on || (tc.port != 0 && cfg.PrometheusPort != tc.port) || (tc.on && cfg.PrometheusPort == 0) {
			t.Errorf("--prometheus=%v --prometheus-port=%d: config %v %d", tc.on, tc.port, cfg.Prometheus, cfg.PrometheusPort)
		}
	}
}
