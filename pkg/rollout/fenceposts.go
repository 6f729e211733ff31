// Package rollout holds the pure arithmetic of rollouts: no clients, no clocks.
package rollout

import (
	"fmt"
	"math"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Fenceposts are the resolved bounds of a rolling update of desired replicas.
type Fenceposts struct {
	// MaxSurge is how many pods above desired may exist during the update (≥ 0).
	MaxSurge int32
	// MaxUnavailable is how many of desired may be unavailable during the update (≥ 0).
	// It is at least 1 when MaxSurge is 0, so the update can make progress.
	MaxUnavailable int32
}

// ResolveFenceposts turns maxSurge and maxUnavailable (absolute or percent of desired)
// into numbers: surge rounds up, unavailable rounds down, and when both come to 0,
// unavailable becomes 1. With desired 10 and 25%/25%: surge 3 (2.5 up), unavailable 2 (2.5 down).
// A nil value counts as 0. Each is capped so that desired plus it fits an int32.
func ResolveFenceposts(maxSurge, maxUnavailable *intstr.IntOrString, desired int32) (Fenceposts, error) {
	surge, err := scaled(maxSurge, desired, true)
	if err != nil {
		return Fenceposts{}, fmt.Errorf("maxSurge: %w", err)
	}
	unavailable, err := scaled(maxUnavailable, desired, false)
	if err != nil {
		return Fenceposts{}, fmt.Errorf("maxUnavailable: %w", err)
	}
	if surge == 0 && unavailable == 0 {
		unavailable = 1
	}
	return Fenceposts{MaxSurge: surge, MaxUnavailable: unavailable}, nil
}

func scaled(v *intstr.IntOrString, desired int32, roundUp bool) (int32, error) {
	if v == nil {
		return 0, nil
	}
	n, err := intstr.GetScaledValueFromIntOrPercent(v, int(desired), roundUp)
	if err != nil {
		return 0, err
	}
	if n < 0 {
		return 0, fmt.Errorf("must not be negative, got %s", v.String())
	}
	// desired + bound must fit an int32: the callers add them. A bound that large allows
	// every pod at once, and so does the cap; without it a 2147483647% surge of 2000
	// wrapped around to -20 and the rollout never started.
	return int32(min(int64(n), math.MaxInt32-int64(max(desired, 0)))), nil
}

// DaemonSetFenceposts resolves a DaemonSet's maxUnavailable and maxSurge (ru; nil or
// unset: 1 and 0) against desired, the number of nodes that should run it. Unlike a
// Deployment's, both round up, as upstream's DaemonSet controller rounds them: 25% of
// 5 nodes is 2 unavailable (1.25 up). Both 0 means 1 unavailable.
func DaemonSetFenceposts(ru *appsv1.RollingUpdateDaemonSet, desired int) (maxUnavailable, maxSurge int, err error) {
	unavailable, surge := intstr.FromInt32(1), intstr.FromInt32(0)
	if ru != nil {
		if ru.MaxUnavailable != nil {
			unavailable = *ru.MaxUnavailable
		}
		if ru.MaxSurge != nil {
			surge = *ru.MaxSurge
		}
	}
	if maxUnavailable, err = intstr.GetScaledValueFromIntOrPercent(&unavailable, desired, true); err != nil {
		return 0, 0, fmt.Errorf("maxUnavailable: %w", err)
	}
	if maxSurge, err = intstr.GetScaledValueFromIntOrPercent(&surge, desired, true); err != nil {
		return 0, 0, fmt.Errorf("maxSurge: %w", err)
	}
	if maxUnavailable == 0 && maxSurge == 0 {
		maxUnavailable = 1
	}
	return maxUnavailable, maxSurge, nil
}
