package deployment

import (
	"context"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/kroll-dev/kroll/pkg/controller"
	"github.com/kroll-dev/kroll/pkg/inplace"
	"github.com/kroll-dev/kroll/pkg/rollout"
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
	if c.inPlaceIdle(p) {
		return inPlacePass{}, nil
	}
	view := c.handOverView(p, start)
	plan := inplace.PlanHandOver(view)
	// InPlaceOnly, and pods whose node cannot make their resize: the rollout is blocked
	// naming them (the others still move), until room frees.
	if v, blocked := inplace.JudgeInfeasible(inPlaceMode(p.d), plan.Blocked); blocked {
		p.verdict, p.judged = v, true
	}
	c.announceVerdict(p)
	acted, err := c.applyHandOver(ctx, p, plan)
	if err != nil {
		return inPlacePass{acted: acted}, err
	}
	if view.InPlace && !acted && rollout.Complete(p.d, &p.d.Status) {
		err = c.cleanupHistory(ctx, p.d, p.oldRSs)
	}
	blocked := p.judged && p.verdict.Reason == inplace.ReasonBlocked
	return inPlacePass{handled: view.InPlace || blocked, acted: acted, recording: plan.Recording}, err
}

// inPlaceIdle tells a pass with nothing in place to do, without the hand-over view's
// reading of every pod: p's Deployment is not opted in, none of its ReplicaSets holds a
// hand-over record, and none of their pods carries the in-place readiness gate (only a
// ReplicaSet of an opted-in Deployment creates pods with it, and only such pods are
// ever taken out of service and left to settle).
func (c *Controller) inPlaceIdle(p *pass) bool {
	if inPlaceMode(p.d) != inplace.Off {
		return false
	}
	for _, rs := range p.all() {
		if rs == nil {
			continue
		}
		if rs.Annotations[inplace.LeavingAnnotation] != "" || rs.Annotations[inplace.ArrivingAnnotation] != "" {
			return false
		}
		if controller.HasGatedPods(c.podIndexer, string(rs.UID)) {
			return false
		}
	}
	return true
}

// handOverView is what the caches show of p for inplace.PlanHandOver.
func (c *Controller) handOverView(p *pass, start bool) inplace.HandOverView {
	d, now := p.d, c.now()
	// Each node's pods are summed once for the pass, however many of its pods it judges.
	rooms := &controller.NodeRooms{Nodes: c.nodes, Pods: c.podIndexer}
	v := inplace.HandOverView{
		Desired:         rollout.DesiredReplicas(d),
		MaxUnavailable:  rollout.DeploymentFenceposts(d).MaxUnavailable,
		MinReadySeconds: d.Spec.MinReadySeconds,
		Now:             now,
		Grace:           inplace.GracePeriod(d.Annotations),
		// Nothing left to judge (no old pods) still leaves arrived pods to put back.
		InPlace: inPlaceMode(d) != inplace.Off && p.newRS != nil && (!p.judged || p.verdict.Proceeds()),
		Start:   start,
		// A staged rollout keeps its partition of old pods: none of those is picked.
		Partition: p.staged.Partition,
		TakenOut:  sets.New[types.UID](),
		Unfit: func(pod *corev1.Pod, to *corev1.PodTemplateSpec, resized []*corev1.Pod) string {
			return rooms.Unfit(pod, to, resized...)
		},
		OnlyInPlace: inPlaceMode(d) == inplace.Only,
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
// acted says a write was made.
func (c *Controller) applyHandOver(ctx context.Context, p *pass, plan inplace.HandOverPlan) (acted bool, err error) {
	writer, now := inplace.Writer{Pods: c.pods}, c.now()
	for _, pod := range plan.PutBack {
		if err := writer.PutBack(ctx, pod); err != nil {
			return acted, err
		}
		acted = true
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

// maxStatusHold bounds how long holdStatus keeps a Deployment's status write back.
const maxStatusHold = time.Second

// holdStatus tells whether d's status write waits this pass, for a pick that is half
// recorded (inplace.HandOverPlan.Recording): the giver names the pods leaving and has
// shrunk, and the taker's record, which grows it, waits for the giver's controller to
// observe its own. A status summed in between says fewer pods are unavailable than are
// (none, where a round of 250 is out of service), and the status written with the
// taker's record, 10–30 ms later, says otherwise: at each round's start of a
// thousand-pod rollout in place, two status writes where one does, on the client that
// also writes an in-place resize's pods/resize
// (bench/profiles/inplace-rounds.md, "A fifth look"). The giver's status write wakes
// the Deployment, and that pass writes the taker's record and the status.
//
// The wait is bounded by maxStatusHold from the first pass that held it, for a giver
// whose controller is slow to come (stopped, or its client's requests queued): the
// status then goes as it is, and goes every pass after while the pick stays half
// recorded.
func (c *Controller) holdStatus(d *appsv1.Deployment, recording bool) bool {
	if !recording {
		c.statusHolds.Delete(d.UID)
		return false
	}
	now := c.now()
	since, _ := c.statusHolds.LoadOrStore(d.UID, now)
	left := maxStatusHold - now.Sub(since.(time.Time))
	if left <= 0 {
		return false
	}
	c.queue.EnqueueAfter(d, left)
	return true
}
