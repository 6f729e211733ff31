package daemonset

import (
	"reflect"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/kroll-dev/kroll/pkg/controller"
)

// The ControllerRevision handlers sync what upstream's DaemonSet controller syncs, and
// no more: the owner of a revision that changed or went away, and the DaemonSets whose
// selector matches an orphan (to adopt it). An owned revision's arrival is not news to
// upstream — a client may create one and work with it before the next sync, which
// would delete it as a duplicate of the template's (see history.CurrentRevision) — so
// it syncs its owner only when this controller created it and waits for it
// (awaitedRevisions): planStaging holds every node until the template's revision is in
// the cache.
func (c *Controller) revisionHandlers() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    c.revisionAdded,
		UpdateFunc: c.revisionUpdated,
		DeleteFunc: c.revisionDeleted,
	}
}

func (c *Controller) revisionAdded(obj any) {
	r, ok := obj.(*appsv1.ControllerRevision)
	if !ok {
		return
	}
	if r.DeletionTimestamp != nil {
		c.revisionDeleted(r)
		return
	}
	if ref := metav1.GetControllerOfNoCopy(r); ref != nil {
		if ds := c.resolve(r.Namespace, ref); ds != nil && c.awaited.arrived(ds.UID, r.Name) {
			c.queue.Enqueue(ds)
		}
		return
	}
	c.enqueueAdopters(r)
}

func (c *Controller) revisionUpdated(old, cur any) {
	o, ok1 := old.(*appsv1.ControllerRevision)
	r, ok2 := cur.(*appsv1.ControllerRevision)
	if !ok1 || !ok2 || o.ResourceVersion == r.ResourceVersion {
		return
	}
	oldRef, curRef := metav1.GetControllerOfNoCopy(o), metav1.GetControllerOfNoCopy(r)
	refChanged := !reflect.DeepEqual(oldRef, curRef)
	if refChanged && oldRef != nil {
		if ds := c.resolve(o.Namespace, oldRef); ds != nil {
			c.queue.Enqueue(ds)
		}
	}
	if curRef != nil {
		if ds := c.resolve(r.Namespace, curRef); ds != nil {
			c.awaited.arrived(ds.UID, r.Name)
			c.queue.Enqueue(ds)
		}
		return
	}
	if refChanged || !labels.Equals(o.Labels, r.Labels) {
		c.enqueueAdopters(r)
	}
}

func (c *Controller) revisionDeleted(obj any) {
	r, ok := controller.Deleted[*appsv1.ControllerRevision](obj)
	if !ok {
		return
	}
	if ref := metav1.GetControllerOfNoCopy(r); ref != nil {
		if ds := c.resolve(r.Namespace, ref); ds != nil {
			c.queue.Enqueue(ds)
		}
	}
}

// enqueueAdopters enqueues the DaemonSets whose selector matches the orphan r.
func (c *Controller) enqueueAdopters(r *appsv1.ControllerRevision) {
	sets, err := c.sets.GetHistoryDaemonSets(r)
	if err != nil {
		return // none matches
	}
	for _, ds := range sets {
		c.queue.Enqueue(ds)
	}
}

// resolve is the DaemonSet ref names if it is the one in the cache (same UID), else nil.
func (c *Controller) resolve(namespace string, ref *metav1.OwnerReference) *appsv1.DaemonSet {
	if ref.Kind != controllerKind.Kind {
		return nil
	}
	ds, err := c.sets.DaemonSets(namespace).Get(ref.Name)
	if err != nil || ds.UID != ref.UID {
		return nil
	}
	return ds
}

// awaitedRevisions remembers, per DaemonSet, the revision this controller made for its
// template and has not yet seen in the cache: its arrival syncs the DaemonSet.
type awaitedRevisions struct {
	mu    sync.Mutex
	names map[types.UID]string
}

// await notes that uid's sync waits for the revision name to reach the cache.
func (a *awaitedRevisions) await(uid types.UID, name string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.names == nil {
		a.names = map[types.UID]string{}
	}
	a.names[uid] = name
}

// arrived tells whether uid waited for the revision name, and forgets the wait.
func (a *awaitedRevisions) arrived(uid types.UID, name string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.names[uid] != name {
		return false
	}
	delete(a.names, uid)
	return true
}

// forget drops uid's wait (the DaemonSet is gone).
func (a *awaitedRevisions) forget(uid types.UID) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.names, uid)
}
