package kubelet

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/component-helpers/storage/ephemeral"
	storagehelpers "k8s.io/component-helpers/storage/volume"
)

// A kubelet creates a pod's sandbox and containers only once every volume its containers
// use is mounted. For a claim that means: the claim exists and is Bound, its volume
// exists and is bound back to it, the volume mode suits the mount, and the volume's node
// affinity admits this node. Until then the pod stays Pending, its containers waiting
// in ContainerCreating (PodInitializing with init containers), PodReadyToStartContainers
// False and no pod IP, and the kubelet records FailedMount events:
//
//	claim or volume not usable   "Unable to attach or mount volumes: unmounted volumes=[data],
//	                              unattached volumes=[], failed to process volumes=[data]:
//	                              error processing PVC ns/data-web-0: PVC is not bound"
//	volume pinned elsewhere      "MountVolume.NodeAffinity check failed for volume
//	                              "pvc-…" : no matching NodeSelectorTerms"
//
// again on every retry: the pod worker backs off mountRetryPeriod after a failed sync.
// Once the volumes are there the containers are created, the startup delay counted from
// that moment. A pod that has started is not held again, as a mounted volume stays
// mounted.

// mountRetryPeriod is the kubelet's back-off after a failed pod sync (backOffPeriod, 10s).
const mountRetryPeriod = 10 * time.Second

const (
	reasonFailedMount      = "FailedMount"
	pvcProtectionFinalizer = "kubernetes.io/pvc-protection"
	// claimIndex indexes pods by the namespace/name of each claim they use.
	claimIndex = "kroll.dev/claims"
)

// volumeLookup reads claims, volumes and node labels (from caches, in the kubelet).
type volumeLookup struct {
	claim  func(namespace, name string) (*corev1.PersistentVolumeClaim, error)
	volume func(name string) (*corev1.PersistentVolume, error)
	// config finds ConfigMaps and Secrets; its zero value finds none.
	config configLookup
}

// mountFailures says why pod's volumes cannot all be mounted on a node with nodeLabels:
// the FailedMount event messages a kubelet records, none when every volume is ready.
// Only volumes a container mounts or maps count; a kubelet ignores the others.
func mountFailures(pod *corev1.Pod, nodeLabels map[string]string, look volumeLookup) []string {
	mounts, devices := usedVolumes(pod)
	var unmounted, unprocessed, processErrs, events []string
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		if !mounts[v.Name] && !devices[v.Name] {
			continue
		}
		if missing := missingConfig(pod.Namespace, v, look.config); missing != "" {
			unmounted = append(unmounted, v.Name)
			events = append(events, fmt.Sprintf("MountVolume.SetUp failed for volume %q : %s not found", v.Name, missing))
			continue
		}
		claimName, ok := claimOf(pod, v)
		if !ok {
			continue // not a claim: mounts at once
		}
		pv, err := boundVolume(pod, v, claimName, mounts[v.Name], devices[v.Name], look)
		if err != nil {
			unmounted, unprocessed = append(unmounted, v.Name), append(unprocessed, v.Name)
			processErrs = append(processErrs, err.Error())
			continue
		}
		if err := storagehelpers.CheckNodeAffinity(pv, nodeLabels); err != nil {
			op := "MountVolume"
			if devices[v.Name] {
				op = "MapVolume"
			}
			unmounted = append(unmounted, v.Name)
			events = append(events, fmt.Sprintf("%s.NodeAffinity check failed for volume %q : %v", op, pv.Name, err))
		}
	}
	if len(processErrs) > 0 {
		slices.Sort(unmounted)
		slices.Sort(unprocessed)
		events = append([]string{fmt.Sprintf("Unable to attach or mount volumes: unmounted volumes=%v, unattached volumes=[], failed to process volumes=%v: %s",
			unmounted, unprocessed, strings.Join(processErrs, "; "))}, events...)
	}
	return events
}

// usesClaims tells whether any volume of pod is a claim, a ConfigMap or a Secret: what
// the gate may hold a pod back for.
func usesClaims(pod *corev1.Pod) bool {
	for i := range pod.Spec.Volumes {
		if _, ok := claimOf(pod, &pod.Spec.Volumes[i]); ok || len(configSources(&pod.Spec.Volumes[i])) > 0 {
			return true
		}
	}
	return false
}

// usedVolumes are the names of the volumes some container (init, app or ephemeral)
// mounts, and those it maps as block devices.
func usedVolumes(pod *corev1.Pod) (mounts, devices map[string]bool) {
	mounts, devices = map[string]bool{}, map[string]bool{}
	add := func(ms []corev1.VolumeMount, ds []corev1.VolumeDevice) {
		for _, m := range ms {
			mounts[m.Name] = true
		}
		for _, d := range ds {
			devices[d.Name] = true
		}
	}
	for _, c := range pod.Spec.InitContainers {
		add(c.VolumeMounts, c.VolumeDevices)
	}
	for _, c := range pod.Spec.Containers {
		add(c.VolumeMounts, c.VolumeDevices)
	}
	for _, c := range pod.Spec.EphemeralContainers {
		add(c.VolumeMounts, c.VolumeDevices)
	}
	return mounts, devices
}

// claimOf is the claim behind volume v of pod: its own, or the one the ephemeral
// volume controller makes for a generic ephemeral volume ("<pod>-<volume>").
func claimOf(pod *corev1.Pod, v *corev1.Volume) (string, bool) {
	switch {
	case v.PersistentVolumeClaim != nil:
		return v.PersistentVolumeClaim.ClaimName, true
	case v.Ephemeral != nil:
		return ephemeral.VolumeClaimName(pod, v), true
	}
	return "", false
}

// boundVolume is the volume bound to claim claimName, or the error a kubelet's volume
// manager reports for it, word for word.
func boundVolume(pod *corev1.Pod, v *corev1.Volume, claimName string, mounted, mapped bool, look volumeLookup) (*corev1.PersistentVolume, error) {
	wrap := func(err error) error {
		return fmt.Errorf("error processing PVC %s/%s: %v", pod.Namespace, claimName, err)
	}
	claim, err := look.claim(pod.Namespace, claimName)
	if err != nil {
		return nil, wrap(fmt.Errorf("failed to fetch PVC from API server: %v", err))
	}
	switch {
	case claim.DeletionTimestamp != nil && !slices.Contains(claim.Finalizers, pvcProtectionFinalizer):
		return nil, wrap(errors.New("PVC is being deleted"))
	case claim.Status.Phase != corev1.ClaimBound:
		return nil, wrap(errors.New("PVC is not bound"))
	case claim.Spec.VolumeName == "":
		return nil, wrap(errors.New("PVC has empty pvc.Spec.VolumeName"))
	}
	if v.Ephemeral != nil {
		if err := ephemeral.VolumeIsForPod(pod, claim); err != nil {
			return nil, err
		}
	}
	pv, err := look.volume(claim.Spec.VolumeName)
	if err != nil {
		return nil, wrap(fmt.Errorf("failed to fetch PV %s from API server: %v", claim.Spec.VolumeName, err))
	}
	switch {
	case pv.Spec.ClaimRef == nil:
		return nil, wrap(fmt.Errorf("found PV object %s but it has a nil pv.Spec.ClaimRef indicating it is not yet bound to the claim", pv.Name))
	case pv.Spec.ClaimRef.UID != claim.UID:
		return nil, wrap(fmt.Errorf("found PV object %s but its pv.Spec.ClaimRef.UID %s does not point to claim.UID %s", pv.Name, pv.Spec.ClaimRef.UID, claim.UID))
	}
	mode := corev1.PersistentVolumeFilesystem
	if pv.Spec.VolumeMode != nil {
		mode = *pv.Spec.VolumeMode
	}
	switch {
	case mounted && mode != corev1.PersistentVolumeFilesystem:
		return nil, fmt.Errorf("volume %s has volumeMode %s, but is specified in volumeMounts", v.Name, mode)
	case mapped && mode != corev1.PersistentVolumeBlock:
		return nil, fmt.Errorf("volume %s has volumeMode %s, but is specified in volumeDevices", v.Name, mode)
	}
	return pv, nil
}

// waitingForVolumes is the status of pod while its volumes are not mounted: Pending,
// no sandbox (PodReadyToStartContainers False, no pod IP), every container waiting to
// be created.
func (s *simulator) waitingForVolumes(pod *corev1.Pod, hostIP string, now time.Time) corev1.PodStatus {
	st := *pod.Status.DeepCopy()
	st.Phase = corev1.PodPending
	if st.StartTime == nil {
		st.StartTime = &metav1.Time{Time: now}
	}
	st.HostIP, st.HostIPs = hostIP, []corev1.HostIP{{IP: hostIP}}
	st.PodIP, st.PodIPs = "", nil
	st.ObservedGeneration = pod.Generation
	reason := reasonContainerCreating
	if len(pod.Spec.InitContainers) > 0 {
		reason = reasonPodInitializing
	}
	var incomplete, unready []string
	st.InitContainerStatuses = nil
	for _, c := range pod.Spec.InitContainers {
		st.InitContainerStatuses = append(st.InitContainerStatuses, waitingStatus(c.Name, normalizeImage(c.Image), reason, "", findStatus(pod.Status.InitContainerStatuses, c.Name)))
		incomplete = append(incomplete, c.Name)
	}
	st.ContainerStatuses = nil
	for _, c := range pod.Spec.Containers {
		st.ContainerStatuses = append(st.ContainerStatuses, waitingStatus(c.Name, normalizeImage(c.Image), reason, "", findStatus(pod.Status.ContainerStatuses, c.Name)))
		unready = append(unready, c.Name)
	}
	var sandbox *corev1.PodCondition
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == corev1.PodReadyToStartContainers {
			sandbox = &pod.Status.Conditions[i]
		}
	}
	s.setConditions(pod, &st, len(incomplete) == 0, incomplete, unready, now)
	for i := range st.Conditions {
		if c := &st.Conditions[i]; c.Type == corev1.PodReadyToStartContainers {
			c.Status, c.LastTransitionTime = corev1.ConditionFalse, metav1.Time{Time: now}
			if sandbox != nil && sandbox.Status == corev1.ConditionFalse {
				c.LastTransitionTime = sandbox.LastTransitionTime
			}
		}
	}
	return st
}

// heldForVolumes tells a pod the simulator has held for its volumes: its sandbox is
// not ready (this simulator reports PodReadyToStartContainers False for nothing else).
func heldForVolumes(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReadyToStartContainers {
			return c.Status == corev1.ConditionFalse
		}
	}
	return false
}

// hasStarted tells a pod whose sandbox is ready: its volumes were mounted.
func hasStarted(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReadyToStartContainers {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// volumeGate watches claims and volumes for the kubelet, re-queues the pods a change
// concerns, and records the FailedMount events (on the kubelet's recorder of each node:
// the event source names the host).
type volumeGate struct {
	claims    corelisters.PersistentVolumeClaimLister
	volumes   corelisters.PersistentVolumeLister
	nodes     corelisters.NodeLister
	recorders map[string]record.EventRecorder
	factory   informers.SharedInformerFactory
	synced    []cache.InformerSynced
	config    configLookup

	mu sync.Mutex
	// reported is, per pod, the FailedMount events last recorded and when, so that a
	// burst of informer updates does not repeat them faster than the kubelet's retries;
	// a new failure is reported at once.
	reported map[types.UID]mountReport
}

type mountReport struct {
	at   time.Time
	what string
}

// newVolumeGate wires the gate to k: an index of k's pods by claim, and handlers that
// queue those pods when a claim or volume changes.
func newVolumeGate(k *Kubelet, client kubernetes.Interface) (*volumeGate, error) {
	factory := informers.NewSharedInformerFactory(client, 0)
	claims, volumes := factory.Core().V1().PersistentVolumeClaims(), factory.Core().V1().PersistentVolumes()
	// The ConfigMaps and Secrets containers read their environment and files from
	// (configfiles.go) come from the same factory.
	configMaps, secrets := factory.Core().V1().ConfigMaps(), factory.Core().V1().Secrets()
	k.sim.config = configLookup{configMaps: configMaps.Lister(), secrets: secrets.Lister()}
	g := &volumeGate{
		claims: claims.Lister(), volumes: volumes.Lister(), nodes: k.nodeLister, recorders: k.recorders, factory: factory,
		config: k.sim.config,
		synced: []cache.InformerSynced{claims.Informer().HasSynced, volumes.Informer().HasSynced,
			configMaps.Informer().HasSynced, secrets.Informer().HasSynced},
		reported: map[types.UID]mountReport{},
	}
	err := k.informer.AddIndexers(cache.Indexers{claimIndex: func(obj any) ([]string, error) {
		pod, ok := obj.(*corev1.Pod)
		if !ok {
			return nil, nil
		}
		var keys []string
		for i := range pod.Spec.Volumes {
			if name, ok := claimOf(pod, &pod.Spec.Volumes[i]); ok {
				keys = append(keys, pod.Namespace+"/"+name)
			}
			for _, src := range configSources(&pod.Spec.Volumes[i]) {
				keys = append(keys, src.key(pod.Namespace))
			}
		}
		return keys, nil
	}})
	if err != nil {
		return nil, err
	}
	requeue := func(namespace, name string) { requeueKey(k, namespace+"/"+name) }
	onClaim := func(obj any) {
		if c, ok := obj.(*corev1.PersistentVolumeClaim); ok {
			requeue(c.Namespace, c.Name)
		}
	}
	onVolume := func(obj any) {
		if pv, ok := obj.(*corev1.PersistentVolume); ok && pv.Spec.ClaimRef != nil {
			requeue(pv.Spec.ClaimRef.Namespace, pv.Spec.ClaimRef.Name)
		}
	}
	// A pod waiting for a ConfigMap or Secret its volumes mount starts once it exists.
	onConfig := func(obj any) {
		switch o := obj.(type) {
		case *corev1.ConfigMap:
			requeueKey(k, configSource{kind: "configmap", name: o.Name}.key(o.Namespace))
		case *corev1.Secret:
			requeueKey(k, configSource{kind: "secret", name: o.Name}.key(o.Namespace))
		}
	}
	for _, h := range []struct {
		informer cache.SharedIndexInformer
		on       func(any)
	}{{claims.Informer(), onClaim}, {volumes.Informer(), onVolume}, {configMaps.Informer(), onConfig}, {secrets.Informer(), onConfig}} {
		if _, err := h.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: h.on, UpdateFunc: func(_, obj any) { h.on(obj) }}); err != nil {
			return nil, err
		}
	}
	return g, nil
}

// requeueKey queues k's pods indexed under key (claimIndex).
func requeueKey(k *Kubelet, key string) {
	pods, _ := k.informer.GetIndexer().ByIndex(claimIndex, key)
	for _, o := range pods {
		k.enqueue(o)
	}
}

// start runs the gate's informers until ctx ends.
func (g *volumeGate) start(ctx context.Context) {
	g.factory.Start(ctx.Done())
	go func() {
		<-ctx.Done()
		g.factory.Shutdown()
	}()
}

func (g *volumeGate) forget(uid types.UID) {
	g.mu.Lock()
	delete(g.reported, uid)
	g.mu.Unlock()
}

// failures checks pod's volumes against the caches.
func (g *volumeGate) failures(pod *corev1.Pod) []string {
	labels := map[string]string{corev1.LabelHostname: pod.Spec.NodeName}
	if node, err := g.nodes.Get(pod.Spec.NodeName); err == nil {
		labels = node.Labels
	}
	return mountFailures(pod, labels, volumeLookup{
		config: g.config,
		claim: func(ns, name string) (*corev1.PersistentVolumeClaim, error) {
			c, err := g.claims.PersistentVolumeClaims(ns).Get(name)
			if apierrors.IsNotFound(err) {
				// The cache's NotFound names the resource as the API server's does.
				err = apierrors.NewNotFound(corev1.Resource("persistentvolumeclaims"), name)
			}
			return c, err
		},
		volume: func(name string) (*corev1.PersistentVolume, error) {
			pv, err := g.volumes.Get(name)
			if apierrors.IsNotFound(err) {
				err = apierrors.NewNotFound(corev1.Resource("persistentvolumes"), name)
			}
			return pv, err
		},
	})
}

// report records pod's FailedMount events: the same ones at most once per
// mountRetryPeriod, different ones at once.
func (g *volumeGate) report(pod *corev1.Pod, messages []string, now time.Time) {
	what := strings.Join(messages, "\n")
	g.mu.Lock()
	if last, ok := g.reported[pod.UID]; ok && last.what == what && now.Sub(last.at) < mountRetryPeriod {
		g.mu.Unlock()
		return
	}
	g.reported[pod.UID] = mountReport{at: now, what: what}
	g.mu.Unlock()
	rec, ok := g.recorders[pod.Spec.NodeName]
	if !ok {
		return // not one of this simulator's nodes
	}
	for _, m := range messages {
		rec.Event(pod, corev1.EventTypeWarning, reasonFailedMount, m)
	}
}

// holdForVolumes is the kubelet's volume step of a pod sync. A pod whose volumes are
// not all mountable gets the waiting status and is retried after mountRetryPeriod
// (held true); claims and volumes changing re-queue it sooner. A pod just released
// from the hold starts its containers' creation now (clk), not from when it arrived.
func (k *Kubelet) holdForVolumes(pod *corev1.Pod, clk *podClock, hostIP string, now time.Time) (corev1.PodStatus, time.Time, bool) {
	if !usesClaims(pod) || hasStarted(pod) {
		return corev1.PodStatus{}, time.Time{}, false
	}
	if failures := k.volumes.failures(pod); len(failures) > 0 {
		k.volumes.report(pod, failures, now)
		return k.sim.waitingForVolumes(pod, hostIP, now), now.Add(mountRetryPeriod), true
	}
	if heldForVolumes(pod) {
		clk.admitted = now
		clk.since = map[string]time.Time{}
	}
	return corev1.PodStatus{}, time.Time{}, false
}
