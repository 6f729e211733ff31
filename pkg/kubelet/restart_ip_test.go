package kubelet

import (
	"encoding/json"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/client-go/kubernetes/fake"
)

// Given a resumed cluster whose node 0 runs pod "old" at 10.244.0.2, not yet Ready
// (its container was being created when the cluster stopped), when the simulator
// starts and a pod created since, with no address yet, is synced before "old", then
// the new pod gets another address and "old" keeps its own. Learnt lazily, the new pod
// took .2, "old" was moved to another address, and its status could no longer be
// written (see TestStatusPatchBody_replacesAChangedAddress): it never became Ready, and
// the rollout waiting on it never finished.
func TestAdmitExisting_keepsTheAddressesPodsReport(t *testing.T) {
	cfg := DefaultConfig()
	k, err := New(cfg, fake.NewClientset(), fake.NewClientset())
	if err != nil {
		t.Fatal(err)
	}
	node := NodeName(cfg.FirstNode)
	k.ipam.addNode(node, networkFor(cfg.FirstNode, cfg.Pods))
	old := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "old", Namespace: "default", UID: "old-uid", CreationTimestamp: metav1.NewTime(time.Now().Add(-time.Minute))},
		Spec:       corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "web", Image: "nginx:1.26"}}},
		Status: corev1.PodStatus{Phase: corev1.PodPending, PodIP: "10.244.0.2", PodIPs: []corev1.PodIP{{IP: "10.244.0.2"}},
			StartTime: &metav1.Time{Time: time.Now().Add(-time.Minute)}},
	}
	if err := k.informer.GetIndexer().Add(old); err != nil {
		t.Fatal(err)
	}
	k.admitExisting()

	if ip, ok := k.ipam.podIP(node, types.UID("new-uid"), ""); !ok || ip == "10.244.0.2" {
		t.Fatalf("a pod created since the restart, synced first, got %q; want an address other than old's 10.244.0.2", ip)
	}
	if ip, _ := k.ipam.podIP(node, old.UID, old.Status.PodIP); ip != "10.244.0.2" {
		t.Fatalf("old got %q on its sync, want the 10.244.0.2 it reports", ip)
	}
}

// A pod whose address changes (two pods of a cluster left with one address) reports
// the new one alone. Merged by ip as the API merges podIPs, the patch would make the
// list [new, old], two IPv4 addresses, which the API server refuses ("may specify no
// more than one IP for each IP family") on every write.
func TestStatusPatchBody_replacesAChangedAddress(t *testing.T) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", UID: "p-uid"},
		Status: corev1.PodStatus{Phase: corev1.PodPending, HostIP: "127.1.0.1", HostIPs: []corev1.HostIP{{IP: "127.1.0.1"}},
			PodIP: "10.244.0.2", PodIPs: []corev1.PodIP{{IP: "10.244.0.2"}}},
	}
	next := *pod.Status.DeepCopy()
	next.Phase = corev1.PodRunning
	next.PodIP, next.PodIPs = "10.244.0.3", []corev1.PodIP{{IP: "10.244.0.3"}}
	after := patchedWith(t, pod, &next)
	if after.Status.PodIP != "10.244.0.3" || len(after.Status.PodIPs) != 1 || after.Status.PodIPs[0].IP != "10.244.0.3" {
		t.Errorf("after the patch podIP %s podIPs %v; want 10.244.0.3 alone", after.Status.PodIP, after.Status.PodIPs)
	}
	if len(after.Status.HostIPs) != 1 || after.Status.HostIPs[0].IP != "127.1.0.1" || after.Status.Phase != corev1.PodRunning {
		t.Errorf("after the patch hostIPs %v phase %s; want 127.1.0.1 kept, Running", after.Status.HostIPs, after.Status.Phase)
	}
}

// patchedWith is pod after the kubelet's status patch to status, merged as the API
// server merges it.
func patchedWith(t *testing.T, pod *corev1.Pod, status *corev1.PodStatus) corev1.Pod {
	t.Helper()
	stored, err := json.Marshal(pod)
	if err != nil {
		t.Fatal(err)
	}
	body, err := statusPatchBody(pod, status)
	if err != nil {
		t.Fatal(err)
	}
	merged, err := strategicpatch.StrategicMergePatch(stored, body, &corev1.Pod{})
	if err != nil {
		t.Fatal(err)
	}
	var after corev1.Pod
	if err := json.Unmarshal(merged, &after); err != nil {
		t.Fatal(err)
	}
	return after
}
