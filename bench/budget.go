package bench

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kroll-dev/kroll/pkg/disruption"
)

// budgetScenario: rolling-<size>-qps20 with a PodDisruptionBudget that never binds
// (maxUnavailable 50%: 500 of 1,000 pods may be down, the rollout takes at most
// maxUnavailable 25%, 250, down at once), run by kroll's controllers with the
// Deployment ignoring the budget (kroll, upstream's behaviour: old pods are deleted)
// and respecting it (kroll-budget: every old pod is evicted through pods/eviction, so
// the API server checks the budget and writes its status for each). The two arms
// make the same rollout; what the budget costs is the evictions' price: an eviction
// is one client write, as the delete it replaces, but the API server also updates the
// budget's status for it (disruptionsAllowed down by one, the pod into disruptedPods),
// and refuses an eviction (429) while the disruption controller has not yet counted
// the budget.
func budgetScenario(size int) Scenario {
	s := rollingScenario(size, DefaultLimits, []Arm{krollArm, budgetArm})
	s.Name += "-budget"
	s.Title += ", PodDisruptionBudget maxUnavailable 50% (never binding)"
	prepare := s.prepare
	s.prepare = func(ctx context.Context, r *run) error {
		half := intstr.FromString("50%")
		pdb := &policyv1.PodDisruptionBudget{
			ObjectMeta: metav1.ObjectMeta{Name: "bench"},
			Spec: policyv1.PodDisruptionBudgetSpec{
				Selector:       &metav1.LabelSelector{MatchLabels: benchLabels},
				MaxUnavailable: &half,
			},
		}
		if _, err := r.client.PolicyV1().PodDisruptionBudgets(namespace).Create(ctx, pdb, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create PodDisruptionBudget: %w", err)
		}
		return prepare(ctx, r)
	}
	return s
}

// withBudget sets d's disruption-budget setting for arm: Respect on the budget arm,
// none (Ignore, the default) otherwise.
func withBudget(d *appsv1.Deployment, arm Arm) *appsv1.Deployment {
	if arm.Budget {
		if d.Annotations == nil {
			d.Annotations = map[string]string{}
		}
		d.Annotations[disruption.Annotation] = string(disruption.Respect)
	}
	return d
}
