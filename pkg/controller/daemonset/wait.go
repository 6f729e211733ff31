package daemonset

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/kroll-dev/kroll/pkg/controller"
	"github.com/kroll-dev/kroll/pkg/placement"
	"github.com/kroll-dev/kroll/pkg/rollout"
	"github.com/kroll-dev/kroll/pkg/staging"
)

// expectationsGrace is how long a sync's pod creates and deletes may go unobserved
// before the wait log reports them (see the ReplicaSet controller's).
const expectationsGrace = 5 * time.Second

// daemonWait tells what a DaemonSet's rollout waits on after a sync that made no
// change, for the wait log (controller.WaitLog), from the status the sync computed;
// the zero Wait at rest: a pod on every node that should run one, all available, all
// updated (OnDelete: updated only as pods are deleted), none misscheduled. In order:
//
//	StagedStepHeld       held at a staged step, pause or partition
//	Paused               paused by its failure policy (kroll.dev/paused)
//	MaxUnavailableSpent  desired−available ≥ maxUnavailable while nodes are left to
//	                     update: no more old pods go until the new ones are available
//	PodsUnavailable      every node updated, pods still coming up
//	NoWaitKnown          none of the above: the next sync should act
//
// With 10 nodes, maxUnavailable 2, 6 updated and 8 available: 2 ≥ 2, the rollout waits
// for 2 pods to become available; at 9 available it replaces one more.
func daemonWait(ds *appsv1.DaemonSet, st appsv1.DaemonSetStatus, staged staging.Decision) controller.Wait {
	if ds.DeletionTimestamp != nil {
		return controller.Wait{}
	}
	desired := st.DesiredNumberScheduled
	onDelete := ds.Spec.UpdateStrategy.Type == appsv1.OnDeleteDaemonSetStrategyType
	if st.CurrentNumberScheduled == desired && st.NumberAvailable == desired && st.NumberMisscheduled == 0 &&
		(onDelete || st.UpdatedNumberScheduled == desired) {
		return controller.Wait{}
	}
	maxUnavailable, maxSurge, _ := rollout.DaemonSetFenceposts(ds.Spec.UpdateStrategy.RollingUpdate, int(desired))
	details := []any{"desired", desired, "scheduled", st.CurrentNumberScheduled, "updated", st.UpdatedNumberScheduled,
		"available", st.NumberAvailable, "misscheduled", st.NumberMisscheduled, "maxUnavailable", maxUnavailable, "maxSurge", maxSurge,
		"minReadySeconds", ds.Spec.MinReadySeconds}
	if w := controller.StagedWait(staged, details...); w.Reason != "" {
		return w
	}
	wait := func(reason, format string, args ...any) controller.Wait {
		return controller.Wait{Reason: reason, Message: fmt.Sprintf(format, args...), Details: details}
	}
	unavailable := desired - st.NumberAvailable
	switch {
	case paused(ds):
		return wait("Paused", "paused by its failure policy: not rolled out further")
	case !onDelete && st.UpdatedNumberScheduled < desired && int(unavailable) >= max(maxUnavailable, 1) && maxSurge == 0:
		return wait("MaxUnavailableSpent", "maxUnavailable spent: waiting for %d pods to become available before more of the %d nodes left are updated",
			unavailable, desired-st.UpdatedNumberScheduled)
	case st.UpdatedNumberScheduled >= desired && unavailable > 0, onDelete && unavailable > 0:
		return wait("PodsUnavailable", "waiting for %d pods to become available", unavailable)
	}
	return wait("NoWaitKnown", "in progress and no known wait: the next sync should act")
}

// observeWait logs what ds's rollout waits on after a sync: its last creates or
// deletes still unobserved (past the grace), or daemonWait of its status. A sync that
// just made changes, whose pods' events are on their way, logs nothing.
func (c *Controller) observeWait(ctx context.Context, key string, ds *appsv1.DaemonSet, nodes []*corev1.Node, fits map[string]placement.Fit, byNode map[string][]*corev1.Pod, hash string, staged staging.Decision) {
	if c.waits == nil {
		return
	}
	now := c.now()
	if creates, deletes, since, ok := c.expectations.Pending(key); ok {
		if w := controller.ExpectationsWait(creates, deletes, since, now, expectationsGrace); w.Reason != "" {
			c.waits.Observe(ctx, ds, w)
		}
		return
	}
	c.waits.Observe(ctx, ds, daemonWait(ds, statusOf(ds, nodes, fits, byNode, hash, now), staged))
}
