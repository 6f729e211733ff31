package rollout

import (
	"reflect"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// newDeployment is a RollingUpdate Deployment; an empty maxSurge makes it Recreate.
func newDeployment(replicas int32, maxSurge, maxUnavailable string) *appsv1.Deployment {
	d := &appsv1.Deployment{Spec: appsv1.DeploymentSpec{Replicas: &replicas}}
	if maxSurge == "" {
		d.Spec.Strategy.Type = appsv1.RecreateDeploymentStrategyType
		return d
	}
	s, u := intstr.Parse(maxSurge), intstr.Parse(maxUnavailable)
	d.Spec.Strategy = appsv1.DeploymentStrategy{
		Type:          appsv1.RollingUpdateDeploymentStrategyType,
		RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: &s, MaxUnavailable: &u},
	}
	return d
}

// newRS is a ReplicaSet created age minutes after epoch (higher age = newer).
func newRS(name string, replicas, available int32, age int) *appsv1.ReplicaSet {
	return &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(epoch.Add(time.Duration(age) * time.Minute))},
		Spec:       appsv1.ReplicaSetSpec{Replicas: &replicas},
		Status:     appsv1.ReplicaSetStatus{Replicas: replicas, AvailableReplicas: available},
	}
}

func annotated(rs *appsv1.ReplicaSet, desired, maxReplicas string) *appsv1.ReplicaSet {
	rs.Annotations = map[string]string{DesiredReplicasAnnotation: desired, MaxReplicasAnnotation: maxReplicas}
	return rs
}

func TestDeploymentFenceposts(t *testing.T) {
	tests := []struct {
		name string
		d    *appsv1.Deployment
		want Fenceposts
	}{
		{"Recreate has no bounds", newDeployment(10, "", ""), Fenceposts{}},
		{"10 replicas, 3 surge, 2 unavailable", newDeployment(10, "3", "2"), Fenceposts{MaxSurge: 3, MaxUnavailable: 2}},
		{"maxUnavailable is capped at replicas", newDeployment(2, "0", "5"), Fenceposts{MaxSurge: 0, MaxUnavailable: 2}},
		{"scaled to 0: nothing may be unavailable", newDeployment(0, "1", "1"), Fenceposts{MaxSurge: 1, MaxUnavailable: 0}},
	}
	for _, tt := range tests {
		if got := DeploymentFenceposts(tt.d); got != tt.want {
			t.Errorf("%s: got %+v, want %+v", tt.name, got, tt.want)
		}
	}
}

func TestNewReplicaSetReplicas(t *testing.T) {
	tests := []struct {
		name   string
		d      *appsv1.Deployment
		newRS  *appsv1.ReplicaSet
		oldRSs []*appsv1.ReplicaSet
		want   int32
	}{
		{"worked example step 1: 13 max − 10 old = 3 new", newDeployment(10, "3", "2"), newRS("new", 0, 0, 2), []*appsv1.ReplicaSet{newRS("old", 10, 10, 1)}, 3},
		{"worked example step 3: old at 8, 13 − 11 = 2 more → 5", newDeployment(10, "3", "2"), newRS("new", 3, 0, 2), []*appsv1.ReplicaSet{newRS("old", 8, 8, 1)}, 5},
		{"at the surge ceiling: no change", newDeployment(10, "3", "2"), newRS("new", 5, 1, 2), []*appsv1.ReplicaSet{newRS("old", 8, 8, 1)}, 5},
		{"never above replicas, however large the surge", newDeployment(4, "100%", "0"), newRS("new", 3, 3, 2), nil, 4},
		{"maxSurge 0: only after old pods went", newDeployment(3, "0", "1"), newRS("new", 0, 0, 2), []*appsv1.ReplicaSet{newRS("old", 3, 3, 1)}, 0},
		{"maxSurge 0, old scaled to 2: one new", newDeployment(3, "0", "1"), newRS("new", 0, 0, 2), []*appsv1.ReplicaSet{newRS("old", 2, 2, 1)}, 1},
		{"over the ceiling (scaled down mid-rollout): keep, let old go first", newDeployment(5, "1", "0"), newRS("new", 4, 4, 2), []*appsv1.ReplicaSet{newRS("old", 5, 5, 1)}, 4},
		{"Recreate: all replicas at once", newDeployment(10, "", ""), newRS("new", 0, 0, 2), nil, 10},
		{"an old RS scaled down whose pods still run counts its pods, not its spec", newDeployment(10, "3", "2"), newRS("new", 3, 0, 2),
			[]*appsv1.ReplicaSet{func() *appsv1.ReplicaSet { rs := newRS("old", 8, 8, 1); rs.Status.Replicas = 10; return rs }()}, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			all := append([]*appsv1.ReplicaSet{tt.newRS}, tt.oldRSs...)
			if got := NewReplicaSetReplicas(tt.d, all, tt.newRS, nil); got != tt.want {
				t.Errorf("got %d, want %d", got, tt.want)
			}
		})
	}
}

func TestNewReplicaSetReplicas_countsPodsTheStatusHasNotCaughtUpWith(t *testing.T) {
	// A stuck RS just scaled 3 → 0 whose status still says 2 (its third pod was created
	// after its last status write): its 3 pods still run, so there is no room yet.
	d := newDeployment(5, "2", "1")
	stuck := newRS("stuck", 0, 0, 2)
	stuck.Status.Replicas = 2
	old, nRS := newRS("old", 4, 4, 1), newRS("new", 0, 0, 3)
	all := []*appsv1.ReplicaSet{old, stuck, nRS}
	seen := func(rs *appsv1.ReplicaSet) int32 {
		if rs.Name == "stuck" {
			return 3
		}
		return *rs.Spec.Replicas
	}
	if got := NewReplicaSetReplicas(d, all, nRS, seen); got != 0 {
		t.Errorf("got %d, want 0: 4 old + 3 stuck pods already fill 5+2", got)
	}
	if got := NewReplicaSetReplicas(d, all, nRS, nil); got != 1 {
		t.Errorf("without the pods seen: got %d, want 1 (4 + 2 by status)", got)
	}
}

func TestNewReplicaSetReplicas_waitsForOldReplicaSetsToObserveTheirSize(t *testing.T) {
	d := newDeployment(5, "2", "1")
	old, nRS := newRS("old", 4, 4, 1), newRS("new", 0, 0, 3)
	old.Generation, old.Status.ObservedGeneration = 3, 2
	if got := NewReplicaSetReplicas(d, []*appsv1.ReplicaSet{old, nRS}, nRS, nil); got != 0 {
		t.Errorf("got %d while the old ReplicaSet has not observed its latest size, want 0", got)
	}
	old.Status.ObservedGeneration = 3
	if got := NewReplicaSetReplicas(d, []*appsv1.ReplicaSet{old, nRS}, nRS, nil); got != 3 {
		t.Errorf("got %d once it has, want 3", got)
	}
}

func TestOldReplicaSetScaleDown(t *testing.T) {
	tests := []struct {
		name   string
		d      *appsv1.Deployment
		newRS  *appsv1.ReplicaSet
		oldRSs []*appsv1.ReplicaSet
		want   []Scale
	}{
		{
			name:   "worked example step 2: 13 − 8 min available − 3 unavailable new = 2 → old 8",
			d:      newDeployment(10, "3", "2"),
			newRS:  newRS("new", 3, 0, 2),
			oldRSs: []*appsv1.ReplicaSet{newRS("old", 10, 10, 1)},
			want:   []Scale{{ReplicaSet: "old", From: 10, To: 8}},
		},
		{
			name:   "worked example step 7: one new pod ready, 13 − 8 − 4 = 1 → old 7",
			d:      newDeployment(10, "3", "2"),
			newRS:  newRS("new", 5, 1, 2),
			oldRSs: []*appsv1.ReplicaSet{newRS("old", 8, 8, 1)},
			want:   []Scale{{ReplicaSet: "old", From: 8, To: 7}},
		},
		{
			name:   "no new pod ready and no room: nothing",
			d:      newDeployment(10, "3", "2"),
			newRS:  newRS("new", 5, 0, 2),
			oldRSs: []*appsv1.ReplicaSet{newRS("old", 8, 8, 1)},
			want:   nil,
		},
		{
			name:   "maxUnavailable 1, maxSurge 0: one old pod at a time",
			d:      newDeployment(3, "0", "1"),
			newRS:  newRS("new", 0, 0, 2),
			oldRSs: []*appsv1.ReplicaSet{newRS("old", 3, 3, 1)},
			want:   []Scale{{ReplicaSet: "old", From: 3, To: 2}},
		},
		{
			name:   "unavailable old pods are cleaned up first, oldest RS first, within the budget",
			d:      newDeployment(10, "2", "2"),
			newRS:  newRS("new", 2, 0, 3),
			oldRSs: []*appsv1.ReplicaSet{newRS("older", 4, 1, 1), newRS("old", 6, 6, 2)},
			// 12 − 8 − 2 = 2 may go: both are unavailable pods of "older"; then 7
			// available − 8 needed: no available pod goes.
			want: []Scale{{ReplicaSet: "older", From: 4, To: 2}},
		},
		{
			name:   "cleanup and availability scale-down in one plan",
			d:      newDeployment(4, "1", "1"),
			newRS:  newRS("new", 1, 1, 3),
			oldRSs: []*appsv1.ReplicaSet{newRS("stuck", 1, 0, 1), newRS("old", 3, 3, 2)},
			// 5 − 3 − 0 = 2 may go: the stuck pod, then 4 available − 3 = 1 of "old".
			want: []Scale{{ReplicaSet: "stuck", From: 1, To: 0}, {ReplicaSet: "old", From: 3, To: 2}},
		},
		{
			name:   "several old RSes: the oldest goes first",
			d:      newDeployment(6, "0", "3"),
			newRS:  newRS("new", 0, 0, 3),
			oldRSs: []*appsv1.ReplicaSet{newRS("b", 3, 3, 2), newRS("a", 3, 3, 1)},
			want:   []Scale{{ReplicaSet: "a", From: 3, To: 0}},
		},
		{
			name:  "an old RS just scaled down still reports its removed pods available: they do not count twice",
			d:     newDeployment(10, "3", "2"),
			newRS: newRS("new", 3, 0, 2),
			oldRSs: []*appsv1.ReplicaSet{func() *appsv1.ReplicaSet {
				rs := newRS("old", 8, 10, 1)
				rs.Status.Replicas = 10
				return rs
			}()},
			// 11 − 8 − 3 = 0 may go; counting 10 available would take 2 more.
			want: nil,
		},
		{
			name:   "nothing old left",
			d:      newDeployment(3, "1", "0"),
			newRS:  newRS("new", 3, 3, 2),
			oldRSs: []*appsv1.ReplicaSet{newRS("old", 0, 0, 1)},
			want:   nil,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := OldReplicaSetScaleDown(tt.d, tt.oldRSs, tt.newRS); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

// A whole rollout of the worked example, step by step: surge and availability bounds
// hold at every step and it ends with the new RS at 10, the old at 0.
func TestRollingUpdateWorkedExample(t *testing.T) {
	d := newDeployment(10, "3", "2")
	oldRS, nRS := newRS("old", 10, 10, 1), newRS("new", 0, 0, 2)
	for step := 0; step < 40; step++ {
		all := []*appsv1.ReplicaSet{nRS, oldRS}
		*nRS.Spec.Replicas = NewReplicaSetReplicas(d, all, nRS, nil)
		if total := SpecReplicas(all); total > 13 {
			t.Fatalf("step %d: %d pods wanted, more than 13", step, total)
		}
		nRS.Status.AvailableReplicas = min(nRS.Status.AvailableReplicas+1, *nRS.Spec.Replicas) // one new pod becomes available
		nRS.Status.Replicas = *nRS.Spec.Replicas
		for _, s := range OldReplicaSetScaleDown(d, []*appsv1.ReplicaSet{oldRS}, nRS) {
			*oldRS.Spec.Replicas = s.To
			oldRS.Status.AvailableReplicas = min(oldRS.Status.AvailableReplicas, s.To)
			oldRS.Status.Replicas = s.To // its controller deletes the pods
		}
		if avail := AvailableReplicas(all); avail < 8 {
			t.Fatalf("step %d: %d available, fewer than 8", step, avail)
		}
		if *nRS.Spec.Replicas == 10 && nRS.Status.AvailableReplicas == 10 && *oldRS.Spec.Replicas == 0 {
			return
		}
	}
	t.Fatalf("did not finish: new %d (%d available), old %d", *nRS.Spec.Replicas, nRS.Status.AvailableReplicas, *oldRS.Spec.Replicas)
}

func TestProportionalScale(t *testing.T) {
	tests := []struct {
		name   string
		d      *appsv1.Deployment
		newRS  *appsv1.ReplicaSet
		oldRSs []*appsv1.ReplicaSet
		want   []Scale
	}{
		{
			name:   "the spec's example: 8 old + 5 new (max 13), scaled 10 → 15, gives 11 old and 7 new",
			d:      newDeployment(15, "3", "2"),
			newRS:  annotated(newRS("new", 5, 0, 2), "10", "13"),
			oldRSs: []*appsv1.ReplicaSet{annotated(newRS("old", 8, 8, 1), "10", "13")},
			want:   []Scale{{ReplicaSet: "old", From: 8, To: 11}, {ReplicaSet: "new", From: 5, To: 7}},
		},
		{
			name:   "scaling down splits the same way: 11 + 7 (max 18) to 10 replicas → 8 + 5",
			d:      newDeployment(10, "3", "2"),
			newRS:  annotated(newRS("new", 7, 0, 2), "15", "18"),
			oldRSs: []*appsv1.ReplicaSet{annotated(newRS("old", 11, 11, 1), "15", "18")},
			want:   []Scale{{ReplicaSet: "old", From: 11, To: 8}, {ReplicaSet: "new", From: 7, To: 5}},
		},
		{
			name:   "only one RS has pods: it takes all",
			d:      newDeployment(5, "1", "0"),
			newRS:  newRS("new", 3, 3, 2),
			oldRSs: []*appsv1.ReplicaSet{newRS("old", 0, 0, 1)},
			want:   []Scale{{ReplicaSet: "new", From: 3, To: 5}},
		},
		{
			name:   "no RS has pods: the new one takes all",
			d:      newDeployment(2, "1", "0"),
			newRS:  newRS("new", 0, 0, 2),
			oldRSs: []*appsv1.ReplicaSet{newRS("old", 0, 0, 1)},
			want:   []Scale{{ReplicaSet: "new", From: 0, To: 2}},
		},
		{
			name:   "a saturated new RS: old ones go to 0",
			d:      newDeployment(3, "1", "0"),
			newRS:  annotated(newRS("new", 3, 3, 2), "3", "4"),
			oldRSs: []*appsv1.ReplicaSet{newRS("old", 1, 1, 1), newRS("empty", 0, 0, 0)},
			want:   []Scale{{ReplicaSet: "old", From: 1, To: 0}},
		},
		{
			name:   "leftover of rounding goes to the largest; empty RSes stay empty",
			d:      newDeployment(4, "0", "1"),
			newRS:  annotated(newRS("new", 1, 0, 3), "3", "3"),
			oldRSs: []*appsv1.ReplicaSet{annotated(newRS("mid", 1, 1, 2), "3", "3"), annotated(newRS("old", 1, 1, 1), "3", "3"), newRS("empty", 0, 0, 0)},
			// +1: each of the three rounds 1·4/3 − 1 = 0; the leftover 1 goes to the largest,
			// on a tie the newest.
			want: []Scale{{ReplicaSet: "new", From: 1, To: 2}, {ReplicaSet: "mid", From: 1, To: 1}, {ReplicaSet: "old", From: 1, To: 1}},
		},
		{
			name:   "scaled to 0: every active RS goes to 0",
			d:      newDeployment(0, "3", "2"),
			newRS:  annotated(newRS("new", 5, 0, 2), "10", "13"),
			oldRSs: []*appsv1.ReplicaSet{annotated(newRS("old", 8, 8, 1), "10", "13")},
			want:   []Scale{{ReplicaSet: "old", From: 8, To: 0}, {ReplicaSet: "new", From: 5, To: 0}},
		},
		{
			name:   "unannotated RSes are sized against the Deployment's status.replicas",
			d:      func() *appsv1.Deployment { d := newDeployment(20, "0", "1"); d.Status.Replicas = 10; return d }(),
			newRS:  newRS("new", 5, 0, 2),
			oldRSs: []*appsv1.ReplicaSet{newRS("old", 5, 5, 1)},
			want:   []Scale{{ReplicaSet: "new", From: 5, To: 10}, {ReplicaSet: "old", From: 5, To: 10}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, _ := ProportionalScale(tt.d, tt.newRS, tt.oldRSs)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestProportionalScale_nothingToDo(t *testing.T) {
	d := newDeployment(3, "1", "0")
	if plan, ok := ProportionalScale(d, newRS("new", 3, 3, 2), []*appsv1.ReplicaSet{newRS("old", 0, 0, 1)}); ok || plan != nil {
		t.Errorf("a Deployment at its size got a plan: %+v", plan)
	}
}

func TestDraining(t *testing.T) {
	draining := func(spec, status int32) *appsv1.ReplicaSet {
		rs := newRS("old", spec, spec, 1)
		rs.Status.Replicas = status
		return rs
	}
	unobserved := draining(3, 5)
	unobserved.Generation, unobserved.Status.ObservedGeneration = 2, 1
	tests := []struct {
		name   string
		oldRSs []*appsv1.ReplicaSet
		seen   int32 // pods seen of each; 0: no seenPods
		want   bool
	}{
		{"scaled 5 → 3, its status still says 5: draining", []*appsv1.ReplicaSet{draining(3, 5)}, 0, true},
		{"scaled 5 → 3, status says 3: done", []*appsv1.ReplicaSet{draining(3, 3)}, 0, false},
		{"status says 3, 5 pods still seen: draining", []*appsv1.ReplicaSet{draining(3, 3)}, 5, true},
		{"fewer pods than its size (still creating): not draining", []*appsv1.ReplicaSet{draining(3, 2)}, 2, false},
		{"not yet observed its size: left to NewReplicaSetReplicas", []*appsv1.ReplicaSet{unobserved}, 0, false},
		{"one of two draining", []*appsv1.ReplicaSet{draining(2, 2), draining(0, 1)}, 0, true},
		{"none", nil, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var seen func(*appsv1.ReplicaSet) int32
			if tt.seen > 0 {
				seen = func(*appsv1.ReplicaSet) int32 { return tt.seen }
			}
			if got := Draining(tt.oldRSs, seen); got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}
