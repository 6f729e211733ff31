package storage

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

const (
	// ProvisionerName is the provisioner of the simulated node-local volumes, as a
	// StorageClass names it.
	ProvisionerName = "kroll.dev/simulated-local"
	// DefaultClassName is the StorageClass the cluster starts with.
	DefaultClassName = "standard"
	// VolumeRoot is where, on its node, a simulated volume would live. Nothing is ever
	// written there; the path only makes the PersistentVolume look like a local one.
	VolumeRoot = "/var/lib/kroll/storage"

	// annotationDefaultClass marks the class claims without one get.
	annotationDefaultClass = "storageclass.kubernetes.io/is-default-class"
	// annotationBetaDefaultClass is the older spelling, still honoured by the API server.
	annotationBetaDefaultClass = "storageclass.beta.kubernetes.io/is-default-class"
)

// DefaultClass is the StorageClass `standard`: the cluster's default, provisioned by
// ProvisionerName when a pod first uses a claim, volumes deleted with their claim.
func DefaultClass() *storagev1.StorageClass {
	waitForConsumer := storagev1.VolumeBindingWaitForFirstConsumer
	reclaim := corev1.PersistentVolumeReclaimDelete
	return &storagev1.StorageClass{
		ObjectMeta: metav1.ObjectMeta{
			Name:        DefaultClassName,
			Annotations: map[string]string{annotationDefaultClass: "true"},
		},
		Provisioner:       ProvisionerName,
		VolumeBindingMode: &waitForConsumer,
		ReclaimPolicy:     &reclaim,
	}
}

// isDefault tells a class claims without a class are given.
func isDefault(c *storagev1.StorageClass) bool {
	return c.Annotations[annotationDefaultClass] == "true" || c.Annotations[annotationBetaDefaultClass] == "true"
}

// EnsureDefaultClass creates DefaultClass when the cluster has no class of that name and
// no other default class. A class of that name is never updated: a resumed cluster keeps
// what its user made of it. Deleted, it comes back at the next start, unless the user
// made another class the default meanwhile: two defaults would make every claim without
// a class take whichever is newest.
func EnsureDefaultClass(ctx context.Context, client kubernetes.Interface) error {
	classes, err := client.StorageV1().StorageClasses().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("list storage classes: %w", err)
	}
	for i := range classes.Items {
		if c := &classes.Items[i]; c.Name == DefaultClassName || isDefault(c) {
			return nil
		}
	}
	_, err = client.StorageV1().StorageClasses().Create(ctx, DefaultClass(), metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create storage class %s: %w", DefaultClassName, err)
	}
	return nil
}

// ClusterRole is what the provisioner may do, no more: read claims, classes and nodes,
// make and delete volumes, drop a claim's selected node, and record events.
func ClusterRole(name string) *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"persistentvolumes"}, Verbs: []string{"get", "list", "watch", "create", "delete"}},
			{APIGroups: []string{""}, Resources: []string{"persistentvolumeclaims"}, Verbs: []string{"get", "list", "watch", "patch"}},
			{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get", "list", "watch"}},
			{APIGroups: []string{"storage.k8s.io"}, Resources: []string{"storageclasses"}, Verbs: []string{"get", "list", "watch"}},
			{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create", "patch", "update"}},
		},
	}
}
