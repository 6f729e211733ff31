// Package deployment is kroll's Deployment controller: it rolls a Deployment's pods
// from one ReplicaSet to the next (RollingUpdate within maxSurge/maxUnavailable, or
// Recreate), scales in proportion mid-rollout, keeps revisions, and reports progress
// in the Deployment's status conditions.
//
// One reconcile pass makes one kind of change and returns; the informers bring the
// Deployment back when that change has been observed (house style: "one kind of change
// per pass").
//
// # In-place updates
//
// A Deployment annotated kroll.dev/update-strategy whose change allows it is rolled out
// without creating or deleting a pod: each pod is handed from its old ReplicaSet to the
// new one with its new images, recorded on both ReplicaSets. The protocol, and the pure
// planner that decides each pass of it (inplace.PlanHandOver), are in pkg/inplace;
// inplace.go here reads the planner's view from the caches and applies its plan, which
// also resizes each arrived pod to the new ReplicaSet's cpu and memory (pods/resize),
// where its node has room, and recreates it where it has not (InPlaceIfPossible). A
// change that cannot be made in place falls back to the rolling update
// (InPlaceIfPossible) or touches no pod (InPlaceOnly); the InPlaceUpdate condition and
// an event name the fields.
package deployment

import (
	"context"
	"reflect"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	appsinformers "k8s.io/client-go/informers/apps/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"github.com/kroll-dev/kroll/pkg/controller"
	"github.com/kroll-dev/kroll/pkg/failure"
	"github.com/kroll-dev/kroll/pkg/gates"
	"github.com/kroll-dev/kroll/pkg/inplace"
	"github.com/kroll-dev/kroll/pkg/rollout"
)

// ControllerName is the name upstream's Deployment controller records events under.
const ControllerName = "deployment-controller"

// Controller is the Deployment controller.
type Controller struct {
	client   kubernetes.Interface
	recorder record.EventRecorder
	now      func() time.Time
	// writes writes Deployments and ReplicaSets; pods writes pods: the in-place steps
	// this controller makes itself (taking pods out of service and putting them back).
	writes writer
	pods   controller.PodControl

	dLister    appslisters.DeploymentLister
	rsLister   appslisters.ReplicaSetLister
	rsIndexer  cache.Indexer // with controller.ControllerIndex
	podLister  corelisters.PodLister
	podIndexer cache.Indexer
	// nodes are read to judge whether a node can make a pod's in-place resize.
	nodes  corelisters.NodeLister
	synced []cache.InformerSynced

	queue controller.Queue
	// fence holds a sync back until the caches show the controller's own last writes
	// for the Deployment (see fencedWriter).
	fence *controller.Fence
	// takenOut remembers pods taken out of service for an in-place update until the
	// cache shows it.
	takenOut inplace.TakenOut
	// announced is the invalid failure policy last announced per Deployment UID, until
	// its FailurePolicy condition shows it (see announcePolicyProblem).
	announced sync.Map
	// statusHolds is when each Deployment's status write (by UID) began waiting for a
	// half-recorded pick (see holdStatus).
	statusHolds sync.Map
	// resizePasses is when each Deployment's last pass woken to resize arrivals (by UID)
	// was to run (see resizePassAfter).
	resizePasses sync.Map
	// waits logs what rollouts in progress wait on (see observeWait).
	waits *controller.WaitLog
	// config is what configuration rollout reads and writes (config.go); nil until
	// WatchConfig, and then no Deployment rolls its configuration.
	config *controller.ConfigSource
	// budgets are the PodDisruptionBudgets in-place restarts take disruptions from,
	// through budgetStatus (see inplace_budget.go); nil until RespectBudgets, and then
	// no in-place restart is held by a budget.
	budgets      *controller.SetBudgets
	budgetStatus func(namespace string) controller.BudgetStatusWriter
	// terminatingOff: the DeploymentReplicaSetTerminatingReplicas gate is off
	// (SetFeatureGates); false, the zero value, is gates.Defaults().
	terminatingOff bool
	// analysis runs analyze steps (controller.AnalyzeStep); nil until SetAnalysis, and then
	// every analyze step holds as a bare pause.
	analysis *controller.Analysis
}

// SetFeatureGates sets the Kubernetes feature gates the controller reads (default
// gates.Defaults()): DeploymentReplicaSetTerminatingReplicas, without which
// status.terminatingReplicas is left out, as upstream's controller leaves it. Call it
// before Run.
func (c *Controller) SetFeatureGates(g gates.Gates) {
	c.terminatingOff = !g.DeploymentReplicaSetTerminatingReplicas
}

// New builds the controller on shared informers (start them after).
func New(client kubernetes.Interface, dInformer appsinformers.DeploymentInformer, rsInformer appsinformers.ReplicaSetInformer, podInformer coreinformers.PodInformer, nodeInformer coreinformers.NodeInformer, recorder record.EventRecorder) (*Controller, error) {
	c := &Controller{
		client:     client,
		recorder:   recorder,
		now:        time.Now,
		writes:     apiWriter{client: client},
		pods:       controller.NewPodControl(client, recorder, controller.ReplicaSetEvents),
		dLister:    dInformer.Lister(),
		rsLister:   rsInformer.Lister(),
		rsIndexer:  rsInformer.Informer().GetIndexer(),
		podLister:  podInformer.Lister(),
		podIndexer: podInformer.Informer().GetIndexer(),
		nodes:      nodeInformer.Lister(),
		synced: []cache.InformerSynced{dInformer.Informer().HasSynced, rsInformer.Informer().HasSynced, podInformer.Informer().HasSynced,
			nodeInformer.Informer().HasSynced},
		queue: controller.NewQueue("deployment"),
		fence: controller.NewFence(map[string]controller.VersionSource{
			"deployments": dInformer.Informer().GetStore(), "replicasets": rsInformer.Informer().GetStore(),
		}),
	}
	c.writes = fencedWriter{writer: c.writes, fence: c.fence}
	c.waits = controller.NewWaitLog("deployment", func() time.Time { return c.now() })
	if err := controller.AddPodControllerIndex(podInformer.Informer()); err != nil {
		return nil, err
	}
	if err := controller.AddControllerIndex(rsInformer.Informer()); err != nil {
		return nil, err
	}
	if err := controller.AddPodNodeIndex(podInformer.Informer()); err != nil {
		return nil, err
	}
	if err := controller.AddPodGateIndex(podInformer.Informer()); err != nil {
		return nil, err
	}
	if _, err := dInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueue,
		UpdateFunc: func(_, cur any) { c.enqueue(cur) },
		DeleteFunc: c.deleteDeployment,
	}); err != nil {
		return nil, err
	}
	if _, err := rsInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.addReplicaSet,
		UpdateFunc: c.updateReplicaSet,
		DeleteFunc: c.deleteReplicaSet,
	}); err != nil {
		return nil, err
	}
	if _, err := podInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{UpdateFunc: c.updatePod, DeleteFunc: c.deletePod}); err != nil {
		return nil, err
	}
	return c, nil
}

// Run syncs Deployments with workers goroutines until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) {
	c.queue.Run(ctx, ControllerName, workers, c.synced, c.sync)
}

func (c *Controller) enqueue(obj any) { c.queue.Enqueue(obj) }

// deleteDeployment forgets what the controller remembers per Deployment of one that is
// gone (the problems it announced, its status holds and resize passes), and syncs its
// key.
func (c *Controller) deleteDeployment(obj any) {
	if d, ok := controller.Deleted[*appsv1.Deployment](obj); ok {
		c.announced.Delete(d.UID)
		c.announced.Delete(stagingProblemKey(d))
		c.announced.Delete(configProblemKey(d))
		c.announced.Delete(inPlaceProblemKey(d))
		c.analysis.Forget(d.UID)
		c.statusHolds.Delete(d.UID)
		c.resizePasses.Delete(d.UID)
	}
	c.enqueue(obj)
}

// seenPods counts the active pods of rs in the pod cache.
func (c *Controller) seenPods(rs *appsv1.ReplicaSet) int32 {
	return controller.ActivePodCount(c.podIndexer, string(rs.UID))
}

// ownerOf returns the Deployment a controllerRef names, if cached with that UID.
func (c *Controller) ownerOf(namespace string, ref *metav1.OwnerReference) *appsv1.Deployment {
	d, _ := controller.Resolve(ref, "Deployment", c.dLister.Deployments(namespace).Get)
	return d
}

// deploymentsSelecting lists the Deployments whose selector matches rs (adoption candidates).
func (c *Controller) deploymentsSelecting(rs *appsv1.ReplicaSet) []*appsv1.Deployment {
	all, err := c.dLister.Deployments(rs.Namespace).List(labels.Everything())
	if err != nil {
		return nil
	}
	return controller.Selecting(all, func(d *appsv1.Deployment) *metav1.LabelSelector { return d.Spec.Selector }, rs.Labels)
}

func (c *Controller) addReplicaSet(obj any) {
	rs := obj.(*appsv1.ReplicaSet)
	if rs.DeletionTimestamp != nil {
		c.deleteReplicaSet(rs)
		return
	}
	if ref := metav1.GetControllerOfNoCopy(rs); ref != nil {
		if d := c.ownerOf(rs.Namespace, ref); d != nil {
			c.enqueue(d)
		}
		return
	}
	for _, d := range c.deploymentsSelecting(rs) {
		c.enqueue(d)
	}
}

func (c *Controller) updateReplicaSet(oldObj, curObj any) {
	old, cur := oldObj.(*appsv1.ReplicaSet), curObj.(*appsv1.ReplicaSet)
	if old.ResourceVersion == cur.ResourceVersion {
		return
	}
	curRef, oldRef := metav1.GetControllerOfNoCopy(cur), metav1.GetControllerOfNoCopy(old)
	refChanged := !reflect.DeepEqual(curRef, oldRef)
	if refChanged && oldRef != nil {
		if d := c.ownerOf(old.Namespace, oldRef); d != nil {
			c.enqueue(d)
		}
	}
	if curRef != nil {
		if d := c.ownerOf(cur.Namespace, curRef); d != nil {
			c.enqueue(d)
		}
		return
	}
	if refChanged || !reflect.DeepEqual(old.Labels, cur.Labels) {
		for _, d := range c.deploymentsSelecting(cur) {
			c.enqueue(d)
		}
	}
}

func (c *Controller) deleteReplicaSet(obj any) {
	rs, ok := controller.Deleted[*appsv1.ReplicaSet](obj)
	if !ok {
		return
	}
	if d := c.ownerOf(rs.Namespace, metav1.GetControllerOfNoCopy(rs)); d != nil {
		c.enqueue(d)
	}
}

// updatePod wakes the Deployment of a pod an in-place update is moving on (or that
// has the in-place readiness gate): its next step depends on the pod's status. It also
// wakes a Deployment watched for failure (kroll.dev/on-failure) when one of its pods
// may have failed: not Ready, or restarted. A pod's status alone does not reach its
// ReplicaSet's (a container waiting in CrashLoopBackOff changes no count), so the
// Deployment would not hear of it otherwise; unwatched Deployments are not woken.
func (c *Controller) updatePod(oldObj, curObj any) {
	old, cur := oldObj.(*corev1.Pod), curObj.(*corev1.Pod)
	_, wasMid := inplace.StateOf(old)
	if wasMid || inplace.NeedsSettling(cur) {
		if d := c.deploymentOfPod(cur); d != nil {
			c.enqueue(d)
		}
		return
	}
	if rs := c.arrivedToResize(old, cur); rs != nil {
		if d := c.deploymentOfPod(cur); d != nil && inPlaceMode(d) != inplace.Off {
			c.queue.EnqueueAfter(d, c.resizePassAfter(d, cur, rs))
		}
		return
	}
	if resizeHeld(old, cur) {
		if d := c.deploymentOfPod(cur); d != nil && inPlaceMode(d) != inplace.Off {
			c.enqueue(d)
		}
		return
	}
	if old.ResourceVersion == cur.ResourceVersion || !mayHaveFailed(old, cur) {
		return
	}
	if d := c.deploymentOfPod(cur); d != nil && failure.PolicyOf(d.Annotations).Watched() {
		c.enqueue(d)
	}
}

// arrivalsGathered is how far apart the passes run that resize pods as they arrive (see
// resizePassAfter): the ReplicaSet takes pods over one by one (twenty a second at the
// default client limits), and a pass per pod would plan the whole rollout again for
// each, and write the Deployment's status as often.
const arrivalsGathered = 500 * time.Millisecond

// firstArrivalsGathered is how long the pass for a round's first arrivals waits: a
// take-over sync starts with its client's burst (thirty pods at the default limits),
// which reaches the caches within some 50 ms, and a pass at the first of them resized
// that one alone.
const firstArrivalsGathered = 100 * time.Millisecond

// arrivedToResize returns the ReplicaSet that took cur over, when the update is a
// take-over (another ReplicaSet now controls the pod) by one whose template's
// resources the pod lacks: the Deployment writes its resize. Woken only then, it
// resizes pods as they arrive, while the ReplicaSet takes the others over, rather than
// all of them once the last has arrived; an image change's take-over leaves the
// Deployment nothing to do. nil for any other update.
func (c *Controller) arrivedToResize(old, cur *corev1.Pod) *appsv1.ReplicaSet {
	a, b := metav1.GetControllerOfNoCopy(old), metav1.GetControllerOfNoCopy(cur)
	if b == nil || (a != nil && a.UID == b.UID) {
		return nil
	}
	rs, ok := controller.Resolve(b, "ReplicaSet", c.rsLister.ReplicaSets(cur.Namespace).Get)
	if !ok || inplace.PlanResize(cur, &rs.Spec.Template).Empty() {
		return nil
	}
	return rs
}

// gatherAfter is how long the Deployment waits to resize pod, just arrived on rs:
// arrivalsGathered while rs names another pod arriving that it does not control yet,
// none once pod is the last of them. Nothing arrives after the last to be gathered
// with it, and the round's end waits for its resize.
func (c *Controller) gatherAfter(pod *corev1.Pod, rs *appsv1.ReplicaSet) time.Duration {
	for name := range inplace.Names(rs, inplace.ArrivingAnnotation) {
		other, err := c.podLister.Pods(pod.Namespace).Get(name)
		if err != nil {
			continue // gone: it never arrives
		}
		if ref := metav1.GetControllerOfNoCopy(other); ref == nil || ref.UID != rs.UID {
			return arrivalsGathered
		}
	}
	return 0
}

// resizePassAfter is how long the Deployment waits to resize pod, just arrived on rs:
// passes woken by arrivals run arrivalsGathered apart at most, each resizing the pods
// that arrived since the last; the first after a quiet spell (a round's first take-overs)
// runs after firstArrivalsGathered, and the pass for the last pod rs names arriving at
// once (see gatherAfter). Waiting half a second from a round's first arrival, as for
// the ones after it, left the client that writes the resizes idle meanwhile with its
// burst full: at a rollout's start, with nothing else to write, the tokens it would have
// gained were lost, some ten requests of its budget, and the rollout's end came half a
// second later (bench/profiles/inplace-rounds.md, "A fifth look").
func (c *Controller) resizePassAfter(d *appsv1.Deployment, pod *corev1.Pod, rs *appsv1.ReplicaSet) time.Duration {
	if c.gatherAfter(pod, rs) == 0 {
		return 0
	}
	now := c.now()
	var last time.Time
	if v, ok := c.resizePasses.Load(d.UID); ok {
		last = v.(time.Time)
	}
	next := last.Add(arrivalsGathered) // the slot after the last pass
	switch {
	case last.After(now): // a pass is due at last already
		next = last
	case !next.After(now): // none ran lately: a round's first take-overs
		next = now.Add(firstArrivalsGathered)
	}
	c.resizePasses.Store(d.UID, next)
	return next.Sub(now)
}

// resizeHeld tells a pod update where the kubelet starts or stops holding a resize
// back (PodResizePending, Deferred or Infeasible): the Deployment then judges whether
// the pod's node can make it, and recreates or names the pod if not. The rest of a
// resize's progress reaches the Deployment through its ReplicaSet's status (a pod
// resizing is not available), as an image update's does; waking it on every pod
// write of a thousand-pod rollout would plan the whole rollout again each time.
func resizeHeld(old, cur *corev1.Pod) bool {
	a, _ := inplace.ResizeStateOf(old)
	b, _ := inplace.ResizeStateOf(cur)
	pending := func(s inplace.ResizeState) bool { return s == inplace.ResizeDeferred || s == inplace.ResizeInfeasible }
	return a != b && (pending(a) || pending(b))
}

// mayHaveFailed tells a pod update that may make cur a failed pod: cur is not Ready
// (its containers may wait in an error, or pass their ready timeout), or a container
// restarted. A Ready pod that did not restart has not failed.
func mayHaveFailed(old, cur *corev1.Pod) bool {
	if cur.DeletionTimestamp != nil {
		return false
	}
	return !rollout.IsPodReady(cur) || restarts(cur) != restarts(old)
}

func restarts(p *corev1.Pod) int32 {
	var n int32
	for _, cs := range p.Status.ContainerStatuses {
		n += cs.RestartCount
	}
	return n
}

// deploymentOfPod is the Deployment whose ReplicaSet controls pod, if cached.
func (c *Controller) deploymentOfPod(pod *corev1.Pod) *appsv1.Deployment {
	rs, ok := controller.Resolve(metav1.GetControllerOfNoCopy(pod), "ReplicaSet", c.rsLister.ReplicaSets(pod.Namespace).Get)
	if !ok {
		return nil
	}
	return c.ownerOf(rs.Namespace, metav1.GetControllerOfNoCopy(rs))
}

// deletePod wakes a Recreate Deployment when one of its old pods is finally gone: it
// waits for that before creating new pods.
func (c *Controller) deletePod(obj any) {
	pod, ok := controller.Deleted[*corev1.Pod](obj)
	if !ok {
		return
	}
	if d := c.deploymentOfPod(pod); d != nil && d.Spec.Strategy.Type == appsv1.RecreateDeploymentStrategyType {
		c.enqueue(d)
	}
}
