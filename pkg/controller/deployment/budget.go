package deployment

import (
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kroll-dev/kroll/pkg/disruption"
	"github.com/kroll-dev/kroll/pkg/rollout"
)

// budgetConditionType is the Deployment's DisruptionBudget condition.
const budgetConditionType = appsv1.DeploymentConditionType(disruption.ConditionType)

// BudgetHold is the DisruptionBudget condition to show on a Deployment whose old
// ReplicaSets are oldRSs: the first one's that a PodDisruptionBudget holds (its
// controller refused evictions, see pkg/disruption), nil when none is held. The
// ReplicaSet's message names the budget and its disruptionsAllowed; its transition
// time is when the rollout began to wait.
//
// The condition is removed, not set True, once no old ReplicaSet is held: like
// ReplicaFailure, it is there only while it says something, so a Deployment that
// respects budgets and is never held looks as upstream's does.
func BudgetHold(oldRSs []*appsv1.ReplicaSet) *appsv1.DeploymentCondition {
	for _, rs := range oldRSs {
		if rs == nil {
			continue
		}
		for _, c := range rs.Status.Conditions {
			if string(c.Type) == disruption.ConditionType && c.Status == corev1.ConditionFalse {
				return &appsv1.DeploymentCondition{Type: budgetConditionType, Status: corev1.ConditionFalse,
					Reason: c.Reason, Message: c.Message, LastUpdateTime: c.LastTransitionTime, LastTransitionTime: c.LastTransitionTime}
			}
		}
	}
	return nil
}

// NotHeld is oldRSs without those a disruption budget holds (their DisruptionBudget
// condition is False): the ReplicaSets whose surplus pods are on their way out.
// Waiting for a held one to drain before adding new pods could wait forever: with
// maxUnavailable 3, maxSurge 0 and minAvailable 8 of 10, a drain that took the
// budget's two disruptions leaves the old ReplicaSet at 8 pods for a size of 7, the
// budget at 0 until more pods are healthy, and only new pods can make them so.
func NotHeld(oldRSs []*appsv1.ReplicaSet) []*appsv1.ReplicaSet {
	var out []*appsv1.ReplicaSet
	for _, rs := range oldRSs {
		if BudgetHold([]*appsv1.ReplicaSet{rs}) == nil {
			out = append(out, rs)
		}
	}
	return out
}

// setBudgetCondition brings status's DisruptionBudget condition up to date with the
// old ReplicaSets of p (BudgetHold), or else with p's in-place restarts (budgetWait). A changed message is written at once (the
// budget's numbers move while the rollout waits); the transition time stays. An
// invalid kroll.dev/disruption-budget is reported in the same condition (False,
// InvalidAnnotation, naming the annotation and the accepted values); the workload then
// rolls out under the controller manager's default, as without the setting.
func setBudgetCondition(status *appsv1.DeploymentStatus, p *pass, now time.Time) {
	hold := BudgetHold(p.oldRSs)
	if hold == nil {
		hold = waitCondition(p.budgetWait) // in-place restarts held (inplace_budget.go)
	}
	if problem := disruption.Problem(p.d.Annotations); problem != "" {
		hold = &appsv1.DeploymentCondition{Type: budgetConditionType, Status: corev1.ConditionFalse,
			Reason: disruption.ReasonInvalidAnnotation, Message: problem, LastTransitionTime: metav1.NewTime(now)}
	}
	if hold == nil {
		removeCondition(status, budgetConditionType)
		return
	}
	if cur := rollout.Condition(status, budgetConditionType); cur != nil && cur.Status == hold.Status {
		hold.LastTransitionTime = cur.LastTransitionTime
		if cur.Message == hold.Message && cur.Reason == hold.Reason {
			return
		}
	}
	hold.LastUpdateTime.Time = now
	removeCondition(status, budgetConditionType)
	status.Conditions = append(status.Conditions, *hold)
}

// heldBy is the PodDisruptionBudget status's DisruptionBudget condition says holds
// the rollout ("" when none does), for the timeline.
func heldBy(status *appsv1.DeploymentStatus) string {
	cond := rollout.Condition(status, budgetConditionType)
	if cond == nil || cond.Status != corev1.ConditionFalse {
		return ""
	}
	return disruption.Wait{Reason: cond.Reason, Message: cond.Message}.HeldBy()
}

// announceBudget records a Warning event (BudgetExhausted, the condition's message)
// when status, just written, shows a budget holding d's rollout that d's previous
// status did not: once per wait, not at every retry.
func (c *Controller) announceBudget(d *appsv1.Deployment, status *appsv1.DeploymentStatus) {
	now := rollout.Condition(status, budgetConditionType)
	if now == nil || now.Status != corev1.ConditionFalse {
		return
	}
	if was := rollout.Condition(&d.Status, budgetConditionType); was != nil && was.Status == corev1.ConditionFalse && was.Reason == now.Reason {
		return
	}
	if now.Reason == disruption.ReasonInvalidAnnotation {
		c.recorder.Eventf(d, corev1.EventTypeWarning, now.Reason, "%s", now.Message)
		return
	}
	c.recorder.Eventf(d, corev1.EventTypeWarning, disruption.ReasonBudgetExhausted, "Rollout %s", now.Message)
}
