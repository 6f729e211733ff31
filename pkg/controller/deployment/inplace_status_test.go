package deployment

import (
	"context"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/kroll-dev/kroll/pkg/gates"
	"github.com/kroll-dev/kroll/pkg/history"
	"github.com/kroll-dev/kroll/pkg/inplace"
)

// inPlaceScene is a 4-replica Deployment (maxUnavailable 2) opted in to in-place
// updates, rolling from its old ReplicaSet (4 pods a–d, all available, its controller
// caught up) to its new one (no pod yet).
func inPlaceScene() (d *appsv1.Deployment, old, cur *appsv1.ReplicaSet, pods []runtime.Object) {
	d = newDeployment(4, "nginx:1.16.1", "0", "2")
	d.Annotations = map[string]string{inplace.StrategyAnnotation: string(inplace.IfPossible), history.RevisionAnnotation: "2"}
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 4, ReadyReplicas: 4, AvailableReplicas: 4,
		Conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "ReplicaSetUpdated"}}}
	old = replicaSetOf(d, "nginx:1.14.2", 1, 4, 4, time.Hour)
	cur = replicaSetOf(d, "nginx:1.16.1", 2, 0, 0, time.Minute)
	for _, rs := range []*appsv1.ReplicaSet{old, cur} {
		rs.Generation, rs.Status.ObservedGeneration = 1, 1
		rs.Annotations[inplace.StrategyAnnotation] = string(inplace.IfPossible)
	}
	return d, old, cur, []runtime.Object{podOf(old, "a"), podOf(old, "b"), podOf(old, "c"), podOf(old, "d")}
}

func (f *fixture) statusWrites() int {
	n := 0
	for _, w := range f.writes() {
		if w == "update deployments/status web" {
			n++
		}
	}
	return n
}

// A pick is recorded in two writes, the old ReplicaSet's and, once its controller has
// observed that one, the new ReplicaSet's. The status waits for the second: summed in
// between, the old ReplicaSet shrunk and the new one not grown yet, it would say no pod
// is unavailable where two are. It waits a second at most.
func TestSync_inPlaceStatusWaitsForThePicksSecondRecord(t *testing.T) {
	d, old, cur, pods := inPlaceScene()
	f := newFixture(t, append([]runtime.Object{d, old, cur}, pods...)...)
	f.sync()
	given := f.lastReplicaSetWrite()
	if given.Name != old.Name || inplace.Names(given, inplace.LeavingAnnotation).Len() != 2 {
		t.Fatalf("first pass wrote %v; want the old ReplicaSet's record naming 2 pods leaving", f.writes())
	}
	if n := f.statusWrites(); n != 0 {
		t.Errorf("first pass wrote the status %d times (writes %v); want it held for the new ReplicaSet's record", n, f.writes())
	}

	// The old ReplicaSet's controller has not observed its record: nothing to write, the
	// status still held — until a second has passed.
	given.Generation, given.Status.ObservedGeneration = 2, 1
	f = newFixture(t, append([]runtime.Object{d, given, cur}, pods...)...)
	start := time.Now()
	f.c.now = func() time.Time { return start }
	f.sync()
	if len(f.writes()) != 0 {
		t.Errorf("pass before the old ReplicaSet observed its record wrote %v; want nothing", f.writes())
	}
	f.c.now = func() time.Time { return start.Add(maxStatusHold) }
	f.sync()
	if n := f.statusWrites(); n != 1 {
		t.Errorf("after %v the pass wrote the status %d times (writes %v); want once", maxStatusHold, n, f.writes())
	}

	// Observed, and reported with the pods named leaving counted out: the new
	// ReplicaSet's record and the status, in one pass.
	given.Status.ObservedGeneration = given.Generation
	given.Status.ReadyReplicas, given.Status.AvailableReplicas = 2, 2
	f = newFixture(t, append([]runtime.Object{d, given, cur}, pods...)...)
	f.sync()
	want := []string{"patch replicasets " + cur.Name, "update deployments/status web"}
	if got := f.writes(); !slices.Equal(got, want) {
		t.Errorf("pass after the old ReplicaSet observed its record wrote %v; want %v", got, want)
	}
	status, _ := f.client.AppsV1().Deployments("default").Get(context.Background(), "web", metav1.GetOptions{})
	if s := status.Status; s.AvailableReplicas != 2 || s.UnavailableReplicas != 2 || s.Replicas != 4 {
		t.Errorf("status: %d replicas, %d available, %d unavailable; want 4, 2, 2", s.Replicas, s.AvailableReplicas, s.UnavailableReplicas)
	}
}

// The pass that creates the new ReplicaSet writes its status whatever the pick: it
// carries the new revision and NewReplicaSetCreated.
func TestSync_inPlacePassCreatingTheNewReplicaSetWritesItsStatus(t *testing.T) {
	d, old, _, pods := inPlaceScene()
	d.Generation = 2
	delete(d.Annotations, history.RevisionAnnotation)
	f := newFixture(t, append([]runtime.Object{d, old}, pods...)...)
	f.sync()
	if n := f.statusWrites(); n != 1 {
		t.Errorf("writes %v; want the status written once", f.writes())
	}
}

// The status counts an old ReplicaSet whose controller has not observed its latest
// record as that controller will report it, the pods it names leaving counted out, and
// a ReplicaSet whose controller never reported as having no pod terminating; the other
// ReplicaSets as they report.
func TestCalculateStatus_countsReportsKnownToBeBehind(t *testing.T) {
	d, old, cur, pods := inPlaceScene()
	given := old.DeepCopy()
	given.Generation, *given.Spec.Replicas = 2, 2
	inplace.SetNames(given, inplace.LeavingAnnotation, sets.New("a", "b"))
	fresh := cur.DeepCopy()
	fresh.Status = appsv1.ReplicaSetStatus{}
	f := newFixture(t, append([]runtime.Object{d, given, fresh}, pods...)...)
	s := f.c.calculateStatus(newPass(d, []*appsv1.ReplicaSet{given, fresh}))
	if s.Replicas != 4 || s.ReadyReplicas != 2 || s.AvailableReplicas != 2 || s.TerminatingReplicas == nil || *s.TerminatingReplicas != 0 {
		t.Errorf("status %d replicas, %d ready, %d available, terminating %v; want 4, 2, 2, 0",
			s.Replicas, s.ReadyReplicas, s.AvailableReplicas, s.TerminatingReplicas)
	}

	// Not opted in: the old ReplicaSet's report is summed as it is.
	d.Annotations = nil
	f = newFixture(t, append([]runtime.Object{d, given, fresh}, pods...)...)
	if s := f.c.calculateStatus(newPass(d, []*appsv1.ReplicaSet{given, fresh})); s.AvailableReplicas != 4 {
		t.Errorf("not opted in: %d available; want the reported 4", s.AvailableReplicas)
	}
}

// With the DeploymentReplicaSetTerminatingReplicas gate off the status leaves
// terminatingReplicas out, even where it counts the pods itself, as upstream's does.
func TestCalculateStatus_terminatingReplicasGateOff(t *testing.T) {
	d, old, cur, pods := inPlaceScene()
	given := old.DeepCopy()
	given.Generation, *given.Spec.Replicas = 2, 2
	inplace.SetNames(given, inplace.LeavingAnnotation, sets.New("a", "b"))
	fresh := cur.DeepCopy()
	fresh.Status = appsv1.ReplicaSetStatus{}
	f := newFixture(t, append([]runtime.Object{d, given, fresh}, pods...)...)
	f.c.SetFeatureGates(gates.Gates{DeploymentReplicaSetTerminatingReplicas: false})
	if s := f.c.calculateStatus(newPass(d, []*appsv1.ReplicaSet{given, fresh})); s.TerminatingReplicas != nil || s.Replicas != 4 {
		t.Errorf("status %d replicas, terminating %d; want 4, left out", s.Replicas, *s.TerminatingReplicas)
	}
}

// A ReplicaSet whose controller never reported but whose pods the caches show is
// summed as reported (nothing), as upstream sums it: the Deployment never says more
// pods are available than its ReplicaSets do.
func TestCalculateStatus_neverCountsAheadOfAReplicaSetsFirstReport(t *testing.T) {
	d, old, _, pods := inPlaceScene()
	d.Annotations = nil
	old.Status = appsv1.ReplicaSetStatus{}
	f := newFixture(t, append([]runtime.Object{d, old}, pods...)...)
	s := f.c.calculateStatus(newPass(d, []*appsv1.ReplicaSet{old}))
	if s.Replicas != 0 || s.AvailableReplicas != 0 {
		t.Errorf("status %d replicas, %d available; want the unreported ReplicaSet's 0, 0", s.Replicas, s.AvailableReplicas)
	}
}
