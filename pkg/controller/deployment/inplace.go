package deployment

import (
	"context"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/kroll-dev/kroll/pkg/controller"
	"github.com/kroll-dev/kroll/pkg/inplace"
)

// The in-place hand-over is decided by inplace.PlanHandOver (the protocol is in the
// package doc of pkg/inplace); this file reads its view from the caches and applies
// its plan.

// reasonResizeUnfit is the event recorded when a pod is recreated because its node
// cannot make its in-place resize.
const reasonResizeUnfit = "ResizeUnfit"

// inPlacePass is what advanceInPlace did.
type inPlacePass struct {
	// handled: the rollout was taken care of (in place, or blocked); the rolling update
	// must not run this pass.
	handled bool
	// acted: something was written.
	acted bool
	// recording: once this pass's writes are made, a pick is half recorded (see
	// inplace.HandOverPlan.Recording).
	recording bool
}

// advanceInPlace moves in-place updates on: it plans the pass (inplace.PlanHandOver)
// and applies the plan. When p's change is made in place this is the rollout step
// (handled; the caller writes the status) and, with start, more pods are picked;
// otherwise hand-overs under way finish and pods are put back where they are.
func (c *Controller) advanceInPlace(ctx context.Context, p *pass, start bool) (inPlacePass, error) {
	if inPlaceIdle(p, func(rs *appsv1.ReplicaSet) bool { return controller.HasGatedPods(c.podIndexer, string(rs.UID)) }) {
		return inPlacePass{}, nil
	}
	view := c.handOverView(p, start)
	budget := c.budgetFor(p, view)
	if budget != nil {
		view.Disrupt = budget.disrupt
	}
	plan := inplace.PlanHandOver(view)
	// InPlaceOnly, and pods whose node cannot make their resize: the rollout is blocked
	// naming them (the others still move), until room frees.
	if v, blocked := inplace.JudgeInfeasible(inPlaceMode(p.d), plan.Blocked); blocked {
		p.verdict, p.judged = v, true
	}
	c.announceVerdict(p)
	acted, err := c.applyHandOver(ctx, p, plan, budget)
	if err != nil {
		return inPlacePass{acted: acted}, err
	}
	c.settleInPlaceBudget(p, budget)
	handled, cleanup := inPlaceOutcome(p, view.InPlace, acted)
	if cleanup {
		err = c.cleanupHistory(ctx, p.d, p.oldRSs)
	}
	return inPlacePass{handled: handled, acted: acted, recording: plan.Recording}, err
}

// handOverView is what the caches show of p for inplace.PlanHandOver.
func (c *Controller) handOverView(p *pass, start bool) inplace.HandOverView {
	now := c.now()
	v := handOverSettings(p, start, now)
	// Each node's pods are summed once for the pass, however many of its pods it judges.
	rooms := &controller.NodeRooms{Nodes: c.nodes, Pods: c.podIndexer}
	v.Unfit = func(pod *corev1.Pod, to *corev1.PodTemplateSpec, resized []*corev1.Pod) string {
		return rooms.Unfit(pod, to, resized...)
	}
	pods := func(rs *appsv1.ReplicaSet) inplace.ReplicaSetPods {
		ps := inplace.ReplicaSetPods{RS: rs, Pods: controller.ActivePods(c.podIndexer, string(rs.UID))}
		for _, pod := range ps.Pods {
			if c.takenOut.Out(pod, now) && !inplace.OutOfServiceNow(pod) {
				v.TakenOut.Insert(pod.UID)
			}
		}
		return ps
	}
	if p.newRS != nil {
		rs := pods(p.newRS)
		v.New = &rs
	}
	for _, rs := range p.oldRSs {
		if rs != nil {
			v.Old = append(v.Old, pods(rs))
		}
	}
	return v
}

// applyHandOver makes plan's writes in order, stopping at the first that fails, and
// remembers the pods it takes out of service or gives away until the cache shows it.
// The budgets' writes (nil budget: none) go before any pod is taken out of service or
// given away: a budget that refuses them (a Conflict) ends the pass with no pod
// disrupted. acted says a write was made.
func (c *Controller) applyHandOver(ctx context.Context, p *pass, plan inplace.HandOverPlan, budget *inPlaceBudget) (acted bool, err error) {
	writer, now := inplace.Writer{Pods: c.pods}, c.now()
	for _, pod := range plan.PutBack {
		if err := writer.PutBack(ctx, pod); err != nil {
			return acted, err
		}
		acted = true
	}
	wrote, err := c.writeBudgets(ctx, budget)
	if acted = acted || wrote; err != nil {
		return acted, err
	}
	for _, out := range plan.TakeOut {
		if err := writer.TakeOut(ctx, out.Pod, out.State); err != nil {
			return acted, err
		}
		c.takenOut.Record(out.Pod, now)
		acted = true
	}
	for _, r := range plan.Records {
		updated, wrote, err := c.record(ctx, p.d, r)
		if err != nil {
			return acted, err
		}
		if wrote {
			p.replace(updated)
		}
		for _, pod := range r.GivenAway {
			c.takenOut.Record(pod, now) // a stale cache still shows it staying
		}
		acted = acted || wrote
	}
	for _, pod := range plan.Resize {
		if err := writer.Resize(ctx, pod, inplace.PlanResize(pod, &p.newRS.Spec.Template)); err != nil {
			return acted, err
		}
		// A pass on a cache that does not show the resize yet would write it again.
		c.takenOut.Record(pod, now)
		acted = true
	}
	for _, unfit := range plan.Recreate {
		// The new ReplicaSet creates its replacement from its template; the scheduler
		// places it on a node with room.
		c.recorder.Eventf(p.d, corev1.EventTypeWarning, reasonResizeUnfit, "%s; recreating it", unfit.Why)
		if err := c.pods.DeletePod(ctx, p.d, unfit.Pod); err != nil {
			return acted, err
		}
		c.takenOut.Record(unfit.Pod, now) // a stale cache still shows it
		acted = true
	}
	if plan.RequeueAfter > 0 {
		c.queue.EnqueueAfter(p.d, plan.RequeueAfter)
	}
	return acted, nil
}

// record writes r: its ReplicaSet's size and hand-over record, in one write (with the
// replicas annotations of d); wrote reports a write.
func (c *Controller) record(ctx context.Context, d *appsv1.Deployment, r inplace.Record) (*appsv1.ReplicaSet, bool, error) {
	return c.resizeReplicaSet(ctx, d, r.RS, r.Replicas, func(next *appsv1.ReplicaSet) bool {
		a := inplace.SetNames(next, inplace.LeavingAnnotation, r.Leaving)
		b := inplace.SetNames(next, inplace.ArrivingAnnotation, r.Arriving)
		return a || b
	})
}

// holdStatus tells whether d's status write waits this pass (statusHold), and looks
// again when the wait ends.
func (c *Controller) holdStatus(d *appsv1.Deployment, recording bool) bool {
	if !recording {
		c.statusHolds.Delete(d.UID)
		return false
	}
	now := c.now()
	since, _ := c.statusHolds.LoadOrStore(d.UID, now)
	hold, left := statusHold(recording, since.(time.Time), now)
	if hold {
		c.queue.EnqueueAfter(d, left)
	}
	return hold
}
