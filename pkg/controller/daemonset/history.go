package daemonset

import (
	"context"
	"errors"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/kroll-dev/kroll/pkg/controller"
	"github.com/kroll-dev/kroll/pkg/history"
)

// history lists ds's ControllerRevisions (all: those its selector matches, from the
// cache) and those it owns after adopting orphans (owned, oldest first).
func (c *Controller) history(ctx context.Context, ds *appsv1.DaemonSet, selector labels.Selector) (all, owned []*appsv1.ControllerRevision, err error) {
	all, err = c.revisions.ControllerRevisions(ds.Namespace).List(selector)
	if err != nil {
		return nil, nil, err
	}
	owned, err = controller.ClaimRevisions(ctx, c.client, ds, controllerKind, selector, func(ctx context.Context) (metav1.Object, error) {
		return c.client.AppsV1().DaemonSets(ds.Namespace).Get(ctx, ds.Name, metav1.GetOptions{})
	}, all)
	return all, owned, err
}

// constructHistory finds or creates the ControllerRevision of ds's template and gives
// it the newest number (see history.CurrentRevision); it returns the template's hash
// and the revision. A revision is named "<ds>-<hash>" with the pod-template hash (as
// a Deployment's ReplicaSets are) and holds the template patch kubectl applies on
// undo. A name taken by another template counts a collision in ds's status, and the
// sync is tried again. With configuration rollout, ds is the DaemonSet as cfg decides
// it (controller.Apply) and a new revision records its snapshots.
func (c *Controller) constructHistory(ctx context.Context, ds *appsv1.DaemonSet, all, owned []*appsv1.ControllerRevision, cfg controller.SetConfig) (string, *appsv1.ControllerRevision, error) {
	cur, _, err := history.CurrentRevision(ctx, cfg.Revisions(c.client.AppsV1().ControllerRevisions(ds.Namespace)), ds, owned)
	var collision *history.CollisionError
	if errors.As(err, &collision) {
		next := ds.DeepCopy()
		next.Status.CollisionCount = &collision.Collisions
		if _, err := c.client.AppsV1().DaemonSets(ds.Namespace).UpdateStatus(ctx, next, metav1.UpdateOptions{}); err != nil {
			return "", nil, err
		}
		return "", nil, fmt.Errorf("found a hash collision for DaemonSet %q; collision count is now %d", ds.Name, collision.Collisions)
	}
	if err != nil {
		return "", nil, err
	}
	if !inCache(all, cur) {
		// Noted before the cache is read again: the revision may have arrived already,
		// its Add handler finding no wait.
		c.awaited.await(ds.UID, cur.Name)
		if r, err := c.revisions.ControllerRevisions(ds.Namespace).Get(cur.Name); err == nil && r.UID == cur.UID && c.awaited.arrived(ds.UID, cur.Name) {
			c.queue.Enqueue(ds)
		}
	}
	if h := cur.Labels[RevisionLabel]; h != "" {
		return h, cur, nil
	}
	return history.TemplateHash(&ds.Spec.Template, ds.Status.CollisionCount), cur, nil
}

// cleanupHistory deletes the oldest revisions beyond revisionHistoryLimit that no pod
// runs.
func (c *Controller) cleanupHistory(ctx context.Context, ds *appsv1.DaemonSet, pods []*corev1.Pod, hash string) error {
	selector, err := metav1.LabelSelectorAsSelector(ds.Spec.Selector)
	if err != nil {
		return nil
	}
	all, err := c.revisions.ControllerRevisions(ds.Namespace).List(selector)
	if err != nil {
		return err
	}
	live := map[string]bool{}
	for _, p := range pods {
		live[p.Labels[RevisionLabel]] = true
	}
	var owned []*appsv1.ControllerRevision
	for _, r := range all {
		if metav1.IsControlledBy(r, ds) {
			if r.Labels[RevisionLabel] == hash || live[r.Labels[RevisionLabel]] {
				continue
			}
			owned = append(owned, r)
		}
	}
	history.SortRevisions(owned)
	return controller.DeleteStaleRevisions(ctx, c.client, owned, nil, ds.Spec.RevisionHistoryLimit)
}

// inCache tells whether the cached revisions all hold r (by name and UID).
func inCache(all []*appsv1.ControllerRevision, r *appsv1.ControllerRevision) bool {
	for _, c := range all {
		if c.Name == r.Name && c.UID == r.UID {
			return true
		}
	}
	return false
}
