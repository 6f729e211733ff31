package rolloutplan

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kroll-dev/kroll/pkg/disruption"
)

// newBudget is PodDisruptionBudget name over app=app in default, processed, with
// disruptionsAllowed allowed of current healthy pods, desired of which must stay.
func newBudget(name, app string, allowed, desired, current int32) *policyv1.PodDisruptionBudget {
	return &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Generation: 1},
		Spec:       policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}},
		Status: policyv1.PodDisruptionBudgetStatus{ObservedGeneration: 1, DisruptionsAllowed: allowed,
			DesiredHealthy: desired, CurrentHealthy: current, ExpectedPods: current},
	}
}

func TestAccountBudgets(t *testing.T) {
	respect := map[string]string{disruption.Annotation: string(disruption.Respect)}
	// 10 replicas, maxSurge 3, maxUnavailable 2: batch 2 deletes the first 5 old pods.
	rolling := deploymentCase{cur: newDeployment("web", 10, "25%", "25%"), sizes: []int32{10}, edit: setImage("nginx:1.26")}
	for _, tc := range []struct {
		name        string
		tc          deploymentCase
		annotations map[string]string
		pdbs        []*policyv1.PodDisruptionBudget
		// set, if not nil, is planned instead of tc: a StatefulSet of 3, its image changed.
		set  *appsv1.StatefulSet
		want string
	}{
		{name: "Respect, web-pdb allows 1 (minAvailable 9 of 10): 1 of batch 2's 5 old pods now",
			tc: rolling, annotations: respect, pdbs: []*policyv1.PodDisruptionBudget{newBudget("web-pdb", "web", 1, 9, 10)},
			want: "batch 2: PodDisruptionBudget web-pdb allows 1 disruption: the step takes down 1 of 5 old pods now, the rest as the budget allows"},
		{name: "Respect, minAvailable 5 of 10: the whole batch goes",
			tc: rolling, annotations: respect, pdbs: []*policyv1.PodDisruptionBudget{newBudget("web-pdb", "web", 5, 5, 10)},
			want: "batch 2: the budgets let its 5 old pods go now"},
		{name: "Respect, the only budget is another app's",
			tc: rolling, annotations: respect, pdbs: []*policyv1.PodDisruptionBudget{newBudget("db-pdb", "db", 0, 3, 3)},
			want: "batch 2: no PodDisruptionBudget selects the pods it takes down"},
		{name: "Ignore: the budgets do not hold the rollout, nothing said",
			tc: rolling, annotations: map[string]string{disruption.Annotation: string(disruption.Ignore)}, pdbs: []*policyv1.PodDisruptionBudget{newBudget("web-pdb", "web", 1, 9, 10)},
			want: ""},
		{name: "no setting: the cluster's default decides, which the plan does not know",
			tc: rolling, pdbs: []*policyv1.PodDisruptionBudget{newBudget("web-pdb", "web", 0, 10, 10)},
			want: "if the cluster's --default-disruption-budget is Respect (unknown to the plan): batch 2: PodDisruptionBudget web-pdb allows 0 disruptions: the step takes down 0 of 5 old pods now, the rest as the budget allows"},
		{name: "an invalid setting: named, then as without it",
			tc: rolling, annotations: map[string]string{disruption.Annotation: "Always"}, pdbs: []*policyv1.PodDisruptionBudget{newBudget("web-pdb", "web", 1, 9, 10)},
			want: `kroll.dev/disruption-budget="Always" is not valid: want Respect or Ignore; if the cluster's --default-disruption-budget is Respect (unknown to the plan): batch 2: PodDisruptionBudget web-pdb allows 1 disruption: the step takes down 1 of 5 old pods now, the rest as the budget allows`},
		{name: "a scale-up takes no old pod down: nothing said",
			tc:          deploymentCase{cur: newDeployment("web", 3, "25%", "25%"), sizes: []int32{3}, edit: func(d *appsv1.Deployment) { n := int32(5); d.Spec.Replicas = &n }},
			annotations: respect, pdbs: []*policyv1.PodDisruptionBudget{newBudget("web-pdb", "web", 0, 3, 3)},
			want: ""},
		{name: "a scale-down of the current revision is the user's change, not held back: nothing said",
			tc:          deploymentCase{cur: newDeployment("web", 10, "25%", "25%"), sizes: []int32{10}, edit: func(d *appsv1.Deployment) { n := int32(5); d.Spec.Replicas = &n }},
			annotations: respect, pdbs: []*policyv1.PodDisruptionBudget{newBudget("web-pdb", "web", 0, 10, 10)},
			want: ""},
		{name: "a StatefulSet under Respect, minAvailable 3 of 3: its first replacement waits",
			set: newStatefulSet("web", 3, 0, ""), annotations: respect, pdbs: []*policyv1.PodDisruptionBudget{newBudget("web-pdb", "web", 0, 3, 3)},
			want: "batch 1: PodDisruptionBudget web-pdb allows 0 disruptions: the step takes down 0 of 1 old pods now, the rest as the budget allows"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var plan Plan
			var pods []*corev1.Pod
			var err error
			if tc.set != nil {
				pods = setPods(tc.set, 3)
				plan, err = StatefulSet(tc.set, pods, nil, changed(tc.set, setImageOf("nginx:1.26")), now)
			} else {
				var cur, next *appsv1.Deployment
				var rss []*appsv1.ReplicaSet
				cur, rss, pods, next = tc.tc.objects()
				plan, err = Deployment(cur, rss, pods, next, now)
			}
			if err != nil {
				t.Fatal(err)
			}
			plan.AccountBudgets(tc.annotations, pods, tc.pdbs, now)
			if plan.Budget != tc.want {
				t.Errorf("budget\n%q\nwant\n%q\n%s", plan.Budget, tc.want, plan.Text())
			}
		})
	}
}
