package disruption

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPlanStep(t *testing.T) {
	now := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	pods := func(n int, labels map[string]string) []*corev1.Pod {
		var out []*corev1.Pod
		for i := range n {
			out = append(out, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("web-%d", i), Namespace: "ns", Labels: labels}})
		}
		return out
	}
	nginx := map[string]string{"app": "nginx"}
	other := func(name string) *policyv1.PodDisruptionBudget {
		b := budgetOf(5, 1, 6, nil)
		b.Name = name
		return b
	}
	allReady := func(*corev1.Pod) bool { return true }
	for _, tc := range []struct {
		name  string
		pdbs  []*policyv1.PodDisruptionBudget
		pods  []*corev1.Pod
		ready func(*corev1.Pod) bool
		want  Step
		text  string
	}{
		{name: "minAvailable 8 of 10, disruptionsAllowed 2, a step of 3: 2 now, web-pdb holds the third",
			pdbs: []*policyv1.PodDisruptionBudget{budgetOf(2, 8, 10, nil)}, pods: pods(3, nginx), ready: allReady,
			want: Step{Now: 2, Limit: "web-pdb", Allowed: 2, Refused: "The disruption budget web-pdb does not allow evicting pods currently"},
			text: "PodDisruptionBudget web-pdb allows 2 disruptions: the step takes down 2 of 3 old pods now, the rest as the budget allows"},
		{name: "disruptionsAllowed 1: 1 of 3 now",
			pdbs: []*policyv1.PodDisruptionBudget{budgetOf(1, 8, 9, nil)}, pods: pods(3, nginx), ready: allReady,
			want: Step{Now: 1, Limit: "web-pdb", Allowed: 1, Refused: "The disruption budget web-pdb does not allow evicting pods currently"},
			text: "PodDisruptionBudget web-pdb allows 1 disruption: the step takes down 1 of 3 old pods now, the rest as the budget allows"},
		{name: "8 of 8 healthy: none now",
			pdbs: []*policyv1.PodDisruptionBudget{budgetOf(0, 8, 8, nil)}, pods: pods(2, nginx), ready: allReady,
			want: Step{Now: 0, Limit: "web-pdb", Allowed: 0, Refused: "The disruption budget web-pdb needs 8 healthy pods and has 8 currently"},
			text: "PodDisruptionBudget web-pdb allows 0 disruptions: the step takes down 0 of 2 old pods now, the rest as the budget allows"},
		{name: "a budget with room for the whole step: no limit",
			pdbs: []*policyv1.PodDisruptionBudget{budgetOf(3, 7, 10, nil)}, pods: pods(3, nginx), ready: allReady,
			want: Step{Now: 3}},
		{name: "no budget selects the pods: all go",
			pdbs: []*policyv1.PodDisruptionBudget{budgetOf(0, 8, 8, nil)}, pods: pods(3, map[string]string{"app": "db"}), ready: allReady,
			want: Step{Now: 3}},
		{name: "unready pods while the budget has its desired healthy: they cost nothing",
			pdbs: []*policyv1.PodDisruptionBudget{budgetOf(0, 8, 8, nil)}, pods: pods(2, nginx), ready: func(*corev1.Pod) bool { return false },
			want: Step{Now: 2}},
		{name: "two budgets select the pods: refused, the first named",
			pdbs: []*policyv1.PodDisruptionBudget{budgetOf(5, 5, 10, nil), func() *policyv1.PodDisruptionBudget {
				b := other("all")
				b.Spec.Selector = &metav1.LabelSelector{}
				return b
			}()},
			pods: pods(1, nginx), ready: allReady,
			want: Step{Now: 0, Limit: "web-pdb", Allowed: 5, Refused: "The disruption budget web-pdb is one of 2 that select pod web-0, which the eviction subresource does not support", Overlap: true},
			text: "The disruption budget web-pdb is one of 2 that select pod web-0, which the eviction subresource does not support: the step takes down 0 of 1 old pods now"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := PlanStep(tc.pdbs, tc.pods, tc.ready, now)
			if got != tc.want {
				t.Errorf("got %+v\nwant %+v", got, tc.want)
			}
			if text := got.Text(len(tc.pods)); text != tc.text {
				t.Errorf("text %q\nwant %q", text, tc.text)
			}
		})
	}
}
