package deployment

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/kroll-dev/kroll/pkg/controller"
	"github.com/kroll-dev/kroll/pkg/disruption"
	"github.com/kroll-dev/kroll/pkg/rollout"
	"github.com/kroll-dev/kroll/pkg/staging"
)

// waitView is what deploymentWait reads: the pass's Deployment and ReplicaSets as the
// pass left them (its own writes included), its staged decision, and whether old pods
// are draining (rollout.Draining on the pod cache).
type waitView struct {
	d        *appsv1.Deployment
	newRS    *appsv1.ReplicaSet // nil until created
	oldRSs   []*appsv1.ReplicaSet
	staged   staging.Decision
	draining bool
	// held is the DisruptionBudget condition's message while a budget holds the
	// rollout (BudgetHold, or its in-place restarts); "" when none does.
	held string
	now  time.Time
}

// deploymentWait tells what a Deployment's rollout waits on after a pass, for the
// wait log (controller.WaitLog); the zero Wait when it is at rest (the new ReplicaSet
// has every replica, created and available, and no old pod is left) or being deleted.
// The first that holds, in this order:
//
//	ProgressDeadlineExceeded  no progress for progressDeadlineSeconds
//	Paused                    spec.paused
//	StagedStepHeld            held at a staged step, pause or partition (until when)
//	NewReplicaSetNotCreated   no ReplicaSet has the template yet
//	BudgetExhausted           a PodDisruptionBudget holds the pods to take down
//	                          (the DisruptionBudget condition's message)
//	OldPodsTerminating        old pods are going (Recreate waits for all; a rolling
//	                          update grows the new ReplicaSet once they are gone)
//	NewPodsUnavailable        new pods not yet available while the budgets are spent:
//	                          total ≥ replicas+maxSurge (no room to grow) and
//	                          available ≤ replicas−maxUnavailable (no old pod may go);
//	                          or the new ReplicaSet is full and its pods are coming up
//	ReplicaSetNotObserved     an old ReplicaSet's controller has not acted on its
//	                          last size: it is not scaled down again until it has
//	NoWaitKnown               in progress, and none of the above: the next pass
//	                          should act (a line of this kind is worth a look)
//
// With 40 replicas, 25%/25% (surge 10, unavailable 10), the new ReplicaSet at 20 with
// 12 available and the old at 30 with 30 available: total 50 = 40+10, available 42 > 30
// — the old ReplicaSet may lose 12 pods, no wait (the pass does it). With the old at 20
// instead: total 40 < 50, room to grow — no wait either. With the new at 20 (2
// available) and the old at 30 (28 available): available 30 ≤ 30, NewPodsUnavailable,
// 18 new pods to come up.
func deploymentWait(v waitView) controller.Wait {
	d, newRS := v.d, v.newRS
	if d.DeletionTimestamp != nil {
		return controller.Wait{}
	}
	desired := rollout.DesiredReplicas(d)
	f := rollout.DeploymentFenceposts(d)
	all := append(append([]*appsv1.ReplicaSet{}, v.oldRSs...), newRS)
	var newSpec, newPods, newAvailable, oldPods int32
	if newRS != nil {
		newSpec, newPods, newAvailable = rollout.Replicas(newRS.Spec.Replicas), newRS.Status.Replicas, newRS.Status.AvailableReplicas
	}
	oldSpec := rollout.SpecReplicas(v.oldRSs)
	var unobserved []string
	for _, rs := range v.oldRSs {
		oldPods += rs.Status.Replicas
		if rs.Status.ObservedGeneration < rs.Generation {
			unobserved = append(unobserved, rs.Name)
		}
	}
	if newRS != nil && newSpec == desired && newPods == desired && newAvailable == desired && oldSpec == 0 && oldPods == 0 {
		return controller.Wait{}
	}
	available := rollout.AvailableReplicas(all)
	minAvailable := desired - f.MaxUnavailable
	details := []any{"replicas", desired, "newReplicaSet", nameOf(newRS), "newSpec", newSpec, "newPods", newPods, "newAvailable", newAvailable,
		"oldSpec", oldSpec, "oldPods", oldPods, "available", available, "maxSurge", f.MaxSurge, "maxUnavailable", f.MaxUnavailable,
		"minReadySeconds", d.Spec.MinReadySeconds}
	if len(unobserved) > 0 {
		details = append(details, "oldReplicaSetsNotObserved", unobserved)
	}
	wait := func(reason, format string, args ...any) controller.Wait {
		return controller.Wait{Reason: reason, Message: fmt.Sprintf(format, args...), Details: details}
	}
	if c := rollout.Condition(&d.Status, appsv1.DeploymentProgressing); c != nil && c.Reason == rollout.ReasonProgressDeadlineExceeded {
		return wait("ProgressDeadlineExceeded", "no progress for %ds (progressDeadlineSeconds)", deref(d.Spec.ProgressDeadlineSeconds))
	}
	if d.Spec.Paused {
		return wait("Paused", "spec.paused is true: only scaled, not rolled out")
	}
	if w := controller.StagedWait(v.staged, details...); w.Reason != "" {
		return w
	}
	if newRS == nil {
		return wait("NewReplicaSetNotCreated", "no ReplicaSet with the Deployment's template yet")
	}
	if v.held != "" {
		return wait(disruption.ReasonBudgetExhausted, "%s", v.held)
	}
	recreate := d.Spec.Strategy.Type == appsv1.RecreateDeploymentStrategyType
	partition := v.staged.Partition
	switch {
	case recreate && oldPods > 0:
		return wait("OldPodsTerminating", "Recreate: waiting for %d old pods to be gone before the new ones are created", oldPods)
	case !recreate && v.draining && newSpec < desired-partition:
		return wait("OldPodsTerminating", "waiting for %d old pods beyond their ReplicaSets' size to be gone before the new ReplicaSet grows", oldPods-oldSpec)
	}
	newMissing := newSpec - newAvailable
	roomToGrow := newSpec < desired-partition && newSpec+oldSpec < desired+f.MaxSurge
	oldMayGo := oldSpec > partition && available > minAvailable
	switch {
	case recreate && newMissing > 0,
		!recreate && !roomToGrow && !oldMayGo && newMissing > 0:
		budget := "maxUnavailable spent (available ≤ replicas−maxUnavailable), old pods are not scaled down"
		if newSpec >= desired-partition {
			budget = "the new ReplicaSet has its full size"
		} else if !recreate {
			budget = "maxSurge spent (no room to grow) and " + budget
		}
		return wait(reasonNewPodsUnavailable, "waiting for %d new pods to become available (%d of %d created; minReadySeconds %d): %s",
			newMissing, newPods, newSpec, d.Spec.MinReadySeconds, budget)
	case !recreate && oldMayGo && len(unobserved) > 0:
		return wait("ReplicaSetNotObserved", "old ReplicaSets %v have not acted on their last size; not scaled down again until they have", unobserved)
	case !recreate && !roomToGrow && !oldMayGo && oldPods > oldSpec:
		return wait("OldPodsTerminating", "waiting for %d old pods to be gone", oldPods-oldSpec)
	}
	return wait("NoWaitKnown", "in progress and no known wait: the next pass should act")
}

func nameOf(rs *appsv1.ReplicaSet) string {
	if rs == nil {
		return ""
	}
	return rs.Name
}

func deref(p *int32) int32 {
	if p == nil {
		return 0
	}
	return *p
}

// observeWait logs what p's rollout waits on after a pass that moved none of its
// ReplicaSets (rsList is what the pass began with: a ReplicaSet it created, resized or
// annotated is no longer the same object in p). A pass that moved one is followed by
// another once the caches show the write, which looks again.
func (c *Controller) observeWait(ctx context.Context, p *pass, rsList []*appsv1.ReplicaSet) {
	if c.waits == nil {
		return
	}
	began := make(map[*appsv1.ReplicaSet]bool, len(rsList))
	for _, rs := range rsList {
		began[rs] = true
	}
	for _, rs := range p.all() {
		if rs != nil && !began[rs] {
			return
		}
	}
	now := c.now()
	held := p.budgetWait.Message
	if hold := BudgetHold(p.oldRSs); hold != nil {
		held = hold.Message
	}
	wait := deploymentWait(waitView{d: p.d, newRS: p.newRS, oldRSs: p.oldRSs, staged: p.staged,
		draining: rollout.Draining(p.oldRSs, c.seenPods), held: held, now: now})
	if wait.Reason == reasonNewPodsUnavailable {
		active, _ := controller.SplitPodsOf(c.podIndexer, string(p.newRS.UID))
		wait.Details = append(wait.Details, firstUnavailable(active, p.d.Spec.MinReadySeconds, now)...)
	}
	c.waits.Observe(ctx, p.d, wait)
}

// reasonNewPodsUnavailable is deploymentWait's reason for new pods not yet available.
const reasonNewPodsUnavailable = "NewPodsUnavailable"

// firstUnavailable names the oldest of pods that is not available at now, with its
// phase and whether it is ready, as details of a wait on new pods: one pod to look at
// (kubectl describe), not a line per pod. None when all are available.
func firstUnavailable(pods []*corev1.Pod, minReadySeconds int32, now time.Time) []any {
	var first *corev1.Pod
	for _, p := range pods {
		if !rollout.IsPodAvailable(p, minReadySeconds, now) && (first == nil || p.CreationTimestamp.Before(&first.CreationTimestamp)) {
			first = p
		}
	}
	if first == nil {
		return nil
	}
	return []any{"firstUnavailablePod", first.Name, "podPhase", string(first.Status.Phase), "podReady", rollout.IsPodReady(first),
		"podCreated", first.CreationTimestamp.UTC().Format(time.RFC3339)}
}
