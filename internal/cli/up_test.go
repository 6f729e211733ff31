package cli

import (
	"testing"

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
