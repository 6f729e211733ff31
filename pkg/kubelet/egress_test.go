package kubelet

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A connection to a pod IP reaches the pod that holds it now: not one that terminated
// and gave it back, not one on another simulator's node, and not one being deleted
// when another holds it too.
func TestPodAt(t *testing.T) {
	pod := func(name, ip, node string, phase corev1.PodPhase, deleting bool) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{NodeName: node},
			Status: corev1.PodStatus{PodIP: ip, Phase: phase}}
		if deleting {
			p.DeletionTimestamp = &metav1.Time{}
		}
		return p
	}
	ours := func(node string) bool { return node == "n0" }
	cases := []struct {
		name string
		pods []*corev1.Pod
		want string
	}{
		{"the running pod", []*corev1.Pod{pod("a", "10.0.0.1", "n0", corev1.PodRunning, false)}, "a"},
		{"another IP", []*corev1.Pod{pod("a", "10.0.0.2", "n0", corev1.PodRunning, false)}, ""},
		{"another simulator's node", []*corev1.Pod{pod("a", "10.0.0.1", "n9", corev1.PodRunning, false)}, ""},
		{"a terminated pod gave the IP back", []*corev1.Pod{
			pod("old", "10.0.0.1", "n0", corev1.PodSucceeded, true),
			pod("new", "10.0.0.1", "n0", corev1.PodRunning, false)}, "new"},
		{"a failed pod alone", []*corev1.Pod{pod("old", "10.0.0.1", "n0", corev1.PodFailed, false)}, ""},
		{"a pod being deleted yields", []*corev1.Pod{
			pod("going", "10.0.0.1", "n0", corev1.PodRunning, true),
			pod("new", "10.0.0.1", "n0", corev1.PodPending, false)}, "new"},
		{"a pod being deleted still serves alone", []*corev1.Pod{pod("going", "10.0.0.1", "n0", corev1.PodRunning, true)}, "going"},
	}
	for _, tc := range cases {
		got := ""
		if p := podAt(tc.pods, "10.0.0.1", ours); p != nil {
			got = p.Name
		}
		if got != tc.want {
			t.Errorf("%s: podAt = %q, want %q", tc.name, got, tc.want)
		}
	}
}
