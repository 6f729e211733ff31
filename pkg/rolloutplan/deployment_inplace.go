package rolloutplan

import (
	"sort"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/kroll-dev/kroll/pkg/inplace"
	"github.com/kroll-dev/kroll/pkg/rollout"
)

// The in-place part of the Deployment replay: the controller's own planner
// (inplace.PlanHandOver) on the model of the ReplicaSets.

// inPlaceFields are the fields that keep the old ReplicaSets' templates (those with
// pods) from becoming next's in place; judged is false when no old pod is left, and
// resize tells that some old pods' containers change cpu or memory.
func (s *deploymentSim) inPlaceFields() (fields []string, judged, resize bool) {
	seen := map[string]bool{}
	for _, r := range s.old() {
		if len(r.pods) == 0 {
			continue
		}
		judged = true
		resize = resize || len(inplace.ResourceChanges(&r.rs.Spec.Template, &s.d.Spec.Template)) > 0
		for _, f := range inPlaceFields(&r.rs.Spec.Template, &s.d.Spec.Template) {
			if !seen[f] {
				seen[f] = true
				fields = append(fields, f)
			}
		}
	}
	sort.Strings(fields)
	return fields, judged, resize
}

// inPlace replays the in-place update with the controller's own planner
// (inplace.PlanHandOver), pass by pass, feeding each plan's result back as the next
// view: the records are written, the ReplicaSets' controllers observe them, the new one
// takes over the pods named arriving (one batch: those pods, updated in place) and
// creates pods for the replicas the old ones no longer keep. Each batch completes (its
// pods serve again) before the next pass; no grace period is modelled: it delays each
// pod, it does not change the order. With 10 replicas, maxUnavailable 2 and 2 pods not
// available: those 2 first, then 2 at a time.
func (s *deploymentSim) inPlace() {
	s.adoptNew()
	for _, r := range s.rss {
		n := int32(len(r.pods))
		if r.rs.Spec.Replicas == nil || r == s.new && *r.rs.Spec.Replicas < n {
			r.rs.Spec.Replicas = &n
		}
	}
	for range s.passLimit() {
		decision := s.decide()
		view := s.handOverView()
		view.Partition = decision.Partition
		plan := inplace.PlanHandOver(view)
		if plan.Empty() {
			if s.held(decision) {
				continue
			}
			return
		}
		for _, rec := range plan.Records {
			rec.RS.Spec.Replicas = &rec.Replicas
			inplace.SetNames(rec.RS, inplace.LeavingAnnotation, rec.Leaving)
			inplace.SetNames(rec.RS, inplace.ArrivingAnnotation, rec.Arriving)
		}
		s.takeOver()
		if grow := int(*s.new.rs.Spec.Replicas) - len(s.new.pods) - inplace.Names(s.new.rs, inplace.ArrivingAnnotation).Len(); grow > 0 {
			s.resize(s.new, len(s.new.pods)+grow)
		}
		s.flush()
	}
}

// takeOver is the new ReplicaSet's controller: each pod it names arriving that an old
// one names leaving moves to it, updated in place, and resized from its old
// ReplicaSet's resources to the new one's.
func (s *deploymentSim) takeOver() {
	arriving := inplace.Names(s.new.rs, inplace.ArrivingAnnotation)
	for _, r := range s.old() {
		leaving := inplace.Names(r.rs, inplace.LeavingAnnotation)
		resize := inplace.ResizeText(&r.rs.Spec.Template, &s.new.rs.Spec.Template)
		for _, p := range append([]*simPod(nil), r.pods...) {
			if arriving.Has(p.pod.Name) && leaving.Has(p.pod.Name) {
				s.pending = append(s.pending, PodOp{Op: InPlace, Pod: p.pod.Name, Revision: s.new.rs.Name, Resize: resize})
				s.move(p, r)
			}
		}
	}
}

// handOverView is the model as inplace.PlanHandOver reads it: each ReplicaSet's
// controller has observed its spec and reports its pods' availability.
func (s *deploymentSim) handOverView() inplace.HandOverView {
	v := inplace.HandOverView{
		Desired: rollout.DesiredReplicas(s.d), MaxUnavailable: rollout.DeploymentFenceposts(s.d).MaxUnavailable,
		Now: s.now, InPlace: true, Start: true, TakenOut: sets.New[k8stypes.UID](),
	}
	view := func(r *simRS) inplace.ReplicaSetPods {
		r.rs.Status.ObservedGeneration = r.rs.Generation
		r.rs.Status.AvailableReplicas = 0
		rp := inplace.ReplicaSetPods{RS: r.rs}
		for _, p := range r.pods {
			if p.available {
				r.rs.Status.AvailableReplicas++
			}
			rp.Pods = append(rp.Pods, servingPod(p, r.rs, s.now))
		}
		return rp
	}
	nv := view(s.new)
	v.New = &nv
	for _, r := range s.old() {
		v.Old = append(v.Old, view(r))
	}
	return v
}

// servingPod is p as the planner reads it: controlled by rs, running rs's images, Ready
// (for an hour) when available.
func servingPod(p *simPod, rs *appsv1.ReplicaSet, now time.Time) *corev1.Pod {
	ready := corev1.ConditionFalse
	if p.available {
		ready = corev1.ConditionTrue
	}
	q := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: p.pod.Name, Namespace: rs.Namespace, UID: p.pod.UID, Labels: rs.Spec.Template.Labels,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(rs, appsv1.SchemeGroupVersion.WithKind("ReplicaSet"))}},
		Spec: corev1.PodSpec{NodeName: p.pod.Spec.NodeName, Containers: rs.Spec.Template.Spec.Containers, InitContainers: rs.Spec.Template.Spec.InitContainers},
		Status: corev1.PodStatus{Phase: corev1.PodRunning,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: ready, LastTransitionTime: metav1.NewTime(now.Add(-time.Hour))}}},
	}
	for _, c := range rs.Spec.Template.Spec.Containers {
		q.Status.ContainerStatuses = append(q.Status.ContainerStatuses, corev1.ContainerStatus{Name: c.Name, Image: c.Image, Ready: p.available,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}})
	}
	return q
}

// move hands p from r to the new ReplicaSet, updated and (once the batch completes)
// available.
func (s *deploymentSim) move(p *simPod, r *simRS) {
	for i, q := range r.pods {
		if q == p {
			r.pods = append(r.pods[:i:i], r.pods[i+1:]...)
			break
		}
	}
	p.available = true
	s.new.pods = append(s.new.pods, p)
}
