// Package statefulset is kroll's StatefulSet controller: pods with stable names
// (<set>-<ordinal>), network identities and storage, created and removed in ordinal
// order, updated through ControllerRevisions by RollingUpdate (highest ordinal first,
// partition, maxUnavailable) or OnDelete — as upstream does, with one deliberate
// difference explained at update. kroll.dev/rollout-steps drive the partition field
// (see staged.go).
package statefulset

import (
	"context"
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
	"k8s.io/klog/v2"

	"github.com/kroll-dev/kroll/pkg/controller"
	"github.com/kroll-dev/kroll/pkg/failure"
	"github.com/kroll-dev/kroll/pkg/gates"
	"github.com/kroll-dev/kroll/pkg/history"
	"github.com/kroll-dev/kroll/pkg/inplace"
	"github.com/kroll-dev/kroll/pkg/timeline"
)

// ControllerName is the name upstream's StatefulSet controller records events under.
const ControllerName = "statefulset-controller"

// Controller is the StatefulSet controller.
type Controller struct {
	client    kubernetes.Interface
	recorder  record.EventRecorder
	now       func() time.Time
	pods      controller.PodControl
	setWriter controller.SetWriter[*appsv1.StatefulSet]
	claims    *claimKeeper
	sets      appslisters.StatefulSetLister
	revisions appslisters.ControllerRevisionLister
	podIndex  cache.Indexer
	// nodes are read to judge whether a node can make a pod's in-place resize.
	nodes  corelisters.NodeLister
	synced []cache.InformerSynced
	queue  controller.Queue
	// fence holds a sync back until the caches show this controller's own latest pod
	// creates and status write for the StatefulSet.
	fence *controller.Fence
	// takenOut: pods taken out of service for an in-place update, until the cache shows it.
	takenOut inplace.TakenOut
	// stagedReports keeps the events of staged rollouts to one per step or problem.
	stagedReports controller.StagedReports
	// templates applies the current and update revisions of every sync.
	templates history.Templates
	// waits logs what rollouts in progress wait on (see setWait).
	waits *controller.WaitLog
	// config is what configuration rollout reads and writes (config.go); nil until
	// WatchConfig, and then no StatefulSet rolls its configuration.
	config *controller.ConfigSource
	// configReports keeps configuration problems' events to one per problem.
	configReports controller.ConfigReports
	// maxUnavailableOff: the MaxUnavailableStatefulSet gate is off (SetFeatureGates);
	// false, the zero value, is gates.Defaults().
	maxUnavailableOff bool
	// budgets, when set (RespectBudgets), evicts the pods that rollouts of sets that
	// respect PodDisruptionBudgets replace, and takes the disruptions of those they
	// restart in place; nil deletes them and takes nothing.
	budgets *controller.SetBudgets
	// budgetStatus writes the budgets' status when an in-place restart takes a
	// disruption or gives it back (controller.InPlaceBudget); set with budgets.
	budgetStatus func(namespace string) controller.BudgetStatusWriter
	// analysis runs analyze steps (analyze.go); nil until SetAnalysis, and then
	// every analyze step holds as a bare pause.
	analysis *controller.Analysis
}

// SetFeatureGates sets the Kubernetes feature gates the controller reads (default
// gates.Defaults()): MaxUnavailableStatefulSet. Call it before Run.
func (c *Controller) SetFeatureGates(g gates.Gates) {
	c.maxUnavailableOff = !g.MaxUnavailableStatefulSet
}

// New builds the controller on shared informers (start them after).
func New(client kubernetes.Interface, sets appsinformers.StatefulSetInformer, pods coreinformers.PodInformer, nodes coreinformers.NodeInformer,
	revisions appsinformers.ControllerRevisionInformer, claims coreinformers.PersistentVolumeClaimInformer, recorder record.EventRecorder) (*Controller, error) {
	c := &Controller{
		client: client, recorder: recorder, now: time.Now,
		pods:      controller.NewPodControl(client, recorder, controller.StatefulSetEvents),
		setWriter: controller.StatefulSetWriter{Client: client},
		claims:    newClaimKeeper(client, claims.Lister(), recorder),
		sets:      sets.Lister(),
		revisions: revisions.Lister(),
		podIndex:  pods.Informer().GetIndexer(),
		nodes:     nodes.Lister(),
		synced: []cache.InformerSynced{sets.Informer().HasSynced, pods.Informer().HasSynced,
			revisions.Informer().HasSynced, claims.Informer().HasSynced, nodes.Informer().HasSynced},
		queue: controller.NewQueue("statefulset"),
		fence: controller.NewFence(map[string]controller.VersionSource{
			"pods": pods.Informer().GetStore(), "statefulsets": sets.Informer().GetStore(),
		}),
	}
	c.waits = controller.NewWaitLog("statefulSet", func() time.Time { return c.now() })
	if err := controller.AddPodControllerIndex(pods.Informer()); err != nil {
		return nil, err
	}
	if err := controller.AddPodNodeIndex(pods.Informer()); err != nil {
		return nil, err
	}
	handlers := []struct {
		inf cache.SharedIndexInformer
		h   cache.ResourceEventHandler
	}{
		{sets.Informer(), cache.ResourceEventHandlerFuncs{
			AddFunc:    c.queue.Enqueue,
			UpdateFunc: func(_, cur any) { c.queue.Enqueue(cur) },
			DeleteFunc: c.deleted,
		}},
		{pods.Informer(), cache.ResourceEventHandlerFuncs{
			AddFunc:    c.podChanged,
			UpdateFunc: func(old, cur any) { c.podChanged(old); c.podChanged(cur) },
			DeleteFunc: c.podChanged,
		}},
		{claims.Informer(), cache.ResourceEventHandlerFuncs{
			// A new pod may be waiting for the garbage collector to remove its ordinal's
			// claim of an earlier pod (whenScaled=Delete).
			DeleteFunc: c.claimDeleted,
		}},
		// No ControllerRevision handler, as upstream has none: a sync reads the set's
		// revisions as it makes them (revisionsFor), and a client's revision is left
		// alone until the set's next sync.
	}
	for _, h := range handlers {
		if _, err := h.inf.AddEventHandler(h.h); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// Run syncs StatefulSets with workers goroutines until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) {
	c.queue.Run(ctx, ControllerName, workers, c.synced, c.sync)
}

// podChanged enqueues the set that controls the pod, or, for an orphan, the sets that
// could adopt it (selector and name match).
func (c *Controller) podChanged(obj any) {
	pod, ok := controller.Deleted[*corev1.Pod](obj)
	if !ok {
		return
	}
	if ref := metav1.GetControllerOfNoCopy(pod); ref != nil {
		if ref.Kind == "StatefulSet" {
			c.queue.Add(pod.Namespace + "/" + ref.Name)
		}
		return
	}
	parent, _, ok := parentAndOrdinal(pod.Name)
	if !ok {
		return
	}
	if set, err := c.sets.StatefulSets(pod.Namespace).Get(parent); err == nil {
		c.queue.Enqueue(set)
	}
}

func (c *Controller) claimDeleted(obj any) {
	claim, ok := controller.Deleted[*corev1.PersistentVolumeClaim](obj)
	if !ok {
		return
	}
	for _, ref := range claim.OwnerReferences {
		switch ref.Kind {
		case "StatefulSet":
			c.queue.Add(claim.Namespace + "/" + ref.Name)
		case "Pod":
			if parent, _, ok := parentAndOrdinal(ref.Name); ok {
				c.queue.Add(claim.Namespace + "/" + parent)
			}
		}
	}
}

// sync brings one StatefulSet one step towards its spec and writes its status.
func (c *Controller) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	if c.fence.HoldBack(key, c.queue) {
		return nil
	}
	set, err := c.sets.StatefulSets(ns).Get(name)
	if apierrors.IsNotFound(err) {
		c.fence.Forget(key)
		c.waits.Forget(key)
		c.budgets.Forget(key)
		return nil
	}
	if err != nil {
		return err
	}
	selector, err := metav1.LabelSelectorAsSelector(set.Spec.Selector)
	if err != nil || selector.Empty() {
		return nil // rejected by validation
	}
	pods, err := c.claimPods(ctx, set, selector)
	if err != nil {
		return err
	}
	revs, err := c.history(ctx, set, selector)
	if err != nil {
		return err
	}
	now := c.now()
	cfg, acted, err := controller.StatefulSetConfig.Configure(ctx, c.configWrites(), set, revs, &c.templates)
	if err != nil || acted {
		return err
	}
	current, collisions, err := c.revisionsFor(ctx, set, revs, cfg)
	if err != nil {
		return err
	}
	if err := controller.StatefulSetConfig.WriteSnapshots(ctx, c.configWrites(), set, &cfg, current.update, now); err != nil {
		return err
	}
	// The failure policy first: a failed rollout is rolled back or paused before the
	// update below takes it a step further.
	stage := planStaging(set, pods, current, now)
	heal := planFailure(set, pods, current, controller.StagedHolds(stage.decision), now)
	controller.ReportInvalidFailurePolicy(c.recorder, set, heal.PolicyEvent)
	if set.DeletionTimestamp == nil {
		if handled, err := controller.StatefulSetFailure.Recover(ctx, c.setWriter, c.recorder, set, now); handled {
			return err
		}
		if handled, err := c.abort(ctx, set, pods, current, now); handled {
			return err
		}
	}
	if heal.Act != failure.None && set.DeletionTimestamp == nil {
		return c.carryOut(ctx, set, pods, current, heal, now)
	}
	if !heal.Recheck.IsZero() {
		c.queue.EnqueueAfter(set, heal.Recheck.Sub(now)+10*time.Millisecond)
	}
	// Then the staged rollout: the step record and the partition it sets are written
	// in one Update, before the rolling update acts on them.
	if stage.write != nil && set.DeletionTimestamp == nil {
		_, err := c.setWriter.Update(ctx, stage.write)
		return err
	}
	if acted, err := c.analyzeStep(ctx, set, pods, current, &stage); acted || err != nil {
		return err
	}
	if until := stage.decision.Until; !until.IsZero() {
		c.queue.EnqueueAfter(set, until.Sub(now)+10*time.Millisecond)
	}
	staged := stagedNews(set, stage, now)
	c.stagedReports.Report(c.recorder, set, set.UID, staged)
	var takes controller.Takes
	status, updateErr := c.update(ctx, set, pods, current, &takes, now)
	status.Conditions = controller.WithStaged(failureConditions, failureConditions.Merge(status.Conditions, heal.Conditions), staged.Condition)
	status.Conditions = controller.WithConfigCondition(failureConditions, status.Conditions, cfg.Problem, cfg.Reason, now)
	c.settleBudget(set, &status, &takes, now)
	status.CollisionCount = &collisions
	completeRollingUpdate(set, &status)
	c.observeWait(ctx, set, pods, status, stage.decision, now)
	if statusChanged(set, &status) || set.Status.CollisionCount == nil || *set.Status.CollisionCount != collisions {
		next := set.DeepCopy()
		next.Status = status
		desired := int32(replicasOf(set))
		timeline.Stamp(next, status.UpdateRevision, desired, timeline.Counts{
			Old: status.Replicas - status.UpdatedReplicas, New: status.UpdatedReplicas,
			Available: status.AvailableReplicas, Unavailable: timeline.Unavailable(desired, status.AvailableReplicas),
		}, controller.BudgetWaitOf(failureConditions, status.Conditions).HeldBy(), now)
		updated, err := c.client.AppsV1().StatefulSets(ns).UpdateStatus(ctx, next, metav1.UpdateOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return utilerrors.NewAggregate([]error{updateErr, err})
		}
		if err == nil {
			c.fence.Wrote(key, set.UID, "statefulsets", updated.ResourceVersion)
		}
	}
	if err := c.truncateHistory(ctx, set, pods, revs, current, status); err != nil {
		klog.FromContext(ctx).V(2).Info("Could not truncate history", "statefulSet", klog.KObj(set), "err", err)
	}
	if heal.MarkComplete && set.DeletionTimestamp == nil {
		// The update revision completed once: never judged again (see failure.PlanSet).
		if err := controller.MarkComplete(ctx, c.client.AppsV1().ControllerRevisions(ns), current.update); err != nil && updateErr == nil {
			updateErr = err
		}
	}
	if updateErr == nil && set.Spec.MinReadySeconds > 0 && status.ReadyReplicas != status.AvailableReplicas {
		c.queue.EnqueueAfter(set, time.Duration(set.Spec.MinReadySeconds)*time.Second)
	}
	return updateErr
}

// claimPods returns the pods set controls, after adopting orphans its selector and name
// match and releasing pods it controls but no longer selects.
func (c *Controller) claimPods(ctx context.Context, set *appsv1.StatefulSet, selector labels.Selector) ([]*corev1.Pod, error) {
	selects := controller.Selector(selector)
	return controller.PodClaim{
		Owner: set, Kind: controllerKind,
		Selects: func(p *corev1.Pod) bool { return selects(p) && isMember(set, p) },
		Fresh: func(ctx context.Context) (metav1.Object, error) {
			return c.client.AppsV1().StatefulSets(set.Namespace).Get(ctx, set.Name, metav1.GetOptions{})
		},
		Patch: func(ctx context.Context, name string, patch []byte) error {
			_, err := c.pods.PatchPod(ctx, set.Namespace, name, patch)
			return err
		},
	}.Claim(ctx, c.podIndex)
}

// history lists the set's ControllerRevisions (adopting orphans its selector matches),
// oldest first.
func (c *Controller) history(ctx context.Context, set *appsv1.StatefulSet, selector labels.Selector) ([]*appsv1.ControllerRevision, error) {
	all, err := c.revisions.ControllerRevisions(set.Namespace).List(selector)
	if err != nil {
		return nil, err
	}
	return controller.ClaimRevisions(ctx, c.client, set, controllerKind, selector, func(ctx context.Context) (metav1.Object, error) {
		return c.client.AppsV1().StatefulSets(set.Namespace).Get(ctx, set.Name, metav1.GetOptions{})
	}, all)
}

// truncateHistory deletes the oldest revisions beyond revisionHistoryLimit that neither
// the status nor any pod uses.
func (c *Controller) truncateHistory(ctx context.Context, set *appsv1.StatefulSet, pods []*corev1.Pod, revs []*appsv1.ControllerRevision, current revisions, status appsv1.StatefulSetStatus) error {
	live := map[string]bool{current.current.Name: true, current.update.Name: true, status.CurrentRevision: true}
	for _, p := range pods {
		live[p.Labels[RevisionLabel]] = true
	}
	return controller.DeleteStaleRevisions(ctx, c.client, revs, live, set.Spec.RevisionHistoryLimit)
}

// deleted forgets the staged-rollout events reported of a StatefulSet that is gone,
// and syncs its key (the sync finds it gone).
func (c *Controller) deleted(obj any) {
	if set, ok := controller.Deleted[*appsv1.StatefulSet](obj); ok {
		c.stagedReports.Forget(set.UID)
		c.configReports.Forget(set.UID)
		c.analysis.Forget(set.UID)
	}
	c.queue.Enqueue(obj)
}
