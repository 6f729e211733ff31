package kubelet

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
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
	sim       simulator
	ipam      *ipam
	nodeIndex map[string]int
	nodeUIDs  sync.Map // node name → types.UID, for Lease owner references

	leaseMu sync.Mutex
	leases  map[string]*coordinationv1.Lease

	queue     workqueue.TypedRateLimitingInterface[string]
	podLister corelisters.PodLister
	informer  cache.SharedIndexInformer
	// volumes holds pods back until their claims can be mounted (volumes.go).
	volumes *volumeGate

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
	k := &Kubelet{
		cfg:         cfg,
		client:      podClient,
		heartbeat:   heartbeatClient,
		sim:         simulator{startupDelay: cfg.PodStartupDelay, crashBackOff: cfg.CrashLoopBackOff, faults: faults},
		ipam:        newIPAM(),
		nodeIndex:   map[string]int{},
		leases:      map[string]*coordinationv1.Lease{},
		clocks:      map[types.UID]*podClock{},
		writtenFrom: map[types.UID]string{},
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "kubelet-pods"}),
	}
	for i := cfg.FirstNode; i < cfg.FirstNode+cfg.Nodes; i++ {
		k.nodeIndex[NodeName(i)] = i
	}
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
	if err := k.registerNodes(ctx); err != nil {
		return err
	}
	go k.heartbeats(ctx)
	k.volumes.start(ctx, k.client)
	go k.informer.Run(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), append(k.volumes.synced, k.informer.HasSynced)...) {
		return ctx.Err()
	}
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
	delete(k.clocks, pod.UID)
	delete(k.writtenFrom, pod.UID)
	k.mu.Unlock()
	k.ipam.release(pod.UID)
	k.volumes.forget(pod.UID)
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
		if ctx.Err() == nil {
			klog.FromContext(ctx).V(2).Info("Pod sync failed, will retry", "pod", key, "err", err)
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

	podIP, ok := k.ipam.podIP(pod.Spec.NodeName, pod.UID, pod.Status.PodIP)
	hostIP := k.ipam.hostIP(pod.Spec.NodeName)
	if pod.Spec.HostNetwork {
		podIP, ok = hostIP, true
	}
	if !ok {
		return 0, k.reject(ctx, pod, "OutOfpods", "Pod was rejected: Node didn't have enough resource: pods")
	}
	status, due, held := k.holdForVolumes(pod, clk, hostIP, now)
	if !held {
		status, due = k.sim.podStatus(pod, clk, addresses{hostIP: hostIP, podIP: podIP}, now)
	}
	if !equality.Semantic.DeepEqual(status, pod.Status) {
		written, err := k.patchStatus(ctx, pod, &status)
		if err != nil {
			if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
				return 0, nil // gone, or replaced by a pod of the same name
			}
			return 0, err
		}
		k.mu.Lock()
		if written.ResourceVersion != pod.ResourceVersion {
			k.writtenFrom[pod.UID] = pod.ResourceVersion
		}
		k.mu.Unlock()
	}
	k.mu.Lock()
	if _, alive := k.clocks[pod.UID]; alive {
		k.clocks[pod.UID] = clk
	}
	k.mu.Unlock()
	if due.IsZero() {
		return 0, nil
	}
	return max(due.Sub(now), time.Millisecond), nil
}

// finishDeletion does what a kubelet does for a pod being deleted: it stops the
// containers within the grace period (capped by MaxGracePeriod) and then deletes the
// pod with a zero grace period, which removes it for good.
func (k *Kubelet) finishDeletion(ctx context.Context, pod *corev1.Pod, clk *podClock, now time.Time) (time.Duration, error) {
	if pod.DeletionGracePeriodSeconds != nil && *pod.DeletionGracePeriodSeconds == 0 {
		return 0, nil // already finalised by us; finalizers of others hold it now
	}
	if clk.deleteSeen.IsZero() {
		clk.deleteSeen = now
		k.mu.Lock()
		if c, ok := k.clocks[pod.UID]; ok {
			c.deleteSeen = now
		}
		k.mu.Unlock()
	}
	grace := time.Duration(0)
	if pod.DeletionGracePeriodSeconds != nil && pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed {
		grace = min(time.Duration(*pod.DeletionGracePeriodSeconds)*time.Second, k.cfg.MaxGracePeriod)
	}
	if due := clk.deleteSeen.Add(grace); now.Before(due) {
		return due.Sub(now), nil
	}
	zero := int64(0)
	err := k.client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
		GracePeriodSeconds: &zero,
		Preconditions:      &metav1.Preconditions{UID: &pod.UID},
	})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return 0, nil
	}
	return 0, err
}

// reject fails a pod the node cannot admit, as the kubelet's admission does.
func (k *Kubelet) reject(ctx context.Context, pod *corev1.Pod, reason, message string) error {
	status := pod.Status.DeepCopy()
	status.Phase, status.Reason, status.Message = corev1.PodFailed, reason, message
	_, err := k.patchStatus(ctx, pod, status)
	return err
}

// kubeletConditions are the pod condition types the kubelet owns; others' conditions
// (PodScheduled, readiness gates, DisruptionTarget) are never written here.
var kubeletConditions = map[corev1.PodConditionType]bool{
	corev1.PodReadyToStartContainers: true,
	corev1.PodInitialized:            true,
	corev1.ContainersReady:           true,
	corev1.PodReady:                  true,
}

// statusPatch is the part of a pod's status the kubelet writes. Conditions merge by
// type, so conditions set by others between our read and our write survive.
type statusPatch struct {
	Phase                 corev1.PodPhase          `json:"phase"`
	Reason                string                   `json:"reason,omitempty"`
	Message               string                   `json:"message,omitempty"`
	Conditions            []corev1.PodCondition    `json:"conditions,omitempty"`
	HostIP                string                   `json:"hostIP,omitempty"`
	HostIPs               []corev1.HostIP          `json:"hostIPs,omitempty"`
	PodIP                 string                   `json:"podIP,omitempty"`
	PodIPs                []corev1.PodIP           `json:"podIPs,omitempty"`
	StartTime             *metav1.Time             `json:"startTime,omitempty"`
	InitContainerStatuses []corev1.ContainerStatus `json:"initContainerStatuses,omitempty"`
	ContainerStatuses     []corev1.ContainerStatus `json:"containerStatuses,omitempty"`
	ObservedGeneration    int64                    `json:"observedGeneration,omitempty"`
}

// patchStatus writes status with a strategic-merge patch guarded by the pod's UID, so a
// write meant for a deleted pod never lands on a new pod of the same name.
func (k *Kubelet) patchStatus(ctx context.Context, pod *corev1.Pod, status *corev1.PodStatus) (*corev1.Pod, error) {
	p := statusPatch{
		Phase: status.Phase, Reason: status.Reason, Message: status.Message,
		HostIP: status.HostIP, HostIPs: status.HostIPs, PodIP: status.PodIP, PodIPs: status.PodIPs,
		StartTime: status.StartTime, InitContainerStatuses: status.InitContainerStatuses,
		ContainerStatuses: status.ContainerStatuses, ObservedGeneration: status.ObservedGeneration,
	}
	for _, c := range status.Conditions {
		if kubeletConditions[c.Type] {
			p.Conditions = append(p.Conditions, c)
		}
	}
	body, err := json.Marshal(map[string]any{"metadata": map[string]any{"uid": pod.UID}, "status": p})
	if err != nil {
		return nil, fmt.Errorf("encode status of pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return k.client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, body, metav1.PatchOptions{}, "status")
}
