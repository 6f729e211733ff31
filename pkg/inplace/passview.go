package inplace

import (
	"sort"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/kroll-dev/kroll/pkg/rollout"
)

// passView is a HandOverView with where each pod is and what each record says.
type passView struct {
	HandOverView
	// owner is the ReplicaSet that controls each pod, by pod name.
	owner map[string]*appsv1.ReplicaSet
	// leavingOf is each ReplicaSet's LeavingAnnotation without the pods that have left it.
	leavingOf map[types.UID]sets.Set[string]
}

func newPassView(v HandOverView) passView {
	h := passView{HandOverView: v, owner: map[string]*appsv1.ReplicaSet{}, leavingOf: map[types.UID]sets.Set[string]{}}
	all := h.all()
	for _, rs := range all {
		for _, pod := range rs.Pods {
			h.owner[pod.Name] = rs.RS
		}
	}
	for _, rs := range all {
		leaving := sets.New[string]()
		for name := range Names(rs.RS, LeavingAnnotation) {
			if h.owner[name] == rs.RS {
				leaving.Insert(name)
			}
		}
		h.leavingOf[rs.RS.UID] = leaving
	}
	return h
}

// all is the new ReplicaSet (if any) and the old ones.
func (h passView) all() []ReplicaSetPods {
	if h.New == nil {
		return h.Old
	}
	return append([]ReplicaSetPods{*h.New}, h.Old...)
}

// leaving is rs's LeavingAnnotation without the pods that have left it (shared: not to
// be changed).
func (h passView) leaving(rs *appsv1.ReplicaSet) sets.Set[string] {
	return h.leavingOf[rs.UID]
}

// arriving is rs's ArrivingAnnotation without the pods that have arrived, or never
// will: those still on their way are pods of another ReplicaSet that names them leaving.
func (h passView) arriving(rs *appsv1.ReplicaSet) sets.Set[string] {
	out := sets.New[string]()
	for name := range Names(rs, ArrivingAnnotation) {
		if from := h.owner[name]; from != nil && from != rs && h.leaving(from).Has(name) {
			out.Insert(name)
		}
	}
	return out
}

// serving tells whether pod counts as available: available, not out of service for an
// in-place update (by what the cache shows, or by a write it does not show yet), and
// not resizing to its ReplicaSet's template (see PlanHandOver for why a resize that
// restarts nothing counts too).
func (h passView) serving(pod *corev1.Pod) bool {
	if h.TakenOut.Has(pod.UID) || OutOfServiceNow(pod) || !rollout.IsPodAvailable(pod, h.MinReadySeconds, h.Now) {
		return false
	}
	owner := h.owner[pod.Name]
	return owner == nil || !Resizing(pod, &owner.Spec.Template)
}

// tally counts rs's serving pods other than out, up to the available replicas rs
// reports.
func (h passView) tally(rs ReplicaSetPods, out sets.Set[string]) int32 {
	var n int32
	for _, pod := range rs.Pods {
		if !out.Has(pod.Name) && h.serving(pod) {
			n++
		}
	}
	return min(n, rs.RS.Status.AvailableReplicas)
}

// pick chooses old pods to update, by name: those not serving first (they cost
// nothing), then serving ones while fewer than max(1, MaxUnavailable) of Desired are without a
// serving pod. Pods out of service by a write the cache does not show yet are left.
// eligible is how many could be picked, budget aside.
func (h passView) pick(candidates []*corev1.Pod, serving int32) (picked []*corev1.Pod, eligible int) {
	var pods []*corev1.Pod
	for _, pod := range candidates {
		if !h.TakenOut.Has(pod.UID) && !OutOfServiceNow(pod) {
			pods = append(pods, pod)
		}
	}
	// By name, so that the order is the same whatever order the cache lists pods in, and
	// `kroll rollout plan` can say which pods go in which batch.
	sort.Slice(pods, func(i, j int) bool { return pods[i].Name < pods[j].Name })
	pods = NotServingFirst(pods, h.serving)
	return WithinBudget(pods, h.serving, int(max(1, h.MaxUnavailable)), int(h.Desired-serving)), len(pods)
}

// minRound is the fewest pods picked at once while earlier ones are on their way:
// half of max(1, MaxUnavailable), rounded up. Room frees a pod at a time as the last
// round's pods come back into service, and a pick of the first few would run as a
// round of its own (two record writes, and a take-over sync the next round waits
// behind); waiting for half the budget keeps the rounds few and large. With
// maxUnavailable 1 or 2 every pick goes at once.
func (h passView) minRound() int {
	return int(max(1, h.MaxUnavailable)+1) / 2
}

// underWay tells whether an old ReplicaSet names a pod leaving that has not arrived
// yet: its take-over will follow without the Deployment, and the next pick may wait
// for it. (A pod that is gone leaves the names.)
func (h passView) underWay() bool {
	for _, rs := range h.Old {
		if h.leaving(rs.RS).Len() > 0 {
			return true
		}
	}
	return false
}

// unreported tells whether the new ReplicaSet's controller has pods its status does
// not count yet, or has not acted on its spec: its status write follows (and wakes the
// Deployment), and counts as available the pods that came back meanwhile. A pass run
// before it, on the pods a take-over sync just moved, finds room for only the few its
// last status counted, and the next pick may wait for the rest.
func (h passView) unreported() bool {
	return !Observed(h.New.RS) || h.New.RS.Status.Replicas < int32(len(h.New.Pods))
}

// settle returns rs's pods to put back in service: mid-update or with the gate not
// True, and running their images, ready (NextStep says PutBack). A pod of the new
// ReplicaSet (old false) loses its State only once that ReplicaSet's size, as its
// controller observed it, counts every pod it has: the State is what keeps a pod it
// took over, and does not count yet, from being deleted.
func (h passView) settle(rs ReplicaSetPods, old bool) []*corev1.Pod {
	want := Target{Template: &rs.RS.Spec.Template}.Want()
	counted := old || (rollout.Replicas(rs.RS.Spec.Replicas) >= int32(len(rs.Pods)) && Observed(rs.RS))
	var out []*corev1.Pod
	for _, pod := range rs.Pods {
		if !NeedsSettling(pod) {
			continue
		}
		_, mid := StateOf(pod)
		if step, _ := NextStep(pod, want, 0, h.Now); step == PutBack && (!mid || counted) {
			out = append(out, pod)
		}
	}
	return out
}

// finish is the plan when the change is not made in place: names of pods that have
// moved (or never will) leave the records; once no record changes, pods are put back
// where they are. Old ReplicaSets are going away, and their pods go the usual way once
// put back.
func (h passView) finish() HandOverPlan {
	var p HandOverPlan
	for _, rs := range h.all() {
		if rs.RS.Annotations[LeavingAnnotation] == "" && rs.RS.Annotations[ArrivingAnnotation] == "" {
			continue
		}
		p.record(Record{RS: rs.RS, Replicas: rollout.Replicas(rs.RS.Spec.Replicas), Leaving: h.leaving(rs.RS), Arriving: h.arriving(rs.RS)})
	}
	if len(p.Records) > 0 {
		return p
	}
	for _, rs := range h.all() {
		p.PutBack = append(p.PutBack, h.settle(rs, h.New == nil || rs.RS != h.New.RS)...)
	}
	return p
}

// NeedsSettling tells a pod mid-update, or with the gate and not (yet) in service.
func NeedsSettling(pod *corev1.Pod) bool {
	_, mid := StateOf(pod)
	return mid || (HasGate(pod) && GateStatus(pod) != corev1.ConditionTrue)
}

// Observed tells whether the ReplicaSet controller has acted on rs's current spec.
func Observed(rs *appsv1.ReplicaSet) bool {
	return rs.Status.ObservedGeneration >= rs.Generation
}
