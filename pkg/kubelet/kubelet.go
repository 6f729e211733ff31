package kubelet

import (
	"context"
	"fmt"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
)

// Kubelet simulates the kubelets of cfg.Nodes nodes in one process.
type Kubelet struct {
	cfg Config
	// client does pod work; heartbeat renews Leases and node status. They are separate
	// so that heartbeats never wait behind pod status writes.
	client    kubernetes.Interface
	heartbeat kubernetes.Interface
	// nodePods and nodeHeartbeats, when set, are each node's own clients for its
	// writes (nodeclients.go).
	nodePods, nodeHeartbeats func(node string) kubernetes.Interface
	sim                      simulator
	ipam                     *ipam
	nodeIndex                map[string]int
	nodeUIDs                 sync.Map // node name → types.UID, for Lease owner references

	leaseMu sync.Mutex
	leases  map[string]*coordinationv1.Lease

	queue     workqueue.TypedRateLimitingInterface[string]
	podLister corelisters.PodLister
	informer  cache.SharedIndexInformer
	// volumes holds pods back until their claims can be mounted (volumes.go).
	volumes *volumeGate
	// nodeLister sees the nodes as users changed them (labels, taints) for admission.
	nodeLister   corelisters.NodeLister
	nodeInformer cache.SharedIndexInformer
	// pods is, per node, what its kubelet admitted; fixed at New, so read without a lock.
	pods map[string]*nodePods
	// events records what each node's kubelet reports as events (a rejection).
	events    record.EventBroadcaster
	recorders map[string]record.EventRecorder
	// images are the images each node holds, for its pull events (events.go).
	images nodeImages
	// probes runs the containers' probes when due (probeloop.go).
	probes *probeLoop
	// apiRuns are the container instances the kubelet API serves (apiinstances.go);
	// apiPort is the port the nodes advertise for it.
	apiRuns apiRuns
	apiPort int32

	mu     sync.Mutex
	clocks map[types.UID]*podClock
	// writtenFrom is, per pod, the resourceVersion our last status write was computed
	// from. While the informer still shows that version it has not seen our write, and
	// syncing would compute the same change twice (a crash counted twice, say).
	writtenFrom map[types.UID]string
}

// New returns a simulator for cfg. podClient does pod work; heartbeatClient, which should
// have its own rate limits, is used for Leases and node status only.
func New(cfg Config, podClient, heartbeatClient kubernetes.Interface) (*Kubelet, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	faults := cfg.Faults
	if faults == nil {
		var err error
		if faults, err = NewFaultRules(); err != nil {
			return nil, err
		}
	}
	registry := cfg.Registry
	if registry == nil {
		registry = DefaultRegistry()
	}
	k := &Kubelet{
		cfg:         cfg,
		client:      podClient,
		heartbeat:   heartbeatClient,
		sim:         simulator{startupDelay: cfg.PodStartupDelay, crashBackOff: cfg.CrashLoopBackOff, faults: faults, registry: registry},
		ipam:        newIPAM(),
		nodeIndex:   map[string]int{},
		leases:      map[string]*coordinationv1.Lease{},
		clocks:      map[types.UID]*podClock{},
		writtenFrom: map[types.UID]string{},
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "kubelet-pods"}),
		pods:      map[string]*nodePods{},
		apiPort:   defaultKubeletPort,
		events:    record.NewBroadcaster(),
		recorders: map[string]record.EventRecorder{},
	}
	k.probes = newProbeLoop(k.queue.Add)
	k.sim.onRun = k.trackRun
	for i := cfg.FirstNode; i < cfg.FirstNode+cfg.Nodes; i++ {
		name := NodeName(i)
		k.nodeIndex[name] = i
		k.pods[name] = newNodePods()
		k.recorders[name] = k.events.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "kubelet", Host: name})
	}
	nodeFactory := informers.NewSharedInformerFactoryWithOptions(podClient, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.LabelSelector = LabelSimulated + "=true"
	}))
	k.nodeInformer, k.nodeLister = nodeFactory.Core().V1().Nodes().Informer(), nodeFactory.Core().V1().Nodes().Lister()
	// Only bound pods concern a kubelet; the field selector keeps the rest out of memory.
	factory := informers.NewSharedInformerFactoryWithOptions(podClient, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermNotEqualSelector("spec.nodeName", "").String()
	}))
	pods := factory.Core().V1().Pods()
	k.informer, k.podLister = pods.Informer(), pods.Lister()
	_, err := k.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    k.enqueue,
		UpdateFunc: func(_, obj any) { k.enqueue(obj) },
		DeleteFunc: k.forget,
	})
	if err != nil {
		return nil, err
	}
	if k.volumes, err = newVolumeGate(k, podClient); err != nil {
		return nil, err
	}
	return k, nil
}

// Run registers the nodes, then heartbeats and syncs pods until ctx ends.
func (k *Kubelet) Run(ctx context.Context) error {
	defer utilruntime.HandleCrash()
	defer k.queue.ShutDown()
	if k.cfg.API != nil {
		if err := k.startAPI(ctx); err != nil {
			return err
		}
	}
	if err := k.registerNodes(ctx); err != nil {
		return err
	}
	go k.heartbeats(ctx)
	k.events.StartRecordingToSink(newLimitedSink(&typedcorev1.EventSinkImpl{Interface: k.client.CoreV1().Events("")}))
	defer k.events.Shutdown()
	k.volumes.start(ctx)
	go k.nodeInformer.Run(ctx.Done())
	go k.informer.Run(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), append(k.volumes.synced, k.informer.HasSynced, k.nodeInformer.HasSynced)...) {
		return ctx.Err()
	}
	k.admitExisting()
	go k.probes.run(ctx)
	var wg sync.WaitGroup
	for i := 0; i < k.cfg.PodWorkers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k.processNext(ctx) {
			}
		}()
	}
	<-ctx.Done()
	k.queue.ShutDown()
	wg.Wait()
	return nil
}

func (k *Kubelet) enqueue(obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	if _, ours := k.nodeIndex[pod.Spec.NodeName]; !ours {
		return
	}
	if key, err := cache.MetaNamespaceKeyFunc(pod); err == nil {
		k.queue.Add(key)
	}
}

// forget drops what is remembered of a pod that is gone, and frees its IP.
func (k *Kubelet) forget(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	k.mu.Lock()
	if clk, ok := k.clocks[pod.UID]; ok {
		clk.dropRuns()
	}
	delete(k.clocks, pod.UID)
	delete(k.writtenFrom, pod.UID)
	k.mu.Unlock()
	k.apiRuns.forget(pod.UID)
	k.ipam.release(pod.UID)
	k.volumes.forget(pod.UID)
	if n, ours := k.pods[pod.Spec.NodeName]; ours {
		k.retryResizes(n.forget(pod.UID), "")
	}
}

// admitExisting admits the pods already bound to our nodes when the simulator starts
// (a resumed cluster), oldest first, as a restarted kubelet does, so that their age and
// not the order in which workers happen to reach them decides which ones fit, and keeps
// the addresses they report for them (ipam.reserve). A pod being deleted is among them:
// until its containers have stopped it holds its resources and its address.
func (k *Kubelet) admitExisting() {
	all, err := k.podLister.List(labels.Everything())
	if err != nil {
		return
	}
	var pods []*corev1.Pod
	for _, p := range all {
		if _, ours := k.pods[p.Spec.NodeName]; ours && !isTerminal(p.Status.Phase) {
			pods = append(pods, p)
		}
	}
	byCreation(pods)
	for _, p := range pods {
		k.pods[p.Spec.NodeName].admitOnce(k.node(p.Spec.NodeName), p)
		if !p.Spec.HostNetwork {
			k.ipam.reserve(p.Spec.NodeName, p.UID, p.Status.PodIP)
		}
	}
}

// node is the current Node object of one of our nodes, for admission: as registered
// until the informer has it.
func (k *Kubelet) node(name string) *corev1.Node {
	if n, err := k.nodeLister.Get(name); err == nil {
		return n
	}
	return k.desiredNode(k.nodeIndex[name])
}

func (k *Kubelet) processNext(ctx context.Context) bool {
	key, quit := k.queue.Get()
	if quit {
		return false
	}
	defer k.queue.Done(key)
	after, err := k.syncPod(ctx, key)
	switch {
	case err != nil:
		// The fifth failure in a row is logged at the default verbosity, once: a pod
		// whose status cannot be written never becomes Ready, and holds a rollout.
		if failures := k.queue.NumRequeues(key) + 1; ctx.Err() == nil {
			level := 2
			if failures == 5 {
				level = 0
			}
			klog.FromContext(ctx).V(level).Info("Pod sync failed, will retry", "pod", key, "failures", failures, "err", err)
		}
		k.queue.AddRateLimited(key)
	default:
		k.queue.Forget(key)
		if after > 0 {
			k.queue.AddAfter(key, after)
		}
	}
	return true
}

// syncPod brings one pod's status (or its deletion) one step forward and returns when
// it is next due to change by itself (0: not on its own).
func (k *Kubelet) syncPod(ctx context.Context, key string) (time.Duration, error) {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return 0, nil
	}
	pod, err := k.podLister.Pods(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if _, ours := k.nodeIndex[pod.Spec.NodeName]; !ours {
		return 0, nil
	}
	now := time.Now()

	k.mu.Lock()
	if rv, ok := k.writtenFrom[pod.UID]; ok {
		if rv == pod.ResourceVersion {
			k.mu.Unlock()
			return 0, nil // our write is on its way; its update event brings the pod back
		}
		delete(k.writtenFrom, pod.UID)
	}
	clk, ok := k.clocks[pod.UID]
	if !ok {
		clk = newPodClock()
		k.clocks[pod.UID] = clk
	}
	clk = clk.clone()
	k.mu.Unlock()

	if pod.DeletionTimestamp != nil {
		return k.finishDeletion(ctx, pod, clk, now)
	}
	node := k.pods[pod.Spec.NodeName]
	if isTerminal(pod.Status.Phase) {
		// Its containers have stopped for good (it completed, or was rejected): it
		// holds no resources and no IP any more; its status stays as it is.
		k.retryResizes(node.release(pod.UID), "")
		k.ipam.release(pod.UID)
		clk.dropRuns()
		return 0, nil
	}
	if verdict := node.admitOnce(k.node(pod.Spec.NodeName), pod); verdict.rejected {
		return 0, k.reject(ctx, pod, verdict, now)
	}
	k.retryResizes(node.refresh(pod), key)

	podIP, ok := k.ipam.podIP(pod.Spec.NodeName, pod.UID, pod.Status.PodIP)
	hostIP := k.ipam.hostIP(pod.Spec.NodeName)
	if pod.Spec.HostNetwork {
		podIP, ok = hostIP, true
	}
	if !ok {
		// Admission keeps the pods of a node within its CIDR, so this is a transient
		// state: like a sandbox whose network is not ready, the pod waits and is retried.
		return 0, fmt.Errorf("no free pod IP on node %s for pod %s/%s", pod.Spec.NodeName, pod.Namespace, pod.Name)
	}
	status, due, held := k.holdForVolumes(pod, clk, hostIP, now)
	var rs resizeState
	if !held {
		rs = k.resizeStateOf(pod, key, clk, now)
		status, due = k.sim.podStatusWith(pod, clk, addresses{hostIP: hostIP, podIP: podIP}, rs, now)
		due = nextResizeRetry(rs, due, now)
	}
	if err := k.writeStatus(ctx, pod, &status); err != nil {
		return 0, err
	}
	if !held {
		k.resizeCompleted(pod, rs.alloc, status)
	}
	k.mu.Lock()
	if _, alive := k.clocks[pod.UID]; alive {
		k.clocks[pod.UID] = clk
	} else {
		clk.dropRuns()
	}
	k.mu.Unlock()
	for _, r := range clk.runs {
		k.probes.schedule(r)
	}
	if due.IsZero() {
		return 0, nil
	}
	return max(due.Sub(now), time.Millisecond), nil
}

// finishDeletion does what a kubelet does for a pod being deleted. While a container
// runs, nothing changes during the grace period (capped by MaxGracePeriod): the pod
// stays Running and Ready, as a real one serves until its containers exit; a pod with
// no running container (being created, failing to pull, crash-looping, rejected) stops
// at once. Then the kubelet reports the containers stopped and the pod Succeeded or
// Failed (stoppedStatus), and once the informer shows that status, deletes the pod with
// a zero grace period, which removes it for good unless a finalizer holds it: a pod so
// held lingers with that final status, its resources and IP released.
func (k *Kubelet) finishDeletion(ctx context.Context, pod *corev1.Pod, clk *podClock, now time.Time) (time.Duration, error) {
	final := stoppedStatus(pod, k.ipam.hostIP(pod.Spec.NodeName), now)
	if sameStatus(final, pod.Status) {
		k.retryResizes(k.pods[pod.Spec.NodeName].release(pod.UID), "")
		k.ipam.release(pod.UID)
		if pod.DeletionGracePeriodSeconds != nil && *pod.DeletionGracePeriodSeconds == 0 {
			return 0, nil // already finalised; finalizers of others hold it now
		}
		zero := int64(0)
		err := k.podWriter(pod.Spec.NodeName).CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
			GracePeriodSeconds: &zero,
			Preconditions:      &metav1.Preconditions{UID: &pod.UID},
		})
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			return 0, nil
		}
		return 0, err
	}
	if clk.deleteSeen.IsZero() {
		clk.deleteSeen = now
		k.post(pod.Spec.NodeName, stopEvents(pod))
		k.mu.Lock()
		if c, ok := k.clocks[pod.UID]; ok {
			c.deleteSeen = now
		}
		k.mu.Unlock()
	}
	if removedWithItsDeletion(pod) {
		// The API server has removed it already, most likely, and its DELETED event is
		// on its way: give that event the moment a runtime takes to stop the
		// containers, then read the pod, as the kubelet's status manager does, before
		// writing to it.
		if due := clk.deleteSeen.Add(zeroGraceStop); now.Before(due) {
			return due.Sub(now), nil
		}
		if _, err := k.client.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{}); apierrors.IsNotFound(err) {
			return 0, nil
		} else if err != nil {
			return 0, err
		}
	}
	grace := time.Duration(0)
	if pod.DeletionGracePeriodSeconds != nil && runsContainers(pod.Status) {
		grace = min(time.Duration(*pod.DeletionGracePeriodSeconds)*time.Second, k.cfg.MaxGracePeriod)
	}
	if due := clk.deleteSeen.Add(grace); now.Before(due) {
		return due.Sub(now), nil
	}
	return 0, k.writeStatus(ctx, pod, &final)
}

// reject fails a pod the node cannot admit, as the kubelet's admission does: the
// rejected status (Failed, reason, "Pod was rejected: …") and a Warning event with the
// reason and message, from the kubelet of that node.
func (k *Kubelet) reject(ctx context.Context, pod *corev1.Pod, verdict admission, now time.Time) error {
	status := rejectedStatus(pod, verdict, now)
	if sameStatus(status, pod.Status) {
		return nil
	}
	if err := k.writeStatus(ctx, pod, &status); err != nil {
		return err
	}
	k.recorders[pod.Spec.NodeName].Event(pod, corev1.EventTypeWarning, verdict.reason, verdict.message)
	return nil
}
