package daemonset

import (
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyinformers "k8s.io/client-go/informers/policy/v1"

	"github.com/kroll-dev/kroll/pkg/controller"
	"github.com/kroll-dev/kroll/pkg/disruption"
	"github.com/kroll-dev/kroll/pkg/rollout"
)

// RespectBudgets lets the controller take the old pods a rolling update deletes (with
// maxUnavailable, and those surge pods replace) down through the Eviction API, and
// take the disruptions of those it restarts in place from their budgets' status
// (controller.InPlaceBudget), for DaemonSets whose kroll.dev/disruption-budget (def
// without one) is Respect (see pkg/disruption). It adds handlers to pdbInformer (start the informers after).
func (c *Controller) RespectBudgets(pdbInformer policyinformers.PodDisruptionBudgetInformer, def disruption.Mode) error {
	b, err := controller.WatchBudgets(pdbInformer, def, c.queue, &c.synced)
	c.budgets, c.budgetStatus = b, controller.BudgetStatusOf(c.client)
	return err
}

// settleBudget is st's conditions with the DisruptionBudget condition brought up to
// date after a sync whose take-downs are takes (see controller.SettleBudgetWait). A
// DaemonSet without maxSurge has one pod a node, so at most its desired pods healthy;
// with maxSurge a node's new pod runs beside its old one until it is available.
func (c *Controller) settleBudget(ds *appsv1.DaemonSet, st appsv1.DaemonSetStatus, takes *controller.Takes, now time.Time) []appsv1.DaemonSetCondition {
	desired := st.DesiredNumberScheduled
	reach := disruption.FixedReach(desired, "DaemonSet")
	if ds.Spec.UpdateStrategy.Type == appsv1.RollingUpdateDaemonSetStrategyType {
		if _, surge, err := rollout.DaemonSetFenceposts(ds.Spec.UpdateStrategy.RollingUpdate, int(desired)); err == nil && surge > 0 {
			reach = disruption.RollingReach(desired, int32(surge))
		}
	}
	done := !c.budgets.Respects(ds.Annotations) || st.UpdatedNumberScheduled >= desired
	return controller.SettleBudgetWait(c.budgets, failureConditions, c.recorder, ds, st.Conditions, takes, reach, done, now)
}

// inPlaceBudget is the sync's in-place restarts of ds's pods under its budgets (nil
// when it does not respect them): its pods of the current template (hash) are those
// whose disruptions may be over.
func (c *Controller) inPlaceBudget(ds *appsv1.DaemonSet, pods []*corev1.Pod, hash string, takes *controller.Takes, now time.Time) *controller.InPlaceBudget {
	if !c.budgets.Respects(ds.Annotations) {
		return nil
	}
	var updated []*corev1.Pod
	for _, p := range pods {
		if isUpdated(ds, p, hash) {
			updated = append(updated, p)
		}
	}
	return c.budgets.InPlace(ds, updated, c.budgetStatus, takes, now)
}
