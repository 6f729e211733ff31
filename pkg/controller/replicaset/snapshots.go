package replicaset

import (
	"maps"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/kroll-dev/kroll/pkg/configrollout"
)

// snapshotSource is the caches the controller checks a revision's configuration
// snapshots in (WaitForSnapshots); nil: it does not check.
type snapshotSource struct {
	configMaps corelisters.ConfigMapLister
	secrets    corelisters.SecretLister
}

// WaitForSnapshots makes the controller create no pod of a ReplicaSet whose
// configuration snapshots (kroll.dev/config-snapshots, written by the Deployment
// controller right after the ReplicaSet) are not all in its caches yet: such a pod
// would reference an object that does not exist, and a node would start it without its
// configuration (an environment variable) or hold it back (a volume). A snapshot's
// arrival wakes its ReplicaSet. Call before the informers start.
func (c *Controller) WaitForSnapshots(cmInformer coreinformers.ConfigMapInformer, secretInformer coreinformers.SecretInformer) error {
	c.snapshots = &snapshotSource{configMaps: cmInformer.Lister(), secrets: secretInformer.Lister()}
	c.synced = append(c.synced, cmInformer.Informer().HasSynced, secretInformer.Informer().HasSynced)
	for _, inf := range []cache.SharedIndexInformer{cmInformer.Informer(), secretInformer.Informer()} {
		if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: c.snapshotAdded}); err != nil {
			return err
		}
	}
	return nil
}

// snapshotAdded wakes the ReplicaSet that owns a new snapshot.
func (c *Controller) snapshotAdded(obj any) {
	o, ok := obj.(metav1.Object)
	if !ok {
		return
	}
	if _, snap := o.GetLabels()[configrollout.SnapshotOfLabel]; !snap {
		return
	}
	if ref := metav1.GetControllerOfNoCopy(o); ref != nil && ref.Kind == c.kind.gvk().Kind {
		c.queue.Add(o.GetNamespace() + "/" + ref.Name)
	}
}

// missingSnapshot names the first snapshot rs's record names that is not in the
// caches ("configmap/app-config-5d8f7c9b6"); "" when all are, or when not checked.
func (c *Controller) missingSnapshot(namespace string, annotations map[string]string) string {
	if c.snapshots == nil {
		return ""
	}
	snaps := configrollout.SnapshotsOf(annotations)
	for _, key := range slices.Sorted(maps.Keys(snaps)) {
		name := snaps[key].Name
		var err error
		if strings.HasPrefix(key, string(configrollout.Secret)+"/") {
			_, err = c.snapshots.secrets.Secrets(namespace).Get(name)
		} else {
			_, err = c.snapshots.configMaps.ConfigMaps(namespace).Get(name)
		}
		if err != nil {
			kind, _, _ := strings.Cut(key, "/")
			return kind + "/" + name
		}
	}
	return ""
}
