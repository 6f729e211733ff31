package disruption

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
)

// Step is what the PodDisruptionBudgets let a rollout step take down now.
type Step struct {
	// Now is how many of the step's pods the budgets let go now; the others wait.
	Now int
	// Limit is the budget that refuses the first pod that waits, with its
	// disruptionsAllowed before the step; "" when every pod goes (Allowed then 0).
	Limit   string
	Allowed int32
	// Refused is why, in the API server's words for a refused eviction; "" when
	// every pod goes.
	Refused string
	// Overlap: the refusal is of a pod more than one budget selects (OneBudget),
	// which no number of disruptions lets go.
	Overlap bool
}

// PlanStep is what pdbs (the namespace's budgets, as last read) let a step that takes
// pods down (in the order given) do now, by the Eviction API's rules: each pod in turn
// takes one disruption from the one budget that selects it (PlanTake, on the status
// the earlier pods of the step left), a pod no budget selects goes freely, and a pod
// two budgets select is refused (OneBudget). Like the controllers, which send every
// eviction of a step, a refused pod does not stop the others: Limit names the first
// refusal. ready tells whether a pod is Ready (an unready pod may cost nothing).
//
// minAvailable 8 over 10 Ready pods (disruptionsAllowed 2), a step of 3: 2 go now,
// the third waits on the budget ("needs 8 healthy pods and has 8 currently").
func PlanStep(pdbs []*policyv1.PodDisruptionBudget, pods []*corev1.Pod, ready func(*corev1.Pod) bool, now time.Time) Step {
	out, _ := walk(pdbs, nil, pods, ready, now)
	return out
}

// walk is PlanStep on pdbs as taken (each budget's status as the step's earlier
// pods, or releases before them, left it; nil: as read), keeping in taken the budgets
// whose status the step changes and in out.went the pods that go.
func walk(pdbs []*policyv1.PodDisruptionBudget, taken map[string]*policyv1.PodDisruptionBudget, pods []*corev1.Pod,
	ready func(*corev1.Pod) bool, now time.Time) (Step, stepped) {
	if taken == nil {
		taken = map[string]*policyv1.PodDisruptionBudget{}
	}
	var out Step
	var went []*corev1.Pod
	for _, pod := range pods {
		sel := Selecting(pdbs, pod)
		for i, pdb := range sel {
			if t, ok := taken[pdb.Name]; ok {
				sel[i] = t
			}
		}
		refused, by := OneBudget(sel, pod), ""
		overlap := refused != ""
		if overlap {
			by = sel[0].Name
		} else if len(sel) == 1 {
			pdb := sel[0]
			t := PlanTake(pdb, pod, ready(pod), now)
			if refused, by = t.Refused, pdb.Name; t.Status != nil {
				next := pdb.DeepCopy()
				next.Status = *t.Status
				taken[pdb.Name] = next
			}
		}
		if refused == "" {
			out.Now++
			went = append(went, pod)
			continue
		}
		if out.Limit == "" {
			out.Limit, out.Refused, out.Overlap = by, refused, overlap
			for _, pdb := range pdbs {
				if pdb.Name == by && pdb.Namespace == pod.Namespace {
					out.Allowed = pdb.Status.DisruptionsAllowed
				}
			}
		}
	}
	return out, stepped{went: went, taken: taken}
}

// stepped is what walk's pods did to the budgets: the pods that go, and each budget
// whose status changed, by name.
type stepped struct {
	went  []*corev1.Pod
	taken map[string]*policyv1.PodDisruptionBudget
}

// Text says what s means for a step of pods pods, for `kroll rollout plan`:
//
//	PodDisruptionBudget web-pdb allows 1 disruption: the step takes down 1 of 3 old pods now, the rest as the budget allows
//
// or, for a pod two budgets select, the API server's refusal and the count; "" when
// the budgets let every pod go.
func (s Step) Text(pods int) string {
	if s.Limit == "" {
		return ""
	}
	if s.Overlap {
		return fmt.Sprintf("%s: the step takes down %d of %d old pods now", s.Refused, s.Now, pods)
	}
	noun := "disruptions"
	if s.Allowed == 1 {
		noun = "disruption"
	}
	return fmt.Sprintf("PodDisruptionBudget %s allows %d %s: the step takes down %d of %d old pods now, the rest as the budget allows",
		s.Limit, max(s.Allowed, 0), noun, s.Now, pods)
}
