package daemonset

import (
	"time"

	appsv1 "k8s.io/api/apps/v1"
	policyinformers "k8s.io/client-go/informers/policy/v1"

	"github.com/kroll-dev/kroll/pkg/controller"
	"github.com/kroll-dev/kroll/pkg/disruption"
	"github.com/kroll-dev/kroll/pkg/rollout"
)

// RespectBudgets lets the controller take the old pods a rolling update deletes (with
// maxUnavailable, and those surge pods replace) down through the Eviction API for
// DaemonSets whose kroll.dev/disruption-budget (def without one) is Respect (see
// pkg/disruption). It adds handlers to pdbInformer (start the informers after).
func (c *Controller) RespectBudgets(pdbInformer policyinformers.PodDisruptionBudgetInformer, def disruption.Mode) error {
	b, err := controller.WatchBudgets(pdbInformer, def, c.queue, &c.synced)
	c.budgets = b
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
