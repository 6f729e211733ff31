package deployment

import (
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/kroll-dev/kroll/pkg/inplace"
	"github.com/kroll-dev/kroll/pkg/rollout"
)

// The decisions of a Deployment's in-place pass, apart from the caches and the writes
// that inplace.go makes: whether there is anything to look at, the hand-over view's
// settings, what the pass did for the rollout, and whether the status write waits.

// inPlaceIdle tells a pass with nothing in place to do, without the hand-over view's
// reading of every pod: p's Deployment is not opted in, none of its ReplicaSets holds a
// hand-over record, and none of their pods carries the in-place readiness gate (gated
// answers for one ReplicaSet: only a ReplicaSet of an opted-in Deployment creates pods
// with it, and only such pods are ever taken out of service and left to settle).
func inPlaceIdle(p *pass, gated func(*appsv1.ReplicaSet) bool) bool {
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
		if gated(rs) {
			return false
		}
	}
	return true
}

// handOverSettings is the hand-over view of p without its pods (New, Old, TakenOut
// and Unfit come from the caches): the Deployment's bounds, and InPlace when p's
// change is made in place — opted in, a new ReplicaSet to hand over to, and a verdict
// that proceeds (or none yet: nothing left to judge still leaves arrived pods to put
// back). With start, more pods are picked; a staged rollout's partition of old pods
// is never picked.
func handOverSettings(p *pass, start bool, now time.Time) inplace.HandOverView {
	d, mode := p.d, inPlaceMode(p.d)
	return inplace.HandOverView{
		Desired:         rollout.DesiredReplicas(d),
		MaxUnavailable:  rollout.DeploymentFenceposts(d).MaxUnavailable,
		MinReadySeconds: d.Spec.MinReadySeconds,
		Now:             now,
		Grace:           inplace.GracePeriod(d.Annotations),
		InPlace:         mode != inplace.Off && p.newRS != nil && (!p.judged || p.verdict.Proceeds()),
		Start:           start,
		Partition:       p.staged.Partition,
		TakenOut:        sets.New[types.UID](),
		OnlyInPlace:     mode == inplace.Only,
	}
}

// inPlaceOutcome is what a pass that applied a hand-over plan did for the rollout:
// handled when the change is made in place (inPlace) or blocked (the rolling update
// must not run this pass); cleanup when, in place, nothing was written and the
// Deployment is complete (old ReplicaSets past the history limit go).
func inPlaceOutcome(p *pass, inPlace, acted bool) (handled, cleanup bool) {
	blocked := p.judged && p.verdict.Reason == inplace.ReasonBlocked
	return inPlace || blocked, inPlace && !acted && rollout.Complete(p.d, &p.d.Status)
}

// maxStatusHold bounds how long a Deployment's status write is held back.
const maxStatusHold = time.Second

// statusHold tells whether a Deployment's status write waits this pass, and for how
// long at most (look again then), for a pick that is half recorded
// (inplace.HandOverPlan.Recording): the giver names the pods leaving and has shrunk,
// and the taker's record, which grows it, waits for the giver's controller to observe
// its own. A status summed in between says fewer pods are unavailable than are (none,
// where a round of 250 is out of service), and the status written with the taker's
// record, 10–30 ms later, says otherwise: at each round's start of a thousand-pod
// rollout in place, two status writes where one does, on the client that also writes
// an in-place resize's pods/resize (bench/profiles/inplace-rounds.md, "A fifth look").
// The giver's status write wakes the Deployment, and that pass writes the taker's
// record and the status.
//
// since is when the first pass held it. The wait is bounded by maxStatusHold from
// then, for a giver whose controller is slow to come (stopped, or its client's
// requests queued): the status then goes as it is, and goes every pass after while the
// pick stays half recorded. Held at 0.3 s: 0.7 s left; at 1 s: not held.
func statusHold(recording bool, since, now time.Time) (hold bool, left time.Duration) {
	if !recording {
		return false, 0
	}
	left = maxStatusHold - now.Sub(since)
	return left > 0, left
}
