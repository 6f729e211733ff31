package clustertest

import (
	"strings"
	"testing"
)

func TestRefusals(t *testing.T) {
	for _, tc := range []struct {
		name, line string
		refused    bool
	}{
		{"RBAC refuses kube-controller-manager's service account",
			`E1207 02:10:00 reflector.go:200] "Failed to watch" err="pods is forbidden: User \"system:serviceaccount:kube-system:daemon-set-controller\" cannot list resource \"pods\""`, true},
		{"RBAC refuses kroll's controllers",
			`E1207 controller.go:1] sync failed: replicasets.apps "web-1" is forbidden: User "kroll:controller-manager" cannot delete resource "replicasets"`, true},
		{"NodeRestriction refuses a simulated node",
			`E1207 statuswrite.go:9] err="pods \"web-1\" is forbidden: node \"kroll-node-0\" can only update pod status for pods with spec.nodeName set to itself"`, true},
		{"a namespace being deleted refuses everyone",
			`E1207 controller.go:1] pods "web-1" is forbidden: unable to create new content in namespace rbac because it is being terminated`, false},
		{"a test's own service account, refused on purpose",
			`E1207 controller.go:1] pods is forbidden: User "system:serviceaccount:kroll-system:kroll-controller-manager" cannot create resource "pods"`, false},
		{"no refusal", `I1207 kubelet.go:1] node "kroll-node-0" registered`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := len(Refusals(strings.NewReader(tc.line))) == 1; got != tc.refused {
				t.Errorf("refused = %v, want %v", got, tc.refused)
			}
		})
	}
}
