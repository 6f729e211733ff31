package statefulset

import (
	"context"
	"fmt"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/kroll-dev/kroll/pkg/controller"
	"github.com/kroll-dev/kroll/pkg/failure"
	"github.com/kroll-dev/kroll/pkg/history"
	"github.com/kroll-dev/kroll/pkg/staging"
	"github.com/kroll-dev/kroll/pkg/timeline"
)

// A StatefulSet's failure policy (see pkg/failure): a rollout is in progress while the
// update revision differs from the current one, and the pods judged are those on the
// update revision. On failure, one Update of the set carries the action and its record:
//
//	Rollback  the template of the current revision (the one the rollout started
//	          from), as `kubectl rollout undo` patches it in, with
//	          kroll.dev/rolled-back-from: "<update revision's number>". The update
//	          revision becomes the current one again, and the pods left on the bad
//	          revision are abandoned: replaced (or updated back in place) by the rule
//	          that recovers kubernetes#67250 (see update).
//	Pause     the partition raised to hold every pod at the revision it runs (see
//	          pausePartition), with kroll.dev/partition-before-pause and
//	          kroll.dev/paused-on-failure: "<update revision's number>".
//
// The same Update carries the report to make, kroll.dev/rollout-failed; then the
// status gets RolloutFailed, and a Warning event and the metric report it (see
// controller.SetFailure: a report lost with the process is made on the next pass).

// failureConditions is how the failure policy reads and writes a StatefulSet's conditions.
var failureConditions = controller.StatefulSetFailure.Conditions

// planFailure is the failure policy's plan for set in this sync, from what the cache
// shows: its pods and revisions; held tells a staged rollout held at a step's pause (no
// progress deadline runs then).
func planFailure(set *appsv1.StatefulSet, pods []*corev1.Pod, revs revisions, held bool, now time.Time) failure.SetPlan {
	var counted appsv1.StatefulSetStatus
	countPods(set, pods, revs, &counted, now)
	old := set.Status
	v := failure.SetView{
		Policy:       failure.PolicyOf(set.Annotations),
		Annotations:  set.Annotations,
		InProgress:   revs.update.Name != revs.current.Name,
		Revision:     revs.update.Revision,
		RevisionName: revs.update.Name,
		Desired:      int32(replicasOf(set)),
		Progressed: counted.UpdatedReplicas > old.UpdatedReplicas || counted.ReadyReplicas > old.ReadyReplicas ||
			counted.AvailableReplicas > old.AvailableReplicas,
		Complete:   failure.IsComplete(revs.update.Annotations),
		Held:       held,
		Subject:    fmt.Sprintf("StatefulSet %q", set.Name),
		Conditions: failureConditions.All(set.Status.Conditions),
	}
	if t := rollbackTarget(set, revs); t != nil {
		v.Target = t.Revision
	}
	// Done: the update revision is the current one, every pod on it and available.
	v.Done = !v.InProgress && v.Desired > 0 && counted.Replicas == v.Desired && counted.UpdatedReplicas >= v.Desired && counted.AvailableReplicas >= v.Desired
	for _, p := range pods {
		if p.Labels[RevisionLabel] == revs.update.Name {
			v.NewPods = append(v.NewPods, p)
		}
	}
	return failure.PlanSet(v, now)
}

// rollbackTarget is the revision a rollback of set returns to: the current revision
// while the rollout runs; once the update revision became current (a rollout done but
// not yet complete: its pods not settled), the newest other revision marked complete,
// else the highest-numbered other, but never the one kroll rolled back from before
// (controller.RollbackRevision). Nil without one.
func rollbackTarget(set *appsv1.StatefulSet, revs revisions) *appsv1.ControllerRevision {
	if revs.current.Name != revs.update.Name {
		return revs.current
	}
	failed := set.Annotations[failure.RolledBackFromAnnotation]
	return controller.RollbackRevision(revs.all, func(r *appsv1.ControllerRevision) bool {
		return r.Name == revs.update.Name || strconv.FormatInt(r.Revision, 10) == failed
	})
}

// actOnFailure is set as plan's action leaves it (a copy), and the outcome to report.
// A rollback needs a target (rollbackTarget): the plan pauses without one.
func actOnFailure(set *appsv1.StatefulSet, pods []*corev1.Pod, revs revisions, act failure.Action, now time.Time) (*appsv1.StatefulSet, string, error) {
	next := set.DeepCopy()
	if next.Annotations == nil {
		next.Annotations = map[string]string{}
	}
	bad := strconv.FormatInt(revs.update.Revision, 10)
	if act == failure.Rollback {
		to, template := rollbackTarget(set, revs), &revs.currentSet.Spec.Template
		if to.Name != revs.current.Name {
			restored, err := history.ApplyRevision(set, to)
			if err != nil {
				return nil, "", err
			}
			template = &restored.Spec.Template
		}
		next.Spec.Template = *template.DeepCopy()
		next.Annotations[failure.RolledBackFromAnnotation] = bad
		timeline.StampRollback(next, bad, now)
		return next, failure.RolledBackOutcome(bad, strconv.FormatInt(to.Revision, 10)), nil
	}
	next.Annotations[failure.PausedOnFailureAnnotation] = bad
	if next.Spec.UpdateStrategy.Type == appsv1.RollingUpdateStatefulSetStrategyType {
		before := partitionOf(set)
		if next.Spec.UpdateStrategy.RollingUpdate == nil {
			next.Spec.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateStatefulSetStrategy{}
		}
		p := pausePartition(set, pods, revs)
		next.Spec.UpdateStrategy.RollingUpdate.Partition = &p
		if _, ok := set.Annotations[failure.PartitionBeforePauseAnnotation]; !ok {
			next.Annotations[failure.PartitionBeforePauseAnnotation] = strconv.Itoa(int(before))
		}
	}
	return next, failure.PausedOutcome(bad), nil
}

// pausePartition is the partition that holds set's pods where they are: one above the
// highest in-range ordinal whose pod still runs the current revision (or any revision
// but the update one), never below the partition set has. Every pod at or above it
// is then on the update revision, so the rolling update has nothing left to replace;
// pods below it stay as they are, and one deleted there comes back at the current
// revision. Worked numbers: 4 replicas, partition 0, OrderedReady, the update reached
// web-3 (crash-looping) while web-0..2 run the current revision: the partition becomes
// 3, web-3 stays on the update revision, web-0..2 stay current; resuming puts 0 back
// (kroll.dev/partition-before-pause). With maxUnavailable 2 and 5 replicas, web-4 and
// web-3 updated and web-2 terminating on its way to the update revision: web-2 still
// carries the current revision, so the partition is 3 and web-2 comes back current.
// Raising it to the replicas instead would also hold, but would make resuming
// indistinguishable from a partition the user set.
func pausePartition(set *appsv1.StatefulSet, pods []*corev1.Pod, revs revisions) int32 {
	start, n := startOrdinal(set), replicasOf(set)
	p := partitionOf(set)
	for _, pod := range pods {
		o := ordinalOf(pod) - start
		if o < 0 || o >= n || !isCreated(pod) || pod.Labels[RevisionLabel] == revs.update.Name {
			continue
		}
		p = max(p, int32(o+1))
	}
	return p
}

// carryOut makes the one Update of set that acts on plan, then reports it (see
// controller.SetFailure.Act). A conflict means the cache was stale: the sync is
// retried, and decides afresh.
func (c *Controller) carryOut(ctx context.Context, set *appsv1.StatefulSet, pods []*corev1.Pod, revs revisions, plan failure.SetPlan, now time.Time) error {
	next, outcome, err := actOnFailure(set, pods, revs, plan.Act, now)
	if err != nil {
		return err
	}
	return controller.StatefulSetFailure.Act(ctx, c.setWriter, c.recorder, next, failure.FailedReport(plan.Act, plan.Verdict, outcome), plan.Conditions, now)
}

// abort carries out kroll.dev/abort (see pkg/staging): when it names the update
// revision of a rollout in progress, the rollback the failure policy makes — the
// current revision's template and kroll.dev/rolled-back-from, in one Update that also
// removes the request — then RolloutFailed with reason Aborted, a Warning RolledBack
// event and the metric. A stale request (another revision, or no rollout) is removed
// with a Warning AbortIgnored event. handled is false without a request.
func (c *Controller) abort(ctx context.Context, set *appsv1.StatefulSet, pods []*corev1.Pod, revs revisions, now time.Time) (handled bool, err error) {
	rolling := ""
	if revs.update.Name != revs.current.Name {
		rolling = revs.update.Name
	}
	act, ignored := controller.AbortRequest(set.Annotations, rolling)
	if !act && ignored == "" {
		return false, nil
	}
	next, r := set.DeepCopy(), failure.Report{}
	if act {
		var outcome string
		var err error
		if next, outcome, err = actOnFailure(set, pods, revs, failure.Rollback, now); err != nil {
			return true, err
		}
		r = failure.AbortedReport(outcome)
	}
	delete(next.Annotations, staging.AbortAnnotation)
	return true, controller.StatefulSetFailure.Answer(ctx, c.setWriter, c.recorder, next, ignored, r, now)
}
