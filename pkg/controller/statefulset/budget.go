package statefulset

import (
	"context"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyinformers "k8s.io/client-go/informers/policy/v1"

	"github.com/kroll-dev/kroll/pkg/controller"
	"github.com/kroll-dev/kroll/pkg/disruption"
)

// RespectBudgets lets the controller take the pods a rolling update replaces down
// through the Eviction API, and take the disruptions of those it restarts in place
// from their budgets' status (controller.InPlaceBudget), for StatefulSets whose
// kroll.dev/disruption-budget (def without one) is Respect (see pkg/disruption). It adds handlers to pdbInformer (start
// the informers after).
func (c *Controller) RespectBudgets(pdbInformer policyinformers.PodDisruptionBudgetInformer, def disruption.Mode) error {
	b, err := controller.WatchBudgets(pdbInformer, def, c.queue, &c.synced)
	c.budgets, c.budgetStatus = b, controller.BudgetStatusOf(c.client)
	return err
}

// takeDown removes p, which the rollout replaces: evicted when set respects budgets,
// deleted otherwise. kept: a budget refused the eviction, p stays (recorded in takes).
func (c *Controller) takeDown(ctx context.Context, set *appsv1.StatefulSet, p *corev1.Pod, takes *controller.Takes) (kept bool, err error) {
	if takes == nil || !c.budgets.Respects(set.Annotations) {
		return false, c.pods.DeletePod(ctx, set, p)
	}
	err = c.pods.EvictPod(ctx, set, p)
	if takes.Add(err) {
		return true, nil
	}
	return false, err
}

// settleBudget brings status's DisruptionBudget condition up to date after a sync
// whose take-downs are takes (see controller.SettleBudgetWait). A StatefulSet replaces
// a pod in its own ordinal, so it never has more than its replicas healthy: a budget
// of minAvailable equal to replicas is one it cannot meet.
func (c *Controller) settleBudget(set *appsv1.StatefulSet, status *appsv1.StatefulSetStatus, takes *controller.Takes, now time.Time) {
	done := !c.budgets.Respects(set.Annotations) || status.UpdatedReplicas >= int32(replicasOf(set))
	status.Conditions = controller.SettleBudgetWait(c.budgets, failureConditions, c.recorder, set, status.Conditions, takes,
		disruption.FixedReach(int32(replicasOf(set)), "StatefulSet"), done, now)
}

// inPlaceBudget is the sync's in-place restarts of set's pods under its budgets (nil
// when it does not respect them, or takes is nil): the pods on the update revision
// are those whose disruptions may be over.
func (c *Controller) inPlaceBudget(set *appsv1.StatefulSet, pods []*corev1.Pod, revs revisions, takes *controller.Takes, now time.Time) *controller.InPlaceBudget {
	if !c.budgets.Respects(set.Annotations) {
		return nil
	}
	var updated []*corev1.Pod
	for _, p := range pods {
		if p.Labels[RevisionLabel] == revs.update.Name {
			updated = append(updated, p)
		}
	}
	return c.budgets.InPlace(set, updated, c.budgetStatus, takes, now)
}
