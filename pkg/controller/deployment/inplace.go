package deployment

import (
	"context"
	"sort"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kroll-dev/kroll/pkg/controller"
	"github.com/kroll-dev/kroll/pkg/inplace"
	"github.com/kroll-dev/kroll/pkg/rollout"
)

// inPlaceMode is d's in-place opt-in; a Recreate Deployment never updates in place.
func inPlaceMode(d *appsv1.Deployment) inplace.Mode {
	if d.Spec.Strategy.Type == appsv1.RecreateDeploymentStrategyType {
		return inplace.Off
	}
	mode, _ := inplace.ModeOf(d.Annotations)
	return mode
}

// inPlaceVerdict judges d's change against the templates of its old ReplicaSets that
// still have pods; ok is false when there is nothing to judge (not opted in, or no old
// pods).
func inPlaceVerdict(d *appsv1.Deployment, oldRSs []*appsv1.ReplicaSet) (v inplace.Verdict, ok bool) {
	seen := map[string]bool{}
	var fields []string
	judged := false
	for _, rs := range oldRSs {
		if rs == nil || (*rs.Spec.Replicas == 0 && rs.Status.Replicas == 0) {
			continue
		}
		judged = true
		for _, f := range inplace.Diff(&rs.Spec.Template, &d.Spec.Template) {
			if !seen[f] {
				seen[f] = true
				fields = append(fields, f)
			}
		}
	}
	if !judged {
		return inplace.Verdict{}, false
	}
	sort.Strings(fields)
	return inplace.Judge(inPlaceMode(d), fields)
}

// setInPlaceCondition brings the InPlaceUpdate condition of status up to date: gone
// when d is not opted in, the verdict on the change while old pods remain, and left as
// it is once the rollout is over.
func setInPlaceCondition(status *appsv1.DeploymentStatus, d *appsv1.Deployment, oldRSs []*appsv1.ReplicaSet, now time.Time) {
	if inPlaceMode(d) == inplace.Off {
		removeCondition(status, inplace.ConditionType)
		return
	}
	if v, ok := inPlaceVerdict(d, oldRSs); ok {
		cur := rollout.Condition(status, inplace.ConditionType)
		if cur != nil && cur.Status == v.Status && cur.Reason == v.Reason && cur.Message != v.Message {
			removeCondition(status, inplace.ConditionType) // same reason, other fields: say so
		}
		setCondition(status, newCondition(inplace.ConditionType, v.Status, v.Reason, v.Message, now))
	}
}

// announceVerdict records the verdict on d's change as an event, once: when it is not
// what d's InPlaceUpdate condition says already.
func (c *Controller) announceVerdict(d *appsv1.Deployment, v inplace.Verdict) {
	var cur *inplace.Condition
	if cond := rollout.Condition(&d.Status, inplace.ConditionType); cond != nil {
		cur = &inplace.Condition{Status: cond.Status, Reason: cond.Reason, Message: cond.Message}
	}
	if inplace.IsNews(v, cur) {
		c.recorder.Eventf(d, v.EventType, v.Reason, "%s", v.Message)
	}
}

// inPlacePass is what advanceInPlace did.
type inPlacePass struct {
	// handled: the rollout was taken care of (in place, or blocked); the rolling update
	// must not run this pass.
	handled bool
	// acted: something was written.
	acted bool
}

// advanceInPlace moves in-place updates on (see the package doc for the hand-off).
// When d's change can be made in place it is the rollout step (handled; the caller
// writes the status): pods leave old
// ReplicaSets for the new one, and with start more are taken out of service. Otherwise
// pods mid-update are put back in service where they are, and fresh pods with the
// readiness gate are put in service once their containers are ready.
func (c *Controller) advanceInPlace(ctx context.Context, d *appsv1.Deployment, newRS *appsv1.ReplicaSet, oldRSs []*appsv1.ReplicaSet, start bool) (inPlacePass, error) {
	v, judged := inPlaceVerdict(d, oldRSs)
	if judged {
		c.announceVerdict(d, v)
	}
	// Nothing left to judge (no old pods) still leaves arrived pods to put back.
	inPlace := inPlaceMode(d) != inplace.Off && newRS != nil && (!judged || v.Proceeds())
	if !inPlace {
		acted, err := c.settleWhereTheyAre(ctx, newRS, oldRSs)
		blocked := judged && v.Reason == inplace.ReasonBlocked
		return inPlacePass{handled: blocked, acted: acted}, err
	}
	w := inPlaceWork{c: c, d: d, newRS: newRS, now: c.now(), writer: inplace.Writer{Client: c.client}}
	err := w.run(ctx, oldRSs, start)
	return inPlacePass{handled: true, acted: w.acted}, err
}

// settleWhereTheyAre puts back in service, in the ReplicaSet they belong to, pods that
// an in-place update left out of service (or that were made with the readiness gate),
// once their containers are ready. A pod of the new ReplicaSet loses its State only
// once that ReplicaSet's observed size counts it (see settleArrived); old ReplicaSets
// are going away, and their pods go the usual way once put back.
func (c *Controller) settleWhereTheyAre(ctx context.Context, newRS *appsv1.ReplicaSet, oldRSs []*appsv1.ReplicaSet) (bool, error) {
	writer := inplace.Writer{Client: c.client}
	acted := false
	for _, rs := range append([]*appsv1.ReplicaSet{newRS}, oldRSs...) {
		if rs == nil {
			continue
		}
		images := inplace.Images(&rs.Spec.Template)
		pods := controller.ActivePods(c.podIndexer, string(rs.UID))
		counted := rs != newRS || counts(rs, len(pods))
		for _, p := range pods {
			if !needsSettling(p) {
				continue
			}
			_, mid := inplace.StateOf(p)
			if step, _ := inplace.NextStep(p, images, 0, c.now()); step != inplace.PutBack || (mid && !counted) {
				continue
			}
			if err := writer.PutBack(ctx, p); err != nil {
				return acted, err
			}
			acted = true
		}
	}
	return acted, nil
}

// counts: rs's size, as its controller has observed it, counts all its pods.
func counts(rs *appsv1.ReplicaSet, pods int) bool {
	return *rs.Spec.Replicas >= int32(pods) && observed(rs)
}

// needsSettling: p is mid-update, or has the gate and is not (yet) in service.
func needsSettling(p *corev1.Pod) bool {
	_, mid := inplace.StateOf(p)
	return mid || (inplace.HasGate(p) && inplace.GateStatus(p) != corev1.ConditionTrue)
}

// inPlaceWork is one in-place pass over a Deployment.
type inPlaceWork struct {
	c      *Controller
	d      *appsv1.Deployment
	newRS  *appsv1.ReplicaSet
	now    time.Time
	writer inplace.Writer
	acted  bool
}

// run makes one in-place pass: arrived pods are put back once ready (when the new
// ReplicaSet's size counts them); the new ReplicaSet grows to count its pods; each old
// ReplicaSet shrinks past its leaving pods and, once it has observed that, hands them
// over; and, with start, more pods are taken out of service within maxUnavailable.
func (w *inPlaceWork) run(ctx context.Context, oldRSs []*appsv1.ReplicaSet, start bool) error {
	d, c := w.d, w.c
	newPods := controller.ActivePods(c.podIndexer, string(w.newRS.UID))
	if err := w.settleArrived(ctx); err != nil {
		return err
	}

	var candidates []*corev1.Pod // old pods not yet leaving
	oldReplicas, leavingAnywhere := int32(0), false
	serving := 0
	for _, p := range newPods {
		if c.serving(d, p, w.now) {
			serving++
		}
	}
	grace := inplace.GracePeriod(d.Annotations)
	for _, rs := range oldRSs {
		oldReplicas += *rs.Spec.Replicas
		pods := controller.ActivePods(c.podIndexer, string(rs.UID))
		stay := inplace.Settled(pods)
		for _, p := range stay {
			if c.serving(d, p, w.now) {
				serving++
			}
		}
		candidates = append(candidates, stay...)
		if len(stay) == len(pods) {
			continue
		}
		leavingAnywhere = true
		if err := w.handOver(ctx, rs, pods, len(stay), grace); err != nil {
			return err
		}
	}
	if err := w.growNewReplicaSet(ctx, len(newPods), oldReplicas, leavingAnywhere); err != nil {
		return err
	}
	if start {
		if err := w.takeOut(ctx, candidates, serving, grace); err != nil {
			return err
		}
	}
	if rollout.Complete(d, &d.Status) && !w.acted {
		return c.cleanupHistory(ctx, d, oldRSs)
	}
	return nil
}

// settleArrived puts back in service the new ReplicaSet's pods whose containers run
// the new images and are ready. A pod's State is removed only once the new
// ReplicaSet's size, observed by the ReplicaSet controller, counts every pod it has:
// a pod without a State would otherwise be surplus it may delete.
func (w *inPlaceWork) settleArrived(ctx context.Context) error {
	acted, err := w.c.settleWhereTheyAre(ctx, w.newRS, nil)
	w.acted = w.acted || acted
	return err
}

// handOver moves the pods leaving rs (those with a State) to the new ReplicaSet:
// rs first shrinks to the pods that stay, and once the ReplicaSet controller has
// observed that size, each leaving pod whose grace period is over is handed over.
func (w *inPlaceWork) handOver(ctx context.Context, rs *appsv1.ReplicaSet, pods []*corev1.Pod, stay int, grace time.Duration) error {
	if *rs.Spec.Replicas > int32(stay) {
		_, _, err := w.c.scaleReplicaSet(ctx, w.d, rs, int32(stay))
		w.acted = true
		return err // the hand-over waits for the ReplicaSet controller to observe the size
	}
	ready := observed(rs)
	for _, p := range pods {
		state, leaving := inplace.StateOf(p)
		if !leaving {
			continue
		}
		gated := inplace.HasGate(p)
		switch left := state.OutOfServiceSince.Add(grace).Sub(w.now); {
		case gated && inplace.GateStatus(p) != corev1.ConditionFalse: // the State was written, the gate not: finish
			if err := w.writer.TakeOut(ctx, p, state); err != nil {
				return err
			}
			w.acted = true
		case gated && left > 0:
			w.c.queue.EnqueueAfter(w.d, left)
		case ready:
			if err := w.moveToNew(ctx, p, rs); err != nil {
				return err
			}
			w.acted = true
		}
	}
	return nil
}

// moveToNew hands p from rs to the new ReplicaSet in one write, which also sets the
// new images and labels: its controllerRef and pod-template-hash change together, so
// no ReplicaSet ever selects a pod another controls. The write carries p's
// resourceVersion: it fails, harmlessly, if p changed since it was read.
func (w *inPlaceWork) moveToNew(ctx context.Context, p *corev1.Pod, rs *appsv1.ReplicaSet) error {
	patch := inplace.ImagesPatch(p, inplace.Target{Template: &w.newRS.Spec.Template})
	meta := patch["metadata"].(map[string]any)
	meta["resourceVersion"] = p.ResourceVersion
	meta["ownerReferences"] = []any{
		map[string]any{"$patch": "delete", "uid": rs.UID},
		*metav1.NewControllerRef(w.newRS, appsv1.SchemeGroupVersion.WithKind("ReplicaSet")),
	}
	err := w.writer.Patch(ctx, p, patch)
	if apierrors.IsConflict(err) {
		w.c.queue.EnqueueAfter(w.d, time.Second) // read again once the cache has the newer pod
		return nil
	}
	return err
}

// growNewReplicaSet sizes the new ReplicaSet for the pods it has, never so that it
// creates one while old pods may still arrive: a pod handed over but not yet seen in
// the cache still shows as leaving its old ReplicaSet. Once no pod is leaving, it
// takes up whatever the old ReplicaSets no longer keep (a pod lost mid-rollout is
// replaced by a new one).
func (w *inPlaceWork) growNewReplicaSet(ctx context.Context, pods int, oldReplicas int32, leavingAnywhere bool) error {
	desired := rollout.DesiredReplicas(w.d)
	size := max(*w.newRS.Spec.Replicas, int32(pods))
	if !leavingAnywhere {
		size = max(size, desired-oldReplicas)
	}
	if size > desired {
		size = max(desired, *w.newRS.Spec.Replicas)
	}
	if size == *w.newRS.Spec.Replicas {
		return nil
	}
	_, updated, err := w.c.scaleReplicaSet(ctx, w.d, w.newRS, size)
	if err == nil {
		w.newRS = updated
	}
	w.acted = true
	return err
}

// takeOut starts updating old pods: unavailable ones first (they cost nothing), then
// available ones while fewer than maxUnavailable (at least 1) of d's replicas are
// without a serving pod.
func (w *inPlaceWork) takeOut(ctx context.Context, candidates []*corev1.Pod, serving int, grace time.Duration) error {
	d, c := w.d, w.c
	budget := int(max(1, rollout.DeploymentFenceposts(d).MaxUnavailable)) - (int(rollout.DesiredReplicas(d)) - serving)
	var first, rest []*corev1.Pod
	for _, p := range candidates {
		switch {
		case c.takenOut.Out(p, w.now):
			// taken out by a write the cache does not show yet
		case c.serving(d, p, w.now):
			rest = append(rest, p)
		default:
			first = append(first, p)
		}
	}
	images := inplace.Images(&w.newRS.Spec.Template)
	revision := w.newRS.Labels[appsv1.DefaultDeploymentUniqueLabelKey]
	for i, p := range append(first, rest...) {
		costs := i >= len(first)
		if costs && budget <= 0 {
			break
		}
		if err := w.writer.TakeOut(ctx, p, inplace.OutOfService(p, revision, images, w.now)); err != nil {
			return err
		}
		c.takenOut.Record(p, w.now)
		w.acted = true
		if costs {
			budget--
		}
	}
	if w.acted && grace > 0 {
		c.queue.EnqueueAfter(d, grace)
	}
	return nil
}

// serving tells whether p counts as available: available, and not out of service for
// an in-place update.
func (c *Controller) serving(d *appsv1.Deployment, p *corev1.Pod, now time.Time) bool {
	return !c.takenOut.Out(p, now) && rollout.IsPodAvailable(p, d.Spec.MinReadySeconds, now)
}

// observed: the ReplicaSet controller has acted on rs's current spec.
func observed(rs *appsv1.ReplicaSet) bool {
	return rs.Status.ObservedGeneration >= rs.Generation
}
