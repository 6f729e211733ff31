// Package replicaset is kroll's ReplicaSet and ReplicationController controller: it
// keeps exactly spec.replicas pods of each ReplicaSet (or ReplicationController),
// adopting and releasing pods by selector and controllerRef, and reports their
// readiness in its status. One implementation serves both kinds (see kind).
package replicaset

import (
	"context"
	"reflect"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	appsinformers "k8s.io/client-go/informers/apps/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"github.com/kroll-dev/kroll/pkg/controller"
	"github.com/kroll-dev/kroll/pkg/gates"
)

// ControllerName and RCControllerName are the names upstream's ReplicaSet and
// ReplicationController controllers record events under.
const (
	ControllerName   = "replicaset-controller"
	RCControllerName = "replication-controller"
)

// BurstReplicas caps the pods created or deleted for one ReplicaSet in one sync; the
// rest wait for the next sync, once these have been observed.
const BurstReplicas = 500

// evictionsAtOnce is how many of one sync's evictions are in the API server at once
// (see the scale-down in sync.go).
const evictionsAtOnce = 2

// Controller is the ReplicaSet or the ReplicationController controller.
type Controller struct {
	kind       *kind
	podControl controller.PodControl
	recorder   record.EventRecorder
	now        func() time.Time

	podLister  corelisters.PodLister
	podIndexer cache.Indexer
	synced     []cache.InformerSynced

	queue        controller.Queue
	expectations *controller.Expectations
	// fence holds a sync back until the caches show this controller's own latest pod
	// creates and status write for the ReplicaSet.
	fence *controller.Fence
	// statusWaits bounds the status writes put off for an in-place hand-over (putOff).
	statusWaits statusWaits
	burst       int
	// waits logs what keeps ReplicaSets from being resized (see observeWait).
	waits *controller.WaitLog
	// snapshots, when set (WaitForSnapshots), holds back the pods of a ReplicaSet
	// whose configuration snapshots are not there yet.
	snapshots *snapshotSource
	// budgets, when set (RespectBudgets), evicts the old pods of Deployments that
	// respect PodDisruptionBudgets; nil deletes them.
	budgets *budgets
	// terminatingOff: the DeploymentReplicaSetTerminatingReplicas gate is off
	// (SetFeatureGates); false, the zero value, is gates.Defaults().
	terminatingOff bool
}

// SetFeatureGates sets the Kubernetes feature gates the controller reads (default
// gates.Defaults()): DeploymentReplicaSetTerminatingReplicas, without which
// status.terminatingReplicas is left out, as upstream's controller leaves it (the API
// server drops it then, and a controller that kept writing it would write again at
// every sync). Call it before Run.
func (c *Controller) SetFeatureGates(g gates.Gates) {
	c.terminatingOff = !g.DeploymentReplicaSetTerminatingReplicas
}

// New builds the ReplicaSet controller on shared informers (which it adds handlers and
// an index to; start them after). recorder receives the SuccessfulCreate and
// SuccessfulDelete events.
func New(client kubernetes.Interface, rsInformer appsinformers.ReplicaSetInformer, podInformer coreinformers.PodInformer, recorder record.EventRecorder) (*Controller, error) {
	return newController(client, replicaSetKind(client, rsInformer), podInformer, recorder)
}

// NewForReplicationControllers builds the ReplicationController controller, as New.
func NewForReplicationControllers(client kubernetes.Interface, rcInformer coreinformers.ReplicationControllerInformer, podInformer coreinformers.PodInformer, recorder record.EventRecorder) (*Controller, error) {
	return newController(client, replicationControllerKind(client, rcInformer), podInformer, recorder)
}

func newController(client kubernetes.Interface, k *kind, podInformer coreinformers.PodInformer, recorder record.EventRecorder) (*Controller, error) {
	c := &Controller{
		kind:         k,
		podControl:   controller.NewPodControl(client, recorder, controller.ReplicaSetEvents),
		recorder:     recorder,
		now:          time.Now,
		podLister:    podInformer.Lister(),
		podIndexer:   podInformer.Informer().GetIndexer(),
		synced:       []cache.InformerSynced{k.informer.HasSynced, podInformer.Informer().HasSynced},
		queue:        controller.NewQueue(k.queue),
		expectations: controller.NewExpectations(time.Now),
		fence: controller.NewFence(map[string]controller.VersionSource{
			"pods": podInformer.Informer().GetStore(), "owners": k.informer.GetStore(),
		}),
		burst: BurstReplicas,
	}
	c.waits = controller.NewWaitLog(logKey(k.name), func() time.Time { return c.now() })
	if err := controller.AddPodControllerIndex(podInformer.Informer()); err != nil {
		return nil, err
	}
	if _, err := k.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueue,
		UpdateFunc: func(_, cur any) { c.enqueue(cur) },
		DeleteFunc: c.deleteReplicaSet,
	}); err != nil {
		return nil, err
	}
	if _, err := podInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.addPod,
		UpdateFunc: c.updatePod,
		DeleteFunc: c.deletePod,
	}); err != nil {
		return nil, err
	}
	return c, nil
}

// Run syncs ReplicaSets (or ReplicationControllers) with workers goroutines until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) {
	c.queue.Run(ctx, c.kind.component, workers, c.synced, c.sync)
}

func (c *Controller) enqueue(obj any) { c.queue.Enqueue(obj) }

func (c *Controller) deleteReplicaSet(obj any) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		return
	}
	c.expectations.Forget(key)
	c.fence.Forget(key)
	c.statusWaits.forget(key)
	c.waits.Forget(key)
	c.budgets.forget(key)
	c.queue.Add(key)
}

// ownerOf returns the ReplicaSet a controllerRef names, if it is in the cache with that UID.
func (c *Controller) ownerOf(namespace string, ref *metav1.OwnerReference) *appsv1.ReplicaSet {
	rs, _ := controller.Resolve(ref, c.kind.name, func(name string) (*appsv1.ReplicaSet, error) { return c.kind.get(namespace, name) })
	return rs
}

// replicaSetsSelecting lists the ReplicaSets whose selector matches pod (adoption candidates).
func (c *Controller) replicaSetsSelecting(pod *corev1.Pod) []*appsv1.ReplicaSet {
	all, err := c.kind.list(pod.Namespace)
	if err != nil {
		return nil
	}
	return controller.Selecting(all, func(rs *appsv1.ReplicaSet) *metav1.LabelSelector { return rs.Spec.Selector }, pod.Labels)
}

func (c *Controller) addPod(obj any) {
	pod := obj.(*corev1.Pod)
	if pod.DeletionTimestamp != nil {
		// A restarted controller sees a pod that is already being deleted.
		c.deletePod(pod)
		return
	}
	if ref := metav1.GetControllerOfNoCopy(pod); ref != nil {
		if rs := c.ownerOf(pod.Namespace, ref); rs != nil {
			key, _ := cache.MetaNamespaceKeyFunc(rs)
			c.expectations.CreationObserved(key)
			c.queue.Add(key)
		}
		return
	}
	for _, rs := range c.replicaSetsSelecting(pod) {
		c.enqueue(rs)
	}
}

func (c *Controller) updatePod(oldObj, curObj any) {
	old, cur := oldObj.(*corev1.Pod), curObj.(*corev1.Pod)
	if old.ResourceVersion == cur.ResourceVersion {
		return
	}
	labelsChanged := !reflect.DeepEqual(old.Labels, cur.Labels)
	if cur.DeletionTimestamp != nil {
		// A graceful delete first sets the deletion timestamp: that is the deletion the
		// controller waits to observe. The pod may also have left an RS by its labels.
		c.deletePod(cur)
		if labelsChanged {
			c.deletePod(old)
		}
		return
	}
	curRef, oldRef := metav1.GetControllerOfNoCopy(cur), metav1.GetControllerOfNoCopy(old)
	refChanged := !reflect.DeepEqual(curRef, oldRef)
	if refChanged && oldRef != nil {
		if rs := c.ownerOf(old.Namespace, oldRef); rs != nil {
			c.enqueue(rs)
		}
	}
	if curRef != nil {
		if rs := c.ownerOf(cur.Namespace, curRef); rs != nil {
			c.enqueue(rs)
		}
		return
	}
	if labelsChanged || refChanged {
		for _, rs := range c.replicaSetsSelecting(cur) {
			c.enqueue(rs)
		}
	}
}

func (c *Controller) deletePod(obj any) {
	pod, ok := controller.Deleted[*corev1.Pod](obj)
	if !ok {
		return
	}
	rs := c.ownerOf(pod.Namespace, metav1.GetControllerOfNoCopy(pod))
	if rs == nil {
		return
	}
	key, _ := cache.MetaNamespaceKeyFunc(rs)
	podKey, _ := cache.MetaNamespaceKeyFunc(pod)
	c.expectations.DeletionObserved(key, podKey)
	c.queue.Add(key)
}

// relatedPods are the active pods of every ReplicaSet with the same controller as rs
// (a Deployment's ReplicaSets), for preferring doubled-up pods on scale-down.
func (c *Controller) relatedPods(rs *appsv1.ReplicaSet) []*corev1.Pod {
	owners := []*appsv1.ReplicaSet{rs}
	if ref := metav1.GetControllerOfNoCopy(rs); ref != nil {
		siblings, err := c.kind.list(rs.Namespace)
		if err == nil {
			owners = owners[:0]
			for _, s := range siblings {
				if sref := metav1.GetControllerOfNoCopy(s); sref != nil && sref.UID == ref.UID {
					owners = append(owners, s)
				}
			}
		}
	}
	var out []*corev1.Pod
	for _, o := range owners {
		out = slices.AppendSeq(out, controller.ActivePodsOf(c.podIndexer, string(o.UID)))
	}
	return out
}

func isNotFoundOrGone(err error) bool {
	return apierrors.IsNotFound(err) || apierrors.IsGone(err)
}
