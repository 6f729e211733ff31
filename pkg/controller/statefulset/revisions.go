package statefulset

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"github.com/kroll-dev/kroll/pkg/history"
)

var controllerKind = appsv1.SchemeGroupVersion.WithKind("StatefulSet")

// revisionsFor finds or makes the set's update revision (its template now) and finds its
// current revision, given its history sorted oldest first. An older revision with the
// same template is renumbered to the newest instead of copied, so `kubectl rollout
// undo` makes no new revision; a new one is created under the set's collision count,
// counting up on a name taken by other data. It returns the collision count used.
func (c *Controller) revisionsFor(ctx context.Context, set *appsv1.StatefulSet, revs []*appsv1.ControllerRevision) (revisions, int32, error) {
	var collisions int32
	if set.Status.CollisionCount != nil {
		collisions = *set.Status.CollisionCount
	}
	data, err := history.TemplatePatch(set)
	if err != nil {
		return revisions{}, collisions, err
	}
	next := history.NextRevision(revs)
	candidate := history.NewRevision(set, controllerKind, set.Spec.Template.Labels, data, next, collisions, history.ControllerRevisionHashLabel)

	var update *appsv1.ControllerRevision
	var equal *appsv1.ControllerRevision
	for _, r := range revs {
		if history.SameData(r, candidate) {
			equal = r
		}
	}
	switch {
	case equal != nil && equal == revs[len(revs)-1]:
		update = equal
	case equal == nil && len(revs) > 0 && sameOnceReencoded(set, revs[len(revs)-1], data):
		// The latest revision differs only in how an older version serialized it
		// (Kubernetes ≤ 1.33 wrote "creationTimestamp":null): it is still the template.
		update = revs[len(revs)-1]
	case equal != nil:
		update, err = c.renumber(ctx, equal, next)
	default:
		update, collisions, err = c.createRevision(ctx, candidate, collisions)
	}
	if err != nil {
		return revisions{}, collisions, err
	}
	current := update
	for _, r := range revs {
		if r.Name == set.Status.CurrentRevision {
			current = r
		}
	}
	out := revisions{current: current, update: update, all: revs}
	if out.currentSet, err = history.ApplyRevision(set, current); err != nil {
		return revisions{}, collisions, err
	}
	if out.updateSet, err = history.ApplyRevision(set, update); err != nil {
		return revisions{}, collisions, err
	}
	return out, collisions, nil
}

func (c *Controller) renumber(ctx context.Context, rev *appsv1.ControllerRevision, to int64) (*appsv1.ControllerRevision, error) {
	var out *appsv1.ControllerRevision
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		fresh, err := c.client.AppsV1().ControllerRevisions(rev.Namespace).Get(ctx, rev.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if fresh.Revision == to {
			out = fresh
			return nil
		}
		fresh.Revision = to
		out, err = c.client.AppsV1().ControllerRevisions(rev.Namespace).Update(ctx, fresh, metav1.UpdateOptions{})
		return err
	})
	return out, err
}

// createRevision creates rev, or returns the revision of that name if it holds the same
// data; a name taken by other data raises the collision count and renames rev.
func (c *Controller) createRevision(ctx context.Context, rev *appsv1.ControllerRevision, collisions int32) (*appsv1.ControllerRevision, int32, error) {
	revisions := c.client.AppsV1().ControllerRevisions(rev.Namespace)
	for attempt := 0; attempt < 100; attempt++ {
		created, err := revisions.Create(ctx, rev, metav1.CreateOptions{})
		if err == nil {
			return created, collisions, nil
		}
		if !apierrors.IsAlreadyExists(err) {
			return nil, collisions, err
		}
		existing, err := revisions.Get(ctx, rev.Name, metav1.GetOptions{})
		if err != nil {
			return nil, collisions, err
		}
		if history.SameData(existing, rev) {
			return existing, collisions, nil
		}
		collisions++
		rev = rev.DeepCopy()
		rev.Name = history.RevisionName(rev.OwnerReferences[0].Name, history.RevisionHash(rev.Data.Raw, collisions))
	}
	return nil, collisions, fmt.Errorf("no free name for a revision of %s after 100 collisions", rev.OwnerReferences[0].Name)
}

// sameOnceReencoded tells whether rev, applied to set and recorded again, gives data:
// the revision holds set's template, written by another serializer.
func sameOnceReencoded(set *appsv1.StatefulSet, rev *appsv1.ControllerRevision, data []byte) bool {
	applied, err := history.ApplyRevision(set, rev)
	if err != nil {
		return false
	}
	again, err := history.TemplatePatch(applied)
	return err == nil && string(again) == string(data)
}
