package daemonset

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

// A DaemonSet's failure policy (see pkg/failure): a rollout is in progress while some
// daemon pods are not on the newest revision (the template's), and the pods judged are
// those on it — and, when watched, until that revision completed once: its rollout
// done and its pods settled, its ControllerRevision is marked kroll.dev/complete. A
// DaemonSet on one node, or with maxUnavailable 100%, has no old pod left as soon as
// its new pods are made, and is judged all the same. On failure, one Update of the
// DaemonSet carries the action and its record:
//
//	Rollback  the template of the previous revision (the highest-numbered other one,
//	          skipping the one kroll rolled back from before), as `kubectl rollout
//	          undo` patches it in, with kroll.dev/rolled-back-from: "<newest revision's
//	          number>". The rolling update then replaces the bad pods (in place when the
//	          DaemonSet opted in and the change allows).
//	Pause     kroll.dev/paused: "true" with kroll.dev/paused-on-failure: "<number>".
//	          A paused DaemonSet replaces no pod for the update (see paused); clearing
//	          the annotation resumes it, and it is not paused again for that revision.
//
// The same Update carries the report to make, kroll.dev/rollout-failed; then the
// status gets RolloutFailed, and a Warning event and the metric report it (see
// controller.SetFailure: a report lost with the process is made on the next pass).

// failureConditions is how the failure policy reads and writes a DaemonSet's conditions.
var failureConditions = controller.DaemonSetFailure.Conditions

// paused tells a DaemonSet whose rollout is held by kroll.dev/paused: "true". It
// replaces no pod for the update (no deletion of old pods, no surge, no in-place step),
// but still places pods: a node that joins gets its daemon, from the template as it
// is, as upstream always makes them (a paused Deployment still scales its new
// ReplicaSet too). A DaemonSet's promise is a daemon on every node; holding the
// rollout must not break it, and kroll never makes pods from an older revision.
func paused(ds *appsv1.DaemonSet) bool { return ds.Annotations[failure.PausedAnnotation] == "true" }

// dsRevisions are the revisions the failure policy works with.
type dsRevisions struct {
	// newest is the revision of the template (hash); nil until the cache has it.
	newest *appsv1.ControllerRevision
	// target is the revision a rollback returns to; nil when there is none.
	target *appsv1.ControllerRevision
}

// rollbackRevisions finds, among ds's revisions, the newest (labelled hash) and the
// one a rollback returns to: the newest other marked complete, else the
// highest-numbered other, skipping the revision kroll rolled back from before
// (kroll.dev/rolled-back-from), which failed (controller.RollbackRevision).
func rollbackRevisions(ds *appsv1.DaemonSet, owned []*appsv1.ControllerRevision, hash string) dsRevisions {
	var out dsRevisions
	failed := ds.Annotations[failure.RolledBackFromAnnotation]
	for _, r := range owned {
		if r.Labels[RevisionLabel] == hash {
			if out.newest == nil || r.Revision > out.newest.Revision {
				out.newest = r
			}
		}
	}
	out.target = controller.RollbackRevision(owned, func(r *appsv1.ControllerRevision) bool {
		return r.Labels[RevisionLabel] == hash || strconv.FormatInt(r.Revision, 10) == failed
	})
	return out
}

// planFailure is the failure policy's plan for ds in this sync. st is ds's status as
// this sync counts it; pods are its pods; held tells a staged rollout held at its
// partition or a pause (no progress deadline runs then).
func planFailure(ds *appsv1.DaemonSet, pods []*corev1.Pod, revs dsRevisions, hash string, st appsv1.DaemonSetStatus, held bool, now time.Time) failure.SetPlan {
	old := ds.Status
	v := failure.SetView{
		Policy:      failure.PolicyOf(ds.Annotations),
		Annotations: ds.Annotations,
		Desired:     st.DesiredNumberScheduled,
		Progressed: st.UpdatedNumberScheduled > old.UpdatedNumberScheduled || st.NumberReady > old.NumberReady ||
			st.NumberAvailable > old.NumberAvailable,
		Held:       held,
		Subject:    fmt.Sprintf("DaemonSet %q", ds.Name),
		Conditions: failureConditions.All(ds.Status.Conditions),
	}
	if revs.newest != nil {
		v.Revision, v.RevisionName = revs.newest.Revision, revs.newest.Name
		v.Complete = failure.IsComplete(revs.newest.Annotations)
	}
	if revs.target != nil {
		v.Target = revs.target.Revision
	}
	for _, p := range pods {
		if p.DeletionTimestamp != nil {
			continue
		}
		if isUpdated(ds, p, hash) {
			v.NewPods = append(v.NewPods, p)
		} else {
			v.InProgress = revs.newest != nil
		}
	}
	// Done: no old pod left, and a new one available on every node that wants one.
	want := st.DesiredNumberScheduled
	v.Done = !v.InProgress && revs.newest != nil && want > 0 && st.UpdatedNumberScheduled >= want && st.NumberAvailable >= want
	return failure.PlanSet(v, now)
}

// actOnFailure is ds as act leaves it (a copy), and the outcome to report.
func actOnFailure(ds *appsv1.DaemonSet, revs dsRevisions, act failure.Action, now time.Time) (*appsv1.DaemonSet, string, error) {
	next := ds.DeepCopy()
	if next.Annotations == nil {
		next.Annotations = map[string]string{}
	}
	bad := strconv.FormatInt(revs.newest.Revision, 10)
	if act == failure.Rollback {
		restored, err := history.ApplyRevision(ds, revs.target)
		if err != nil {
			return nil, "", err
		}
		next.Spec.Template = restored.Spec.Template
		next.Annotations[failure.RolledBackFromAnnotation] = bad
		timeline.StampRollback(next, bad, now)
		return next, failure.RolledBackOutcome(bad, strconv.FormatInt(revs.target.Revision, 10)), nil
	}
	next.Annotations[failure.PausedAnnotation] = "true"
	next.Annotations[failure.PausedOnFailureAnnotation] = bad
	return next, failure.PausedOutcome(bad), nil
}

// carryOut makes the one Update of ds that acts on plan, then reports it (see
// controller.SetFailure.Act). A conflict means the cache was stale: the sync is
// retried, and decides afresh.
func (c *Controller) carryOut(ctx context.Context, ds *appsv1.DaemonSet, revs dsRevisions, plan failure.SetPlan, now time.Time) error {
	next, outcome, err := actOnFailure(ds, revs, plan.Act, now)
	if err != nil {
		return err
	}
	return controller.DaemonSetFailure.Act(ctx, c.dsWriter, c.recorder, next, failure.FailedReport(plan.Act, plan.Verdict, outcome), plan.Conditions, now)
}

// abort carries out kroll.dev/abort (see pkg/staging): when it names the revision
// being rolled out (revs.newest, while some daemon pod is not on it), the rollback the
// failure policy makes — the previous revision's template and
// kroll.dev/rolled-back-from, in one Update that also removes the request — then
// RolloutFailed with reason Aborted, a Warning RolledBack event and the metric. A stale
// request (another revision, no rollout, nothing to go back to) is removed with a
// Warning AbortIgnored event. handled is false without a request.
func (c *Controller) abort(ctx context.Context, ds *appsv1.DaemonSet, pods []*corev1.Pod, revs dsRevisions, hash string, now time.Time) (handled bool, err error) {
	rolling := ""
	for _, p := range pods {
		if p.DeletionTimestamp == nil && !isUpdated(ds, p, hash) && revs.newest != nil {
			rolling = revs.newest.Name
		}
	}
	act, ignored := controller.AbortRequest(ds.Annotations, rolling)
	if act && revs.target == nil {
		act, ignored = false, fmt.Sprintf("%s names revision %q, but it has no earlier revision to roll back to; the request is removed", staging.AbortAnnotation, rolling)
	}
	if !act && ignored == "" {
		return false, nil
	}
	next, r := ds.DeepCopy(), failure.Report{}
	if act {
		var outcome string
		if next, outcome, err = actOnFailure(ds, revs, failure.Rollback, now); err != nil {
			return true, err
		}
		r = failure.AbortedReport(outcome)
	}
	delete(next.Annotations, staging.AbortAnnotation)
	return true, controller.DaemonSetFailure.Answer(ctx, c.dsWriter, c.recorder, next, ignored, r, now)
}
