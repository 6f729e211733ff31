package deployment

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/kroll-dev/kroll/pkg/controller"
	"github.com/kroll-dev/kroll/pkg/failure"
	"github.com/kroll-dev/kroll/pkg/history"
	"github.com/kroll-dev/kroll/pkg/rollout"
	"github.com/kroll-dev/kroll/pkg/staging"
	"github.com/kroll-dev/kroll/pkg/timeline"
)

// A failing rollout heals itself (kroll.dev/on-failure, see pkg/failure): planHeal
// decides from what the caches show, healRollout carries the plan out. Upstream's
// controller does none of this: it reports ProgressDeadlineExceeded and waits.
//
// The protocol, as invariants per state of the Deployment:
//
//   - Judged: only the pods its new ReplicaSet controls (pods an in-place hand-over
//     took over are the new ReplicaSet's; pods still leaving an old one are not), and
//     only while a rollout is in progress: the new ReplicaSet not marked
//     kroll.dev/complete, and old pods left or new ones missing.
//   - Rollback: one Update gives the Deployment the template of the newest old
//     ReplicaSet marked complete, and kroll.dev/rolled-back-from the bad revision. The
//     old ReplicaSet is then the new one (reused, with the next revision, as after
//     `kubectl rollout undo --to-revision`), marked complete: nothing is judged again.
//     A controller killed before that Update decides the same again; after it, the
//     template is a complete revision's and there is nothing to decide.
//   - Pause: one Update sets spec.paused and kroll.dev/paused-on-failure to the bad
//     revision. A paused Deployment is not judged; one its user resumed on that same
//     revision is not paused again.
//   - Complete: a watched Deployment whose rollout completed, and whose new pods have
//     all stayed Ready failure.SettleTime since, marks its new ReplicaSet kroll.dev/complete
//     (unwatched ones make no such write). Until then it is judged still.

// healPlan is what to do about a Deployment's failure policy in one pass.
type healPlan struct {
	// act is Rollback or Pause when the rollout failed and the policy acts now; None
	// otherwise.
	act failure.Action
	// verdict is the judgement of the new pods; Failed only with act set.
	verdict failure.Verdict
	// from is the revision that failed ("5"); to the ReplicaSet a rollback goes back
	// to (nil unless act is Rollback).
	from string
	to   *appsv1.ReplicaSet
	// markComplete: the rollout completed and settled, mark the new ReplicaSet so.
	markComplete bool
	// recheck is when to look again without an event (a ready timeout, or the pods
	// settling); zero for no such moment.
	recheck time.Time
}

// healView is what planHeal decides from.
type healView struct {
	policy failure.Policy
	p      *pass
	// newPods are the pods the new ReplicaSet controls, as cached.
	newPods []*corev1.Pod
	now     time.Time
}

// isComplete tells a ReplicaSet whose revision completed once.
func isComplete(rs *appsv1.ReplicaSet) bool {
	return rs != nil && rs.Annotations[failure.CompleteAnnotation] == "true"
}

// inProgress tells whether d is rolling out to newRS: old pods are left (asked for or
// still running), or the new ReplicaSet has fewer available pods than d wants.
func inProgress(p *pass) bool {
	for _, rs := range p.oldRSs {
		if rs != nil && (rollout.Replicas(rs.Spec.Replicas) > 0 || rs.Status.Replicas > 0) {
			return true
		}
	}
	want := rollout.DesiredReplicas(p.d)
	return rollout.Replicas(p.newRS.Spec.Replicas) < want || p.newRS.Status.AvailableReplicas < want
}

// pastDeadline tells a Deployment whose Progressing condition says that the rollout
// to newRS passed its progress deadline. The condition names the ReplicaSet
// (`ReplicaSet "web-7d9f" has timed out progressing.`): one left from the rollout a
// rollback undid does not fail the restored revision.
func pastDeadline(d *appsv1.Deployment, newRS *appsv1.ReplicaSet) bool {
	c := rollout.Condition(&d.Status, appsv1.DeploymentProgressing)
	return c != nil && c.Reason == rollout.ReasonProgressDeadlineExceeded && strings.Contains(c.Message, strconv.Quote(newRS.Name))
}

// planHeal decides what v's Deployment's failure policy asks for now. It is pure.
//
// A Deployment with 4 replicas on revision 5 (new ReplicaSet not complete) whose 1st
// new pod is in CrashLoopBackOff, threshold 1, on-failure Rollback, revisions 3 and 4
// complete: roll back to revision 4's ReplicaSet, from "5". The same with revision 5
// marked complete (it completed, then its pods began to crash): nothing, it is not a
// rollout any more.
func planHeal(v healView) healPlan {
	p, d := v.p, v.p.d
	if !v.policy.Watched() || p.newRS == nil || d.Spec.Paused {
		return healPlan{}
	}
	if isComplete(p.newRS) {
		return healPlan{}
	}
	from := strconv.FormatInt(history.Revision(p.newRS), 10)
	plan := healPlan{from: from}
	if !inProgress(p) && rollout.Complete(d, &d.Status) {
		// Complete for d's generation (the new ReplicaSet's pods alone, all available):
		// mark it once its pods settled, else look again when they will have.
		// (A pod not Ready wakes d when it changes.)
		if settled, ok := failure.SettledAt(v.newPods, failure.SettleTime); ok {
			if !settled.After(v.now) {
				return healPlan{markComplete: true}
			}
			plan.recheck = settled
		}
	}
	plan.verdict = failure.Judge(v.policy, rollout.DesiredReplicas(d), v.newPods, pastDeadline(d, p.newRS), v.now)
	if r := plan.verdict.Recheck; !r.IsZero() && (plan.recheck.IsZero() || r.Before(plan.recheck)) {
		plan.recheck = r
	}
	if !plan.verdict.Failed {
		return plan
	}
	switch v.policy.Action {
	case failure.Rollback:
		if plan.to = rollbackTarget(p.oldRSs, d.Annotations[failure.RolledBackFromAnnotation]); plan.to != nil {
			plan.act = failure.Rollback
			return plan
		}
		// The first revision has nothing to go back to: stop it where it is instead.
		fallthrough
	case failure.Pause:
		if d.Annotations[failure.PausedOnFailureAnnotation] == from {
			return plan // paused once for this revision, and resumed by its user
		}
		plan.act = failure.Pause
	}
	return plan
}

// rollbackTarget is the ReplicaSet a rollback goes back to: the newest old one marked
// complete. When none is marked (the Deployment opted in after its last rollout
// completed, or its marked ReplicaSets were trimmed from the history), the newest old
// one by revision: the one `kubectl rollout undo` would pick — but never the revision
// a rollback went back from (rolledBackFrom), so two unmarked revisions cannot roll
// back to each other in a loop. Nil without one.
func rollbackTarget(oldRSs []*appsv1.ReplicaSet, rolledBackFrom string) *appsv1.ReplicaSet {
	var newest, newestComplete *appsv1.ReplicaSet
	for _, rs := range oldRSs {
		if rs == nil || rs.DeletionTimestamp != nil || strconv.FormatInt(history.Revision(rs), 10) == rolledBackFrom {
			continue
		}
		if newest == nil || history.Revision(rs) > history.Revision(newest) {
			newest = rs
		}
		if isComplete(rs) && (newestComplete == nil || history.Revision(rs) > history.Revision(newestComplete)) {
			newestComplete = rs
		}
	}
	if newestComplete != nil {
		return newestComplete
	}
	return newest
}

// healRollout plans and carries out p's failure policy; acted says it wrote the Deployment or a ReplicaSet (the pass ends there).
func (c *Controller) healRollout(ctx context.Context, p *pass, policy failure.Policy) (acted bool, err error) {
	if !policy.Watched() || p.newRS == nil {
		return false, nil
	}
	plan := planHeal(healView{policy: policy, p: p, newPods: controller.ActivePods(c.podIndexer, string(p.newRS.UID)), now: c.now()})
	if !plan.recheck.IsZero() {
		c.queue.EnqueueAfter(p.d, plan.recheck.Sub(c.now())+100*time.Millisecond)
	}
	switch {
	case plan.markComplete:
		next := p.newRS.DeepCopy()
		next.Annotations[failure.CompleteAnnotation] = "true"
		if p.newRS, err = c.writes.updateReplicaSet(ctx, next); err != nil {
			return true, err
		}
		return true, nil
	case plan.act == failure.Rollback:
		return true, c.rollBackOnFailure(ctx, p.d, plan)
	case plan.act == failure.Pause:
		return true, c.pauseOnFailure(ctx, p.d, plan)
	}
	return false, nil
}

// rollBackOnFailure gives d plan.to's template, as `kubectl rollout undo
// --to-revision` does, with the record of the bad revision in the same Update; then
// the RolloutFailed condition, the RolledBack event and the metric.
//
// A target not marked complete (see rollbackTarget) is marked first: it is the
// revision kroll counts as good from now on, and once it is the Deployment's it is
// never judged — an in-place rollback hands the failed pods back to it still showing
// their failure until the kubelet restarts them on its images. Killed between the two
// writes, the controller decides the same again, and finds the target marked.
func (c *Controller) rollBackOnFailure(ctx context.Context, d *appsv1.Deployment, plan healPlan) error {
	msg := plan.verdict.Message(failure.RolledBackOutcome(plan.from, strconv.FormatInt(history.Revision(plan.to), 10)))
	return c.rollBack(ctx, d, plan.to, plan.from, plan.verdict.Reason, msg)
}

// rollBack is the rollback's writes: to marked complete, then one Update giving d its
// template with kroll.dev/rolled-back-from (and no kroll.dev/abort: an abort's request
// goes in the same write) and the report's record; then the RolloutFailed condition
// with reason and msg, the RolledBack event and the metric (see report.go).
func (c *Controller) rollBack(ctx context.Context, d *appsv1.Deployment, to *appsv1.ReplicaSet, from, reason, msg string) error {
	if !isComplete(to) {
		marked := to.DeepCopy()
		if marked.Annotations == nil {
			marked.Annotations = map[string]string{}
		}
		marked.Annotations[failure.CompleteAnnotation] = "true"
		if _, err := c.writes.updateReplicaSet(ctx, marked); err != nil {
			return err
		}
	}
	next := d.DeepCopy()
	next.Spec.Template = *to.Spec.Template.DeepCopy()
	delete(next.Spec.Template.Labels, appsv1.DefaultDeploymentUniqueLabelKey)
	history.SetAnnotationsFrom(next, to)
	next.Annotations[failure.RolledBackFromAnnotation] = from
	timeline.StampRollback(next, from, c.now())
	delete(next.Annotations, staging.AbortAnnotation)
	return c.actAndReport(ctx, next, failure.Report{Action: failure.Rollback, Reason: reason, Message: msg})
}

// abortRollout carries out kroll.dev/abort (`kroll rollout abort`): when it names the
// revision rolling out, that revision is rolled back as a failure's rollback is
// (reason Aborted: "aborted by request; rolled back from revision 5 to 4"), in the
// Update that removes the request. The target is the failure policy's (the newest
// old ReplicaSet marked complete), else the newest old one that still has pods: the
// revision the rollout started from. A request naming another revision, or arriving
// when nothing rolls out, is stale: it is removed with a Warning AbortIgnored naming
// both revisions. acted says it wrote.
func (c *Controller) abortRollout(ctx context.Context, p *pass) (acted bool, err error) {
	d := p.d
	asked, ok := d.Annotations[staging.AbortAnnotation]
	if !ok {
		return false, nil
	}
	current := ""
	if p.newRS != nil {
		current = strconv.FormatInt(history.Revision(p.newRS), 10)
	}
	to := abortTarget(p)
	why := ""
	switch {
	case current == "" || to == nil || !inProgress(p):
		why = fmt.Sprintf("revision %s is not rolling out from an older one", current)
	case asked != current:
		why = fmt.Sprintf("revision %s is rolling out", current)
	}
	if why != "" {
		next := d.DeepCopy()
		delete(next.Annotations, staging.AbortAnnotation)
		if _, err := c.writes.updateDeployment(ctx, next); err != nil {
			return true, err
		}
		c.recorder.Eventf(d, corev1.EventTypeWarning, reasonAbortIgnored, "abort of revision %s ignored: %s", asked, why)
		return true, nil
	}
	msg := "aborted by request; " + failure.RolledBackOutcome(current, strconv.FormatInt(history.Revision(to), 10))
	return true, c.rollBack(ctx, d, to, current, failure.ReasonAborted, msg)
}

// reasonAbortIgnored is the Warning event of a stale kroll.dev/abort.
const reasonAbortIgnored = "AbortIgnored"

// abortTarget is the ReplicaSet an abort goes back to: the newest old one marked
// complete, else the newest old one with pods; nil without one.
func abortTarget(p *pass) *appsv1.ReplicaSet {
	var newest, complete *appsv1.ReplicaSet
	for _, rs := range p.oldRSs {
		if rs == nil || rs.DeletionTimestamp != nil {
			continue
		}
		if isComplete(rs) && (complete == nil || history.Revision(rs) > history.Revision(complete)) {
			complete = rs
		}
		if (rollout.Replicas(rs.Spec.Replicas) > 0 || rs.Status.Replicas > 0) && (newest == nil || history.Revision(rs) > history.Revision(newest)) {
			newest = rs
		}
	}
	if complete != nil {
		return complete
	}
	return newest
}

// pauseOnFailure pauses d with the record of the bad revision in the same Update; then
// the RolloutFailed condition, the RolloutPaused event and the metric (see report.go).
func (c *Controller) pauseOnFailure(ctx context.Context, d *appsv1.Deployment, plan healPlan) error {
	next := d.DeepCopy()
	next.Spec.Paused = true
	if next.Annotations == nil {
		next.Annotations = map[string]string{}
	}
	next.Annotations[failure.PausedOnFailureAnnotation] = plan.from
	return c.actAndReport(ctx, next, failure.FailedReport(failure.Pause, plan.verdict, failure.PausedOutcome(plan.from)))
}

// announcePolicyProblem records a Warning event for an invalid policy whose message
// the Deployment's FailurePolicy condition does not show yet: once per distinct
// message (the condition itself is set by calculateStatus).
//
// The condition is written at the end of the pass, and seen in the cache later still:
// until then c.announced remembers the message announced per Deployment, so that the
// passes in between do not announce it again.
func (c *Controller) announcePolicyProblem(d *appsv1.Deployment, policy failure.Policy) {
	problem := policy.Problem()
	if problem == "" {
		c.announced.Delete(d.UID)
		return
	}
	if cur := rollout.Condition(&d.Status, failure.ConditionFailurePolicy); cur != nil && cur.Message == problem {
		c.announced.Delete(d.UID)
		return
	}
	if prev, ok := c.announced.Swap(d.UID, problem); ok && prev == problem {
		return
	}
	controller.ReportInvalidFailurePolicy(c.recorder, d, problem)
}

// setFailureConditions brings the conditions of the failure policy up to date on
// status: FailurePolicy False/InvalidAnnotation while an annotation does not parse,
// gone otherwise; RolloutFailed gone once the user's next change starts a new rollout
// (see failureOver).
func setFailureConditions(status *appsv1.DeploymentStatus, p *pass, now time.Time) {
	if problem := failure.PolicyOf(p.d.Annotations).Problem(); problem != "" {
		if cur := rollout.Condition(status, failure.ConditionFailurePolicy); cur != nil && cur.Message != problem {
			removeCondition(status, failure.ConditionFailurePolicy)
		}
		setCondition(status, newCondition(failure.ConditionFailurePolicy, corev1.ConditionFalse, failure.ReasonInvalidAnnotation, problem, now))
	} else {
		removeCondition(status, failure.ConditionFailurePolicy)
	}
	if rollout.Condition(status, failure.ConditionRolloutFailed) != nil && failureOver(p) {
		removeCondition(status, failure.ConditionRolloutFailed)
	}
}

// failureOver tells whether the failed rollout a RolloutFailed condition reports is
// behind d: its new ReplicaSet is one the user's next change made. The failed
// revision F is in d's record (rolled-back-from or paused-on-failure; 0 when an undo
// replaced d's annotations). Resumed, d is still on F; rolled back (or undone), it is
// on an older ReplicaSet reused at F+1, whose old revision went to its
// revision-history. A new template is a new ReplicaSet at F+1 without history, or any
// revision above F+1.
func failureOver(p *pass) bool {
	if p.newRS == nil {
		return false
	}
	var failed int64
	for _, k := range []string{failure.RolledBackFromAnnotation, failure.PausedOnFailureAnnotation} {
		if n, err := strconv.ParseInt(p.d.Annotations[k], 10, 64); err == nil {
			failed = max(failed, n)
		}
	}
	rev := history.Revision(p.newRS)
	_, reused := p.newRS.Annotations[history.RevisionHistoryAnnotation]
	return rev > failed+1 || (rev == failed+1 && !reused)
}
