package rollout

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

var now = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

// rankPod is a Running, Ready pod on node-a, created and ready an hour ago.
func rankPod(name string, edits ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(name), CreationTimestamp: metav1.NewTime(now.Add(-time.Hour))},
		Spec:       corev1.PodSpec{NodeName: "node-a"},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
			{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(now.Add(-time.Hour))},
		}},
	}
	for _, e := range edits {
		e(p)
	}
	return p
}

func unscheduled(p *corev1.Pod) { p.Spec.NodeName = "" }
func pending(p *corev1.Pod)     { p.Status.Phase = corev1.PodPending }
func unknown(p *corev1.Pod)     { p.Status.Phase = corev1.PodUnknown }
func notReady(p *corev1.Pod)    { p.Status.Conditions[0].Status = corev1.ConditionFalse }
func onNode(n string) func(*corev1.Pod) {
	return func(p *corev1.Pod) { p.Spec.NodeName = n }
}
func cost(c string) func(*corev1.Pod) {
	return func(p *corev1.Pod) { p.Annotations = map[string]string{PodDeletionCostAnnotation: c} }
}
func readyFor(d time.Duration) func(*corev1.Pod) {
	return func(p *corev1.Pod) { p.Status.Conditions[0].LastTransitionTime = metav1.NewTime(now.Add(-d)) }
}
func age(d time.Duration) func(*corev1.Pod) {
	return func(p *corev1.Pod) { p.CreationTimestamp = metav1.NewTime(now.Add(-d)) }
}
func restarts(n int32) func(*corev1.Pod) {
	return func(p *corev1.Pod) { p.Status.ContainerStatuses = []corev1.ContainerStatus{{RestartCount: n}} }
}

func TestPodsToDelete_order(t *testing.T) {
	tests := []struct {
		name        string
		keep, first *corev1.Pod
		related     []*corev1.Pod
	}{
		{"unscheduled before scheduled", rankPod("keep"), rankPod("first", unscheduled, pending), nil},
		{"Pending before Running", rankPod("keep"), rankPod("first", pending), nil},
		{"Pending before Unknown", rankPod("keep", unknown), rankPod("first", pending), nil},
		{"Unknown before Running", rankPod("keep"), rankPod("first", unknown), nil},
		{"not ready before ready", rankPod("keep"), rankPod("first", notReady), nil},
		{"lower deletion cost first", rankPod("keep", cost("10")), rankPod("first", cost("-5")), nil},
		{"deletion cost outranks co-location", rankPod("keep", cost("1"), onNode("crowded")), rankPod("first", onNode("alone")),
			[]*corev1.Pod{rankPod("x", onNode("crowded")), rankPod("y", onNode("crowded"))}},
		{"doubled up on a node first", rankPod("keep", onNode("alone")), rankPod("first", onNode("crowded")),
			[]*corev1.Pod{rankPod("x", onNode("crowded")), rankPod("y", onNode("crowded")), rankPod("z", onNode("alone"))}},
		{"ready for a shorter time first", rankPod("keep", readyFor(10*time.Hour)), rankPod("first", readyFor(time.Minute)), nil},
		{"ready times in the same log2 bucket: by UID", rankPod("b", readyFor(70*time.Minute)), rankPod("a", readyFor(65*time.Minute)), nil},
		{"more restarts first", rankPod("keep", restarts(1)), rankPod("first", restarts(7)), nil},
		{"newer first", rankPod("keep", age(10*time.Hour)), rankPod("first", age(time.Minute)), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, order := range [][]*corev1.Pod{{tt.keep, tt.first}, {tt.first, tt.keep}} {
				got := PodsToDelete(order, tt.related, 1, now)
				if len(got) != 1 || got[0] != tt.first {
					t.Errorf("picked %s, want %s", got[0].Name, tt.first.Name)
				}
			}
		})
	}
}

func TestPodsToDelete_counts(t *testing.T) {
	pods := []*corev1.Pod{rankPod("a"), rankPod("b", notReady), rankPod("c", pending)}
	if got := PodsToDelete(pods, nil, 5, now); len(got) != 3 {
		t.Errorf("asked for more than there are: got %d, want all 3", len(got))
	}
	got := PodsToDelete(pods, nil, 2, now)
	if len(got) != 2 || got[0].Name != "c" || got[1].Name != "b" {
		t.Errorf("got %v, want c (pending) then b (not ready)", []string{got[0].Name, got[1].Name})
	}
}

func TestIsPodAvailable(t *testing.T) {
	p := rankPod("p", readyFor(5*time.Second))
	for _, tc := range []struct {
		minReadySeconds int32
		want            bool
	}{
		{0, true},
		{4, true},
		// Upstream's controllers: readyTime + minReadySeconds <= now. Ready for exactly
		// minReadySeconds is available.
		{5, true},
		{6, false},
	} {
		if got := IsPodAvailable(p, tc.minReadySeconds, now); got != tc.want {
			t.Errorf("ready 5s ago, minReadySeconds %d: available %v, want %v", tc.minReadySeconds, got, tc.want)
		}
	}
	if at := AvailableAt(p, 6); IsPodAvailable(p, 6, at.Add(-time.Nanosecond)) || !IsPodAvailable(p, 6, at) {
		t.Errorf("available before AvailableAt (%s), or not at it", at)
	}
	if next := NextAvailable([]*corev1.Pod{p}, 5, now); !next.IsZero() {
		t.Errorf("NextAvailable = %s for a pod available now (ready exactly minReadySeconds ago), want zero", next)
	}
	if IsPodAvailable(rankPod("q", notReady), 0, now) {
		t.Error("a pod that is not ready is available")
	}
	if at := AvailableAt(p, 10); !at.Equal(now.Add(5 * time.Second)) {
		t.Errorf("AvailableAt = %s, want 5s from now", at)
	}
}

func TestRemovedOnDelete(t *testing.T) {
	zero, thirty := int64(0), int64(30)
	pod := func(grace *int64, node string, phase corev1.PodPhase, finalizers ...string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Finalizers: finalizers},
			Spec:       corev1.PodSpec{TerminationGracePeriodSeconds: grace, NodeName: node},
			Status:     corev1.PodStatus{Phase: phase},
		}
	}
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		want bool
	}{
		{"zero grace", pod(&zero, "n1", corev1.PodRunning), true},
		{"a grace period", pod(&thirty, "n1", corev1.PodRunning), false},
		{"never scheduled", pod(&thirty, "", corev1.PodPending), true},
		{"finished", pod(&thirty, "n1", corev1.PodSucceeded), true},
		{"zero grace, held by a finalizer", pod(&zero, "n1", corev1.PodRunning, "example.com/hold"), false},
	} {
		if got := RemovedOnDelete(tc.pod); got != tc.want {
			t.Errorf("%s: RemovedOnDelete = %v, want %v", tc.name, got, tc.want)
		}
	}
}
