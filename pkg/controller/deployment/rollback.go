package deployment

import (
	"context"
	"fmt"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/kroll-dev/kroll/pkg/failure"
	"github.com/kroll-dev/kroll/pkg/history"
	"github.com/kroll-dev/kroll/pkg/inplace"
)

// RollbackToAnnotation is where apps/v1 keeps the rollbackTo field of the older
// Deployment APIs (extensions/v1beta1, apps/v1beta1): the revision to go back to, 0
// for the one before the current. Upstream's controller still honours it, and so does
// this one.
const RollbackToAnnotation = "deprecated.deployment.rollback.to"

// The events of a rollback asked for through RollbackToAnnotation, as upstream names them.
const (
	reasonRollbackDone              = "DeploymentRollback"
	reasonRollbackRevisionNotFound  = "DeploymentRollbackRevisionNotFound"
	reasonRollbackTemplateUnchanged = "DeploymentRollbackTemplateUnchanged"
)

// rollbackTo is the revision d's RollbackToAnnotation asks for; ok is false without
// one, or with one that is not a number (ignored, as upstream ignores it).
func rollbackTo(d *appsv1.Deployment) (revision int64, ok bool) {
	v := d.Annotations[RollbackToAnnotation]
	if v == "" {
		return 0, false
	}
	n, err := strconv.ParseInt(v, 10, 64)
	return n, err == nil
}

// rollback carries out the rollback d's RollbackToAnnotation asks for: d gets the
// template (and the annotations) of the ReplicaSet of that revision — revision 0 is
// the one before the newest — and the annotation goes, in one write; the next pass
// rolls out as for any template change. A revision that cannot be found, or whose
// template d already has, is an event and the annotation goes. Rolling back is not
// re-entrant: nothing else moves until the annotation is gone.
//
// kroll.dev/ settings stay as d has them (see history.KeepSettings).
func (c *Controller) rollback(ctx context.Context, p *pass, revision int64) error {
	if err := c.createNewReplicaSet(ctx, p, false); err != nil {
		return err
	}
	d, all := p.d, p.all()
	if revision == 0 {
		if revision = history.LastRevision(all); revision == 0 {
			c.recorder.Eventf(d, corev1.EventTypeWarning, reasonRollbackRevisionNotFound, "Unable to find last revision.")
			return c.clearRollbackTo(ctx, d)
		}
	}
	for _, rs := range all {
		if rs == nil || history.Revision(rs) != revision {
			continue
		}
		if history.EqualIgnoringHash(&d.Spec.Template, &rs.Spec.Template) {
			c.recorder.Eventf(d, corev1.EventTypeWarning, reasonRollbackTemplateUnchanged, "The rollback revision contains the same template as current deployment %q", d.Name)
			return c.clearRollbackTo(ctx, d)
		}
		d.Spec.Template = *rs.Spec.Template.DeepCopy()
		delete(d.Spec.Template.Labels, appsv1.DefaultDeploymentUniqueLabelKey)
		history.SetAnnotationsFrom(d, rs)
		if err := c.clearRollbackTo(ctx, d); err != nil {
			return err
		}
		c.recorder.Eventf(d, corev1.EventTypeNormal, reasonRollbackDone, "Rolled back deployment %q to revision %d", d.Name, revision)
		return nil
	}
	c.recorder.Eventf(d, corev1.EventTypeWarning, reasonRollbackRevisionNotFound, "Unable to find the revision to rollback to.")
	return c.clearRollbackTo(ctx, d)
}

// clearRollbackTo removes RollbackToAnnotation and writes d (with whatever rollback set).
func (c *Controller) clearRollbackTo(ctx context.Context, d *appsv1.Deployment) error {
	delete(d.Annotations, RollbackToAnnotation)
	_, err := c.writes.updateDeployment(ctx, d)
	return err
}

// keepSettings writes d's kroll.dev/ workload settings onto every ReplicaSet of d that
// does not hold them exactly (see history.KeepSettings), so that `kubectl rollout
// undo` to any revision keeps them; and takes off d the records an undo copied from a
// ReplicaSet (recordsOfReplicaSets: they belong to that ReplicaSet). wrote says a write was
// made: the informers bring d back.
func (c *Controller) keepSettings(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) (wrote bool, err error) {
	if copied := copiedRecords(d); len(copied) > 0 {
		next := d.DeepCopy()
		for _, k := range copied {
			delete(next.Annotations, k)
		}
		_, err := c.writes.updateDeployment(ctx, next)
		return true, err
	}
	for _, rs := range rsList {
		if history.SettingsKept(d, rs) {
			continue
		}
		next := rs.DeepCopy()
		history.KeepSettings(d, next)
		if _, err := c.writes.updateReplicaSet(ctx, next); err != nil {
			return true, fmt.Errorf("keep the settings of deployment %s/%s on replica set %s: %w", d.Namespace, d.Name, rs.Name, err)
		}
		wrote = true
	}
	return wrote, nil
}

// recordsOfReplicaSets are the annotations kroll keeps on a ReplicaSet about that
// ReplicaSet alone: the hand-over records, and kroll.dev/complete. `kubectl rollout
// undo` copies a ReplicaSet's annotations onto the Deployment, where they would say
// something false of it.
var recordsOfReplicaSets = []string{inplace.LeavingAnnotation, inplace.ArrivingAnnotation, failure.CompleteAnnotation}

// copiedRecords lists the records of ReplicaSets d holds.
func copiedRecords(d *appsv1.Deployment) []string {
	var out []string
	for _, k := range recordsOfReplicaSets {
		if _, ok := d.Annotations[k]; ok {
			out = append(out, k)
		}
	}
	return out
}
