package daemonset

import (
	"context"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"

	"github.com/kroll-dev/kroll/pkg/controller"
	"github.com/kroll-dev/kroll/pkg/disruption"
)

// A node is refilled in the sync that deletes its old pod only when that pod was
// deleted as the cache showed it: one changed since (a finalizer added within the
// cache's lag) may still be running, and the node must not run two of the set's pods.
func TestSyncNodesRefillsOnlyAPodDeletedAsSeen(t *testing.T) {
	zero := int64(0)
	ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: "default", UID: "ds-1"},
		Spec: appsv1.DaemonSetSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "a", Image: "agent:2"}}}}}}
	old := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "agent-old", Namespace: "default", UID: "pod-1", ResourceVersion: "7"},
		Spec: corev1.PodSpec{NodeName: "node-1", TerminationGracePeriodSeconds: &zero}}
	for _, tc := range []struct {
		name        string
		changed     bool
		wantCreates int
		wantErr     bool
	}{
		{"deleted as seen: refilled at once", false, 1, false},
		{"changed since seen: left, not refilled", true, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pods := &controller.FakePodControl{Changed: map[string]bool{old.Name: tc.changed}}
			c := &Controller{podControl: pods, expectations: controller.NewExpectations(time.Now),
				fence: controller.NewFence(map[string]controller.VersionSource{})}
			const key = "default/agent"
			made, removed, err := c.syncNodes(context.Background(), key, ds, nil, []*corev1.Pod{old},
				map[*corev1.Pod]string{old: "node-1"}, "hash-2", nil, nil)
			if (err != nil) != tc.wantErr || (err != nil && !slices.ContainsFunc(err.(utilerrors.Aggregate).Errors(), apierrors.IsConflict)) {
				t.Fatalf("syncNodes error %v, want a Conflict: %v", err, tc.wantErr)
			}
			if len(made) != tc.wantCreates || len(pods.Created) != tc.wantCreates {
				t.Errorf("created %d pods (%d returned), want %d", len(pods.Created), len(made), tc.wantCreates)
			}
			if len(removed) != tc.wantCreates || len(pods.Deleted) != tc.wantCreates {
				t.Errorf("removed %v, deleted %v, want the old pod gone only when refilled", removed, pods.Deleted)
			}
			// Nothing is left expected: the cache will never show a write that was not made.
			if !tc.wantErr {
				c.expectations.CreationObserved(key)
				c.expectations.DeletionObserved(key, "default/agent-old")
			}
			if !c.expectations.Satisfied(key) {
				t.Errorf("expectations still pending after the sync's writes were observed")
			}
		})
	}
}

// A rolling update's deletes of a DaemonSet that respects budgets are evictions: a pod
// the budget keeps stays (its deletion is no longer expected, so the next sync is not
// held back), the others go, and the sync's takes say Held.
func TestSyncNodesEvictsUnderRespect(t *testing.T) {
	ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: "default", UID: "ds-1"}}
	pod := func(name, node string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(name)}, Spec: corev1.PodSpec{NodeName: node}}
	}
	a, b := pod("agent-a", "node-1"), pod("agent-b", "node-2")
	refused := apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 0)
	pods := &controller.FakePodControl{EvictErr: map[string]error{"agent-b": refused}}
	c := &Controller{podControl: pods, expectations: controller.NewExpectations(time.Now),
		fence: controller.NewFence(map[string]controller.VersionSource{})}
	const key = "default/agent"
	var takes controller.Takes
	_, _, err := c.syncNodes(context.Background(), key, ds, nil, []*corev1.Pod{a, b}, nil, "hash-2", nil, &takes)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(pods.Evicted, []string{"agent-a"}) || !slices.Equal(pods.Deleted, []string{"agent-a"}) {
		t.Errorf("evicted %v, deleted %v; want agent-a alone", pods.Evicted, pods.Deleted)
	}
	if got := takes.Outcome(); got != disruption.Held {
		t.Errorf("outcome %v, want Held", got)
	}
	c.expectations.DeletionObserved(key, "default/agent-a")
	if !c.expectations.Satisfied(key) {
		t.Errorf("expectations unsatisfied after agent-a's deletion: the kept agent-b is still expected to go")
	}
}
