package daemonset

import (
	"reflect"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kroll-dev/kroll/pkg/placement"
)

// A sync's status counts the pods it created, before the cache shows them: the pod of
// node b below is what the API server answered the create with (bound for b by node
// affinity, not yet scheduled, not ready). It leaves out those it deleted that the API
// server removed in the deleting request.
func TestStatusCountsCreatedPods(t *testing.T) {
	ds := newDaemonSet("1", "0")
	nodes := []*corev1.Node{
		{ObjectMeta: metav1.ObjectMeta{Name: "a"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "b"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "c"}},
	}
	fits := map[string]placement.Fit{"a": {ShouldRun: true}, "b": {ShouldRun: true}, "c": {ShouldRun: true}}
	now := time.Now()

	tests := []struct {
		name          string
		made, removed []*corev1.Pod
		want          appsv1.DaemonSetStatus
	}{{
		name: "nothing created",
		want: appsv1.DaemonSetStatus{DesiredNumberScheduled: 3, CurrentNumberScheduled: 1, NumberReady: 1,
			NumberAvailable: 1, NumberUnavailable: 2, UpdatedNumberScheduled: 1},
	}, {
		name: "a pod created for b",
		made: []*corev1.Pod{newPod(ds, "b", "new")},
		want: appsv1.DaemonSetStatus{DesiredNumberScheduled: 3, CurrentNumberScheduled: 2, NumberReady: 1,
			NumberAvailable: 1, NumberUnavailable: 2, UpdatedNumberScheduled: 2},
	}, {
		name: "a created pod bound for no node is not placed",
		made: []*corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Name: "stray", Labels: map[string]string{RevisionLabel: "new"}}}},
		want: appsv1.DaemonSetStatus{DesiredNumberScheduled: 3, CurrentNumberScheduled: 1, NumberReady: 1,
			NumberAvailable: 1, NumberUnavailable: 2, UpdatedNumberScheduled: 1},
	}, {
		name:    "a's pod removed by its delete, its successor created",
		removed: []*corev1.Pod{daemonPod("a", "new", true)},
		made:    []*corev1.Pod{newPod(ds, "a", "new")},
		want: appsv1.DaemonSetStatus{DesiredNumberScheduled: 3, CurrentNumberScheduled: 1, NumberReady: 0,
			NumberAvailable: 0, NumberUnavailable: 3, UpdatedNumberScheduled: 1},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			byNode := map[string][]*corev1.Pod{"a": {daemonPod("a", "new", true)}}
			placeCreated(byNode, tt.made, tt.removed)
			if got := statusOf(ds, nodes, fits, byNode, "new", now); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("statusOf() =\n%+v\nwant\n%+v", got, tt.want)
			}
		})
	}
}

// A rolling update's delete of a node's only pod is followed by its successor in the
// same sync when the API server removes the pod in the deleting request: no grace
// period, no finalizer, and the node should run the DaemonSet.
func TestRefillable(t *testing.T) {
	zero, thirty := int64(0), int64(30)
	pod := func(node string, grace *int64, finalizers ...string) *corev1.Pod {
		p := daemonPod(node, "old", true)
		p.Spec.TerminationGracePeriodSeconds, p.Finalizers = grace, finalizers
		return p
	}
	fits := map[string]placement.Fit{"a": {ShouldRun: true}, "b": {ShouldRun: true}, "gone": {}}
	tests := []struct {
		name   string
		pod    *corev1.Pod
		others int // the node's other pods
		refill bool
	}{
		{"no grace period, the node's only pod", pod("a", &zero), 0, true},
		{"a grace period: terminating for it", pod("a", &thirty), 0, false},
		{"a finalizer holds it", pod("a", &zero, "example.com/hold"), 0, false},
		{"the node has another pod", pod("b", &zero), 1, false},
		{"a node the DaemonSet no longer fits", pod("gone", &zero), 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			node := tt.pod.Spec.NodeName
			byNode := map[string][]*corev1.Pod{node: {tt.pod}}
			for range tt.others {
				byNode[node] = append(byNode[node], daemonPod(node, "new", false))
			}
			got, ok := refillable([]*corev1.Pod{tt.pod}, fits, byNode)[tt.pod]
			if ok != tt.refill || (ok && got != node) {
				t.Errorf("refill %v on %q, want %v", ok, got, tt.refill)
			}
		})
	}
}
