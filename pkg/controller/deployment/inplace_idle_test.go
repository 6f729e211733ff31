package deployment

import (
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/kroll-dev/kroll/pkg/controller"
	"github.com/kroll-dev/kroll/pkg/inplace"
)

// A pass has nothing in place to do, and skips reading every pod for it, only when
// its Deployment is not opted in, no ReplicaSet holds a hand-over record and no pod
// carries the in-place readiness gate (a pod of an earlier opt-in left to settle).
func TestInPlaceIdle(t *testing.T) {
	tests := []struct {
		name  string
		edit  func(pod *corev1.Pod, rsAnnotations, deploymentAnnotations map[string]string)
		idles bool
	}{
		{"not opted in, plain pods", func(*corev1.Pod, map[string]string, map[string]string) {}, true},
		{"opted in", func(_ *corev1.Pod, _ map[string]string, d map[string]string) {
			d[inplace.StrategyAnnotation] = string(inplace.IfPossible)
		}, false},
		{"a hand-over record left on a ReplicaSet", func(_ *corev1.Pod, rs map[string]string, _ map[string]string) {
			rs[inplace.LeavingAnnotation] = "web-a"
		}, false},
		{"a pod with the readiness gate", func(p *corev1.Pod, _ map[string]string, _ map[string]string) {
			p.Spec.ReadinessGates = append(p.Spec.ReadinessGates, corev1.PodReadinessGate{ConditionType: inplace.ReadinessGate})
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := newDeployment(2, "nginx:1.16.1", "1", "0")
			d.Annotations = map[string]string{}
			rs := replicaSetOf(d, "nginx:1.14.2", 1, 2, 2, 0)
			pod := podOf(rs, "web-a")
			tt.edit(pod, rs.Annotations, d.Annotations)
			f := newFixture(t, []runtime.Object{d, rs, pod, podOf(rs, "web-b")}...)
			if got := inPlaceIdle(newPass(d, []*appsv1.ReplicaSet{rs}), func(rs *appsv1.ReplicaSet) bool { return controller.HasGatedPods(f.c.podIndexer, string(rs.UID)) }); got != tt.idles {
				t.Errorf("idle %v, want %v", got, tt.idles)
			}
		})
	}
}

// A take-over wakes the Deployment only when the pod arrives on a ReplicaSet whose
// resources it lacks (its resize is the Deployment's to write), not when an image
// change's take-over or another update of a pod leaves the Deployment nothing to do.
func TestArrivedToResize(t *testing.T) {
	d := newDeployment(2, "nginx:1.16.1", "1", "0")
	old := replicaSetOf(d, "nginx:1.14.2", 1, 2, 2, 0)
	sameResources := replicaSetOf(d, "nginx:1.16.1", 2, 0, 0, 0)
	moreCPU := replicaSetOf(d, "nginx:1.14.2", 3, 0, 0, 0)
	moreCPU.Name, moreCPU.UID = "web-more-cpu", "rs-more-cpu"
	moreCPU.Spec.Template.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m")}
	notCached := replicaSetOf(d, "nginx:1.14.2", 4, 0, 0, 0)
	notCached.Name, notCached.UID = "web-gone", "rs-gone"
	notCached.Spec.Template.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m")}
	f := newFixture(t, d, old, sameResources, moreCPU)

	before := podOf(old, "web-a")
	tests := []struct {
		name  string
		to    *appsv1.ReplicaSet
		wakes bool
	}{
		{"taken over by a ReplicaSet asking for more cpu", moreCPU, true},
		{"taken over by a ReplicaSet with the pod's resources (an image change)", sameResources, false},
		{"updated, still its old ReplicaSet's", old, false},
		{"taken over by a ReplicaSet not in the cache", notCached, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			after := before.DeepCopy()
			after.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(tt.to, appsv1.SchemeGroupVersion.WithKind("ReplicaSet"))}
			if got := f.c.arrivedToResize(before, after) != nil; got != tt.wakes {
				t.Errorf("wakes %v, want %v", got, tt.wakes)
			}
		})
	}
}

// takerScene is a Deployment whose ReplicaSet web-more-cpu (asking for more cpu than
// its pods have) names web-a, web-b and web-gone arriving: web-a has arrived, web-b is
// still the old ReplicaSet's, web-gone is gone.
func takerScene(t *testing.T) (*fixture, *appsv1.Deployment, *appsv1.ReplicaSet) {
	d := newDeployment(2, "nginx:1.16.1", "1", "0")
	old := replicaSetOf(d, "nginx:1.14.2", 1, 2, 2, 0)
	taker := replicaSetOf(d, "nginx:1.14.2", 2, 0, 0, 0)
	taker.Name, taker.UID = "web-more-cpu", "rs-more-cpu"
	inplace.SetNames(taker, inplace.ArrivingAnnotation, sets.New("web-a", "web-b", "web-gone"))
	return newFixture(t, d, old, taker, podOf(taker, "web-a"), podOf(old, "web-b")), d, taker
}

// The Deployment gathers arrivals for half a second before resizing them, but not
// after the last pod its new ReplicaSet names arriving: nothing more comes.
func TestGatherAfter(t *testing.T) {
	f, _, taker := takerScene(t)
	arrived := podOf(taker, "web-a")
	if got := f.c.gatherAfter(arrived, taker); got != arrivalsGathered {
		t.Errorf("web-b still on its way: wait %v, want %v", got, arrivalsGathered)
	}
	if err := f.c.podIndexer.Update(podOf(taker, "web-b")); err != nil {
		t.Fatal(err)
	}
	if got := f.c.gatherAfter(arrived, taker); got != 0 {
		t.Errorf("web-b arrived, web-gone gone: wait %v, want none", got)
	}
}

// Passes woken by arrivals run half a second apart at most: the first arrival after a
// quiet spell a tenth of a second later (the rest of the take-over sync's burst comes
// with it), those that follow at the next slot, the last pod named arriving at once.
func TestResizePassAfter(t *testing.T) {
	f, d, taker := takerScene(t)
	arrived := podOf(taker, "web-a")
	start := time.Now()
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	for _, step := range []struct {
		at, want time.Duration
	}{
		{0, ms(100)},        // the round's first: its burst gathered
		{ms(50), ms(50)},    // the same pass
		{ms(150), ms(450)},  // the slot half a second after it
		{ms(300), ms(300)},  // the same slot
		{ms(700), ms(400)},  // the slot after that
		{ms(3000), ms(100)}, // after a quiet spell: a round's first again
		{ms(3200), ms(400)}, // web-b still on its way
	} {
		f.c.now = func() time.Time { return start.Add(step.at) }
		if got := f.c.resizePassAfter(d, arrived, taker); got != step.want {
			t.Errorf("arrival at %v: pass in %v, want %v", step.at, got, step.want)
		}
	}
	if err := f.c.podIndexer.Update(podOf(taker, "web-b")); err != nil {
		t.Fatal(err)
	}
	if got := f.c.resizePassAfter(d, podOf(taker, "web-b"), taker); got != 0 {
		t.Errorf("the last pod named arriving: pass in %v, want at once", got)
	}
}
