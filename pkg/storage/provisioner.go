package storage

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	storagelisters "k8s.io/client-go/listers/storage/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	storagehelpers "k8s.io/component-helpers/storage/volume"
	"k8s.io/klog/v2"
)

// Event reasons, as sig-storage-lib-external-provisioner records them.
const (
	reasonProvisioning          = "Provisioning"
	reasonProvisioningSucceeded = "ProvisioningSucceeded"
	reasonProvisioningFailed    = "ProvisioningFailed"
	reasonVolumeFailedDelete    = "VolumeFailedDelete"
)

// workers is how many claims and volumes are synced at once; provisioning is one API
// create per claim, so two keep up with the scheduler.
const workers = 2

// writer is every write the provisioner makes.
type writer interface {
	// createVolume creates pv.
	createVolume(ctx context.Context, pv *corev1.PersistentVolume) (*corev1.PersistentVolume, error)
	// deleteVolume deletes pv if it is still the object seen (same UID and resourceVersion).
	deleteVolume(ctx context.Context, pv *corev1.PersistentVolume) error
	// unselectNode removes claim's selected-node annotation, unless the claim changed since.
	unselectNode(ctx context.Context, claim *corev1.PersistentVolumeClaim) error
}

type apiWriter struct{ client kubernetes.Interface }

var _ writer = apiWriter{}

func (w apiWriter) createVolume(ctx context.Context, pv *corev1.PersistentVolume) (*corev1.PersistentVolume, error) {
	return w.client.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{})
}

func (w apiWriter) deleteVolume(ctx context.Context, pv *corev1.PersistentVolume) error {
	return w.client.CoreV1().PersistentVolumes().Delete(ctx, pv.Name, metav1.DeleteOptions{
		Preconditions: &metav1.Preconditions{UID: &pv.UID, ResourceVersion: &pv.ResourceVersion},
	})
}

func (w apiWriter) unselectNode(ctx context.Context, claim *corev1.PersistentVolumeClaim) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"annotations":     map[string]any{storagehelpers.AnnSelectedNode: nil},
		"resourceVersion": claim.ResourceVersion,
	}})
	if err != nil {
		return err
	}
	_, err = w.client.CoreV1().PersistentVolumeClaims(claim.Namespace).Patch(ctx, claim.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	return err
}

// item is a queued claim (namespace/name) or volume (name only).
type item struct {
	claim           bool
	namespace, name string
}

// Provisioner provisions and deletes the volumes of ProvisionerName; see the package
// documentation for the protocol.
type Provisioner struct {
	client      kubernetes.Interface
	writes      writer
	broadcaster record.EventBroadcaster
	recorder    record.EventRecorder

	factory informers.SharedInformerFactory
	claims  corelisters.PersistentVolumeClaimLister
	volumes corelisters.PersistentVolumeLister
	classes storagelisters.StorageClassLister
	nodes   corelisters.NodeLister
	synced  []cache.InformerSynced
	queue   workqueue.TypedRateLimitingInterface[item]

	// created holds the volumes created but not yet seen by the volume informer, so a
	// claim synced again in between is not provisioned twice (and its events not doubled).
	mu      sync.Mutex
	created map[string]*corev1.PersistentVolume
}

// New returns a provisioner working through client; Run starts it.
func New(client kubernetes.Interface) (*Provisioner, error) {
	broadcaster := record.NewBroadcaster()
	p, err := newProvisioner(client, apiWriter{client: client}, broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: ProvisionerName}))
	if err != nil {
		return nil, err
	}
	p.broadcaster = broadcaster
	return p, nil
}

func newProvisioner(client kubernetes.Interface, writes writer, recorder record.EventRecorder) (*Provisioner, error) {
	factory := informers.NewSharedInformerFactory(client, 0)
	claims, volumes := factory.Core().V1().PersistentVolumeClaims(), factory.Core().V1().PersistentVolumes()
	classes, nodes := factory.Storage().V1().StorageClasses(), factory.Core().V1().Nodes()
	p := &Provisioner{
		client: client, writes: writes, recorder: recorder, factory: factory,
		claims: claims.Lister(), volumes: volumes.Lister(), classes: classes.Lister(), nodes: nodes.Lister(),
		synced: []cache.InformerSynced{claims.Informer().HasSynced, volumes.Informer().HasSynced, classes.Informer().HasSynced, nodes.Informer().HasSynced},
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[item](),
			workqueue.TypedRateLimitingQueueConfig[item]{Name: "simulated-storage"}),
		created: map[string]*corev1.PersistentVolume{},
	}
	handlers := []struct {
		informer cache.SharedIndexInformer
		funcs    cache.ResourceEventHandlerFuncs
	}{
		{claims.Informer(), cache.ResourceEventHandlerFuncs{
			AddFunc:    p.enqueueClaim,
			UpdateFunc: func(_, obj any) { p.enqueueClaim(obj) },
		}},
		{volumes.Informer(), cache.ResourceEventHandlerFuncs{
			AddFunc:    p.volumeSeen,
			UpdateFunc: func(_, obj any) { p.volumeSeen(obj) },
			DeleteFunc: p.volumeGone,
		}},
		// A class made after its claims, or a node added, can unblock pending claims.
		{classes.Informer(), cache.ResourceEventHandlerFuncs{
			AddFunc:    func(any) { p.enqueuePending() },
			UpdateFunc: func(any, any) { p.enqueuePending() },
		}},
		{nodes.Informer(), cache.ResourceEventHandlerFuncs{AddFunc: func(any) { p.enqueuePending() }}},
	}
	for _, h := range handlers {
		if _, err := h.informer.AddEventHandler(h.funcs); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// Run provisions until ctx ends.
func (p *Provisioner) Run(ctx context.Context) error {
	defer utilruntime.HandleCrash()
	defer p.queue.ShutDown()
	if p.broadcaster != nil {
		p.broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: p.client.CoreV1().Events("")})
		defer p.broadcaster.Shutdown()
	}
	p.factory.Start(ctx.Done())
	defer p.factory.Shutdown()
	if !cache.WaitForCacheSync(ctx.Done(), p.synced...) {
		return ctx.Err()
	}
	var wg sync.WaitGroup
	for i := 0; i < workers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for p.processNext(ctx) {
			}
		}()
	}
	<-ctx.Done()
	p.queue.ShutDown()
	wg.Wait()
	return nil
}

func (p *Provisioner) processNext(ctx context.Context) bool {
	it, quit := p.queue.Get()
	if quit {
		return false
	}
	defer p.queue.Done(it)
	var err error
	if it.claim {
		err = p.syncClaim(ctx, it.namespace, it.name)
	} else {
		err = p.syncVolume(ctx, it.name)
	}
	if err != nil {
		if ctx.Err() == nil {
			klog.FromContext(ctx).V(2).Info("Storage sync failed, will retry", "claim", it.claim, "namespace", it.namespace, "name", it.name, "err", err)
		}
		p.queue.AddRateLimited(it)
		return true
	}
	p.queue.Forget(it)
	return true
}

func (p *Provisioner) enqueueClaim(obj any) {
	if c, ok := obj.(*corev1.PersistentVolumeClaim); ok {
		p.queue.Add(item{claim: true, namespace: c.Namespace, name: c.Name})
	}
}

// enqueuePending queues every claim still waiting for a volume of ours.
func (p *Provisioner) enqueuePending() {
	claims, err := p.claims.List(labels.Everything())
	if err != nil {
		return
	}
	for _, c := range claims {
		if c.Spec.VolumeName == "" && handedTo(c, ProvisionerName) {
			p.enqueueClaim(c)
		}
	}
}

// volumeSeen queues a volume and ends the wait for a volume just created.
func (p *Provisioner) volumeSeen(obj any) {
	pv, ok := obj.(*corev1.PersistentVolume)
	if !ok {
		return
	}
	p.seen(pv.Name)
	p.queue.Add(item{name: pv.Name})
}

// seen ends the wait for volume name, created by this provisioner or not.
func (p *Provisioner) seen(name string) {
	p.mu.Lock()
	delete(p.created, name)
	p.mu.Unlock()
}

// volumeGone queues the claim of a deleted volume: a claim still pending whose volume
// was deleted under it needs another.
func (p *Provisioner) volumeGone(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	pv, ok := obj.(*corev1.PersistentVolume)
	if !ok {
		return
	}
	p.seen(pv.Name)
	if ref := pv.Spec.ClaimRef; ref != nil {
		p.queue.Add(item{claim: true, namespace: ref.Namespace, name: ref.Name})
	}
}

// syncClaim provisions one claim's volume if PlanClaim says so.
func (p *Provisioner) syncClaim(ctx context.Context, namespace, name string) error {
	claim, err := p.claims.PersistentVolumeClaims(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	state, err := p.claimState(ctx, claim)
	if err != nil {
		return err
	}
	plan := PlanClaim(state)
	logger := klog.FromContext(ctx).WithValues("claim", klog.KObj(claim))
	switch plan.Action {
	case ClaimWait:
		logger.V(5).Info("Nothing to provision", "why", plan.Reason)
		return nil
	case ClaimFail:
		p.recorder.Event(claim, corev1.EventTypeWarning, reasonProvisioningFailed, plan.Reason)
		return nil
	case ClaimReschedule:
		p.recorder.Event(claim, corev1.EventTypeWarning, reasonProvisioningFailed, plan.Reason)
		if err := p.writes.unselectNode(ctx, claim); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return err
		}
		return nil
	}
	p.recorder.Eventf(claim, corev1.EventTypeNormal, reasonProvisioning, "External provisioner is provisioning volume for claim %q", namespace+"/"+name)
	created, err := p.writes.createVolume(ctx, plan.Volume)
	if apierrors.IsAlreadyExists(err) {
		return nil // made by an earlier sync whose result the cache has not shown yet
	}
	if err != nil {
		p.recorder.Eventf(claim, corev1.EventTypeWarning, reasonProvisioningFailed, "failed to provision volume with StorageClass %q: %v", plan.Volume.Spec.StorageClassName, err)
		return err
	}
	p.mu.Lock()
	if _, err := p.volumes.Get(created.Name); err != nil {
		p.created[created.Name] = created // not in the cache yet; volumeSeen ends this
	}
	p.mu.Unlock()
	logger.V(2).Info("Provisioned volume", "volume", created.Name, "node", VolumeNode(created))
	p.recorder.Eventf(claim, corev1.EventTypeNormal, reasonProvisioningSucceeded, "Successfully provisioned volume %s", created.Name)
	return nil
}

// claimState reads what PlanClaim needs for claim from the caches; the selected node
// also from the API server when the cache does not have it yet (a node just added), so
// that a lagging cache never sends a pod back to the scheduler.
func (p *Provisioner) claimState(ctx context.Context, claim *corev1.PersistentVolumeClaim) (ClaimState, error) {
	s := ClaimState{Claim: claim}
	if claim.Spec.VolumeName != "" || !handedTo(claim, ProvisionerName) {
		return s, nil // PlanClaim waits on the claim alone
	}
	var err error
	if s.Class, err = p.classes.Get(storagehelpers.GetPersistentVolumeClaimClass(claim)); err != nil && !apierrors.IsNotFound(err) {
		return s, err
	}
	if s.Volume, err = p.volumes.Get(VolumeName(claim)); err != nil && !apierrors.IsNotFound(err) {
		return s, err
	}
	if s.Volume == nil {
		p.mu.Lock()
		s.Volume = p.created[VolumeName(claim)]
		p.mu.Unlock()
	}
	if selected, ok := claim.Annotations[storagehelpers.AnnSelectedNode]; ok {
		node, err := p.nodes.Get(selected)
		if apierrors.IsNotFound(err) {
			node, err = p.client.CoreV1().Nodes().Get(ctx, selected, metav1.GetOptions{})
		}
		if err != nil && !apierrors.IsNotFound(err) {
			return s, err
		}
		if err == nil {
			s.SelectedNode = node
		}
		return s, nil
	}
	if s.Class == nil || s.Volume != nil {
		return s, nil
	}
	if s.Nodes, err = p.nodes.List(labels.Everything()); err != nil {
		return s, err
	}
	volumes, err := p.volumes.List(labels.Everything())
	if err != nil {
		return s, err
	}
	s.VolumesPerNode = map[string]int{}
	for _, pv := range volumes {
		if n := VolumeNode(pv); n != "" {
			s.VolumesPerNode[n]++
		}
	}
	return s, nil
}

// syncVolume deletes one volume if PlanVolume says so.
func (p *Provisioner) syncVolume(ctx context.Context, name string) error {
	pv, err := p.volumes.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	action, why := PlanVolume(pv)
	if action != VolumeDelete {
		return nil
	}
	err = p.writes.deleteVolume(ctx, pv)
	switch {
	case err == nil:
		klog.FromContext(ctx).V(2).Info("Deleted volume", "volume", pv.Name, "why", why)
		return nil
	case apierrors.IsNotFound(err), apierrors.IsConflict(err):
		return nil // gone, or changed since the cache saw it: its update event brings it back
	}
	p.recorder.Event(pv, corev1.EventTypeWarning, reasonVolumeFailedDelete, fmt.Sprintf("failed to delete volume %s: %v", pv.Name, err))
	return err
}
