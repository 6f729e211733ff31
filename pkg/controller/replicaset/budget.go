package replicaset

import (
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	appsinformers "k8s.io/client-go/informers/apps/v1"
	policyinformers "k8s.io/client-go/informers/policy/v1"
	appslisters "k8s.io/client-go/listers/apps/v1"
	policylisters "k8s.io/client-go/listers/policy/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/kroll-dev/kroll/pkg/controller"
	"github.com/kroll-dev/kroll/pkg/disruption"
	"github.com/kroll-dev/kroll/pkg/history"
	"github.com/kroll-dev/kroll/pkg/rollout"
)

// budgets is what the controller needs to take a Deployment's old pods down through
// the Eviction API (see pkg/disruption): the owning Deployments, whose setting and
// template decide, and the PodDisruptionBudgets, whose status the condition reports
// and whose changes bring held ReplicaSets back. Nil (the ReplicationController
// controller, or a manager that never called RespectBudgets) deletes as upstream.
type budgets struct {
	deployments appslisters.DeploymentLister
	pdbs        policylisters.PodDisruptionBudgetLister
	// def is --default-disruption-budget: the mode of a Deployment without the setting.
	def disruption.Mode

	mu sync.Mutex
	// held counts, per ReplicaSet key, the syncs in a row a budget refused an eviction
	// in: the back-off of the next try (heldBackoff).
	held map[string]int
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
	c.budgets = &budgets{deployments: deployments.Lister(), pdbs: pdbInformer.Lister(), def: def, held: map[string]int{}}
	c.synced = append(c.synced, deployments.Informer().HasSynced, pdbInformer.Informer().HasSynced)
	_, err := pdbInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.budgetChanged,
		UpdateFunc: func(_, cur any) { c.budgetChanged(cur) },
		DeleteFunc: c.budgetChanged,
	})
	return err
}

// budgetChanged brings back every ReplicaSet of the budget's namespace a budget holds:
// the budget may allow a disruption now, or be gone.
func (c *Controller) budgetChanged(obj any) {
	pdb, ok := controller.Deleted[*policyv1.PodDisruptionBudget](obj)
	if !ok {
		return
	}
	c.budgets.mu.Lock()
	var keys []string
	for key := range c.budgets.held {
		if ns, _, err := cache.SplitMetaNamespaceKey(key); err == nil && ns == pdb.Namespace {
			keys = append(keys, key)
		}
	}
	c.budgets.mu.Unlock()
	for _, key := range keys {
		c.queue.Add(key)
	}
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

// budget is the PodDisruptionBudget named, as the cache has it.
func (c *Controller) budget(namespace, name string) disruption.Budget {
	b := disruption.Budget{Name: name}
	if name == "" {
		return b
	}
	if pdb, err := c.budgets.pdbs.PodDisruptionBudgets(namespace).Get(name); err == nil {
		s := pdb.Status
		b.Known, b.DisruptionsAllowed, b.DesiredHealthy, b.CurrentHealthy, b.ExpectedPods = true,
			s.DisruptionsAllowed, s.DesiredHealthy, s.CurrentHealthy, s.ExpectedPods
	}
	return b
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

// heldBackoff records whether a budget held key in this sync and returns how long to
// wait before trying again: 1s, 2s, 4s, … up to 30s while held; 0 once not.
func (b *budgets) heldBackoff(key string, held bool) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !held {
		delete(b.held, key)
		return 0
	}
	n := b.held[key]
	b.held[key] = n + 1
	return min(time.Second<<min(n, 5), 30*time.Second)
}

// forget drops key's back-off (the ReplicaSet is gone).
func (b *budgets) forget(key string) {
	if b == nil {
		return
	}
	b.mu.Lock()
	delete(b.held, key)
	b.mu.Unlock()
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
			h = &hold{budget: c.budget(rs.Namespace, r[:len(r)-1]), d: d}
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
	if wait := c.budgets.heldBackoff(key, h != nil); wait > 0 {
		c.queue.EnqueueAfter(rs, wait)
	}
}
