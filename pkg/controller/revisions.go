package controller

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/client-go/kubernetes"

	"github.com/kroll-dev/kroll/pkg/failure"
	"github.com/kroll-dev/kroll/pkg/history"
)

// DeleteStaleRevisions deletes the oldest of revs (sorted, oldest first) that are not
// live, keeping revisionHistoryLimit of them (nil: upstream's default, 10).
func DeleteStaleRevisions(ctx context.Context, client kubernetes.Interface, revs []*appsv1.ControllerRevision, live map[string]bool, revisionHistoryLimit *int32) error {
	limit := int32(10)
	if revisionHistoryLimit != nil {
		limit = *revisionHistoryLimit
	}
	var errs []error
	for _, r := range history.StaleRevisions(revs, live, limit) {
		if err := client.AppsV1().ControllerRevisions(r.Namespace).Delete(ctx, r.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, err)
		}
	}
	return utilerrors.NewAggregate(errs)
}

// ClaimRevisions returns owner's ControllerRevisions among listed (those its selector
// matches, from the cache), oldest first (history.SortRevisions), after adopting the
// orphans: so that a StatefulSet or DaemonSet deleted with --cascade=orphan and made
// again finds its history, and undo sees it. See Claim; the first error stops it.
// fresh reads owner from the API server.
func ClaimRevisions(ctx context.Context, client kubernetes.Interface, owner metav1.Object, kind schema.GroupVersionKind, selector labels.Selector,
	fresh func(ctx context.Context) (metav1.Object, error), listed []*appsv1.ControllerRevision) ([]*appsv1.ControllerRevision, error) {
	owned, err := Claim[*appsv1.ControllerRevision]{
		Owner: owner, Kind: kind, Selects: Matching[*appsv1.ControllerRevision](selector), Fresh: fresh,
		Patch: func(ctx context.Context, r *appsv1.ControllerRevision, patch []byte) (*appsv1.ControllerRevision, error) {
			return client.AppsV1().ControllerRevisions(r.Namespace).Patch(ctx, r.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
		},
	}.Claim(ctx, listed)
	if err != nil {
		return nil, err
	}
	history.SortRevisions(owned)
	return owned, nil
}

// RollbackRevision is the revision a set's self-healing rollback returns to, among
// revs but those skip excludes (the failing revision, the one rolled back from
// before): the newest marked complete (failure.CompleteAnnotation), as a Deployment
// returns to its newest complete ReplicaSet; without one, the newest by number. Nil
// when none is left.
func RollbackRevision(revs []*appsv1.ControllerRevision, skip func(*appsv1.ControllerRevision) bool) *appsv1.ControllerRevision {
	var newest, newestComplete *appsv1.ControllerRevision
	for _, r := range revs {
		if skip(r) {
			continue
		}
		if newest == nil || r.Revision > newest.Revision {
			newest = r
		}
		if failure.IsComplete(r.Annotations) && (newestComplete == nil || r.Revision > newestComplete.Revision) {
			newestComplete = r
		}
	}
	if newestComplete != nil {
		return newestComplete
	}
	return newest
}
