package replicaset

import (
	"context"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/kroll-dev/kroll/pkg/controller"
)

// expectationsGrace is how long a resize's creates and deletes may go unobserved
// before the wait log reports them: every resize waits for its own pods' events for a
// moment, and only a longer wait (a lost event, a slow cache) is worth a line.
const expectationsGrace = 5 * time.Second

// observeWait logs, at the head of a sync, what keeps rs from being resized: creates or
// deletes of its last resize not yet observed (see controller.ExpectationsWait). A
// ReplicaSet resized by this sync, or at rest, waits on nothing.
func (c *Controller) observeWait(ctx context.Context, key string, rs *appsv1.ReplicaSet) {
	if c.waits == nil {
		return
	}
	wait := controller.Wait{}
	if creates, deletes, since, ok := c.expectations.Pending(key); ok && rs.DeletionTimestamp == nil {
		if wait = controller.ExpectationsWait(creates, deletes, since, c.now(), expectationsGrace); wait.Reason == "" {
			return // the last resize's events are on their way: neither a wait nor its end
		}
		wait.Details = append(wait.Details, "replicas", replicasOf(rs), "pods", rs.Status.Replicas)
	}
	c.waits.Observe(ctx, rs, wait)
}

// logKey is the kind's name as a klog key: "replicaSet", "replicationController".
func logKey(kind string) string {
	return strings.ToLower(kind[:1]) + kind[1:]
}
