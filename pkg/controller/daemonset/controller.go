// Package daemonset is kroll's DaemonSet controller: one pod on every node the
// template fits (nodeSelector, node affinity, taints against its tolerations plus the
// daemon ones; see package placement), placed through the scheduler by node affinity
// as upstream does, and updated by RollingUpdate (maxUnavailable, maxSurge) or
// OnDelete through ControllerRevisions.
//
// A staged rollout (kroll.dev/partition, kroll.dev/rollout-steps; see staged.go) keeps
// the FIRST partition eligible nodes, sorted by name, on their old pods and updates the
// rest: over node-0…node-9 with partition 7, node-7, node-8 and node-9 update.
//
// controller.go holds the informers and one sync; plan.go the pure decisions (manage:
// which pods placement creates and deletes; planRollingUpdate: the next update step);
// staged.go the staged rollout; pods.go the pod writes; inplace.go the in-place update;
// history.go the ControllerRevisions; status.go the status.
package daemonset

import (
	"context"
	"fmt"
	"sort"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
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
	"github.com/kroll-dev/kroll/pkg/failure"
	"github.com/kroll-dev/kroll/pkg/history"
	"github.com/kroll-dev/kroll/pkg/inplace"
	"github.com/kroll-dev/kroll/pkg/placement"
	"github.com/kroll-dev/kroll/pkg/rollout"
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
	dsWriter     controller.SetWriter[*appsv1.DaemonSet]
	now          func() time.Time
	sets         appslisters.DaemonSetLister
	nodes        corelisters.NodeLister
	revisions    appslisters.ControllerRevisionLister
	podIndex     cache.Indexer
	synced       []cache.InformerSynced
	queue        controller.Queue
	expectations *controller.Expectations
	// fence holds a sync back until the caches show this controller's own latest pod
	// creates and status write for the DaemonSet.
	fence *controller.Fence
	// failedBackoff spaces out the deletion of failed pods per DaemonSet and node (1s
	// doubling to 15m): a kubelet that rejects the pod would otherwise meet a new one
	// in a tight loop.
	failedBackoff *flowcontrol.Backoff
	// takenOut: pods taken out of service for an in-place update, until the cache shows it.
	takenOut inplace.TakenOut
	// awaited: the revision of each DaemonSet's template this controller made and
	// the cache does not show yet; its arrival syncs the DaemonSet.
	awaited awaitedRevisions
	// stagedReports keeps the events of staged rollouts to one per step or problem.
	stagedReports controller.StagedReports
	// waits logs what rollouts in progress wait on (see daemonWait).
	waits *controller.WaitLog
	// config is what configuration rollout reads and writes (config.go); nil until
	// WatchConfig, and then no DaemonSet rolls its configuration.
	config *controller.ConfigSource
	// configReports keeps configuration problems' events to one per problem.
	configReports controller.ConfigReports
	// templates decodes the templates of revisions (configuration rollout compares them).
	templates history.Templates
	// budgets, when set (RespectBudgets), evicts the old pods that rolling updates of
	// DaemonSets that respect PodDisruptionBudgets delete, and takes the disruptions of
	// those they restart in place; nil deletes them and takes nothing.
	budgets *controller.SetBudgets
	// budgetStatus writes the budgets' status when an in-place restart takes a
	// disruption or gives it back (controller.InPlaceBudget); set with budgets.
	budgetStatus func(namespace string) controller.BudgetStatusWriter
	// analysis runs analyze steps (analyze.go); nil until SetAnalysis, and then
	// every analyze step holds as a bare pause.
	analysis *controller.Analysis
}

// New builds the controller on shared informers (start them after).
func New(client kubernetes.Interface, sets appsinformers.DaemonSetInformer, pods coreinformers.PodInformer, nodes coreinformers.NodeInformer,
	revisions appsinformers.ControllerRevisionInformer, recorder record.EventRecorder) (*Controller, error) {
	c := &Controller{
		client: client, recorder: recorder, now: time.Now,
		podControl: controller.NewPodControl(client, recorder, controller.ReplicaSetEvents),
		dsWriter:   controller.DaemonSetWriter{Client: client},
		sets:       sets.Lister(), nodes: nodes.Lister(), revisions: revisions.Lister(),
		podIndex: pods.Informer().GetIndexer(),
		synced: []cache.InformerSynced{sets.Informer().HasSynced, pods.Informer().HasSynced, nodes.Informer().HasSynced,
			revisions.Informer().HasSynced},
		queue:        controller.NewQueue("daemonset"),
		expectations: controller.NewExpectations(time.Now),
		fence: controller.NewFence(map[string]controller.VersionSource{
			"pods": pods.Informer().GetStore(), "daemonsets": sets.Informer().GetStore(),
		}),
		failedBackoff: flowcontrol.NewBackOff(time.Second, 15*time.Minute),
	}
	c.waits = controller.NewWaitLog("daemonSet", func() time.Time { return c.now() })
	if err := controller.AddPodControllerIndex(pods.Informer()); err != nil {
		return nil, err
	}
	if err := controller.AddPodNodeIndex(pods.Informer()); err != nil {
		return nil, err
	}
	for _, h := range []struct {
		inf cache.SharedIndexInformer
		h   cache.ResourceEventHandler
	}{
		{sets.Informer(), cache.ResourceEventHandlerFuncs{
			AddFunc:    c.queue.Enqueue,
			UpdateFunc: func(_, cur any) { c.queue.Enqueue(cur) },
			DeleteFunc: c.deleted,
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
		{revisions.Informer(), c.revisionHandlers()},
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
	ref := metav1.GetControllerOfNoCopy(pod)
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
	if c.fence.HoldBack(key, c.queue) {
		return nil
	}
	ds, err := c.sets.DaemonSets(ns).Get(name)
	if apierrors.IsNotFound(err) {
		c.expectations.Forget(key)
		c.fence.Forget(key)
		c.budgets.Forget(key)
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
	all, claimed, err := c.history(ctx, ds, selector)
	if err != nil {
		return err
	}
	cfg, acted, err := controller.DaemonSetConfig.Configure(ctx, c.configWrites(), ds, claimed, &c.templates)
	if err != nil || acted {
		return err
	}
	// eff is ds with the template its update revision records (configuration rollout:
	// kroll.dev/config-hash); pods and revisions are made of it, ds alone is written.
	eff := controller.Apply(ds, cfg)
	hash, rev, err := c.constructHistory(ctx, eff, all, claimed, cfg)
	if err != nil {
		return err
	}
	if err := controller.DaemonSetConfig.WriteSnapshots(ctx, c.configWrites(), ds, &cfg, rev, c.now()); err != nil {
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

	// The failure policy first: a failed rollout is rolled back or paused before an
	// update step takes it further.
	owned, err := c.revisions.ControllerRevisions(ns).List(selector)
	if err != nil {
		return err
	}
	for i := len(owned) - 1; i >= 0; i-- {
		if !metav1.IsControlledBy(owned[i], ds) {
			owned = append(owned[:i], owned[i+1:]...)
		}
	}
	now := c.now()
	revs := rollbackRevisions(ds, owned, hash)
	stage := planStaging(ds, nodes, fits, byNode, hash, revs.newest, owned, now)
	heal := planFailure(ds, pods, revs, hash, statusOf(ds, nodes, fits, byNode, hash, now), controller.StagedHolds(stage.decision), now)
	controller.ReportInvalidFailurePolicy(c.recorder, ds, heal.PolicyEvent)
	if handled, err := controller.DaemonSetFailure.Recover(ctx, c.dsWriter, c.recorder, ds, now); handled {
		return err
	}
	if handled, err := c.abort(ctx, ds, pods, revs, hash, now); handled {
		return err
	}
	if heal.Act != failure.None {
		return c.carryOut(ctx, ds, revs, heal, now)
	}
	if !heal.Recheck.IsZero() {
		c.queue.EnqueueAfter(ds, heal.Recheck.Sub(now)+10*time.Millisecond)
	}

	// Then the staged rollout: its step record is written alone, before any step acts
	// on it (a controller restarted in between neither skips nor repeats a step).
	if stage.write != nil {
		_, err := c.dsWriter.Update(ctx, stage.write)
		return err
	}
	if acted, err := c.analyzeStep(ctx, ds, revs, hash, &stage); acted || err != nil {
		return err
	}
	if until := stage.decision.Until; !until.IsZero() {
		c.queue.EnqueueAfter(ds, until.Sub(now)+10*time.Millisecond)
	}
	staged := stagedNews(ds, stage, now)
	c.stagedReports.Report(c.recorder, ds, ds.UID, staged)

	var syncErr error
	var verdict *inplace.Verdict // the InPlaceUpdate condition's news
	// takes are the rolling update's take-downs through disruption budgets; evict
	// points at them when this sync's deletes are evictions.
	var takes controller.Takes
	var evict *controller.Takes
	budget := c.inPlaceBudget(ds, pods, hash, &takes, now)
	satisfied := c.expectations.Satisfied(key)
	if satisfied {
		creates, deletes := manage(eff, nodes, fits, byNode, hash, func(node string) bool { return c.failedMayGo(key, ds, node) })
		var refills map[*corev1.Pod]string
		for _, p := range deletes {
			c.podEventFor(ds, p)
		}
		if len(creates) == 0 && len(deletes) == 0 && ds.Spec.UpdateStrategy.Type == appsv1.RollingUpdateDaemonSetStrategyType && !paused(ds) {
			desired := 0
			var states []onNode
			for _, n := range nodes {
				if fits[n.Name].ShouldRun {
					desired++
				}
				if list, ok := byNode[n.Name]; ok {
					state := splitPods(eff, n.Name, fits[n.Name].ShouldRun, list, hash)
					state.held = stage.held[n.Name]
					states = append(states, state)
				}
			}
			maxUnavailable, maxSurge, ferr := rollout.DaemonSetFenceposts(ds.Spec.UpdateStrategy.RollingUpdate, desired)
			if ferr != nil {
				return ferr
			}
			handled, v, err := c.inPlace(ctx, eff, pods, hash, maxUnavailable, stage.held, budget)
			verdict = v
			if err != nil {
				return err
			}
			if !handled {
				plan := planRollingUpdate(eff, states, maxUnavailable, maxSurge, c.now())
				creates, deletes = plan.creates, plan.deletes
				if c.budgets.Respects(ds.Annotations) && len(deletes) > 0 {
					evict = &takes
				} else {
					refills = refillable(deletes, fits, byNode)
				}
			}
		}
		var made, removed []*corev1.Pod
		made, removed, syncErr = c.syncNodes(ctx, key, eff, creates, deletes, refills, hash, rev, evict)
		placeCreated(byNode, made, removed)
	}
	if err := budget.Release(ctx); err != nil && syncErr == nil {
		syncErr = err
	}
	statusErr := c.writeStatus(ctx, ds, nodes, fits, byNode, hash, satisfied, verdict, heal.Conditions, staged.Condition, cfg, &takes)
	c.observeWait(ctx, key, ds, nodes, fits, byNode, hash, stage.decision)
	if at := rollout.NextAvailable(pods, ds.Spec.MinReadySeconds, c.now()); !at.IsZero() {
		// A ready pod becomes available without any event: look again then.
		c.queue.EnqueueAfter(ds, time.Until(at)+10*time.Millisecond)
	}
	if err := c.cleanupHistory(ctx, ds, pods, hash); err != nil && syncErr == nil {
		syncErr = err
	}
	if heal.MarkComplete && revs.newest != nil {
		// The revision completed once: never judged again (see failure.PlanSet).
		if err := controller.MarkComplete(ctx, c.client.AppsV1().ControllerRevisions(ns), revs.newest); err != nil && syncErr == nil {
			syncErr = err
		}
	}
	return utilerrors.NewAggregate([]error{syncErr, statusErr})
}

// deleted forgets what the controller remembers of a DaemonSet that is gone: its
// expectations, the revision it awaited and the staged-rollout events it reported.
func (c *Controller) deleted(obj any) {
	if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
		c.expectations.Forget(key)
		c.waits.Forget(key)
	}
	if ds, ok := controller.Deleted[*appsv1.DaemonSet](obj); ok {
		c.awaited.forget(ds.UID)
		c.stagedReports.Forget(ds.UID)
		c.configReports.Forget(ds.UID)
		c.analysis.Forget(ds.UID)
	}
}
