// Package daemonset is kroll's DaemonSet controller: one pod on every node the
// template fits (nodeSelector, node affinity, taints against its tolerations plus the
// daemon ones), placed through the scheduler by node affinity as upstream does, and
// updated by RollingUpdate (maxUnavailable, maxSurge) or OnDelete through
// ControllerRevisions.
package daemonset

import (
	"context"
	"fmt"
	"sort"
	"sync/atomic"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	appsinformers "k8s.io/client-go/informers/apps/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/flowcontrol"

	"github.com/kroll-dev/kroll/pkg/controller"
	"github.com/kroll-dev/kroll/pkg/history"
	"github.com/kroll-dev/kroll/pkg/inplace"
	"github.com/kroll-dev/kroll/pkg/placement"
	"github.com/kroll-dev/kroll/pkg/rollout"
	"github.com/kroll-dev/kroll/pkg/timeline"
)

// ControllerName is the name upstream's DaemonSet controller records events under.
const ControllerName = "daemonset-controller"

// burstReplicas caps the pods created for one DaemonSet in one sync.
const burstReplicas = 250

var controllerKind = appsv1.SchemeGroupVersion.WithKind("DaemonSet")

// Controller is the DaemonSet controller.
type Controller struct {
	client       kubernetes.Interface
	recorder     record.EventRecorder
	podControl   controller.PodControl
	now          func() time.Time
	sets         appslisters.DaemonSetLister
	nodes        corelisters.NodeLister
	revisions    appslisters.ControllerRevisionLister
	podIndex     cache.Indexer
	synced       []cache.InformerSynced
	queue        controller.Queue
	expectations *controller.Expectations
	// failedBackoff spaces out the deletion of failed pods per DaemonSet and node (1s
	// doubling to 15m): a kubelet that rejects the pod would otherwise meet a new one
	// in a tight loop.
	failedBackoff *flowcontrol.Backoff
	// takenOut: pods taken out of service for an in-place update, until the cache shows it.
	takenOut inplace.TakenOut
}

// New builds the controller on shared informers (start them after).
func New(client kubernetes.Interface, sets appsinformers.DaemonSetInformer, pods coreinformers.PodInformer, nodes coreinformers.NodeInformer,
	revisions appsinformers.ControllerRevisionInformer, recorder record.EventRecorder) (*Controller, error) {
	c := &Controller{
		client: client, recorder: recorder, now: time.Now,
		podControl: controller.NewPodControl(client, recorder),
		sets:       sets.Lister(), nodes: nodes.Lister(), revisions: revisions.Lister(),
		podIndex: pods.Informer().GetIndexer(),
		synced: []cache.InformerSynced{sets.Informer().HasSynced, pods.Informer().HasSynced, nodes.Informer().HasSynced,
			revisions.Informer().HasSynced},
		queue:         controller.NewQueue("daemonset"),
		expectations:  controller.NewExpectations(time.Now),
		failedBackoff: flowcontrol.NewBackOff(time.Second, 15*time.Minute),
	}
	if err := controller.AddPodControllerIndex(pods.Informer()); err != nil {
		return nil, err
	}
	for _, h := range []struct {
		inf cache.SharedIndexInformer
		h   cache.ResourceEventHandler
	}{
		{sets.Informer(), cache.ResourceEventHandlerFuncs{
			AddFunc:    c.queue.Enqueue,
			UpdateFunc: func(_, cur any) { c.queue.Enqueue(cur) },
			DeleteFunc: func(obj any) {
				if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
					c.expectations.Forget(key)
				}
			},
		}},
		{pods.Informer(), cache.ResourceEventHandlerFuncs{
			AddFunc: func(obj any) { c.podEvent(obj, true, false) },
			UpdateFunc: func(_, cur any) {
				c.podEvent(cur, false, cur.(*corev1.Pod).DeletionTimestamp != nil)
			},
			DeleteFunc: func(obj any) { c.podEvent(obj, false, true) },
		}},
		{nodes.Informer(), cache.ResourceEventHandlerFuncs{
			AddFunc:    func(any) { c.enqueueAll() },
			UpdateFunc: func(old, cur any) { c.nodeUpdated(old.(*corev1.Node), cur.(*corev1.Node)) },
			DeleteFunc: func(any) { c.enqueueAll() },
		}},
		{revisions.Informer(), cache.ResourceEventHandlerFuncs{
			DeleteFunc: func(obj any) {
				if r, ok := controller.Deleted[*appsv1.ControllerRevision](obj); ok {
					if ref := metav1.GetControllerOf(r); ref != nil && ref.Kind == "DaemonSet" {
						c.queue.Add(r.Namespace + "/" + ref.Name)
					}
				}
			},
		}},
	} {
		if _, err := h.inf.AddEventHandler(h.h); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// Run syncs DaemonSets with workers goroutines until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) {
	c.queue.Run(ctx, ControllerName, workers, c.synced, c.sync)
}

// podEvent enqueues the DaemonSet controlling a pod, noting an observed create or delete.
func (c *Controller) podEvent(obj any, created, deleted bool) {
	pod, ok := controller.Deleted[*corev1.Pod](obj)
	if !ok {
		return
	}
	ref := metav1.GetControllerOf(pod)
	if ref == nil || ref.Kind != "DaemonSet" {
		if ref == nil && created {
			c.enqueueAll() // an orphan some DaemonSet may adopt
		}
		return
	}
	key := pod.Namespace + "/" + ref.Name
	podKey := pod.Namespace + "/" + pod.Name
	if created {
		c.expectations.CreationObserved(key)
	}
	if deleted {
		c.expectations.DeletionObserved(key, podKey)
	}
	c.queue.Add(key)
}

func (c *Controller) nodeUpdated(old, cur *corev1.Node) {
	if equalForPlacement(old, cur) {
		return
	}
	c.enqueueAll()
}

// equalForPlacement tells whether a node change cannot change where daemons belong.
func equalForPlacement(a, b *corev1.Node) bool {
	return labels.Equals(a.Labels, b.Labels) && fmt.Sprint(a.Spec.Taints) == fmt.Sprint(b.Spec.Taints) && a.Spec.Unschedulable == b.Spec.Unschedulable
}

func (c *Controller) enqueueAll() {
	sets, err := c.sets.List(labels.Everything())
	if err != nil {
		return
	}
	for _, ds := range sets {
		c.queue.Enqueue(ds)
	}
}

// sync brings one DaemonSet one step towards a pod on every node it fits, at its
// current template, and writes its status. Each sync makes one kind of change — pods
// created or deleted for placement, or a rolling update step — and waits for the
// cache to show it (expectations) before the next.
func (c *Controller) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	ds, err := c.sets.DaemonSets(ns).Get(name)
	if apierrors.IsNotFound(err) {
		c.expectations.Forget(key)
		return nil
	}
	if err != nil {
		return err
	}
	selector, err := metav1.LabelSelectorAsSelector(ds.Spec.Selector)
	if err != nil {
		return nil
	}
	if selector.Empty() {
		c.recorder.Event(ds, corev1.EventTypeWarning, "SelectingAll", "This daemon set is selecting all pods. A non-empty selector is required.")
		return nil
	}
	if ds.DeletionTimestamp != nil {
		return nil
	}
	nodes, err := c.nodes.List(labels.Everything())
	if err != nil {
		return err
	}
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].Name < nodes[j].Name })
	// Where ds belongs, decided once per sync for every step below.
	fits := make(map[string]placement.Fit, len(nodes))
	for _, n := range nodes {
		fits[n.Name] = placement.NodeFit(ds, n)
	}
	pods, err := c.claimPods(ctx, ds, selector)
	if err != nil {
		return err
	}
	hash, err := c.constructHistory(ctx, ds, selector)
	if err != nil {
		return err
	}
	byNode := map[string][]*corev1.Pod{}
	for _, p := range pods {
		if n := placement.TargetNode(p); n != "" {
			byNode[n] = append(byNode[n], p)
		}
	}
	for _, list := range byNode {
		oldestFirst(list)
	}

	var syncErr error
	var verdict *inplace.Verdict // the InPlaceUpdate condition's news
	satisfied := c.expectations.Satisfied(key)
	if satisfied {
		creates, deletes := manage(ds, nodes, fits, byNode, hash, func(node string) bool { return c.failedMayGo(key, ds, node) })
		for _, p := range deletes {
			c.podEventFor(ds, p)
		}
		if len(creates) == 0 && len(deletes) == 0 && ds.Spec.UpdateStrategy.Type == appsv1.RollingUpdateDaemonSetStrategyType {
			desired := 0
			var states []onNode
			for _, n := range nodes {
				if fits[n.Name].ShouldRun {
					desired++
				}
				if list, ok := byNode[n.Name]; ok {
					states = append(states, splitPods(ds, n.Name, fits[n.Name].ShouldRun, list, hash))
				}
			}
			maxUnavailable, maxSurge, ferr := rollout.DaemonSetFenceposts(ds.Spec.UpdateStrategy.RollingUpdate, desired)
			if ferr != nil {
				return ferr
			}
			handled, v, err := c.inPlace(ctx, ds, pods, hash, maxUnavailable)
			verdict = v
			if err != nil {
				return err
			}
			if !handled {
				plan := planRollingUpdate(ds, states, maxUnavailable, maxSurge, c.now())
				creates, deletes = plan.creates, plan.deletes
			}
		}
		syncErr = c.syncNodes(ctx, key, ds, creates, deletes, hash)
	}
	statusErr := c.writeStatus(ctx, ds, nodes, fits, byNode, hash, satisfied, verdict)
	if at := rollout.NextAvailable(pods, ds.Spec.MinReadySeconds, c.now()); !at.IsZero() {
		// A ready pod becomes available without any event: look again then.
		c.queue.EnqueueAfter(ds, time.Until(at)+10*time.Millisecond)
	}
	if err := c.cleanupHistory(ctx, ds, pods, hash); err != nil && syncErr == nil {
		syncErr = err
	}
	return utilerrors.NewAggregate([]error{syncErr, statusErr})
}

// failedMayGo tells whether a failed pod of ds on node may be deleted now; if not, ds
// is looked at again when its back-off ends.
func (c *Controller) failedMayGo(key string, ds *appsv1.DaemonSet, node string) bool {
	id, now := key+"/"+node, c.now()
	if c.failedBackoff.IsInBackOffSinceUpdate(id, now) {
		c.queue.EnqueueAfter(ds, c.failedBackoff.Get(id))
		return false
	}
	c.failedBackoff.Next(id, now)
	return true
}

// podEventFor records the Failed/Succeeded events upstream gives before deleting a
// finished daemon pod.
func (c *Controller) podEventFor(ds *appsv1.DaemonSet, p *corev1.Pod) {
	switch p.Status.Phase {
	case corev1.PodFailed:
		c.recorder.Eventf(ds, corev1.EventTypeWarning, "FailedDaemonPod", "Found failed daemon pod %s/%s on node %s, will try to kill it", p.Namespace, p.Name, placement.TargetNode(p))
	case corev1.PodSucceeded:
		c.recorder.Eventf(ds, corev1.EventTypeNormal, "SucceededDaemonPod", "Found succeeded daemon pod %s/%s on node %s, will try to delete it", p.Namespace, p.Name, placement.TargetNode(p))
	}
}

// manage decides placement: a pod for each node that should run one and has none; the
// deletion of finished pods, of extra pods (a node keeps its oldest, or with surge its
// oldest updated and oldest old), of pods on nodes they no longer fit, and of unplaced
// pods for nodes that are gone.
//
// failedMayGo says whether a failed pod on a node may be deleted now (its back-off).
func manage(ds *appsv1.DaemonSet, nodes []*corev1.Node, fits map[string]placement.Fit, byNode map[string][]*corev1.Pod, hash string, failedMayGo func(node string) bool) (creates []string, deletes []*corev1.Pod) {
	surge := false
	if ru := ds.Spec.UpdateStrategy.RollingUpdate; ds.Spec.UpdateStrategy.Type == appsv1.RollingUpdateDaemonSetStrategyType && ru != nil && ru.MaxSurge != nil {
		surge = ru.MaxSurge.String() != "0" && ru.MaxSurge.String() != "0%"
	}
	known := map[string]bool{}
	for _, n := range nodes {
		known[n.Name] = true
		f := fits[n.Name]
		pods := byNode[n.Name]
		switch {
		case f.ShouldRun && len(pods) == 0:
			creates = append(creates, n.Name)
		case f.ShouldContinue:
			var running []*corev1.Pod
			for _, p := range pods {
				switch {
				case p.DeletionTimestamp != nil:
				case p.Status.Phase == corev1.PodFailed:
					if failedMayGo(n.Name) {
						deletes = append(deletes, p)
					}
				case p.Status.Phase == corev1.PodSucceeded:
					deletes = append(deletes, p)
				default:
					running = append(running, p)
				}
			}
			if !surge {
				if len(running) > 1 {
					deletes = append(deletes, running[1:]...)
				}
				continue
			}
			var keptNew, keptOld bool
			for _, p := range running {
				updated := isUpdated(ds, p, hash)
				switch {
				case updated && !keptNew:
					keptNew = true
				case !updated && !keptOld:
					keptOld = true
				default:
					deletes = append(deletes, p)
				}
			}
		case len(pods) > 0:
			for _, p := range pods {
				if p.DeletionTimestamp == nil {
					deletes = append(deletes, p)
				}
			}
		}
	}
	for node, pods := range byNode {
		if known[node] {
			continue
		}
		for _, p := range pods {
			if p.Spec.NodeName == "" && p.DeletionTimestamp == nil {
				deletes = append(deletes, p)
			}
		}
	}
	return creates, deletes
}

// syncNodes creates a pod for each node in creates (slow start, at most burstReplicas)
// and deletes the pods in deletes, under expectations.
func (c *Controller) syncNodes(ctx context.Context, key string, ds *appsv1.DaemonSet, creates []string, deletes []*corev1.Pod, hash string) error {
	if len(creates) > burstReplicas {
		creates = creates[:burstReplicas]
	}
	deleteKeys := make([]string, len(deletes))
	for i, p := range deletes {
		deleteKeys[i] = p.Namespace + "/" + p.Name
	}
	c.expectations.Expect(key, len(creates), deleteKeys)
	var next atomic.Int32
	created, createErr := controller.SlowStartBatch(len(creates), 1, func() error {
		node := creates[next.Add(1)-1]
		_, err := c.podControl.CreatePod(ctx, ds, newPod(ds, node, hash))
		if err != nil && apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
			return nil
		}
		return err
	})
	for i := created; i < len(creates); i++ {
		c.expectations.CreationObserved(key)
	}
	var errs []error
	if createErr != nil {
		errs = append(errs, createErr)
	}
	for i, p := range deletes {
		if err := c.podControl.DeletePod(ctx, ds, p); err != nil {
			c.expectations.DeletionObserved(key, deleteKeys[i])
			if !apierrors.IsNotFound(err) {
				errs = append(errs, err)
			}
		}
	}
	return utilerrors.NewAggregate(errs)
}

// newPod is ds's pod for node: the template, labelled with hash and the template
// generation, with the daemon tolerations and pinned to node by affinity.
func newPod(ds *appsv1.DaemonSet, node, hash string) *corev1.Pod {
	t := ds.Spec.Template.DeepCopy()
	labels := map[string]string{}
	for k, v := range t.Labels {
		labels[k] = v
	}
	labels[RevisionLabel] = hash
	if gen, ok := ds.Annotations[TemplateGenerationAnnotation]; ok {
		labels[TemplateGenerationLabel] = gen
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName:    ds.Name + "-",
			Namespace:       ds.Namespace,
			Labels:          labels,
			Annotations:     t.Annotations,
			Finalizers:      t.Finalizers,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(ds, controllerKind)},
		},
		Spec: t.Spec,
	}
	if mode, _ := inplace.ModeOf(ds.Annotations); mode != inplace.Off && ds.Spec.UpdateStrategy.Type == appsv1.RollingUpdateDaemonSetStrategyType {
		// Opted in to in-place updates: the pod serves only once kroll says so.
		pod.Spec.ReadinessGates = append(pod.Spec.ReadinessGates, corev1.PodReadinessGate{ConditionType: inplace.ReadinessGate})
	}
	pod.Spec.Tolerations = placement.WithDaemonTolerations(&pod.Spec)
	pod.Spec.Affinity = placement.PinnedTo(pod.Spec.Affinity, node)
	return pod
}

// claimPods returns the pods ds controls, after adopting orphans its selector matches
// and releasing pods it controls but no longer selects.
func (c *Controller) claimPods(ctx context.Context, ds *appsv1.DaemonSet, selector labels.Selector) ([]*corev1.Pod, error) {
	return controller.PodClaim{
		Owner: ds, Kind: controllerKind, Selects: controller.Selector(selector),
		Fresh: func(ctx context.Context) (metav1.Object, error) {
			return c.client.AppsV1().DaemonSets(ds.Namespace).Get(ctx, ds.Name, metav1.GetOptions{})
		},
		Patch: func(ctx context.Context, name string, patch []byte) error {
			return c.podControl.PatchPod(ctx, ds.Namespace, name, patch)
		},
	}.Claim(ctx, c.podIndex)
}

// constructHistory finds or creates the ControllerRevision of ds's template and gives
// it the newest number; it returns the template's hash. A revision is named
// "<ds>-<hash>" with the pod-template hash (as a Deployment's ReplicaSets are) and
// holds the template patch kubectl applies on undo.
func (c *Controller) constructHistory(ctx context.Context, ds *appsv1.DaemonSet, selector labels.Selector) (string, error) {
	all, err := c.revisions.ControllerRevisions(ds.Namespace).List(selector)
	if err != nil {
		return "", err
	}
	data, err := history.TemplatePatch(ds)
	if err != nil {
		return "", err
	}
	var current []*appsv1.ControllerRevision
	var maxOld int64
	var adoptable error
	checked := false
	for _, r := range all {
		ref := metav1.GetControllerOf(r)
		if ref == nil {
			// An orphan (its DaemonSet was deleted with --cascade=orphan and made again):
			// adopt it, so that history and undo see it.
			if !checked {
				fresh, err := c.client.AppsV1().DaemonSets(ds.Namespace).Get(ctx, ds.Name, metav1.GetOptions{})
				adoptable, checked = controller.CheckAdoptable(ds, fresh, err, "DaemonSet"), true
			}
			if adoptable != nil {
				continue
			}
			adopted, err := c.client.AppsV1().ControllerRevisions(r.Namespace).Patch(ctx, r.Name, types.StrategicMergePatchType,
				controller.AdoptPatch(ds, controllerKind, r.UID), metav1.PatchOptions{})
			if err != nil {
				if apierrors.IsNotFound(err) {
					continue
				}
				return "", err
			}
			r, ref = adopted, metav1.GetControllerOf(adopted)
		}
		if ref == nil || ref.UID != ds.UID {
			continue
		}
		if string(r.Data.Raw) == string(data) {
			current = append(current, r)
		} else {
			maxOld = max(maxOld, r.Revision)
		}
	}
	hash := history.TemplateHash(&ds.Spec.Template, ds.Status.CollisionCount)
	revisions := c.client.AppsV1().ControllerRevisions(ds.Namespace)
	var cur *appsv1.ControllerRevision
	switch {
	case len(current) == 0:
		labels := map[string]string{}
		for k, v := range ds.Spec.Template.Labels {
			labels[k] = v
		}
		labels[RevisionLabel] = hash
		rev := &appsv1.ControllerRevision{
			ObjectMeta: metav1.ObjectMeta{Name: ds.Name + "-" + hash, Namespace: ds.Namespace, Labels: labels,
				Annotations: history.RevisionAnnotations(ds.Annotations), OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(ds, controllerKind)}},
			Data:     runtime.RawExtension{Raw: data},
			Revision: maxOld + 1,
		}
		cur, err = revisions.Create(ctx, rev, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			existing, gerr := revisions.Get(ctx, rev.Name, metav1.GetOptions{})
			if gerr != nil {
				return "", gerr
			}
			if string(existing.Data.Raw) == string(data) {
				return hash, nil
			}
			// Another template took the name: count a collision, and try again with it.
			next := ds.DeepCopy()
			n := int32(0)
			if next.Status.CollisionCount != nil {
				n = *next.Status.CollisionCount
			}
			n++
			next.Status.CollisionCount = &n
			if _, err := c.client.AppsV1().DaemonSets(ds.Namespace).UpdateStatus(ctx, next, metav1.UpdateOptions{}); err != nil {
				return "", err
			}
			return "", fmt.Errorf("found a hash collision for DaemonSet %q; collision count is now %d", ds.Name, n)
		}
		if err != nil {
			return "", err
		}
	default:
		sort.Slice(current, func(i, j int) bool { return current[i].Revision > current[j].Revision })
		cur = current[0]
		for _, dup := range current[1:] {
			if err := revisions.Delete(ctx, dup.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				return "", err
			}
		}
		if cur.Revision < maxOld+1 {
			next := cur.DeepCopy()
			next.Revision = maxOld + 1
			if _, err := revisions.Update(ctx, next, metav1.UpdateOptions{}); err != nil {
				return "", err
			}
		}
	}
	if h := cur.Labels[RevisionLabel]; h != "" {
		hash = h
	}
	return hash, nil
}

// cleanupHistory deletes the oldest revisions beyond revisionHistoryLimit that no pod
// runs.
func (c *Controller) cleanupHistory(ctx context.Context, ds *appsv1.DaemonSet, pods []*corev1.Pod, hash string) error {
	selector, err := metav1.LabelSelectorAsSelector(ds.Spec.Selector)
	if err != nil {
		return nil
	}
	all, err := c.revisions.ControllerRevisions(ds.Namespace).List(selector)
	if err != nil {
		return err
	}
	live := map[string]bool{}
	for _, p := range pods {
		live[p.Labels[RevisionLabel]] = true
	}
	var owned []*appsv1.ControllerRevision
	for _, r := range all {
		if metav1.IsControlledBy(r, ds) {
			if r.Labels[RevisionLabel] == hash || live[r.Labels[RevisionLabel]] {
				continue
			}
			owned = append(owned, r)
		}
	}
	history.SortRevisions(owned)
	return controller.DeleteStaleRevisions(ctx, c.client, owned, nil, ds.Spec.RevisionHistoryLimit)
}

// writeStatus computes and writes ds's status: per node that should run it, whether it
// has a pod, and whether its oldest pod is ready, available and updated; per node that
// should not, whether it has one anyway (misscheduled). observedGeneration moves only
// when this sync acted on the generation (expectations satisfied).
func (c *Controller) writeStatus(ctx context.Context, ds *appsv1.DaemonSet, nodes []*corev1.Node, fits map[string]placement.Fit, byNode map[string][]*corev1.Pod, hash string, acted bool, verdict *inplace.Verdict) error {
	now := c.now()
	var st appsv1.DaemonSetStatus
	for _, n := range nodes {
		var pods []*corev1.Pod
		for _, p := range byNode[n.Name] {
			if p.DeletionTimestamp == nil || (p.Status.Phase != corev1.PodFailed && p.Status.Phase != corev1.PodSucceeded) {
				pods = append(pods, p)
			}
		}
		if !fits[n.Name].ShouldRun {
			if len(pods) > 0 {
				st.NumberMisscheduled++
			}
			continue
		}
		st.DesiredNumberScheduled++
		if len(pods) == 0 {
			continue
		}
		st.CurrentNumberScheduled++
		p := pods[0]
		if rollout.IsPodReady(p) {
			st.NumberReady++
			if rollout.IsPodAvailable(p, ds.Spec.MinReadySeconds, now) {
				st.NumberAvailable++
			}
		}
		if isUpdated(ds, p, hash) {
			st.UpdatedNumberScheduled++
		}
	}
	st.NumberUnavailable = st.DesiredNumberScheduled - st.NumberAvailable
	st.ObservedGeneration = ds.Status.ObservedGeneration
	if acted {
		st.ObservedGeneration = ds.Generation
	}
	st.CollisionCount = ds.Status.CollisionCount
	st.Conditions = conditions.With(ds.Status.Conditions, verdict, now)
	if equality.Semantic.DeepEqual(st, ds.Status) {
		return nil
	}
	next := ds.DeepCopy()
	next.Status = st
	timeline.Stamp(next, hash, st.DesiredNumberScheduled, timeline.Counts{
		Old: st.CurrentNumberScheduled - st.UpdatedNumberScheduled, New: st.UpdatedNumberScheduled,
		Available: st.NumberAvailable, Unavailable: st.NumberUnavailable,
	}, now)
	_, err := c.client.AppsV1().DaemonSets(ds.Namespace).UpdateStatus(ctx, next, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
