package cluster

import (
	"context"

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
	if err := ensureClusterRole(ctx, client, storageRole, storage.ClusterRole(storageRole).Rules); err != nil {
		return err
	}
	return ensureClusterRoleBinding(ctx, client, storageRole, storageRole, identityStorage.cn)
}
