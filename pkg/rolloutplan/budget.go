package rolloutplan

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"

	"github.com/kroll-dev/kroll/pkg/disruption"
	"github.com/kroll-dev/kroll/pkg/rollout"
)

// AccountBudgets sets p.Budget: what the PodDisruptionBudgets pdbs (the namespace's,
// as they are now) let the plan's first batch that takes old pods down do now, for a
// workload whose rollouts draw on its budgets (kroll.dev/disruption-budget in
// annotations, the changed object's). pods are the workload's pods now.
//
// The decision is disruption.PlanStep, the Eviction API's rules the controllers'
// evictions meet. Only deletions of pods of an older revision count (the pods a
// rollout takes down; a scale-down of the current revision is the user's change and
// not held back), and only the first such batch: after it, the budgets' status is
// what the disruption controller recomputes, which the plan cannot know. Without
// the annotation the mode is the controller manager's --default-disruption-budget,
// which the plan does not know: it accounts for the budgets and says so.
func (p *Plan) AccountBudgets(annotations map[string]string, pods []*corev1.Pod, pdbs []*policyv1.PodDisruptionBudget, now time.Time) {
	p.Budget = ""
	prefix := ""
	if v, ok := annotations[disruption.Annotation]; !ok {
		prefix = "if the cluster's --default-disruption-budget is Respect (unknown to the plan): "
	} else if problem := disruption.Problem(annotations); problem != "" {
		prefix = problem + "; if the cluster's --default-disruption-budget is Respect (unknown to the plan): "
	} else if disruption.Mode(v) == disruption.Ignore {
		return
	}
	byName := map[string]*corev1.Pod{}
	for _, pod := range pods {
		byName[pod.Name] = pod
	}
	// fresh are the revisions pods are created or updated at: the new ones.
	fresh := map[string]bool{}
	for _, b := range p.Batches {
		for _, op := range b.Ops {
			if op.Op != Delete {
				fresh[op.Revision] = true
			}
		}
	}
	if len(fresh) == 0 && p.From == p.To {
		// Only deletions, revision unchanged: a scale-down of the current revision.
		return
	}
	for i, b := range p.Batches {
		var old []*corev1.Pod
		for _, op := range b.Ops {
			if pod := byName[op.Pod]; op.Op == Delete && pod != nil && !fresh[op.Revision] {
				old = append(old, pod)
			}
		}
		if len(old) == 0 {
			continue
		}
		step := disruption.PlanStep(pdbs, old, rollout.IsPodReady, now)
		text := step.Text(len(old))
		if text == "" {
			text = fmt.Sprintf("the budgets let its %d old %s go now", len(old), plural(len(old), "pod", "pods"))
			if !selectsAny(pdbs, old) {
				if prefix != "" {
					// Whether budgets count is unknown and none would hold the step:
					// nothing to say (kubectl's plan, word for word).
					return
				}
				text = "no PodDisruptionBudget selects the pods it takes down"
			}
		}
		p.Budget = fmt.Sprintf("%sbatch %d: %s", prefix, i+1, text)
		return
	}
}

// selectsAny: some budget of pdbs selects some pod of pods.
func selectsAny(pdbs []*policyv1.PodDisruptionBudget, pods []*corev1.Pod) bool {
	for _, pod := range pods {
		if len(disruption.Selecting(pdbs, pod)) > 0 {
			return true
		}
	}
	return false
}
