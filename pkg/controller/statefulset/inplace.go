package statefulset

import (
	"context"
	"sort"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/kroll-dev/kroll/pkg/controller"
	"github.com/kroll-dev/kroll/pkg/inplace"
)

// In-place updates of a StatefulSet's pods (see pkg/inplace): the verdict on the change,
// each stale pod's steps towards the update revision (the rolling update picks the pods,
// in update.go), and pods left mid-way moved on first.

// inPlaceFields names the fields that keep p's template from becoming the update
// revision's in place (a pod whose revision is gone: the whole template).
func (r revisions) inPlaceFields(set *appsv1.StatefulSet, p *corev1.Pod) []string {
	from, ok := r.template(set, p.Labels[RevisionLabel])
	if !ok {
		return []string{"spec.template (the pod's revision is gone)"}
	}
	return inplace.DiffResize(from, &r.updateSet.Spec.Template, inplace.ResizeRules{})
}

// settleInPlace moves on every pod of an opted-in set that an in-place update left
// mid-way (out of service, patched and restarting, or with a resize due or not yet
// made) or that waits to be put in service; acted says a write was made (one kind of
// change per sync). A pod whose node cannot make its resize is recreated
// (InPlaceIfPossible) or left as it is (InPlaceOnly; inPlaceVerdict names it).
func (c *Controller) settleInPlace(ctx context.Context, set *appsv1.StatefulSet, s slots, revs revisions, mode inplace.Mode, now time.Time) (bool, error) {
	acted := false
	for _, p := range append(append([]*corev1.Pod(nil), s.replicas...), s.condemned...) {
		if !isCreated(p) || isTerminating(p) {
			continue
		}
		target, ok := inPlaceTarget(set, p, revs)
		if !ok {
			continue
		}
		_, mid := inplace.StateOf(p)
		gated := inplace.HasGate(p) && (mid || inplace.GateStatus(p) != corev1.ConditionTrue)
		resizing := mode != inplace.Off && inplace.Resizing(p, target.Template)
		if !gated && !resizing {
			continue
		}
		if resizing {
			switch recreate, hold := c.resizeUnfit(set, p, target, mode); {
			case recreate:
				if err := c.pods.DeletePod(ctx, set, p); err != nil {
					return true, err
				}
				acted = true
				continue
			case hold:
				continue
			}
		}
		r, err := inplace.Writer{Pods: c.pods}.Step(ctx, p, target, inplace.GracePeriod(set.Annotations), now)
		if err != nil {
			return true, err
		}
		if r.TookOut {
			c.takenOut.Record(p, now)
		}
		if r.After > 0 {
			c.queue.EnqueueAfter(set, r.After)
		}
		acted = acted || (r.Step != inplace.Wait && r.Step != inplace.Done)
	}
	return acted, nil
}

// unfitResize is what a set does with pod p whose node cannot make its resize to
// target, given the fit (controller.ResizeFit; "" when it can, or nothing is due):
// recreate it (InPlaceIfPossible: the pod is deleted and made again from the update
// revision, where the scheduler finds room), or hold it (InPlaceOnly: nothing is
// written to it). Both false: step it.
func unfitResize(mode inplace.Mode, unfit string) (recreate, hold bool) {
	switch {
	case unfit == "" || mode == inplace.Off:
		return false, false
	case mode == inplace.Only:
		return false, true
	}
	return true, false
}

// resizeUnfit judges whether p's node can make its resize to target (unfitResize),
// announcing a recreation with a Warning event ResizeUnfit that names the node and
// the shortfall.
func (c *Controller) resizeUnfit(set *appsv1.StatefulSet, p *corev1.Pod, target inplace.Target, mode inplace.Mode) (recreate, hold bool) {
	unfit := controller.ResizeFit(c.nodes, c.podIndex, p, target.Template)
	recreate, hold = unfitResize(mode, unfit)
	if recreate {
		c.recorder.Eventf(set, corev1.EventTypeWarning, ReasonResizeUnfit, "%s; recreating it", unfit)
	}
	return recreate, hold
}

// ReasonResizeUnfit is the event of a pod recreated because its node cannot make its
// in-place resize.
const ReasonResizeUnfit = "ResizeUnfit"

// inPlaceTarget is what pod p is (being) updated to: the update revision once it is
// mid-update to it, else the revision it is labelled with (a pod whose update was
// overtaken by another change is put back as it is, and updated afresh).
func inPlaceTarget(set *appsv1.StatefulSet, p *corev1.Pod, revs revisions) (inplace.Target, bool) {
	name := p.Labels[RevisionLabel]
	if st, mid := inplace.StateOf(p); mid && st.Revision == revs.update.Name {
		name = revs.update.Name
	}
	return revs.target(set, p, name)
}

// target is the in-place update of p to revision name, from the revision p is
// labelled with (whose labels and annotations p loses where name's template has none).
func (r revisions) target(set *appsv1.StatefulSet, p *corev1.Pod, name string) (inplace.Target, bool) {
	template, ok := r.template(set, name)
	if !ok {
		return inplace.Target{}, false
	}
	t := inplace.Target{Revision: name, Template: template, Labels: map[string]string{RevisionLabel: name}}
	if from, ok := r.template(set, p.Labels[RevisionLabel]); ok {
		t.From = from
	}
	return t, true
}

// inPlaceVerdict judges, for an opted-in RollingUpdate set, the change from the
// revisions of its stale pods at or above the partition to the update revision,
// announcing news as an event; the InPlaceUpdate condition becomes it (nil:
// unchanged, no reason: removed). Under InPlaceOnly, pods whose node cannot make their
// resize block the rollout, named (inplace.JudgeInfeasible). With no stale pod left,
// a change made in place is complete once every pod at or above the partition is
// healthy, back in service and resized.
func (c *Controller) inPlaceVerdict(set *appsv1.StatefulSet, s slots, revs revisions, mode inplace.Mode, now time.Time) *inplace.Verdict {
	if mode == inplace.Off {
		return &inplace.Verdict{}
	}
	if set.Spec.UpdateStrategy.Type != appsv1.RollingUpdateStatefulSetStrategyType {
		return nil
	}
	seen := map[string]bool{}
	var fields, unfit []string
	judged := false
	for i := int(partitionOf(set)); i < len(s.replicas); i++ {
		p := s.replicas[i]
		if !isCreated(p) {
			continue
		}
		target, ok := inPlaceTarget(set, p, revs)
		if p.Labels[RevisionLabel] != revs.update.Name {
			judged = true
			podFields := revs.inPlaceFields(set, p)
			for _, f := range podFields {
				if !seen[f] {
					seen[f] = true
					fields = append(fields, f)
				}
			}
			if len(podFields) > 0 {
				continue
			}
			target, ok = revs.target(set, p, revs.update.Name)
		}
		if ok && mode == inplace.Only && !isTerminating(p) {
			if why := controller.ResizeFit(c.nodes, c.podIndex, p, target.Template); why != "" {
				unfit = append(unfit, why)
			}
		}
	}
	if len(fields) == 0 {
		if v, blocked := inplace.JudgeInfeasible(mode, unfit); blocked {
			return c.announce(set, v)
		}
	}
	if !judged {
		for i := int(partitionOf(set)); i < len(s.replicas); i++ {
			if p := s.replicas[i]; !isHealthy(set, p, now) || c.takenOut.Out(p, now) || resizing(set, p, revs) {
				return nil
			}
		}
		return inplace.Finish(conditions.Current(set.Status.Conditions))
	}
	sort.Strings(fields)
	v, _ := inplace.Judge(mode, fields)
	return c.announce(set, v)
}

// announce records v as an event when the InPlaceUpdate condition does not say it yet.
func (c *Controller) announce(set *appsv1.StatefulSet, v inplace.Verdict) *inplace.Verdict {
	if inplace.IsNews(v, conditions.Current(set.Status.Conditions)) {
		c.recorder.Eventf(set, v.EventType, v.Reason, "%s", v.Message)
	}
	return &v
}

// conditions is how in-place updates read and write a StatefulSet's conditions.
var conditions = inplace.Conditions[appsv1.StatefulSetCondition]{
	View: func(c appsv1.StatefulSetCondition) (string, inplace.Condition) {
		return string(c.Type), inplace.Condition{Status: c.Status, Reason: c.Reason, Message: c.Message, LastTransitionTime: c.LastTransitionTime}
	},
	Make: func(c inplace.Condition) appsv1.StatefulSetCondition {
		return appsv1.StatefulSetCondition{Type: inplace.ConditionType, Status: c.Status, Reason: c.Reason, Message: c.Message, LastTransitionTime: c.LastTransitionTime}
	},
}

// updateInPlace starts updating the stale pod p in place, if set opted in and the
// change from p's revision allows it; inPlace false means: replace it as usual.
// InPlaceOnly with a change that does not allow it touches nothing (inPlace true).
// Under budget (a set that respects its budgets), a pod not yet taken out of service
// whose update restarts a container first takes its disruption; kept: a budget
// refused it, and p is left as it is this sync (recorded in the sync's takes).
func (c *Controller) updateInPlace(ctx context.Context, set *appsv1.StatefulSet, p *corev1.Pod, revs revisions, mode inplace.Mode, budget *controller.InPlaceBudget, now time.Time) (inPlace, kept bool, err error) {
	if mode == inplace.Off {
		return false, false, nil
	}
	if fields := revs.inPlaceFields(set, p); len(fields) > 0 {
		return mode == inplace.Only, false, nil // announced by inPlaceVerdict
	}
	target, _ := revs.target(set, p, revs.update.Name) // the update revision is always known
	// Judged before the first write (the image and label patch comes before the
	// resize): InPlaceOnly writes nothing to a pod its node cannot resize.
	if recreate, hold := c.resizeUnfit(set, p, target, mode); recreate || hold {
		return hold, false, nil
	}
	// The disruption is taken before the first write: the take-out of service (with a
	// grace period) or the image patch. A pod taken out already took it then.
	if _, mid := inplace.StateOf(p); !mid {
		if may, err := budget.Restart(ctx, []*corev1.Pod{p}, target.Template); err != nil || len(may) == 0 {
			return true, err == nil, err
		}
	}
	r, err := inplace.Writer{Pods: c.pods}.Step(ctx, p, target, inplace.GracePeriod(set.Annotations), now)
	if r.TookOut {
		c.takenOut.Record(p, now)
	}
	if r.After > 0 {
		c.queue.EnqueueAfter(set, r.After)
	}
	return true, false, err
}

// outOfService tells whether p counts as unavailable: not available, terminating, or
// out of service for an in-place update (see inplace.TakenOut).
func (c *Controller) outOfService(set *appsv1.StatefulSet, p *corev1.Pod, now time.Time) bool {
	return c.takenOut.Out(p, now) || isUnavailable(set, p, now)
}

// resizing tells whether p of an opted-in set is being resized in place to the
// revision it is (being) updated to: due, or written and not yet made
// (inplace.Resizing). Such a pod counts against maxUnavailable (and holds the next
// ordinal without it) even when no container restarts and it keeps serving: an
// application may read its limits once at start and go unready or slow under its new
// cgroup, and the budget keeps that to as many pods as the set accepts losing (with
// maxUnavailable 1, web-3 is resized, seen through, then web-2). A resize that
// restarts a container takes the pod out of service as an image change does, and
// counts as that already. Nor does the pod count as updated until the resize is
// made, so that `kubectl rollout status` waits for it.
func resizing(set *appsv1.StatefulSet, p *corev1.Pod, revs revisions) bool {
	if mode, _ := inplace.ModeOf(set.Annotations); mode == inplace.Off || !isCreated(p) || isTerminating(p) {
		return false
	}
	target, ok := inPlaceTarget(set, p, revs)
	return ok && inplace.Resizing(p, target.Template)
}
