package deployment

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/kroll-dev/kroll/pkg/controller"
)

// writer is every write the Deployment controller makes but to pods (those go through
// controller.PodControl): to a Deployment (its metadata and spec, or its status) and to
// its ReplicaSets.
type writer interface {
	updateDeployment(ctx context.Context, d *appsv1.Deployment) (*appsv1.Deployment, error)
	updateStatus(ctx context.Context, d *appsv1.Deployment) (*appsv1.Deployment, error)
	createReplicaSet(ctx context.Context, rs *appsv1.ReplicaSet) (*appsv1.ReplicaSet, error)
	updateReplicaSet(ctx context.Context, rs *appsv1.ReplicaSet) (*appsv1.ReplicaSet, error)
	patchReplicaSet(ctx context.Context, namespace, name string, pt types.PatchType, patch []byte) (*appsv1.ReplicaSet, error)
	// deleteReplicaSet deletes rs, its UID as precondition.
	deleteReplicaSet(ctx context.Context, rs *appsv1.ReplicaSet) error
}

// apiWriter writes through the API.
type apiWriter struct{ client kubernetes.Interface }

var _ writer = apiWriter{}

func (w apiWriter) updateDeployment(ctx context.Context, d *appsv1.Deployment) (*appsv1.Deployment, error) {
	return w.client.AppsV1().Deployments(d.Namespace).Update(ctx, d, metav1.UpdateOptions{})
}

func (w apiWriter) updateStatus(ctx context.Context, d *appsv1.Deployment) (*appsv1.Deployment, error) {
	return w.client.AppsV1().Deployments(d.Namespace).UpdateStatus(ctx, d, metav1.UpdateOptions{})
}

func (w apiWriter) createReplicaSet(ctx context.Context, rs *appsv1.ReplicaSet) (*appsv1.ReplicaSet, error) {
	return w.client.AppsV1().ReplicaSets(rs.Namespace).Create(ctx, rs, metav1.CreateOptions{})
}

func (w apiWriter) updateReplicaSet(ctx context.Context, rs *appsv1.ReplicaSet) (*appsv1.ReplicaSet, error) {
	return w.client.AppsV1().ReplicaSets(rs.Namespace).Update(ctx, rs, metav1.UpdateOptions{})
}

func (w apiWriter) patchReplicaSet(ctx context.Context, namespace, name string, pt types.PatchType, patch []byte) (*appsv1.ReplicaSet, error) {
	return w.client.AppsV1().ReplicaSets(namespace).Patch(ctx, name, pt, patch, metav1.PatchOptions{})
}

func (w apiWriter) deleteReplicaSet(ctx context.Context, rs *appsv1.ReplicaSet) error {
	return w.client.AppsV1().ReplicaSets(rs.Namespace).Delete(ctx, rs.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &rs.UID}})
}

// fencedWriter records the resource version of each write in fence, under the
// Deployment it is for, so that the Deployment's next sync waits until the caches show
// it (see controller.Fence): a sync on a cache without its own last status write
// conflicts, and one without its last ReplicaSet write plans that step again.
type fencedWriter struct {
	writer
	fence *controller.Fence
}

func (w fencedWriter) updateDeployment(ctx context.Context, d *appsv1.Deployment) (*appsv1.Deployment, error) {
	out, err := w.writer.updateDeployment(ctx, d)
	w.wroteDeployment(out, err)
	return out, err
}

func (w fencedWriter) updateStatus(ctx context.Context, d *appsv1.Deployment) (*appsv1.Deployment, error) {
	out, err := w.writer.updateStatus(ctx, d)
	w.wroteDeployment(out, err)
	return out, err
}

func (w fencedWriter) createReplicaSet(ctx context.Context, rs *appsv1.ReplicaSet) (*appsv1.ReplicaSet, error) {
	out, err := w.writer.createReplicaSet(ctx, rs)
	w.wroteReplicaSet(out, err)
	return out, err
}

func (w fencedWriter) updateReplicaSet(ctx context.Context, rs *appsv1.ReplicaSet) (*appsv1.ReplicaSet, error) {
	out, err := w.writer.updateReplicaSet(ctx, rs)
	w.wroteReplicaSet(out, err)
	return out, err
}

func (w fencedWriter) patchReplicaSet(ctx context.Context, namespace, name string, pt types.PatchType, patch []byte) (*appsv1.ReplicaSet, error) {
	out, err := w.writer.patchReplicaSet(ctx, namespace, name, pt, patch)
	w.wroteReplicaSet(out, err)
	return out, err
}

func (w fencedWriter) wroteDeployment(d *appsv1.Deployment, err error) {
	if err == nil && d != nil {
		w.fence.Wrote(d.Namespace+"/"+d.Name, d.UID, "deployments", d.ResourceVersion)
	}
}

// wroteReplicaSet records a write of rs under the Deployment that controls it, if any
// (a ReplicaSet just released has none: nothing of this Deployment waits on it).
func (w fencedWriter) wroteReplicaSet(rs *appsv1.ReplicaSet, err error) {
	if err != nil || rs == nil {
		return
	}
	if ref := metav1.GetControllerOfNoCopy(rs); ref != nil && ref.Kind == "Deployment" {
		w.fence.Wrote(rs.Namespace+"/"+ref.Name, ref.UID, "replicasets", rs.ResourceVersion)
	}
}
