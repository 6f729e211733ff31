package cluster

import (
	"context"
	"fmt"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kroll-dev/kroll/pkg/storage"
)

// storageRole names the ClusterRole and binding of the simulated storage provisioner.
const storageRole = "kroll:storage-provisioner"

// startStorage gives the cluster its simulated storage (package storage): the
// provisioner's permissions, the default StorageClass when there is none, and the
// provisioner itself, supervised like every component, under an identity of its own.
func (c *Cluster) startStorage(ctx context.Context) error {
	if err := ensureStorageRBAC(ctx, c.Client); err != nil {
		return err
	}
	if err := storage.EnsureDefaultClass(ctx, c.Client); err != nil {
		return err
	}
	rc, err := c.pki.restConfigFor(c.Server, identityStorage)
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(rest.AddUserAgent(rc, "kroll-storage-provisioner"))
	if err != nil {
		return err
	}
	p, err := storage.New(client)
	if err != nil {
		return err
	}
	c.supervise("simulated storage", p.Run)
	return nil
}

// ensureStorageRBAC binds identityStorage to storage.ClusterRole. The role is kroll's
// own, so it is brought up to date on every start (a newer kroll may need more).
func ensureStorageRBAC(ctx context.Context, client kubernetes.Interface) error {
	roles := client.RbacV1().ClusterRoles()
	want := storage.ClusterRole(storageRole)
	role, err := roles.Get(ctx, storageRole, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err = roles.Create(ctx, want, metav1.CreateOptions{})
	case err == nil:
		role.Rules = want.Rules
		_, err = roles.Update(ctx, role, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("cluster role %s: %w", storageRole, err)
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: storageRole},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: storageRole},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: identityStorage.cn}},
	}
	if _, err := client.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("cluster role binding %s: %w", storageRole, err)
	}
	return nil
}
