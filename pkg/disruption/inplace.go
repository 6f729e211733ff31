package disruption

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// An in-place update that restarts a pod's containers (a new image, or a resize with
// resizePolicy RestartContainer) disrupts the pod without deleting it, so the Eviction
// API, which deletes, cannot take its disruption. The decision (PlanTake, PlanRelease,
// one pass's writes PlanInPlace; the Deployment controller makes them) is to take it
// as that API does on the server: an update of the PodDisruptionBudget's status, made
// on the resourceVersion it was read at (a concurrent eviction or disruption-controller
// write makes it fail with a conflict, and it is decided again on a fresh read), that
// takes one from status.disruptionsAllowed and records the pod in
// status.disruptedPods. The disruption controller then counts the pod as not healthy
// (for two minutes at most, its DeletionTimeout) when it recomputes the budget, so a
// drain sees the disruption before the pod even restarts. Once the pod serves again
// on its new template, its entry is removed (PlanRelease): the disruption is over, and
// waiting for the entry to expire would hold every later pod for two minutes.

// MaxDisruptedPods is the API server's bound on status.disruptedPods: beyond it an
// eviction is refused (the disruption controller has fallen behind).
const MaxDisruptedPods = 2000

// Selecting is the budgets among pdbs whose selector selects pod, as the Eviction API
// finds them: in policy/v1 an empty selector selects every pod of its namespace; a
// missing or invalid one selects none.
func Selecting(pdbs []*policyv1.PodDisruptionBudget, pod *corev1.Pod) []*policyv1.PodDisruptionBudget {
	var out []*policyv1.PodDisruptionBudget
	for _, pdb := range pdbs {
		if pdb.Namespace != pod.Namespace {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		if err != nil || !sel.Matches(labels.Set(pod.Labels)) {
			continue
		}
		out = append(out, pdb)
	}
	return out
}

// Take is the decision to take one disruption from a budget for pod's in-place restart.
type Take struct {
	// Status is the budget's status to write (on the resourceVersion it was read at);
	// nil when nothing is written: the pod already holds a disruption of it, or the
	// budget refused.
	Status *policyv1.PodDisruptionBudgetStatus
	// Refused is why the budget keeps the pod from restarting now, in the words of
	// the API server's refusal of an eviction ("The disruption budget web-pdb needs 8
	// healthy pods and has 8 currently"); "" when it does not.
	Refused string
}

// PlanTake is what taking one disruption of pdb for pod at now means, by the Eviction
// API's rules (k8s.io/kubernetes pkg/registry/core/pod/storage/eviction.go):
//   - a pod already recorded in disruptedPods, less than DeletionTimeout ago, holds
//     its disruption already (a retry after a failed pod write): nothing to write;
//   - a budget not yet processed by the disruption controller (observedGeneration <
//     generation), with disruptionsAllowed 0 (or negative), or with more than
//     MaxDisruptedPods entries refuses;
//   - a pod that is not Ready costs nothing when unhealthyPodEvictionPolicy is
//     AlwaysAllow, or (IfHealthyBudget, the default) while the budget has its
//     desiredHealthy pods: restarting it takes nothing from what the budget keeps;
//   - otherwise disruptionsAllowed goes down by one and the pod is recorded.
//
// minAvailable 8 of 10, 10 healthy: disruptionsAllowed 2 → 1, the pod recorded; at 0,
// refused "needs 8 healthy pods and has 8 currently".
func PlanTake(pdb *policyv1.PodDisruptionBudget, pod *corev1.Pod, ready bool, now time.Time) Take {
	s := pdb.Status
	if at, ok := s.DisruptedPods[pod.Name]; ok && now.Sub(at.Time) < DeletionTimeout {
		return Take{}
	}
	if s.ObservedGeneration < pdb.Generation {
		return Take{Refused: fmt.Sprintf("The disruption budget %s is still being processed by the server.", pdb.Name)}
	}
	if len(s.DisruptedPods) > MaxDisruptedPods {
		return Take{Refused: fmt.Sprintf("The disruption budget %s has too many disruptions not yet confirmed by the disruption controller", pdb.Name)}
	}
	if !ready {
		p := pdb.Spec.UnhealthyPodEvictionPolicy
		if (p != nil && *p == policyv1.AlwaysAllow) || (s.CurrentHealthy >= s.DesiredHealthy && s.DesiredHealthy > 0) {
			return Take{}
		}
	}
	if s.DisruptionsAllowed <= 0 {
		if s.CurrentHealthy <= s.DesiredHealthy {
			return Take{Refused: fmt.Sprintf("The disruption budget %s needs %d healthy pods and has %d currently", pdb.Name, s.DesiredHealthy, s.CurrentHealthy)}
		}
		return Take{Refused: fmt.Sprintf("The disruption budget %s does not allow evicting pods currently", pdb.Name)}
	}
	next := s.DeepCopy()
	next.DisruptionsAllowed--
	if next.DisruptedPods == nil {
		next.DisruptedPods = map[string]metav1.Time{}
	}
	next.DisruptedPods[pod.Name] = metav1.NewTime(now)
	if next.DisruptionsAllowed == 0 {
		// As the API server's eviction does: a drain reading the budget sees it spent
		// before the disruption controller's next pass.
		apimeta.SetStatusCondition(&next.Conditions, metav1.Condition{Type: policyv1.DisruptionAllowedCondition,
			Status: metav1.ConditionFalse, Reason: policyv1.InsufficientPodsReason, ObservedGeneration: next.ObservedGeneration})
	}
	return Take{Status: next}
}

// DeletionTimeout is how long the disruption controller counts a pod in disruptedPods
// as disrupted (its DeletionTimeout): after it the entry is dropped.
const DeletionTimeout = 2 * time.Minute

// PlanRelease is pdb's status without pod's disruptedPods entry, to write once the
// pod's in-place update is over (it serves again); nil when it has none.
func PlanRelease(pdb *policyv1.PodDisruptionBudget, pod string) *policyv1.PodDisruptionBudgetStatus {
	if _, ok := pdb.Status.DisruptedPods[pod]; !ok {
		return nil
	}
	next := pdb.Status.DeepCopy()
	delete(next.DisruptedPods, pod)
	return next
}

// OneBudget is the refusal of a pod more than one budget selects, as the Eviction API
// refuses it (it cannot take disruptions from two budgets atomically); "" otherwise.
func OneBudget(pdbs []*policyv1.PodDisruptionBudget, pod *corev1.Pod) string {
	if len(pdbs) <= 1 {
		return ""
	}
	return fmt.Sprintf("The disruption budget %s is one of %d that select pod %s, which the eviction subresource does not support", pdbs[0].Name, len(pdbs), pod.Name)
}

// Over tells whether the in-place disruption pod took at at is over, pod being one
// whose in-place update has been applied and run (it is on the new revision and runs
// its spec's images: the caller knows): the pod is Ready, its Ready condition turned
// True no earlier than the second the disruption was taken in (both are stored to the
// second), and it is not being deleted. Taken at 10:00:00.4, the pod restarted and
// Ready again at 10:00:04 or at 10:00:00: over (a restart quicker than a second is
// still its restart, for the pod is on the new revision, which the take preceded);
// Ready since 09:58: not over (an entry a drain's eviction wrote for a pod updated
// before). A pod not yet given its update, Ready in the second it was taken in (a
// drain's replacement, say), is no caller's to ask about: releasing it before its
// restart would let the budget count it healthy while it goes down.
func Over(pod *corev1.Pod, at time.Time) bool {
	if pod.DeletionTimestamp != nil {
		return false
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue && !c.LastTransitionTime.Time.Before(at.Truncate(time.Second))
		}
	}
	return false
}

// InPlace is one pass of in-place restarts under budgets (PlanInPlace).
type InPlace struct {
	// Writes are the budgets whose status changes, each with the status to write, to be
	// written on the resourceVersion it carries (as read): one write per budget,
	// however many of the pass's pods it releases and takes. Empty when none changes.
	Writes []*policyv1.PodDisruptionBudget
	// Go are the restarting pods the budgets let restart now, in their order; the
	// others wait.
	Go []*corev1.Pod
	// Step is what the budgets let the restarts do: Limit and Refused name the first
	// refusal ("" when every pod goes).
	Step Step
}

// PlanInPlace is one pass's budget writes for a workload's in-place restarts: the
// disruptions of updated (its pods, as the cache shows them, whose in-place update has
// been applied and run: on the new revision, reporting its images) that are Over are
// released (PlanRelease), then the restarting pods, in order, take theirs by
// PlanStep's rules on the statuses the releases left. A pod whose entry is released and that restarts
// again in the same pass takes a fresh one. ready tells whether a pod is Ready.
//
// minAvailable 8 of 10 (disruptionsAllowed 2), web-1 and web-2 Ready again after
// their restarts, web-3 and web-4 to restart: one write of web-pdb, web-1 and web-2
// out of disruptedPods, web-3 and web-4 in, disruptionsAllowed 0; a fifth pod waits
// ("needs 8 healthy pods" once the disruption controller counts the two restarting).
func PlanInPlace(pdbs []*policyv1.PodDisruptionBudget, updated, restarting []*corev1.Pod, ready func(*corev1.Pod) bool, now time.Time) InPlace {
	byName := map[string]*corev1.Pod{}
	for _, pod := range updated {
		byName[pod.Namespace+"/"+pod.Name] = pod
	}
	taken := map[string]*policyv1.PodDisruptionBudget{}
	for _, pdb := range pdbs {
		cur := pdb
		for name, at := range pdb.Status.DisruptedPods {
			pod, ok := byName[pdb.Namespace+"/"+name]
			if !ok || !Over(pod, at.Time) {
				continue
			}
			next := cur.DeepCopy()
			next.Status = *PlanRelease(cur, name)
			cur, taken[pdb.Name] = next, next
		}
	}
	step, s := walk(pdbs, taken, restarting, ready, now)
	out := InPlace{Go: s.went, Step: step}
	for _, pdb := range pdbs { // in pdbs' order, for writes that are the same each pass
		if t, ok := s.taken[pdb.Name]; ok {
			out.Writes = append(out.Writes, t)
		}
	}
	return out
}
