package daemonset

import (
	"context"
	"slices"
	"sync/atomic"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"

	"github.com/kroll-dev/kroll/pkg/controller"
	"github.com/kroll-dev/kroll/pkg/inplace"
	"github.com/kroll-dev/kroll/pkg/placement"
	"github.com/kroll-dev/kroll/pkg/rollout"
)

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

// syncNodes creates a pod for each node in creates (slow start, at most burstReplicas)
// (of revision rev: they name its configuration snapshots, if it has any) and deletes
// the pods in deletes, under expectations; a deleted pod in refills then
// gets its node's new pod (see refillable). It returns the pods it created, as the API
// server returned them, and the deleted pods the API server removed in the deleting
// request. With takes (a rolling update's deletes of a DaemonSet that respects
// disruption budgets), the pods are evicted and refill nothing; those a budget keeps
// are recorded in takes and stay.
func (c *Controller) syncNodes(ctx context.Context, key string, ds *appsv1.DaemonSet, creates []string, deletes []*corev1.Pod, refills map[*corev1.Pod]string, hash string, rev *appsv1.ControllerRevision, takes *controller.Takes) (made, removed []*corev1.Pod, err error) {
	if len(creates) > burstReplicas {
		creates = creates[:burstReplicas]
	}
	deleteKeys := make([]string, len(deletes))
	for i, p := range deletes {
		deleteKeys[i] = p.Namespace + "/" + p.Name
	}
	c.expectations.Expect(key, len(creates)+len(refills), deleteKeys)
	var next atomic.Int32
	created := &controller.Created{Fence: c.fence, Key: key, UID: ds.UID}
	create := func(node string) error {
		pod, err := c.podControl.CreatePod(ctx, ds, controller.WithConfig(newPod(ds, node, hash), rev))
		if err != nil && apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
			return nil
		}
		if err == nil {
			created.Add(pod)
		}
		return err
	}
	n, createErr := controller.SlowStartBatch(len(creates), 1, func() error { return create(creates[next.Add(1)-1]) })
	for i := n; i < len(creates); i++ {
		c.expectations.CreationObserved(key)
	}
	var errs []error
	if createErr != nil {
		errs = append(errs, createErr)
	}
	for i, p := range deletes {
		node, refill := refills[p]
		// A refill rests on the pod as the cache has it (removed in the deleting
		// request); deleting it only as seen keeps a pod that has changed since (a
		// finalizer added) from being refilled while it still runs.
		deletePod := c.podControl.DeletePod
		switch {
		case takes != nil:
			deletePod = c.podControl.EvictPod
		case refill:
			deletePod = c.podControl.DeletePodAsSeen
		}
		err := deletePod(ctx, ds, p)
		if takes != nil && takes.Add(err) {
			c.expectations.DeletionObserved(key, deleteKeys[i]) // a budget keeps it
			continue
		}
		if err != nil {
			c.expectations.DeletionObserved(key, deleteKeys[i])
			if refill {
				c.expectations.CreationObserved(key)
			}
			if !apierrors.IsNotFound(err) {
				errs = append(errs, err)
			}
			continue
		}
		if !rollout.RemovedOnDelete(p) {
			continue
		}
		removed = append(removed, p)
		if refill {
			if err := create(node); err != nil {
				c.expectations.CreationObserved(key)
				errs = append(errs, err)
			}
		}
	}
	return created.Pods(), removed, utilerrors.NewAggregate(errs)
}

// refillable returns, by pod, the nodes of a rolling update's deletes whose new pod
// the sync that deletes the old one creates too, as the next sync would: the old pod is
// its node's only one, the node should run ds, and the API server removes the pod in
// the deleting request (rollout.RemovedOnDelete: no grace period, no finalizer), so the
// node is free at once. That is the cache's view of the pod: syncNodes deletes it only
// as seen, and refills nothing where the pod has changed since. Waiting for the cache's
// sight of the deletion only added a sync and a status write to every node's step (a
// hundred-node rollout one pod at a time: 100 status writes and some 10 ms a node).
func refillable(deletes []*corev1.Pod, fits map[string]placement.Fit, byNode map[string][]*corev1.Pod) map[*corev1.Pod]string {
	refills := map[*corev1.Pod]string{}
	for _, p := range deletes {
		node := placement.TargetNode(p)
		if node != "" && fits[node].ShouldRun && len(byNode[node]) == 1 && rollout.RemovedOnDelete(p) {
			refills[p] = node
		}
	}
	return refills
}

// placeCreated adds the pods a sync created, as the API server returned them, to
// byNode under the nodes they are bound for, and takes out those it deleted that the
// API server removed. The status then counts them as they are: the API server has made
// those changes, and the status write the cache's next sight of them would make is
// saved.
func placeCreated(byNode map[string][]*corev1.Pod, made, removed []*corev1.Pod) {
	for _, p := range removed {
		n := placement.TargetNode(p)
		byNode[n] = slices.DeleteFunc(byNode[n], func(q *corev1.Pod) bool { return q.Namespace == p.Namespace && q.Name == p.Name })
	}
	for _, p := range made {
		if n := placement.TargetNode(p); n != "" {
			byNode[n] = append(byNode[n], p)
		}
	}
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
			_, err := c.podControl.PatchPod(ctx, ds.Namespace, name, patch)
			return err
		},
	}.Claim(ctx, c.podIndex)
}
