package statefulset

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/kroll-dev/kroll/pkg/history"
)

var controllerKind = appsv1.SchemeGroupVersion.WithKind("StatefulSet")

// revisionsFor finds or makes the set's update revision (its template now: see
// history.CurrentRevision) and finds its current revision, given its history sorted
// oldest first. It returns the collision count used.
func (c *Controller) revisionsFor(ctx context.Context, set *appsv1.StatefulSet, revs []*appsv1.ControllerRevision) (revisions, int32, error) {
	update, collisions, err := history.CurrentRevision(ctx, c.client.AppsV1().ControllerRevisions(set.Namespace), set, revs)
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
	if out.currentSet, err = c.templates.ApplyToStatefulSet(set, current); err != nil {
		return revisions{}, collisions, err
	}
	if out.updateSet, err = c.templates.ApplyToStatefulSet(set, update); err != nil {
		return revisions{}, collisions, err
	}
	return out, collisions, nil
}
