package deployment

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kroll-dev/kroll/pkg/rollout"
)

// rolloutRecreate moves a Recreate Deployment one step: scale every old ReplicaSet to
// 0; then wait until no old pod exists at all (terminating ones included), so old and
// new never run together; then create and scale up the new ReplicaSet.
func (c *Controller) rolloutRecreate(ctx context.Context, p *pass) error {
	d := p.d
	// An in-place hand-over under way when d turned to Recreate finishes first, and its
	// records go (else they would keep pods from being deleted); pods with the in-place
	// gate are put in service.
	if ip, err := c.advanceInPlace(ctx, p, false); err != nil || ip.acted {
		if err != nil {
			return err
		}
		return c.syncRolloutStatus(ctx, p)
	}

	scaledDown := false
	for _, rs := range rollout.Active(p.oldRSs) {
		scaled, err := c.scaleReplicaSet(ctx, p, rs, 0)
		if err != nil {
			return err
		}
		scaledDown = scaledDown || scaled
	}
	if scaledDown {
		return c.syncRolloutStatus(ctx, p)
	}
	if running, err := c.oldPodsExist(d, p.oldRSs); err != nil {
		return err
	} else if running {
		return c.syncRolloutStatus(ctx, p)
	}
	if err := c.createNewReplicaSet(ctx, p, true); err != nil {
		return err
	}
	if _, err := c.scaleReplicaSet(ctx, p, p.newRS, rollout.DesiredReplicas(d)); err != nil {
		return err
	}
	if rollout.Complete(d, &d.Status) {
		if err := c.cleanupHistory(ctx, d, p.oldRSs); err != nil {
			return err
		}
	}
	return c.syncRolloutStatus(ctx, p)
}

// oldPodsExist tells whether any pod of an old ReplicaSet is still around and not
// finished (Pending, Running, Unknown, or terminating).
func (c *Controller) oldPodsExist(d *appsv1.Deployment, oldRSs []*appsv1.ReplicaSet) (bool, error) {
	for _, rs := range oldRSs {
		if rs.Status.Replicas > 0 {
			return true, nil
		}
	}
	selector, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil {
		return false, err
	}
	pods, err := c.podLister.Pods(d.Namespace).List(selector)
	if err != nil {
		return false, err
	}
	old := map[string]bool{}
	for _, rs := range oldRSs {
		old[string(rs.UID)] = true
	}
	for _, p := range pods {
		ref := metav1.GetControllerOfNoCopy(p)
		if ref == nil || !old[string(ref.UID)] {
			continue
		}
		if p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			return true, nil
		}
	}
	return false, nil
}
