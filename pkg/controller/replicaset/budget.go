package replicaset

import (
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	appsinformers "k8s.io/client-go/informers/apps/v1"
	policyinformers "k8s.io/client-go/informers/policy/v1"
	appslisters "k8s.io/client-go/listers/apps/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/kroll-dev/kroll/pkg/controller"
	"github.com/kroll-dev/kroll/pkg/disruption"
	"github.com/kroll-dev/kroll/pkg/history"
	"github.com/kroll-dev/kroll/pkg/rollout"
)

// budgets is what the controller needs to take a Deployment's old pods down through
// the Eviction API (see pkg/disruption): the owning Deployments, whose setting and
// template decide, and the PodDisruptionBudgets (controller.SetBudgets: the status the
// condition reports, the changes that bring held ReplicaSets back, the back-off of
// held ones). Nil (the ReplicationController controller, or a manager that never
// called RespectBudgets) deletes as upstream.
type budgets struct {
	deployments appslisters.DeploymentLister
	// def is --default-disruption-budget: the mode of a Deployment without the setting.
	def disruption.Mode
	*controller.SetBudgets
}

// RespectBudgets lets the controller evict the pods of ReplicaSets of old revisions of
// Deployments whose kroll.dev/disruption-budget (def without one) is Respect. It adds
// handlers to pdbInformer (start the informers after).
//
// The ReplicaSet controller looks its owner up rather than reading a copy of the
// setting from the ReplicaSet: only the Deployment knows which revision is current
// (during a Recreate rollout, the new ReplicaSet does not exist yet when the old ones
// are scaled down), and a scale-down of the current revision is the user's change of
// replicas, which a budget must not hold back.
func (c *Controller) RespectBudgets(deployments appsinformers.DeploymentInformer, pdbInformer policyinformers.PodDisruptionBudgetInformer, def disruption.Mode) error {
	sb, synced, err := controller.NewSetBudgets(pdbInformer, def, c.queue)
	if err != nil {
		return err
	}
	c.budgets = &budgets{deployments: deployments.Lister(), def: def, SetBudgets: sb}
	c.synced = append(c.synced, deployments.Informer().HasSynced, synced)
	return nil
}

// evictionOwner is the Deployment whose rollout takes rs's pods down through the
// Eviction API, or nil when rs's pods are deleted (see disruption.Evicts).
func (c *Controller) evictionOwner(rs *appsv1.ReplicaSet) *appsv1.Deployment {
	if c.budgets == nil {
		return nil
	}
	ref := metav1.GetControllerOfNoCopy(rs)
	if ref == nil || ref.Kind != "Deployment" {
		return nil
	}
	d, _ := controller.Resolve(ref, "Deployment", func(name string) (*appsv1.Deployment, error) {
		return c.budgets.deployments.Deployments(rs.Namespace).Get(name)
	})
	if d == nil {
		return nil
	}
	mode, _ := disruption.ModeOf(d.Annotations, c.budgets.def)
	if !disruption.Evicts(mode, true, !history.EqualIgnoringHash(&rs.Spec.Template, &d.Spec.Template)) {
		return nil
	}
	return d
}

// hold is a scale-down a budget refused: the budget, the pods that stay, and the
// Deployment whose rollout waits.
type hold struct {
	budget disruption.Budget
	pods   int32
	d      *appsv1.Deployment
}

// message is the condition's message for h (see disruption.Message): a rolling
// Deployment may surge by maxSurge; a Recreate one must remove every old pod.
func (h *hold) message() string {
	if h.d.Spec.Strategy.Type == appsv1.RecreateDeploymentStrategyType {
		return disruption.Message(h.budget, h.pods, disruption.RecreateReach)
	}
	replicas := rollout.DesiredReplicas(h.d)
	return disruption.Message(h.budget, h.pods, disruption.RollingReach(replicas, rollout.DeploymentFenceposts(h.d).MaxSurge))
}

// forget drops key's back-off (the ReplicaSet is gone).
func (b *budgets) forget(key string) {
	if b != nil {
		b.Forget(key)
	}
}

// SetBudgetCondition brings the DisruptionBudget condition of status up to date after
// a resize: set (False, BudgetExhausted, message) while a budget holds pods back,
// removed once a resize ran without a refusal. (A sync that does not resize, its
// earlier deletions still unobserved, tried nothing and leaves the condition as it
// is.) A condition whose message changes keeps its transition time: the rollout
// still waits.
func SetBudgetCondition(status *appsv1.ReplicaSetStatus, held bool, message string, now time.Time) {
	t := appsv1.ReplicaSetConditionType(disruption.ConditionType)
	cur := condition(status, t)
	switch {
	case held && cur != nil:
		cur.Status, cur.Reason, cur.Message = corev1.ConditionFalse, disruption.ReasonBudgetExhausted, message
	case held:
		status.Conditions = append(status.Conditions, appsv1.ReplicaSetCondition{Type: t, Status: corev1.ConditionFalse,
			Reason: disruption.ReasonBudgetExhausted, Message: message, LastTransitionTime: metav1.NewTime(now)})
	case cur != nil:
		kept := status.Conditions[:0]
		for _, c := range status.Conditions {
			if c.Type != t {
				kept = append(kept, c)
			}
		}
		status.Conditions = kept
		if len(kept) == 0 {
			status.Conditions = nil
		}
	}
}

// heldBy is the hold of a scale-down that evicted for d, from the budget each victim's
// refusal named ("" for a pod evicted, "name\x00" for one a budget kept): nil when no
// budget kept any. The condition names the first budget that refused.
func (c *Controller) heldBy(rs *appsv1.ReplicaSet, d *appsv1.Deployment, refusals []string) *hold {
	var h *hold
	for _, r := range refusals {
		if r == "" {
			continue
		}
		if h == nil {
			h = &hold{budget: c.budgets.Budget(rs.Namespace, r[:len(r)-1]), d: d}
		}
		h.pods++
	}
	return h
}

// budgetHold reports, after a resize, what a budget holds on rs's status (see
// SetBudgetCondition), and brings rs back after a back-off while it holds.
func (c *Controller) budgetHold(rs *appsv1.ReplicaSet, status *appsv1.ReplicaSetStatus, h *hold, now time.Time) {
	message := ""
	if h != nil {
		message = h.message()
	}
	SetBudgetCondition(status, h != nil, message, now)
	if c.budgets == nil {
		return
	}
	key, _ := cache.MetaNamespaceKeyFunc(rs)
	if wait := c.budgets.Backoff(key, h != nil); wait > 0 {
		c.queue.EnqueueAfter(rs, wait)
	}
}
