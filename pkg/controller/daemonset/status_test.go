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
// affinity, not yet scheduled, not ready).
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
		name string
		made []*corev1.Pod
		want appsv1.DaemonSetStatus
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
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			byNode := map[string][]*corev1.Pod{"a": {daemonPod("a", "new", true)}}
			placeCreated(byNode, tt.made)
			if got := statusOf(ds, nodes, fits, byNode, "new", now); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("statusOf() =\n%+v\nwant\n%+v", got, tt.want)
			}
		})
	}
}
