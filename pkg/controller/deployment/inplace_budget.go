package deployment

import (
	"context"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	policyinformers "k8s.io/client-go/informers/policy/v1"

	"github.com/kroll-dev/kroll/pkg/controller"
	"github.com/kroll-dev/kroll/pkg/disruption"
	"github.com/kroll-dev/kroll/pkg/inplace"
	"github.com/kroll-dev/kroll/pkg/rollout"
)

// In-place restarts under kroll.dev/disruption-budget: Respect. A pod updated in place
// is not deleted, so the Eviction API cannot take its disruption; the Deployment
// controller takes it itself, by the eviction's rules, before the pod is given away
// (or taken out of service for its grace period): one conflict-checked write of each
// budget's status per pass (disruption.PlanInPlace, controller.BudgetStatusWriter).
// A pick the budgets refuse in part goes on with the pods they let restart; the
// rollout then waits, with the DisruptionBudget condition (False, BudgetExhausted, the
// budget's name and disruptionsAllowed) and one Warning event, and is brought back by
// any change of its namespace's budgets and a back-off. Each pod's entry in
// disruptedPods is removed once it is Ready again after its restart (disruption.Over),
// so the next round need not wait two minutes for the disruption controller to drop it.

// RespectBudgets lets the controller take PodDisruptionBudgets' disruptions for the
// in-place restarts of Deployments whose kroll.dev/disruption-budget (def without one)
// is Respect. It adds handlers to pdbInformer (start the informers after). The
// rolling update's evictions are the ReplicaSet controller's (its RespectBudgets).
func (c *Controller) RespectBudgets(pdbInformer policyinformers.PodDisruptionBudgetInformer, def disruption.Mode) error {
	b, err := controller.WatchBudgets(pdbInformer, def, c.queue, &c.synced)
	c.budgets = b
	c.budgetStatus = controller.BudgetStatusOf(c.client)
	return err
}

// inPlaceBudget is one pass's budgets for an in-place rollout: what the planner's pick
// asked of them (disrupt) and the writes that follow.
type inPlaceBudget struct {
	pdbs []*policyv1.PodDisruptionBudget
	// updated are the Deployment's pods on its new revision that run its images, whose
	// finished restarts are released.
	updated []*corev1.Pod
	now     time.Time
	// asked is how many restarting pods the pick asked for; 0 when it asked nothing
	// (no pick this pass).
	asked int
	plan  disruption.InPlace
}

// budgetFor is v's budgets when p's Deployment respects them; nil otherwise.
func (c *Controller) budgetFor(p *pass, v inplace.HandOverView) *inPlaceBudget {
	if !c.budgets.Respects(p.d.Annotations) {
		return nil
	}
	return &inPlaceBudget{pdbs: c.budgets.Budgets(p.d.Namespace), updated: inplace.Restarted(v.New.Pods), now: v.Now}
}

// disrupt is the planner's HandOverView.Disrupt: the pods of restarting the budgets
// let restart now.
func (b *inPlaceBudget) disrupt(restarting []*corev1.Pod) []*corev1.Pod {
	b.asked = len(restarting)
	b.plan = disruption.PlanInPlace(b.pdbs, b.updated, restarting, rollout.IsPodReady, b.now)
	return b.plan.Go
}

// writes are the budgets' statuses to write this pass: the pick's takes with the
// releases, or the releases alone when nothing was picked.
func (b *inPlaceBudget) writes() []*policyv1.PodDisruptionBudget {
	if b.asked == 0 {
		b.plan = disruption.PlanInPlace(b.pdbs, b.updated, nil, rollout.IsPodReady, b.now)
	}
	return b.plan.Writes
}

// outcome is what the pass's pick met.
func (b *inPlaceBudget) outcome() disruption.Outcome {
	switch {
	case b.asked == 0:
		return disruption.NoneTried
	case b.plan.Step.Limit != "":
		return disruption.Held
	}
	return disruption.Taken
}

// writeBudgets makes b's writes; wrote says one was made.
func (c *Controller) writeBudgets(ctx context.Context, b *inPlaceBudget) (wrote bool, err error) {
	if b == nil {
		return false, nil
	}
	written, err := controller.WriteBudgets(ctx, c.budgetStatus, b.writes())
	return len(written) > 0, err
}

// settleInPlaceBudget sets p's in-place budget wait after a pass whose pick met b
// (disruption.NextWait on the condition d's status shows), and brings d back after
// a back-off while a budget refuses it. The status write puts it on d
// (setBudgetCondition) and announces it (announceBudget).
func (c *Controller) settleInPlaceBudget(p *pass, b *inPlaceBudget) {
	if b == nil {
		return
	}
	cur := disruption.Wait{}
	if was := rollout.Condition(&p.d.Status, budgetConditionType); was != nil && was.Status == corev1.ConditionFalse {
		cur = disruption.Wait{Reason: was.Reason, Message: was.Message, Since: was.LastTransitionTime.Time}
	}
	outcome, message := b.outcome(), ""
	if outcome == disruption.Held {
		budget := c.budgets.Budget(p.d.Namespace, b.plan.Step.Limit)
		message = disruption.Message(budget, int32(b.asked-len(b.plan.Go)), disruption.InPlaceReach(rollout.DesiredReplicas(p.d)))
	}
	done := rollout.SpecReplicas(p.oldRSs) == 0
	p.budgetWait = disruption.NextWait(cur, outcome, message, "", done, b.now)
	key := p.d.Namespace + "/" + p.d.Name
	switch {
	case outcome == disruption.Held:
		c.queue.AddAfter(key, c.budgets.Backoff(key, true))
	case p.budgetWait.Reason != disruption.ReasonBudgetExhausted:
		c.budgets.Backoff(key, false)
	}
}

// waitCondition is w as the Deployment's DisruptionBudget condition; nil for no wait.
func waitCondition(w disruption.Wait) *appsv1.DeploymentCondition {
	if w.Reason == "" {
		return nil
	}
	return &appsv1.DeploymentCondition{Type: budgetConditionType, Status: corev1.ConditionFalse, Reason: w.Reason,
		Message: w.Message, LastUpdateTime: metav1.NewTime(w.Since), LastTransitionTime: metav1.NewTime(w.Since)}
}
