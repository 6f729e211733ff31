package replicaset

import (
	"context"
	"fmt"
	"maps"
	"sync/atomic"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/kroll-dev/kroll/pkg/configrollout"
	"github.com/kroll-dev/kroll/pkg/controller"
	"github.com/kroll-dev/kroll/pkg/disruption"
	"github.com/kroll-dev/kroll/pkg/inplace"
	"github.com/kroll-dev/kroll/pkg/rollout"
)

// sync brings one ReplicaSet to spec.replicas pods and writes its status.
//
// Contract: pods are resized only when every create and delete of the previous resize
// has been observed (expectations), so a stale cache never causes a second create or
// delete; at most BurstReplicas pods change per sync; creates go in slow-start batches
// of 1, 2, 4, … and stop at the first batch with a failure (quota exceeded, say), so a
// failing create is not repeated hundreds of times. Status is written even when
// resizing failed: the failure becomes the ReplicaFailure condition.
func (c *Controller) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	if c.fence.HoldBack(key, c.queue) {
		return nil
	}
	rs, err := c.kind.get(ns, name)
	if apierrors.IsNotFound(err) {
		c.expectations.Forget(key)
		c.fence.Forget(key)
		c.statusWaits.forget(key)
		return nil
	}
	if err != nil {
		return err
	}
	selector, err := metav1.LabelSelectorAsSelector(rs.Spec.Selector)
	if err != nil {
		return nil // rejected by validation; nothing sensible to do
	}
	needsResize := c.expectations.Satisfied(key) && rs.DeletionTimestamp == nil
	c.observeWait(ctx, key, rs)

	// Pods handed over to rs by an in-place update (see pkg/inplace): counted already,
	// taken over below. They are read before rs's own pods: a take-over the cache shows
	// between the two reads then puts the pod among both, where it is counted once;
	// read the other way round, it would be among neither, and replaced.
	arrivals := c.arrivals(rs)
	active, terminating, err := c.podsOf(ctx, rs, selector)
	if err != nil {
		return err
	}
	arrivals = notAmong(arrivals, active)
	var resizeErr error
	var made []*corev1.Pod
	var deleted []deletion
	var held *hold
	if needsResize {
		made, deleted, held, resizeErr = c.resize(ctx, key, rs, active, len(arrivals))
	}
	takeOverErr := c.takeOver(ctx, rs, arrivals)
	if len(arrivals) > 0 && takeOverErr == nil {
		// The take-overs took a while (they are paced by the client's rate limit): report
		// the pods as they are now, those taken over early and ready again among them,
		// rather than as they were when the sync began.
		if active, terminating, err = c.podsOf(ctx, rs, selector); err != nil {
			return err
		}
	}
	// The status counts the pods just created and leaves out those just deleted: the
	// API server has made those changes, and the status write the cache's first sight
	// of them would make is saved.
	active = withCreated(active, made)
	active, terminating = withDeleted(active, terminating, deleted)
	now := c.now()
	status := CalculateStatus(rs, active, terminating, resizeErr, now)
	if !c.kind.hasTerminatingReplicas || c.terminatingOff {
		status.TerminatingReplicas = nil
	}
	if needsResize {
		c.budgetHold(rs, &status, held, now)
	}
	// observedGeneration moves on only once this generation has been acted on: while
	// creates or deletes of an earlier resize are unobserved, pods may still appear that
	// the status does not count, and the Deployment controller relies on a ReplicaSet
	// whose observedGeneration is current to report all of its pods.
	status.ObservedGeneration = rs.Status.ObservedGeneration
	if needsResize {
		status.ObservedGeneration = rs.Generation
	}
	updated, write := rs, true
	switch wait := putOff(rs, status, active); wait {
	case whileLeaving:
		write = false
	case forRecord, forRestarts:
		if left := c.statusWaits.left(key, wait, rs.Generation, now); left > 0 {
			write = false
			c.queue.EnqueueAfter(rs, left)
		}
	}
	if write {
		c.statusWaits.forget(key)
		if updated, err = c.writeStatus(ctx, rs, status); err != nil {
			return err
		}
	}
	if resizeErr == nil {
		if at := rollout.NextAvailable(active, updated.Spec.MinReadySeconds, now); !at.IsZero() {
			c.queue.EnqueueAfter(updated, at.Sub(now)+10*time.Millisecond)
		}
	}
	return utilerrors.NewAggregate([]error{resizeErr, takeOverErr})
}

// withCreated is active and, after them, the created pods it does not hold yet.
func withCreated(active, created []*corev1.Pod) []*corev1.Pod {
	if len(created) == 0 {
		return active
	}
	seen := make(map[types.UID]bool, len(active))
	for _, p := range active {
		seen[p.UID] = true
	}
	for _, p := range created {
		if !seen[p.UID] {
			active = append(active, p)
		}
	}
	return active
}

// notAmong is arrivals without the pods already in pods.
func notAmong(arrivals []arrival, pods []*corev1.Pod) []arrival {
	if len(arrivals) == 0 {
		return nil
	}
	own := make(map[types.UID]bool, len(pods))
	for _, p := range pods {
		own[p.UID] = true
	}
	var out []arrival
	for _, a := range arrivals {
		if !own[a.pod.UID] {
			out = append(out, a)
		}
	}
	return out
}

// podsOf returns rs's active pods, after adopting and releasing (see claimPods), and
// its pods that are terminating.
func (c *Controller) podsOf(ctx context.Context, rs *appsv1.ReplicaSet, selector labels.Selector) (active, terminating []*corev1.Pod, err error) {
	candidates, err := controller.ClaimCandidates(c.podIndexer, rs)
	if err != nil {
		return nil, nil, err
	}
	for _, p := range candidates {
		if rollout.IsPodActive(p) {
			active = append(active, p)
		} else if rollout.IsPodTerminating(p) &&
			metav1.IsControlledBy(p, rs) && selector.Matches(labels.Set(p.Labels)) {
			terminating = append(terminating, p)
		}
	}
	active, err = c.claimPods(ctx, rs, selector, active)
	return active, terminating, err
}

// claimPods returns the active pods rs controls after adopting orphans its selector
// matches and releasing pods it controls but no longer selects.
func (c *Controller) claimPods(ctx context.Context, rs *appsv1.ReplicaSet, selector labels.Selector, pods []*corev1.Pod) ([]*corev1.Pod, error) {
	return controller.Claim[*corev1.Pod]{
		Owner: rs, Kind: c.kind.gvk(), Selects: controller.Selector(selector),
		// Re-read from the API server (not the cache) before pods are adopted: a
		// ReplicaSet that was just deleted or replaced must not take pods.
		Fresh: func(ctx context.Context) (metav1.Object, error) {
			return c.kind.getFresh(ctx, rs.Namespace, rs.Name)
		},
		Patch: func(ctx context.Context, pod *corev1.Pod, patch []byte) (*corev1.Pod, error) {
			_, err := c.podControl.PatchPod(ctx, pod.Namespace, pod.Name, patch)
			return pod, err
		},
		Gone:      isNotFoundOrGone,
		KeepGoing: true,
		Unadoptable: func(pod *corev1.Pod, err error) error {
			return fmt.Errorf("cannot adopt pod %s/%s: %w", pod.Namespace, pod.Name, err)
		},
	}.Claim(ctx, pods)
}

// resize creates or deletes pods so rs has spec.replicas active pods, counting the
// arriving pods handed over to it (not yet its own). It returns the pods it created, as
// the API server returned them, the pods it deleted or found gone, and, when it evicts
// (see evictionOwner), the pods a PodDisruptionBudget kept.
func (c *Controller) resize(ctx context.Context, key string, rs *appsv1.ReplicaSet, active []*corev1.Pod, arriving int) (created []*corev1.Pod, deleted []deletion, held *hold, err error) {
	diff := len(active) + arriving - int(replicasOf(rs))
	switch {
	case diff < 0:
		if missing := c.missingSnapshot(rs.Namespace, rs.Annotations); missing != "" {
			// Its arrival wakes rs (snapshotAdded).
			klog.FromContext(ctx).V(2).Info("Waiting for a configuration snapshot", "replicaSet", klog.KObj(rs), "snapshot", missing)
			return nil, nil, nil, nil
		}
		n := min(-diff, c.burst)
		c.expectations.Expect(key, n, nil)
		klog.FromContext(ctx).V(2).Info("Too few replicas", "replicaSet", klog.KObj(rs), "need", replicasOf(rs), "creating", n)
		template := podFromTemplate(rs, c.kind.controllerRef(rs))
		owner := c.kind.original(rs)
		made := &controller.Created{Fence: c.fence, Key: key, UID: rs.UID}
		done, err := controller.SlowStartBatch(n, 1, func() error {
			pod, err := c.podControl.CreatePod(ctx, owner, template.DeepCopy())
			if err != nil && apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
				return nil // the namespace is going away; nothing to report
			}
			if err == nil {
				made.Add(pod)
			}
			return err
		})
		for i := done; i < n; i++ {
			c.expectations.CreationObserved(key) // never going to be seen
		}
		return made.Pods(), nil, nil, err

	case diff > 0:
		// Pods mid-way through an in-place update count towards having enough pods but
		// never towards having too many: the Deployment controller hands such a pod from
		// one ReplicaSet to another and resizes both around it (see pkg/inplace and the
		// Deployment package doc), and neither may replace or delete it meanwhile.
		settled := removable(rs, active)
		n := min(len(settled)-int(replicasOf(rs)), c.burst)
		if n <= 0 {
			return nil, nil, nil, nil
		}
		owner := c.kind.original(rs)
		victims := rollout.PodsToDelete(settled, c.relatedPods(rs), n, c.now())
		keys := make([]string, len(victims))
		for i, p := range victims {
			keys[i], _ = cache.MetaNamespaceKeyFunc(p)
		}
		c.expectations.Expect(key, 0, keys)
		klog.FromContext(ctx).V(2).Info("Too many replicas", "replicaSet", klog.KObj(rs), "need", replicasOf(rs), "deleting", n)
		done := make([]*deletion, len(victims))
		evictFor := c.evictionOwner(rs)
		refusals := make([]string, len(victims)) // the budget that kept each pod, or ""
		// Deletions go out at once, as upstream's controller sends them. Evictions go two
		// at a time: each is the API server's read-modify-write of the same budgets'
		// status, retried on a conflict. Sent together they conflicted with one another
		// (bench rolling-1000-qps20-budget: some 9,000 budget status writes and 6,600
		// reads for 1,000 evictions, 12 pod writes a second where the client allows 20);
		// one at a time, none conflicted, but each waited on the one before and the
		// rollout made 18 pod writes a second; two at a time, the next is sent while one
		// is in the API server.
		each := controller.ForEach
		if evictFor != nil {
			each = func(n int, f func(int) error) error { return controller.ForEachAtMost(n, evictionsAtOnce, f) }
		}
		err := each(len(victims), func(i int) error {
			var err error
			if evictFor != nil {
				err = c.podControl.EvictPod(ctx, owner, victims[i])
			} else {
				err = c.podControl.DeletePod(ctx, owner, victims[i])
			}
			if err == nil {
				done[i] = &deletion{pod: victims[i]}
				return nil
			}
			c.expectations.DeletionObserved(key, keys[i]) // never going to be seen
			if apierrors.IsNotFound(err) {
				done[i] = &deletion{pod: victims[i], notFound: true}
				return nil
			}
			if pdb, refused := disruption.Refused(err); refused && evictFor != nil {
				refusals[i] = pdb + "\x00" // the pod stays; the budget holds the rollout
				return nil
			}
			return err
		})
		for _, d := range done {
			if d != nil {
				deleted = append(deleted, *d)
			}
		}
		return nil, deleted, c.heldBy(rs, evictFor, refusals), err
	}
	return nil, nil, nil, nil
}

// deletion is a pod resize deleted, or found gone when it tried.
type deletion struct {
	pod      *corev1.Pod
	notFound bool
}

// withDeleted is active and terminating once the deleted pods are out of active: among
// terminating if the API server keeps them for their grace period or a finalizer,
// nowhere if it removed them (rollout.RemovedOnDelete) or they were gone already.
func withDeleted(active, terminating []*corev1.Pod, deleted []deletion) ([]*corev1.Pod, []*corev1.Pod) {
	if len(deleted) == 0 {
		return active, terminating
	}
	gone := make(map[types.UID]bool, len(deleted))
	for _, d := range deleted {
		gone[d.pod.UID] = true
		if !d.notFound && !rollout.RemovedOnDelete(d.pod) {
			terminating = append(terminating, d.pod)
		}
	}
	kept := make([]*corev1.Pod, 0, len(active))
	for _, p := range active {
		if !gone[p.UID] {
			kept = append(kept, p)
		}
	}
	return kept, terminating
}

// removable returns the pods of rs it may delete: none mid-way through an in-place
// update (a State), none it hands over or takes over.
func removable(rs *appsv1.ReplicaSet, pods []*corev1.Pod) []*corev1.Pod {
	leaving, arriving := inplace.Names(rs, inplace.LeavingAnnotation), inplace.Names(rs, inplace.ArrivingAnnotation)
	var out []*corev1.Pod
	for _, p := range inplace.Settled(pods) {
		if !leaving.Has(p.Name) && !arriving.Has(p.Name) {
			out = append(out, p)
		}
	}
	return out
}

// arrival is a pod handed over to a ReplicaSet, and the ReplicaSet it leaves.
type arrival struct {
	pod  *corev1.Pod
	from *appsv1.ReplicaSet
}

// arrivals are the active pods rs's ArrivingAnnotation names that another ReplicaSet
// of its Deployment still controls and names leaving.
func (c *Controller) arrivals(rs *appsv1.ReplicaSet) []arrival {
	if rs.DeletionTimestamp != nil || rs.Annotations[inplace.ArrivingAnnotation] == "" {
		return nil
	}
	var out []arrival
	leavingOf := map[types.UID]sets.Set[string]{} // each giving ReplicaSet's record, read once
	for name := range inplace.Names(rs, inplace.ArrivingAnnotation) {
		p, err := c.podLister.Pods(rs.Namespace).Get(name)
		if err != nil || !rollout.IsPodActive(p) {
			continue
		}
		ref := metav1.GetControllerOfNoCopy(p)
		if ref == nil || ref.UID == rs.UID {
			continue
		}
		from := c.ownerOf(p.Namespace, ref)
		if from == nil || !inplace.Siblings(from, rs) {
			continue
		}
		leaving, read := leavingOf[from.UID]
		if !read {
			leaving = inplace.Names(from, inplace.LeavingAnnotation)
			leavingOf[from.UID] = leaving
		}
		if leaving.Has(name) {
			out = append(out, arrival{pod: p, from: from})
		}
	}
	return out
}

// takeOver makes each arrival rs's pod, with rs's images, in one write each (see
// inplace.TakeOverPatch), at most BurstReplicas per sync. A pod that changed since the
// cache showed it is tried again shortly. Each take-over is recorded in the fence: a
// sync on a cache that does not show it yet would find the pod still arriving and
// send the patch again, only for the API server to refuse it (its resourceVersion is
// stale), one request of the client's budget spent for nothing.
func (c *Controller) takeOver(ctx context.Context, rs *appsv1.ReplicaSet, arrivals []arrival) error {
	arrivals = arrivals[:min(len(arrivals), c.burst)]
	key := rs.Namespace + "/" + rs.Name
	var again atomic.Bool
	err := controller.ForEach(len(arrivals), func(i int) error {
		a := arrivals[i]
		pod, err := c.podControl.PatchPod(ctx, a.pod.Namespace, a.pod.Name, inplace.TakeOverPatch(a.pod, a.from, rs))
		switch {
		case err == nil:
			c.fence.Wrote(key, rs.UID, "pods", pod.ResourceVersion)
			return nil
		case apierrors.IsNotFound(err):
			return nil
		case apierrors.IsConflict(err):
			again.Store(true)
			return nil
		default:
			return err
		}
	})
	if again.Load() || len(arrivals) == c.burst {
		c.queue.EnqueueAfter(rs, time.Second)
	}
	return err
}

// podFromTemplate is a new pod of rs: the template's labels, annotations, finalizers
// and spec, named "<rs>-" plus a random suffix, controlled by rs (ref).
func podFromTemplate(rs *appsv1.ReplicaSet, ref metav1.OwnerReference) *corev1.Pod {
	t := rs.Spec.Template
	prefix := rs.Name + "-"
	if len(apivalidation.NameIsDNSSubdomain(prefix, true)) != 0 {
		prefix = rs.Name
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:       rs.Namespace,
			GenerateName:    prefix,
			Labels:          maps.Clone(t.Labels),
			Annotations:     maps.Clone(t.Annotations),
			Finalizers:      append([]string(nil), t.Finalizers...),
			OwnerReferences: []metav1.OwnerReference{ref},
		},
		Spec: *t.Spec.DeepCopy(),
	}
	// A revision with configuration rollout: its pods read the revision's immutable
	// snapshots, not the live objects its template names (pkg/configrollout). The
	// template keeps the live names, so that `kubectl rollout undo`, which copies it
	// into the Deployment, never writes a snapshot's name into the user's spec.
	configrollout.Substitute(&pod.Spec, configrollout.SnapshotsOf(rs.Annotations))
	if ref.Kind == "ReplicaSet" && inplace.DeploymentOptedIn(rs) {
		// The Deployment controller takes this pod out of service through the gate when
		// it updates it in place, and puts it in service once its containers are ready.
		pod.Spec.ReadinessGates = append(pod.Spec.ReadinessGates, corev1.PodReadinessGate{ConditionType: inplace.ReadinessGate})
	}
	return pod
}

func replicasOf(rs *appsv1.ReplicaSet) int32 {
	if rs.Spec.Replicas == nil {
		return 1
	}
	return *rs.Spec.Replicas
}

// writeStatus writes status if it differs from rs's, in one request (see statusPatch).
func (c *Controller) writeStatus(ctx context.Context, rs *appsv1.ReplicaSet, status appsv1.ReplicaSetStatus) (*appsv1.ReplicaSet, error) {
	if equality.Semantic.DeepEqual(rs.Status, status) {
		return rs, nil
	}
	updated, err := c.kind.patchStatus(ctx, rs, status)
	if err == nil {
		c.fence.Wrote(rs.Namespace+"/"+rs.Name, rs.UID, "owners", updated.ResourceVersion)
	}
	return updated, err
}
