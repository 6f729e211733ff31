package rollout

import (
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// SetSlot is one in-range ordinal of a StatefulSet, as its rolling update reads it
// (slots are in ordinal order).
type SetSlot struct {
	// Stale: a pod exists, not being deleted, that is not at the update revision.
	Stale bool
	// Unavailable: the ordinal has no available pod (none yet, not available, being
	// deleted, or out of service for an in-place update).
	Unavailable bool
}

// StatefulSetUpdate returns the ordinals (indexes of slots) a RollingUpdate updates
// this pass, highest first, at or above partition (upstream's order):
//
//   - Without maxUnavailable (nil), one pod at a time, each waited for: the highest
//     stale one, unless a pod above it is unavailable (the update waits for it).
//   - With it (resolved, at least 1), stale pods highest first, as many as keep at most
//     maxUnavailable ordinals unavailable: a stale pod that is unavailable already costs
//     nothing; the walk stops at the first available stale pod the budget cannot pay for.
//
// With 5 ordinals, partition 1, maxUnavailable 2 and all available: ordinals 4 and 3.
func StatefulSetUpdate(slots []SetSlot, partition int, maxUnavailable *int) []int {
	if maxUnavailable == nil {
		for i := len(slots) - 1; i >= partition && i >= 0; i-- {
			if slots[i].Stale {
				return []int{i}
			}
			if slots[i].Unavailable {
				return nil
			}
		}
		return nil
	}
	unavailable := 0
	for _, s := range slots {
		if s.Unavailable {
			unavailable++
		}
	}
	var out []int
	for i := len(slots) - 1; i >= partition && i >= 0; i-- {
		s := slots[i]
		if !s.Stale {
			continue
		}
		if !s.Unavailable {
			if unavailable >= *maxUnavailable {
				break
			}
			unavailable++
		}
		out = append(out, i)
	}
	return out
}

// StatefulSetMaxUnavailable is set's rollingUpdate.maxUnavailable against its
// replicas, rounded down, at least 1 (10 replicas at 25%: 2; 3 at 10%: 1); nil without
// one (one pod at a time, each waited for, as StatefulSetUpdate reads nil). With the
// MaxUnavailableStatefulSet gate off (gateOn false) it is nil whatever the set says,
// as upstream's controller then ignores the field: a set created while the gate was
// on keeps it (the API server drops it only from sets that never had it). The
// StatefulSet controller and `kroll rollout plan` both read it here.
func StatefulSetMaxUnavailable(set *appsv1.StatefulSet, gateOn bool) (*int, error) {
	ru := set.Spec.UpdateStrategy.RollingUpdate
	if !gateOn || ru == nil || ru.MaxUnavailable == nil {
		return nil, nil
	}
	n, err := intstr.GetScaledValueFromIntOrPercent(ru.MaxUnavailable, int(Replicas(set.Spec.Replicas)), false)
	if err != nil {
		return nil, err
	}
	n = max(n, 1)
	return &n, nil
}
