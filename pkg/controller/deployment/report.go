package deployment

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/kroll-dev/kroll/pkg/controller"
	"github.com/kroll-dev/kroll/pkg/failure"
	"github.com/kroll-dev/kroll/pkg/rollout"
)

// A rollback or pause on failure (or on kroll.dev/abort) is reported in three steps
// after the Update that acts: the RolloutFailed condition in the status, then the
// Warning event and the metric, then an Update that removes kroll.dev/rollout-failed,
// the report's record written with the action (see failure.Report). A controller
// stopped anywhere in between finds the record on its next pass (recoverReport) and
// makes the report its status does not show yet; the action is not taken again (its
// own records, rolled-back-from and paused-on-failure, say it was). A pass on a stale
// cache fails its status write on a conflict before any event goes out.

// actAndReport writes next, d as an action leaves it, with r's record in the same
// Update, then reports r.
func (c *Controller) actAndReport(ctx context.Context, next *appsv1.Deployment, r failure.Report) error {
	if next.Annotations == nil {
		next.Annotations = map[string]string{}
	}
	r.Record(next.Annotations)
	updated, err := c.writes.updateDeployment(ctx, next)
	if err != nil {
		return err
	}
	return c.report(ctx, updated, r)
}

// recoverReport makes the report d still carries; acted is false without one.
func (c *Controller) recoverReport(ctx context.Context, d *appsv1.Deployment) (acted bool, err error) {
	r, present, ok := failure.ReportOf(d.Annotations)
	if !present {
		return false, nil
	}
	if !ok {
		return true, c.clearReport(ctx, d) // unreadable: nothing to report from it
	}
	return true, c.report(ctx, d, r)
}

// report makes r's report for d, which carries it, unless d's status shows it already;
// then removes the record.
func (c *Controller) report(ctx context.Context, d *appsv1.Deployment, r failure.Report) error {
	if !failure.Reported(r, failureView(rollout.Condition(&d.Status, failure.ConditionRolloutFailed))) {
		next := d.DeepCopy()
		removeCondition(&next.Status, failure.ConditionRolloutFailed)
		setCondition(&next.Status, newCondition(failure.ConditionRolloutFailed, corev1.ConditionTrue, r.Reason, r.Message, c.now()))
		updated, err := c.writes.updateStatus(ctx, next)
		if err != nil {
			return err
		}
		controller.ReportFailureAction(c.recorder, updated, "Deployment", r.Action, r.Message)
		d = updated
	}
	return c.clearReport(ctx, d)
}

// clearReport removes kroll.dev/rollout-failed from d.
func (c *Controller) clearReport(ctx context.Context, d *appsv1.Deployment) error {
	next := d.DeepCopy()
	delete(next.Annotations, failure.RolloutFailedAnnotation)
	_, err := c.writes.updateDeployment(ctx, next)
	return err
}

// failureView is c as the failure policy's conditions are (none for nil).
func failureView(c *appsv1.DeploymentCondition) []failure.Condition {
	if c == nil {
		return nil
	}
	return []failure.Condition{{Type: string(c.Type), Status: c.Status, Reason: c.Reason, Message: c.Message, LastTransitionTime: c.LastTransitionTime}}
}
