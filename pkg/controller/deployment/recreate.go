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
func (c *Controller) rolloutRecreate(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) error {
	newRS, oldRSs, err := c.replicaSets(ctx, d, rsList, false)
	if err != nil {
		return err
	}
	all := append(append([]*appsv1.ReplicaSet{}, oldRSs...), newRS)
	// An in-place hand-over under way when d turned to Recreate finishes first, and
	// its records go (else they would keep pods from being deleted).
	if _, err := c.finishHandOvers(ctx, d, all); err != nil {
		return err
	}
	if _, err := c.settleWhereTheyAre(ctx, newRS, oldRSs); err != nil { // pods with the in-place gate
		return err
	}

	scaledDown := false
	for _, rs := range rollout.Active(oldRSs) {
		scaled, _, err := c.scaleReplicaSet(ctx, d, rs, 0)
		if err != nil {
			return err
		}
		scaledDown = scaledDown || scaled
	}
	if scaledDown {
		return c.syncRolloutStatus(ctx, all, newRS, d)
	}
	if running, err := c.oldPodsExist(d, oldRSs); err != nil {
		return err
	} else if running {
		return c.syncRolloutStatus(ctx, all, newRS, d)
	}
	if newRS == nil {
		if newRS, oldRSs, err = c.replicaSets(ctx, d, rsList, true); err != nil {
			return err
		}
		all = append(append([]*appsv1.ReplicaSet{}, oldRSs...), newRS)
	}
	if _, _, err := c.scaleReplicaSet(ctx, d, newRS, rollout.DesiredReplicas(d)); err != nil {
		return err
	}
	if rollout.Complete(d, &d.Status) {
		if err := c.cleanupHistory(ctx, d, oldRSs); err != nil {
			return err
		}
	}
	return c.syncRolloutStatus(ctx, all, newRS, d)
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
		ref := metav1.GetControllerOf(p)
		if ref == nil || !old[string(ref.UID)] {
			continue
		}
		if p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			return true, nil
		}
	}
	return false, nil
}
