package deployment

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kroll-dev/kroll/pkg/controller"
	"github.com/kroll-dev/kroll/pkg/history"
	"github.com/kroll-dev/kroll/pkg/inplace"
	"github.com/kroll-dev/kroll/pkg/rollout"
	"github.com/kroll-dev/kroll/pkg/timeline"
)

// calculateStatus is d's status from its ReplicaSets: counts summed over them (replicas
// and updatedReplicas from their status, as counted; unavailable from spec minus
// available), the conditions carried over, and Available set by whether
// replicas−maxUnavailable are available.
func (c *Controller) calculateStatus(p *pass) appsv1.DeploymentStatus {
	all, newRS, d := p.all(), p.newRS, p.d
	var replicas, ready, available, updated, terminatingSum int32
	terminatingKnown := true // unknown as soon as one ReplicaSet does not report it
	for _, rs := range all {
		if rs == nil {
			continue
		}
		st := c.counted(p, rs)
		replicas += st.Replicas
		ready += st.ReadyReplicas
		available += st.AvailableReplicas
		if st.TerminatingReplicas == nil {
			terminatingKnown = false
		} else {
			terminatingSum += *st.TerminatingReplicas
		}
		if rs == newRS {
			updated = st.Replicas
		}
	}
	var terminating *int32
	if terminatingKnown && !c.terminatingOff {
		terminating = &terminatingSum
	}
	status := appsv1.DeploymentStatus{
		ObservedGeneration:  d.Generation,
		Replicas:            replicas,
		UpdatedReplicas:     updated,
		ReadyReplicas:       ready,
		AvailableReplicas:   available,
		UnavailableReplicas: max(0, rollout.SpecReplicas(all)-available),
		TerminatingReplicas: terminating,
		CollisionCount:      d.Status.CollisionCount,
		Conditions:          append([]appsv1.DeploymentCondition(nil), d.Status.Conditions...),
	}
	now := c.now()
	setInPlaceCondition(&status, p, now)
	setFailureConditions(&status, p, now)
	setStagedCondition(&status, p, now)
	setBudgetCondition(&status, p, now)
	setConfigCondition(&status, p, now)
	if available >= rollout.DesiredReplicas(d)-rollout.DeploymentFenceposts(d).MaxUnavailable {
		setCondition(&status, newCondition(appsv1.DeploymentAvailable, corev1.ConditionTrue, rollout.ReasonMinimumReplicasAvailable, "Deployment has minimum availability.", now))
	} else {
		setCondition(&status, newCondition(appsv1.DeploymentAvailable, corev1.ConditionFalse, rollout.ReasonMinimumReplicasUnavailable, "Deployment does not have minimum availability.", now))
	}
	return status
}

// counted is rs's status as d's status sums it: as rs's controller last reported it,
// except where that report is known to be behind the one the controller is about to
// make, which counts the pods the caches show now (controller.CountReplicas, the
// ReplicaSet controller's own counting; the conditions stay the reported ones). d's
// status written on the old report would be written again moments later, when the new
// one comes:
//
//   - rs's controller has never reported (its status is empty: a ReplicaSet this pass
//     created) and the caches show it no pod: terminatingReplicas is unknown, and its
//     first report, no pod and none terminating, cost d's status a write only to say 0.
//     Pods it has are left to its report: d never says more is available than its
//     ReplicaSets do.
//   - rs is an old ReplicaSet of an in-place rollout whose controller has not yet
//     observed the record this controller last wrote to it: the report that goes with
//     that observedGeneration counts out the pods the record names leaving, and the
//     departures the ReplicaSet put off reporting until then. At each round's start the
//     Deployment's status was written twice 10–30 ms apart, the second only to say what
//     the pick had done, on the client that also writes an in-place resize's pods/resize
//     (see bench/profiles/inplace-rounds.md, "A fifth look").
//
// The new ReplicaSet's report is never anticipated: in place, it waits for the pods it
// takes over to come back (see the ReplicaSet controller's putOff), and counting them
// as they arrive would write d's status at every pass.
func (c *Controller) counted(p *pass, rs *appsv1.ReplicaSet) appsv1.ReplicaSetStatus {
	neverReported := equality.Semantic.DeepEqual(rs.Status, appsv1.ReplicaSetStatus{})
	recordUnobserved := rs != p.newRS && inPlaceMode(p.d) != inplace.Off && !inplace.Observed(rs)
	if !neverReported && !recordUnobserved {
		return rs.Status
	}
	active, terminating := controller.SplitPodsOf(c.podIndexer, string(rs.UID))
	if neverReported && !recordUnobserved && len(active)+len(terminating) > 0 {
		// Pods the ReplicaSet's controller has not counted yet: d sums its report, as
		// upstream does, never counts ahead of it (a Deployment complete before its
		// ReplicaSet says a pod is available).
		return rs.Status
	}
	n := controller.CountReplicas(rs, active, terminating, c.now())
	st := *rs.Status.DeepCopy()
	st.Replicas, st.FullyLabeledReplicas, st.ReadyReplicas, st.AvailableReplicas = n.Replicas, n.FullyLabeled, n.Ready, n.Available
	st.TerminatingReplicas = &n.Terminating
	return st
}

// syncRolloutStatus writes d's status with its Progressing condition brought up to
// date: NewReplicaSetAvailable once complete, ReplicaSetUpdated (with a fresh
// lastUpdateTime) on any progress, ProgressDeadlineExceeded when there was none for
// progressDeadlineSeconds; and a ReplicaFailure condition mirrored from its ReplicaSets
// (the new one's first). If nothing changed, it schedules the next deadline check.
func (c *Controller) syncRolloutStatus(ctx context.Context, p *pass) error {
	all, newRS, d := p.all(), p.newRS, p.d
	status := c.calculateStatus(p)
	if !rollout.HasProgressDeadline(d) {
		removeCondition(&status, appsv1.DeploymentProgressing)
	}
	now := c.now()
	current := rollout.Condition(&d.Status, appsv1.DeploymentProgressing)
	settled := status.Replicas == status.UpdatedReplicas && current != nil && current.Reason == rollout.ReasonNewReplicaSetAvailable
	if rollout.HasProgressDeadline(d) && !settled {
		subject := fmt.Sprintf("Deployment %q", d.Name)
		if newRS != nil {
			subject = fmt.Sprintf("ReplicaSet %q", newRS.Name)
		}
		switch {
		case held(p.staged):
			// Held at the partition or a step's pause: no deadline runs, as for a
			// paused Deployment, and the rollout is not complete.
			cond := newCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, reasonPartitionReached, partitionReachedMessage(p, &status), now)
			if current != nil && current.Reason == reasonPartitionReached && current.Message != cond.Message {
				cond.LastTransitionTime = current.LastTransitionTime
				removeCondition(&status, appsv1.DeploymentProgressing)
			}
			setCondition(&status, cond)
		case rollout.Complete(d, &status):
			setCondition(&status, newCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, rollout.ReasonNewReplicaSetAvailable, subject+" has successfully progressed.", now))
		case current != nil && current.Reason == reasonPartitionReached:
			// Moving on from a hold (promoted, the partition lowered): the deadline's
			// clock starts now, as after a resume, not when the hold began — a pause
			// of an hour must not fail the first pass after it.
			cond := newCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, rollout.ReasonReplicaSetUpdated, subject+" is progressing.", now)
			cond.LastTransitionTime = current.LastTransitionTime
			removeCondition(&status, appsv1.DeploymentProgressing)
			setCondition(&status, cond)
		case rollout.Progressing(d, &status):
			// Progress refreshes lastUpdateTime even when the reason stays the same.
			cond := newCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, rollout.ReasonReplicaSetUpdated, subject+" is progressing.", now)
			if current != nil {
				if current.Status == corev1.ConditionTrue {
					cond.LastTransitionTime = current.LastTransitionTime
				}
				removeCondition(&status, appsv1.DeploymentProgressing)
			}
			setCondition(&status, cond)
		case rollout.TimedOut(d, &status, now):
			setCondition(&status, newCondition(appsv1.DeploymentProgressing, corev1.ConditionFalse, rollout.ReasonProgressDeadlineExceeded, subject+" has timed out progressing.", now))
		}
	}
	if failure := replicaFailure(all, newRS); failure != nil {
		setCondition(&status, *failure)
	} else {
		removeCondition(&status, appsv1.DeploymentReplicaFailure)
	}
	if equality.Semantic.DeepEqual(d.Status, status) {
		if !held(p.staged) {
			c.requeueForDeadline(d, &status, now)
		}
		return nil
	}
	return c.writeStatus(ctx, d, status)
}

// requeueForDeadline brings a stalled rollout back when its progress deadline passes,
// so ProgressDeadlineExceeded is reported on time without polling.
func (c *Controller) requeueForDeadline(d *appsv1.Deployment, status *appsv1.DeploymentStatus, now time.Time) {
	current := rollout.Condition(&d.Status, appsv1.DeploymentProgressing)
	if !rollout.HasProgressDeadline(d) || current == nil || rollout.Complete(d, status) || current.Reason == rollout.ReasonProgressDeadlineExceeded {
		return
	}
	after := current.LastUpdateTime.Add(time.Duration(*d.Spec.ProgressDeadlineSeconds) * time.Second).Sub(now)
	if after < time.Second {
		c.enqueueRateLimited(d)
		return
	}
	c.queue.EnqueueAfter(d, after+time.Second) // a second of slack against timestamp rounding
}

func (c *Controller) enqueueRateLimited(d *appsv1.Deployment) {
	key := d.Namespace + "/" + d.Name
	c.queue.AddRateLimited(key)
}

// replicaFailure is the ReplicaFailure condition to show on the Deployment: the new
// ReplicaSet's, else the first old one's; nil when none fails.
func replicaFailure(all []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet) *appsv1.DeploymentCondition {
	for _, rs := range append([]*appsv1.ReplicaSet{newRS}, all...) {
		if rs == nil {
			continue
		}
		for _, c := range rs.Status.Conditions {
			if c.Type == appsv1.ReplicaSetReplicaFailure {
				return &appsv1.DeploymentCondition{
					Type: appsv1.DeploymentReplicaFailure, Status: c.Status, Reason: c.Reason, Message: c.Message,
					LastUpdateTime: c.LastTransitionTime, LastTransitionTime: c.LastTransitionTime,
				}
			}
		}
	}
	return nil
}

// writeStatus writes status unless it is what d already has.
func (c *Controller) writeStatus(ctx context.Context, d *appsv1.Deployment, status appsv1.DeploymentStatus) error {
	if equality.Semantic.DeepEqual(d.Status, status) {
		return nil
	}
	next := d.DeepCopy()
	next.Status = status
	desired := rollout.DesiredReplicas(d)
	timeline.Stamp(next, d.Annotations[history.RevisionAnnotation], desired, timeline.Counts{
		Old: status.Replicas - status.UpdatedReplicas, New: status.UpdatedReplicas,
		Available: status.AvailableReplicas, Unavailable: timeline.Unavailable(desired, status.AvailableReplicas),
	}, heldBy(&status), c.now())
	// The step's event follows the write: a pass that read a stale status, whose
	// write then conflicts, does not announce the step a second time.
	if _, err := c.writes.updateStatus(ctx, next); err != nil {
		return err
	}
	c.announceStep(d, &status)
	c.announceBudget(d, &status)
	return nil
}

func newCondition(t appsv1.DeploymentConditionType, status corev1.ConditionStatus, reason, message string, now time.Time) appsv1.DeploymentCondition {
	return appsv1.DeploymentCondition{Type: t, Status: status, Reason: reason, Message: message,
		LastUpdateTime: metav1.NewTime(now), LastTransitionTime: metav1.NewTime(now)}
}

// setCondition sets cond as upstream does: unchanged when status and reason are the
// same (message and times kept); the transition time kept when only the reason changes;
// the condition moved to the end of the list otherwise.
func setCondition(s *appsv1.DeploymentStatus, cond appsv1.DeploymentCondition) {
	if cur := rollout.Condition(s, cond.Type); cur != nil {
		if cur.Status == cond.Status && cur.Reason == cond.Reason {
			return
		}
		if cur.Status == cond.Status {
			cond.LastTransitionTime = cur.LastTransitionTime
		}
	}
	removeCondition(s, cond.Type)
	s.Conditions = append(s.Conditions, cond)
}

func removeCondition(s *appsv1.DeploymentStatus, t appsv1.DeploymentConditionType) {
	var kept []appsv1.DeploymentCondition
	for _, c := range s.Conditions {
		if c.Type != t {
			kept = append(kept, c)
		}
	}
	s.Conditions = kept
}

// setInPlaceCondition brings the InPlaceUpdate condition of status up to date: False,
// InvalidAnnotation while an in-place setting does not parse; gone when d is not
// opted in, the verdict on the change while old pods remain, complete
// once a change made in place has reached every pod (status is the rollout's new
// status), and otherwise left as it is.
func setInPlaceCondition(status *appsv1.DeploymentStatus, p *pass, now time.Time) {
	if problem := inplace.Problem(p.d.Annotations); problem != "" {
		// A setting that does not parse: False, InvalidAnnotation, until it is fixed.
		if cur := rollout.Condition(status, inplace.ConditionType); cur == nil || cur.Reason != inplace.ReasonInvalidAnnotation || cur.Message != problem {
			removeCondition(status, inplace.ConditionType)
			setCondition(status, newCondition(inplace.ConditionType, corev1.ConditionFalse, inplace.ReasonInvalidAnnotation, problem, now))
		}
		return
	}
	if cur := rollout.Condition(status, inplace.ConditionType); cur != nil && cur.Reason == inplace.ReasonInvalidAnnotation {
		removeCondition(status, inplace.ConditionType) // fixed: the verdict below, or none
	}
	if inPlaceMode(p.d) == inplace.Off {
		removeCondition(status, inplace.ConditionType)
		return
	}
	cur := rollout.Condition(status, inplace.ConditionType)
	v := p.verdict
	if !p.judged {
		if cur == nil || !rollout.Complete(p.d, status) {
			return
		}
		done := inplace.Finish(&inplace.Condition{Reason: cur.Reason})
		if done == nil {
			return
		}
		v = *done
	}
	if cur != nil && cur.Status == v.Status && cur.Reason == v.Reason && cur.Message != v.Message {
		removeCondition(status, inplace.ConditionType) // same reason, other fields: say so
	}
	setCondition(status, newCondition(inplace.ConditionType, v.Status, v.Reason, v.Message, now))
}

// inPlaceProblemKey is where c.announced keeps the in-place settings' problem
// announced for d.
func inPlaceProblemKey(d *appsv1.Deployment) string { return string(d.UID) + "/inplace" }

// announceVerdict records p's verdict as an event, once: when it is not what the
// Deployment's InPlaceUpdate condition says already.
func (c *Controller) announceVerdict(p *pass) {
	if !p.judged {
		return
	}
	var cur *inplace.Condition
	if cond := rollout.Condition(&p.d.Status, inplace.ConditionType); cond != nil {
		cur = &inplace.Condition{Status: cond.Status, Reason: cond.Reason, Message: cond.Message}
	}
	if inplace.IsNews(p.verdict, cur) {
		c.recorder.Eventf(p.d, p.verdict.EventType, p.verdict.Reason, "%s", p.verdict.Message)
	}
}
