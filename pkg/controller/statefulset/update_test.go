package statefulset

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"

	"github.com/kroll-dev/kroll/pkg/controller"
	"github.com/kroll-dev/kroll/pkg/gates"
)

// fakePods records the controller's pod writes.
type fakePods struct{ actions []string }

var _ controller.PodControl = &fakePods{}

func (f *fakePods) CreatePod(_ context.Context, _ runtime.Object, p *corev1.Pod) (*corev1.Pod, error) {
	f.actions = append(f.actions, "create "+p.Name+"@"+p.Labels[RevisionLabel])
	return p, nil
}
func (f *fakePods) UpdatePod(_ context.Context, _ runtime.Object, p *corev1.Pod, change func(*corev1.Pod)) error {
	change(p.DeepCopy())
	f.actions = append(f.actions, "update "+p.Name)
	return nil
}
func (f *fakePods) DeletePod(_ context.Context, _ runtime.Object, p *corev1.Pod) error {
	f.actions = append(f.actions, "delete "+p.Name)
	return nil
}
func (f *fakePods) DeletePodAsSeen(ctx context.Context, owner runtime.Object, p *corev1.Pod) error {
	return f.DeletePod(ctx, owner, p)
}
func (f *fakePods) EvictPod(_ context.Context, _ runtime.Object, p *corev1.Pod) error {
	f.actions = append(f.actions, "evict "+p.Name)
	return nil
}
func (f *fakePods) PatchPod(_ context.Context, _, name string, _ []byte) (*corev1.Pod, error) {
	f.actions = append(f.actions, "patch "+name)
	return nil, nil
}
func (f *fakePods) PatchPodStatus(_ context.Context, _, name string, _ []byte) error {
	f.actions = append(f.actions, "patch "+name+"/status")
	return nil
}
func (f *fakePods) PatchPodResize(_ context.Context, _, name string, _ []byte) error {
	f.actions = append(f.actions, "patch "+name+"/resize")
	return nil
}

// setPod is set's pod of ordinal at revision, Running and Ready for an hour unless not ready.
func setPod(set *appsv1.StatefulSet, ordinal int, revision string, ready bool) *corev1.Pod {
	p := newPod(set, set, revision, ordinal)
	p.UID = "uid-" + "p"
	p.Spec.NodeName = "node-1"
	status := corev1.ConditionTrue
	if !ready {
		status = corev1.ConditionFalse
	}
	p.Status = corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
		{Type: corev1.PodReady, Status: status, LastTransitionTime: metav1.NewTime(time.Now().Add(-time.Hour))}}}
	return p
}

func rev(name string) *appsv1.ControllerRevision {
	return &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: name}}
}

func TestUpdate(t *testing.T) {
	partitioned := func(set *appsv1.StatefulSet, p int32) *appsv1.StatefulSet {
		set.Spec.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType,
			RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{Partition: &p}}
		return set
	}
	set3 := func() *appsv1.StatefulSet {
		s := newSet(3, appsv1.RetainPersistentVolumeClaimRetentionPolicyType, appsv1.RetainPersistentVolumeClaimRetentionPolicyType)
		s.Spec.VolumeClaimTemplates = nil
		return partitioned(s, 0)
	}
	tests := []struct {
		name             string
		set              *appsv1.StatefulSet
		pods             func(*appsv1.StatefulSet) []*corev1.Pod
		current, updated string
		want             string
	}{
		{"OrderedReady creates the lowest missing ordinal only", set3(),
			func(s *appsv1.StatefulSet) []*corev1.Pod { return []*corev1.Pod{setPod(s, 0, "A", true)} },
			"A", "A", "[create web-1@A]"},
		{"OrderedReady waits for a pod at the update revision that is not ready", set3(),
			func(s *appsv1.StatefulSet) []*corev1.Pod {
				return []*corev1.Pod{setPod(s, 0, "A", true), setPod(s, 1, "A", true), setPod(s, 2, "B", false)}
			},
			"A", "B", "[]"},
		{"after an undo, the stuck pod of the abandoned revision is replaced, not waited for (#67250)", set3(),
			func(s *appsv1.StatefulSet) []*corev1.Pod {
				return []*corev1.Pod{setPod(s, 0, "A", true), setPod(s, 1, "A", true), setPod(s, 2, "B", false)}
			},
			"A", "A", "[delete web-2]"},
		{"a pod of the current revision that is briefly not ready is waited for, mid-rollout", set3(),
			func(s *appsv1.StatefulSet) []*corev1.Pod {
				return []*corev1.Pod{setPod(s, 0, "A", false), setPod(s, 1, "A", true), setPod(s, 2, "B", true)}
			},
			"A", "B", "[]"},
		{"fix-forward: the stuck pod of an abandoned revision is replaced", set3(),
			func(s *appsv1.StatefulSet) []*corev1.Pod {
				return []*corev1.Pod{setPod(s, 0, "A", true), setPod(s, 1, "A", true), setPod(s, 2, "B", false)}
			},
			"A", "C", "[delete web-2]"},
		{"rolling update: highest stale ordinal first, one at a time", set3(),
			func(s *appsv1.StatefulSet) []*corev1.Pod {
				return []*corev1.Pod{setPod(s, 0, "A", true), setPod(s, 1, "A", true), setPod(s, 2, "A", true)}
			},
			"A", "B", "[delete web-2]"},
		{"partition 2: a stale pod below it is left alone", partitioned(set3(), 2),
			func(s *appsv1.StatefulSet) []*corev1.Pod {
				return []*corev1.Pod{setPod(s, 0, "A", true), setPod(s, 1, "A", false), setPod(s, 2, "B", true)}
			},
			"A", "B", "[]"},
		{"OrderedReady scale down: the highest condemned pod, alone", set3(),
			func(s *appsv1.StatefulSet) []*corev1.Pod {
				var pods []*corev1.Pod
				for i := 0; i < 5; i++ {
					pods = append(pods, setPod(s, i, "A", true))
				}
				return pods
			},
			"A", "A", "[delete web-4]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pods := &fakePods{}
			c := updateController(pods)
			revs := revisions{current: rev(tt.current), update: rev(tt.updated), currentSet: tt.set, updateSet: tt.set}
			if _, err := c.update(context.Background(), tt.set, tt.pods(tt.set), revs, &controller.Takes{}, time.Now()); err != nil {
				t.Fatal(err)
			}
			if got := fmt.Sprint(pods.actions); got != tt.want {
				t.Errorf("actions %s, want %s", got, tt.want)
			}
		})
	}
}

// A set deleted with --cascade=orphan and made again with another template adopts pods
// of a revision it has never had: none counts as current, and replacing one must not
// take currentReplicas below zero (the API refuses -1).
func TestUpdateOfAdoptedPodsOfAnUnknownRevisionKeepsCurrentReplicasAtZero(t *testing.T) {
	set := newSet(3, appsv1.RetainPersistentVolumeClaimRetentionPolicyType, appsv1.RetainPersistentVolumeClaimRetentionPolicyType)
	set.Spec.VolumeClaimTemplates = nil
	set.Spec.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType}
	pods := &fakePods{}
	c := updateController(pods)
	revs := revisions{current: rev("B"), update: rev("B"), currentSet: set, updateSet: set}
	adopted := []*corev1.Pod{setPod(set, 0, "A", true), setPod(set, 1, "A", true), setPod(set, 2, "A", true)}
	status, err := c.update(context.Background(), set, adopted, revs, &controller.Takes{}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(pods.actions); got != "[delete web-2]" {
		t.Errorf("actions %s, want [delete web-2]", got)
	}
	if status.CurrentReplicas != 0 {
		t.Errorf("currentReplicas %d after replacing a pod of neither revision, want 0", status.CurrentReplicas)
	}
}

// createdPods is fakePods whose creates come back as the API server returns them: with
// a UID, a resource version and phase Pending.
type createdPods struct{ fakePods }

func (f *createdPods) CreatePod(ctx context.Context, owner runtime.Object, p *corev1.Pod) (*corev1.Pod, error) {
	if _, err := f.fakePods.CreatePod(ctx, owner, p); err != nil {
		return nil, err
	}
	made := p.DeepCopy()
	made.UID, made.ResourceVersion, made.Status.Phase = types.UID("uid-"+p.Name), "7", corev1.PodPending
	return made, nil
}

// The status a sync returns counts the pod it created (the API server has it), not
// ready yet: the status write the cache's first sight of it would make is saved.
func TestUpdateCountsTheCreatedPod(t *testing.T) {
	set := newSet(3, appsv1.RetainPersistentVolumeClaimRetentionPolicyType, appsv1.RetainPersistentVolumeClaimRetentionPolicyType)
	set.Spec.VolumeClaimTemplates = nil
	pods := &createdPods{}
	c := updateController(pods)
	revs := revisions{current: rev("A"), update: rev("A"), currentSet: set, updateSet: set}
	status, err := c.update(context.Background(), set, []*corev1.Pod{setPod(set, 0, "A", true)}, revs, &controller.Takes{}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(pods.actions); got != "[create web-1@A]" {
		t.Fatalf("actions %s, want [create web-1@A]", got)
	}
	if status.Replicas != 2 || status.ReadyReplicas != 1 || status.CurrentReplicas != 2 || status.UpdatedReplicas != 2 {
		t.Errorf("status %+v: want 2 replicas (web-0 ready, web-1 just created), 2 current and updated, 1 ready", status)
	}
}

// A pod the API server removes in the deleting request (zero grace, no finalizer) frees
// its ordinal at once: the sync that deletes it creates its successor, as the next sync
// would — the lowest alone under OrderedReady, all under Parallel — and its status
// counts the successor instead of the pod it replaces. A successor the API server
// refuses as already there (the cache had not shown a finalizer yet) is not counted, and
// the pod it was to replace stays counted, not as current.
func TestUpdateRecreatesAPodRemovedOnDelete(t *testing.T) {
	zero := int64(0)
	tests := []struct {
		name           string
		maxUnavailable int32
		parallel       bool
		grace          *int64
		finalizer      bool
		refused        bool
		want           string
		replicas       int32
		current, ready int32
		updated        int32
	}{
		{"OrderedReady, one at a time", 0, false, &zero, false, false,
			"[delete web-2 create web-2@B]", 3, 2, 2, 1},
		{"OrderedReady, maxUnavailable 2: the lowest successor alone", 2, false, &zero, false, false,
			"[delete web-2 delete web-1 create web-1@B]", 3, 1, 2, 1},
		{"Parallel, maxUnavailable 2: both successors", 2, true, &zero, false, false,
			"[delete web-2 delete web-1 create web-1@B create web-2@B]", 3, 1, 1, 2},
		{"a grace period: the pod terminates first, the next sync recreates it", 0, false, nil, false, false,
			"[delete web-2]", 3, 2, 3, 0},
		{"a finalizer: the pod stays until it is removed", 0, false, &zero, true, false,
			"[delete web-2]", 3, 2, 3, 0},
		{"the successor refused as already there: left to the next sync", 0, false, &zero, false, true,
			"[delete web-2 create web-2@B]", 3, 2, 3, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set := newSet(3, appsv1.RetainPersistentVolumeClaimRetentionPolicyType, appsv1.RetainPersistentVolumeClaimRetentionPolicyType)
			set.Spec.VolumeClaimTemplates = nil
			set.Spec.Template.Spec.TerminationGracePeriodSeconds = tt.grace
			if tt.finalizer {
				set.Spec.Template.Finalizers = []string{"example.com/hold"}
			}
			ru := &appsv1.RollingUpdateStatefulSetStrategy{}
			if tt.maxUnavailable > 0 {
				mu := intstr.FromInt32(tt.maxUnavailable)
				ru.MaxUnavailable = &mu
			}
			set.Spec.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType, RollingUpdate: ru}
			if tt.parallel {
				set.Spec.PodManagementPolicy = appsv1.ParallelPodManagement
			}
			pods := &createdPods{}
			var control controller.PodControl = pods
			if tt.refused {
				control = &pods.fakePods // creates come back without a UID: the tolerant control's "already there"
			}
			c := updateController(control)
			revs := revisions{current: rev("A"), update: rev("B"), currentSet: set, updateSet: set}
			status, err := c.update(context.Background(), set,
				[]*corev1.Pod{setPod(set, 0, "A", true), setPod(set, 1, "A", true), setPod(set, 2, "A", true)}, revs, &controller.Takes{}, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			if got := fmt.Sprint(pods.actions); got != tt.want {
				t.Errorf("actions %s, want %s", got, tt.want)
			}
			got := [4]int32{status.Replicas, status.CurrentReplicas, status.ReadyReplicas, status.UpdatedReplicas}
			if want := [4]int32{tt.replicas, tt.current, tt.ready, tt.updated}; got != want {
				t.Errorf("status replicas, current, ready, updated %v, want %v", got, want)
			}
		})
	}
}

// With the MaxUnavailableStatefulSet gate off, a set that kept maxUnavailable 2 from
// when the gate was on rolls as upstream's controller then does: one pod at a time,
// the highest first, the next only once it is back.
func TestUpdateIgnoresMaxUnavailableWithTheGateOff(t *testing.T) {
	for _, tt := range []struct {
		name string
		gate bool
		want string
	}{
		{"gate on: web-2 and web-1 go together", true, "[delete web-2 delete web-1 create web-1@B]"},
		{"gate off: web-2 alone", false, "[delete web-2 create web-2@B]"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			set := newSet(3, appsv1.RetainPersistentVolumeClaimRetentionPolicyType, appsv1.RetainPersistentVolumeClaimRetentionPolicyType)
			set.Spec.VolumeClaimTemplates = nil
			set.Spec.Template.Spec.TerminationGracePeriodSeconds = new(int64)
			mu := intstr.FromInt32(2)
			set.Spec.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType,
				RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{MaxUnavailable: &mu}}
			pods := &createdPods{}
			c := updateController(pods)
			c.SetFeatureGates(gates.Gates{MaxUnavailableStatefulSet: tt.gate})
			revs := revisions{current: rev("A"), update: rev("B"), currentSet: set, updateSet: set}
			if _, err := c.update(context.Background(), set,
				[]*corev1.Pod{setPod(set, 0, "A", true), setPod(set, 1, "A", true), setPod(set, 2, "A", true)}, revs, &controller.Takes{}, time.Now()); err != nil {
				t.Fatal(err)
			}
			if got := fmt.Sprint(pods.actions); got != tt.want {
				t.Errorf("actions %s, want %s", got, tt.want)
			}
		})
	}
}

// updateController is a Controller for update's tests: pods written through pods, claims
// read from an empty cache.
func updateController(pods controller.PodControl) *Controller {
	client := fake.NewClientset()
	factory := informers.NewSharedInformerFactory(client, 0)
	return &Controller{client: client, recorder: record.NewFakeRecorder(10), now: time.Now, pods: pods,
		claims: newClaimKeeper(client, factory.Core().V1().PersistentVolumeClaims().Lister(), record.NewFakeRecorder(10))}
}
