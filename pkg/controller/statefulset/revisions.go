package statefulset

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/kroll-dev/kroll/pkg/controller"
	"github.com/kroll-dev/kroll/pkg/history"
)

var controllerKind = appsv1.SchemeGroupVersion.WithKind("StatefulSet")

// revisionsFor finds or makes the set's update revision (its template now: see
// history.CurrentRevision; with configuration rollout, the template cfg decides, and a
// new revision records its snapshots) and finds its current revision, given its
// history sorted oldest first. It returns the collision count used.
func (c *Controller) revisionsFor(ctx context.Context, set *appsv1.StatefulSet, revs []*appsv1.ControllerRevision, cfg controller.SetConfig) (revisions, int32, error) {
	client := cfg.Revisions(c.client.AppsV1().ControllerRevisions(set.Namespace))
	update, collisions, err := history.CurrentRevision(ctx, client, controller.Apply(set, cfg), revs)
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
