package deployment

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/kroll-dev/kroll/pkg/rollout"
)

// rolloutRolling moves a RollingUpdate Deployment one step: scale the new ReplicaSet up
// as far as maxSurge allows, or else scale old ReplicaSets down as far as
// maxUnavailable allows; once complete, trim the history. Status is written every pass.
// A rollover (the template changed again mid-rollout) needs nothing special: the
// previous "new" ReplicaSet is simply one more old one. A Deployment opted in to
// in-place updates takes the in-place step instead when its change allows it.
func (c *Controller) rolloutRolling(ctx context.Context, p *pass) error {
	if err := c.createNewReplicaSet(ctx, p); err != nil {
		return err
	}
	if ip, err := c.advanceInPlace(ctx, p, true); err != nil {
		return err
	} else if ip.handled {
		return c.syncRolloutStatus(ctx, p)
	}
	d, all, newRS := p.d, p.all(), p.newRS
	if changed, err := c.scaleNewReplicaSet(ctx, d, all, newRS, p.staged.Partition); err != nil {
		return err
	} else if changed {
		return c.syncRolloutStatus(ctx, p)
	}
	if changed, err := c.scaleDownOld(ctx, d, rollout.Active(p.oldRSs), newRS, p.staged.Partition); err != nil {
		return err
	} else if changed {
		return c.syncRolloutStatus(ctx, p)
	}
	if rollout.Complete(d, &d.Status) {
		if err := c.cleanupHistory(ctx, d, p.oldRSs); err != nil {
			return err
		}
	}
	return c.syncRolloutStatus(ctx, p)
}

// scaleNewReplicaSet sizes the new ReplicaSet: down to replicas if above, otherwise up
// by what maxSurge leaves room for, no further than replicas−partition.
func (c *Controller) scaleNewReplicaSet(ctx context.Context, d *appsv1.Deployment, all []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet, partition int32) (bool, error) {
	desired := rollout.DesiredReplicas(d)
	size := *newRS.Spec.Replicas
	switch {
	case size == desired:
		return false, nil
	case size > desired:
		size = desired
	default:
		size = rollout.PartitionedNewReplicas(d, all, newRS, c.seenPods, partition)
	}
	if size == *newRS.Spec.Replicas {
		return false, nil
	}
	changed, _, err := c.scaleReplicaSet(ctx, d, newRS, size)
	return changed, err
}

// scaleDownOld applies the old-ReplicaSet scale-down plan (unavailable pods first),
// leaving partition pods on the old ReplicaSets.
func (c *Controller) scaleDownOld(ctx context.Context, d *appsv1.Deployment, activeOld []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet, partition int32) (bool, error) {
	byName := map[string]*appsv1.ReplicaSet{}
	for _, rs := range activeOld {
		byName[rs.Name] = rs
	}
	changed := false
	for _, s := range rollout.PartitionedScaleDown(d, activeOld, newRS, partition) {
		scaled, _, err := c.scaleReplicaSet(ctx, d, byName[s.ReplicaSet], s.To)
		if err != nil {
			return changed, err
		}
		changed = changed || scaled
	}
	return changed, nil
}
