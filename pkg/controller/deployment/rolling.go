package deployment

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/kroll-dev/kroll/pkg/inplace"
	"github.com/kroll-dev/kroll/pkg/rollout"
)

// rolloutRolling moves a RollingUpdate Deployment one step: scale the new ReplicaSet up
// as far as maxSurge allows, or else scale old ReplicaSets down as far as
// maxUnavailable allows; once complete, trim the history. Status is written every pass
// but an in-place one that leaves a pick half recorded (see holdStatus).
// A rollover (the template changed again mid-rollout) needs nothing special: the
// previous "new" ReplicaSet is simply one more old one. A Deployment opted in to
// in-place updates takes the in-place step instead when its change allows it.
func (c *Controller) rolloutRolling(ctx context.Context, p *pass) error {
	created := p.newRS == nil
	if err := c.createNewReplicaSet(ctx, p, true); err != nil {
		return err
	}
	if ip, err := c.advanceInPlace(ctx, p, true); err != nil {
		return err
	} else if ip.handled {
		// The pass that created the new ReplicaSet holds its revision and
		// NewReplicaSetCreated for this status write: it is made whatever the pick.
		if !created && c.holdStatus(p.d, ip.recording) {
			return nil
		}
		return c.syncRolloutStatus(ctx, p)
	}
	d := p.d
	if changed, err := c.scaleNewReplicaSet(ctx, p); err != nil {
		return err
	} else if changed {
		return c.syncRolloutStatus(ctx, p)
	}
	if changed, err := c.scaleDownOld(ctx, p); err != nil {
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
func (c *Controller) scaleNewReplicaSet(ctx context.Context, p *pass) (bool, error) {
	d, newRS := p.d, p.newRS
	desired := rollout.DesiredReplicas(d)
	size := *newRS.Spec.Replicas
	switch {
	case size == desired:
		return false, nil
	case size > desired:
		size = desired
	case inPlaceMode(d) == inplace.Off && rollout.Draining(NotHeld(p.oldRSs), c.seenPods):
		// Old pods being deleted leave their room in a moment, and their ReplicaSet's
		// status write brings the next pass: the new ReplicaSet grows by all of it then,
		// in one write. (An in-place rollout keeps pods handed over on their giver
		// beyond its size for as long as the hand-over takes.) Old pods a disruption
		// budget holds do not leave in a moment: the new ReplicaSet grows into the room
		// there is (counted from the pods), and its pods, once healthy, may be what the
		// budget waits for.
		return false, nil
	default:
		size = rollout.PartitionedNewReplicas(d, p.all(), newRS, c.seenPods, p.staged.Partition)
	}
	if size == *newRS.Spec.Replicas {
		return false, nil
	}
	return c.scaleReplicaSet(ctx, p, newRS, size)
}

// scaleDownOld applies the old-ReplicaSet scale-down plan (unavailable pods first),
// leaving the staged partition's pods on the old ReplicaSets. An old ReplicaSet whose
// controller has not yet acted on its last size is left at it for now: its status
// write, once it has, brings the next pass, which takes what is due by then in one
// write, where writing on every new pod that became available made one each.
func (c *Controller) scaleDownOld(ctx context.Context, p *pass) (bool, error) {
	activeOld := rollout.Active(p.oldRSs)
	byName := map[string]*appsv1.ReplicaSet{}
	for _, rs := range activeOld {
		byName[rs.Name] = rs
	}
	changed := false
	for _, s := range rollout.PartitionedScaleDown(p.d, activeOld, p.newRS, p.staged.Partition) {
		rs := byName[s.ReplicaSet]
		if rs.Status.ObservedGeneration < rs.Generation {
			continue
		}
		scaled, err := c.scaleReplicaSet(ctx, p, rs, s.To)
		if err != nil {
			return changed, err
		}
		changed = changed || scaled
	}
	return changed, nil
}
