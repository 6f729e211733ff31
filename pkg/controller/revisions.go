package controller

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/client-go/kubernetes"

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
