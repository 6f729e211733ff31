package deployment

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// writer is every write the Deployment controller makes but to pods (those go through
// controller.PodControl): to a Deployment (its metadata and spec, or its status) and to
// its ReplicaSets.
type writer interface {
	updateDeployment(ctx context.Context, d *appsv1.Deployment) (*appsv1.Deployment, error)
	updateStatus(ctx context.Context, d *appsv1.Deployment) (*appsv1.Deployment, error)
	createReplicaSet(ctx context.Context, rs *appsv1.ReplicaSet) (*appsv1.ReplicaSet, error)
	updateReplicaSet(ctx context.Context, rs *appsv1.ReplicaSet) (*appsv1.ReplicaSet, error)
	patchReplicaSet(ctx context.Context, namespace, name string, patch []byte) (*appsv1.ReplicaSet, error)
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

func (w apiWriter) patchReplicaSet(ctx context.Context, namespace, name string, patch []byte) (*appsv1.ReplicaSet, error) {
	return w.client.AppsV1().ReplicaSets(namespace).Patch(ctx, name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
}

func (w apiWriter) deleteReplicaSet(ctx context.Context, rs *appsv1.ReplicaSet) error {
	return w.client.AppsV1().ReplicaSets(rs.Namespace).Delete(ctx, rs.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &rs.UID}})
}
