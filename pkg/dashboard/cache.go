package dashboard

import (
	"context"
	"fmt"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/kroll-dev/kroll/pkg/rolloutview"
)

// Cache is the dashboard's one view of the cluster: one shared informer per kind for
// every page and every open tab, so a hundred tabs cost the API server no more
// watches than one. Pages read its stores; Subscribe tells them when anything changed.
type Cache struct {
	factory informers.SharedInformerFactory
	// namespaces are the ones shown; empty for all.
	namespaces map[string]bool

	deployments, statefulSets, daemonSets, replicaSets cache.SharedIndexInformer
	revisions, pods, nodes, controllers, events        cache.SharedIndexInformer

	client kubernetes.Interface

	mu   sync.Mutex
	subs map[chan struct{}]struct{}
	// listVersion counts the changes seen to what the list's rows read (every kind
	// but events: a busy cluster's events come many a second, and the rows of a
	// thousand workloads take a fifth of a second to compute again).
	listVersion uint64
}

// NewCache makes the informers of client for namespaces (none: every namespace); Start
// runs them.
func NewCache(client kubernetes.Interface, namespaces []string) *Cache {
	var opts []informers.SharedInformerOption
	if len(namespaces) == 1 {
		opts = append(opts, informers.WithNamespace(namespaces[0]))
	}
	f := informers.NewSharedInformerFactoryWithOptions(client, 0, opts...)
	c := &Cache{factory: f, namespaces: map[string]bool{}, subs: map[chan struct{}]struct{}{}}
	for _, ns := range namespaces {
		c.namespaces[ns] = true
	}
	apps, core := f.Apps().V1(), f.Core().V1()
	c.deployments, c.statefulSets, c.daemonSets = apps.Deployments().Informer(), apps.StatefulSets().Informer(), apps.DaemonSets().Informer()
	c.replicaSets, c.revisions = apps.ReplicaSets().Informer(), apps.ControllerRevisions().Informer()
	c.pods, c.controllers, c.events = core.Pods().Informer(), core.ReplicationControllers().Informer(), core.Events().Informer()
	// Nodes are cluster-wide: a staged DaemonSet counts the nodes it should run on.
	c.nodes = informers.NewSharedInformerFactory(client, 0).Core().V1().Nodes().Informer()
	c.client = client
	for _, inf := range c.informers() {
		// Before Run, as SetTransform requires; it cannot fail then.
		_ = inf.SetTransform(slim)
	}
	return c
}

// slim is the informers' transform: the cache keeps what the pages read. Every object
// loses its managedFields (they list every field each writer set: at 1,000 one-pod
// Deployments, 20 of the 41 MB of JSON the API server lists for the Deployments, their
// ReplicaSets, pods and 6,000 events), but for a workload's newest status write, whose
// manager tells the views whether kroll's controller runs it
// (rolloutview.KeepStatusWriter).
func slim(obj any) (any, error) {
	switch o := obj.(type) {
	case *appsv1.Deployment:
		rolloutview.KeepStatusWriter(o)
	case *appsv1.StatefulSet:
		rolloutview.KeepStatusWriter(o)
	case *appsv1.DaemonSet:
		rolloutview.KeepStatusWriter(o)
	case metav1.Object:
		o.SetManagedFields(nil)
	}
	return obj, nil
}

// names are the informers' resources, in the order of informers().
var names = []string{"deployments", "statefulsets", "daemonsets", "replicasets", "controllerrevisions", "pods", "replicationcontrollers", "events", "nodes"}

func (c *Cache) informers() []cache.SharedIndexInformer {
	all := []cache.SharedIndexInformer{c.deployments, c.statefulSets, c.daemonSets, c.replicaSets,
		c.revisions, c.pods, c.controllers, c.events}
	if c.nodes != nil {
		all = append(all, c.nodes)
	}
	return all
}

// Start runs the informers until ctx ends and waits (at most timeout) until they have
// listed; one that cannot list (RBAC) is named in the error.
//
// Nodes are read only by a user who may list them: one bound to the `view` ClusterRole
// may not (nodes are cluster-scoped), and sees every page all the same, a staged
// DaemonSet's step counted without its nodes.
func (c *Cache) Start(ctx context.Context, timeout time.Duration) error {
	if _, err := c.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{Limit: 1}); apierrors.IsForbidden(err) {
		c.nodes = nil
	}
	var handlers []cache.ResourceEventHandlerRegistration
	for _, inf := range c.informers() {
		listed := inf != c.events
		poke := cache.ResourceEventHandlerFuncs{
			AddFunc:    func(any) { c.changed(listed) },
			UpdateFunc: func(any, any) { c.changed(listed) },
			DeleteFunc: func(any) { c.changed(listed) },
		}
		h, err := inf.AddEventHandler(poke)
		if err != nil {
			return err
		}
		handlers = append(handlers, h)
		go inf.Run(ctx.Done())
	}
	syncCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	// Synced once each handler has been told of every object listed, not only once
	// the stores hold them: the first pages are then rendered at a version that stays
	// (at 1,000 Deployments, some 8,500 objects, the handlers were still being told
	// seconds after the stores had them, and each telling made the next page compute
	// the rows again).
	for i, h := range handlers {
		if !cache.WaitForCacheSync(syncCtx.Done(), h.HasSynced) {
			return fmt.Errorf("could not list and watch %s within %s; can this user list and watch them?", names[i], timeout)
		}
	}
	return nil
}

// Subscribe returns a channel that receives (coalesced) whenever anything the cache
// holds changes, and the function that ends the subscription.
func (c *Cache) Subscribe() (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	c.mu.Lock()
	c.subs[ch] = struct{}{}
	c.mu.Unlock()
	return ch, func() {
		c.mu.Lock()
		delete(c.subs, ch)
		c.mu.Unlock()
	}
}

// changed counts a change, one the list's rows read when listed, and tells the
// subscribers.
func (c *Cache) changed(listed bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if listed {
		c.listVersion++
	}
	for ch := range c.subs {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// ListVersion is the number of changes seen so far to what the list's rows read
// (Workloads and Controllers): the rows computed at one list version are the same
// until the next.
func (c *Cache) ListVersion() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.listVersion
}

// shown tells whether namespace ns is among those the dashboard shows.
func (c *Cache) shown(ns string) bool { return len(c.namespaces) == 0 || c.namespaces[ns] }

// Workloads are every Deployment, StatefulSet and DaemonSet shown, with what each
// owns, as `kroll status` reads them.
func (c *Cache) Workloads(now time.Time) []rolloutview.Snapshot {
	owned := map[string]*rolloutview.Owned{}
	of := func(ns string) *rolloutview.Owned {
		o := owned[ns]
		if o == nil {
			o = &rolloutview.Owned{}
			owned[ns] = o
		}
		return o
	}
	for _, x := range c.replicaSets.GetStore().List() {
		rs := x.(*appsv1.ReplicaSet)
		of(rs.Namespace).ReplicaSets = append(of(rs.Namespace).ReplicaSets, rs)
	}
	for _, x := range c.revisions.GetStore().List() {
		r := x.(*appsv1.ControllerRevision)
		of(r.Namespace).Revisions = append(of(r.Namespace).Revisions, r)
	}
	for _, x := range c.pods.GetStore().List() {
		p := x.(*corev1.Pod)
		of(p.Namespace).Pods = append(of(p.Namespace).Pods, p)
	}
	nodes := c.nodeList()
	var out []rolloutview.Snapshot
	for _, inf := range []cache.SharedIndexInformer{c.deployments, c.statefulSets, c.daemonSets} {
		for _, x := range inf.GetStore().List() {
			obj := x.(runtime.Object)
			ns := obj.(metav1.Object).GetNamespace()
			if !c.shown(ns) {
				continue
			}
			o := of(ns)
			o.Nodes = nodes
			out = append(out, o.SnapshotOf(obj, now))
		}
	}
	return out
}

// Workload is one workload's snapshot; false when the cache has none of that name.
func (c *Cache) Workload(kind, ns, name string, now time.Time) (rolloutview.Snapshot, bool) {
	if !c.shown(ns) {
		return rolloutview.Snapshot{}, false
	}
	var inf cache.SharedIndexInformer
	switch kind {
	case "deployment":
		inf = c.deployments
	case "statefulset":
		inf = c.statefulSets
	case "daemonset":
		inf = c.daemonSets
	default:
		return rolloutview.Snapshot{}, false
	}
	x, ok, _ := inf.GetStore().GetByKey(ns + "/" + name)
	if !ok {
		return rolloutview.Snapshot{}, false
	}
	o := rolloutview.Owned{}
	for _, x := range byNamespace(c.replicaSets, ns) {
		o.ReplicaSets = append(o.ReplicaSets, x.(*appsv1.ReplicaSet))
	}
	for _, x := range byNamespace(c.revisions, ns) {
		o.Revisions = append(o.Revisions, x.(*appsv1.ControllerRevision))
	}
	for _, x := range byNamespace(c.pods, ns) {
		o.Pods = append(o.Pods, x.(*corev1.Pod))
	}
	if kind == "daemonset" {
		o.Nodes = c.nodeList()
	}
	return o.SnapshotOf(x.(runtime.Object), now), true
}

func (c *Cache) nodeList() []*corev1.Node {
	if c.nodes == nil {
		return nil
	}
	var nodes []*corev1.Node
	for _, x := range c.nodes.GetStore().List() {
		nodes = append(nodes, x.(*corev1.Node))
	}
	return nodes
}

// Controllers are the ReplicationControllers and ReplicaSets shown that a client-side
// rolling update (`kroll rolling-update`) is moving pods to or from now.
func (c *Cache) Controllers() []metav1.Object {
	var out []metav1.Object
	for _, inf := range []cache.SharedIndexInformer{c.controllers, c.replicaSets} {
		for _, x := range inf.GetStore().List() {
			m := x.(metav1.Object)
			if c.shown(m.GetNamespace()) && rollingUpdateInFlight(m) {
				out = append(out, m)
			}
		}
	}
	return out
}

// EventsOf are the events of the objects whose UIDs are given, in namespace ns.
func (c *Cache) EventsOf(ns string, uids map[string]bool) []*corev1.Event {
	var out []*corev1.Event
	for _, x := range byNamespace(c.events, ns) {
		e := x.(*corev1.Event)
		if uids[string(e.InvolvedObject.UID)] {
			out = append(out, e)
		}
	}
	return out
}

func byNamespace(inf cache.SharedIndexInformer, ns string) []any {
	items, err := inf.GetIndexer().ByIndex(cache.NamespaceIndex, ns)
	if err != nil {
		return nil
	}
	return items
}
