package disruption

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// budgetOf is web-pdb over app=nginx at generation 1 with the status given.
func budgetOf(allowed, desired, current int32, disrupted map[string]metav1.Time) *policyv1.PodDisruptionBudget {
	return &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "web-pdb", Namespace: "ns", Generation: 1},
		Spec:       policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "nginx"}}},
		Status: policyv1.PodDisruptionBudgetStatus{ObservedGeneration: 1, DisruptionsAllowed: allowed,
			DesiredHealthy: desired, CurrentHealthy: current, ExpectedPods: 10, DisruptedPods: disrupted},
	}
}

func TestPlanTake(t *testing.T) {
	now := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "ns", Labels: map[string]string{"app": "nginx"}}}
	always := policyv1.AlwaysAllow
	for _, tc := range []struct {
		name      string
		pdb       *policyv1.PodDisruptionBudget
		ready     bool
		wantWrite bool
		allowed   int32 // disruptionsAllowed written
		refused   string
	}{
		{"minAvailable 8 of 10, 10 healthy: 2 → 1, the pod recorded", budgetOf(2, 8, 10, nil), true, true, 1, ""},
		{"8 of 8 healthy: refused as an eviction is", budgetOf(0, 8, 8, nil), true, false, 0, "The disruption budget web-pdb needs 8 healthy pods and has 8 currently"},
		{"allowed 0 with room (disruptedPods pending): refused", budgetOf(0, 8, 9, nil), true, false, 0, "does not allow evicting pods currently"},
		{"not processed yet: refused", func() *policyv1.PodDisruptionBudget { b := budgetOf(2, 8, 10, nil); b.Generation = 2; return b }(), true, false, 0, "still being processed"},
		{"the pod already holds a disruption (a retry): nothing to write", budgetOf(0, 8, 9, map[string]metav1.Time{"web-1": metav1.NewTime(now.Add(-time.Minute))}), true, false, 0, ""},
		{"its record expired: taken again", budgetOf(1, 8, 9, map[string]metav1.Time{"web-1": metav1.NewTime(now.Add(-3 * time.Minute))}), true, true, 0, ""},
		{"not ready, budget healthy (IfHealthyBudget): costs nothing", budgetOf(0, 8, 8, nil), false, false, 0, ""},
		{"not ready, budget short: refused", budgetOf(0, 8, 7, nil), false, false, 0, "needs 8 healthy pods and has 7"},
		{"not ready, AlwaysAllow: costs nothing", func() *policyv1.PodDisruptionBudget {
			b := budgetOf(0, 8, 7, nil)
			b.Spec.UnhealthyPodEvictionPolicy = &always
			return b
		}(), false, false, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.pdb.Status.DeepCopy()
			got := PlanTake(tc.pdb, pod, tc.ready, now)
			if (got.Status != nil) != tc.wantWrite {
				t.Fatalf("PlanTake writes %v, want %v (refused %q)", got.Status != nil, tc.wantWrite, got.Refused)
			}
			if (got.Refused == "") != (tc.refused == "") || !strings.Contains(got.Refused, tc.refused) {
				t.Errorf("refused %q, want %q", got.Refused, tc.refused)
			}
			if got.Status != nil {
				if got.Status.DisruptionsAllowed != tc.allowed || !got.Status.DisruptedPods["web-1"].Time.Equal(now) {
					t.Errorf("status %+v, want disruptionsAllowed %d and web-1 disrupted at now", got.Status, tc.allowed)
				}
			}
			if tc.pdb.Status.DisruptionsAllowed != before.DisruptionsAllowed || len(tc.pdb.Status.DisruptedPods) != len(before.DisruptedPods) {
				t.Errorf("PlanTake changed the cached budget")
			}
			if got.Refused != "" {
				if name, _, _ := strings.Cut(strings.TrimPrefix(got.Refused, "The disruption budget "), " "); name != "web-pdb" {
					t.Errorf("refusal %q does not name the budget as Refused reads it", got.Refused)
				}
			}
		})
	}
}

func TestPlanRelease(t *testing.T) {
	at := metav1.Now()
	b := budgetOf(1, 8, 9, map[string]metav1.Time{"web-1": at, "web-2": at})
	got := PlanRelease(b, "web-1")
	if got == nil || len(got.DisruptedPods) != 1 || got.DisruptedPods["web-2"] != at {
		t.Fatalf("PlanRelease(web-1) = %+v, want web-2 alone", got)
	}
	if len(b.Status.DisruptedPods) != 2 {
		t.Errorf("PlanRelease changed the cached budget")
	}
	if got := PlanRelease(b, "web-3"); got != nil {
		t.Errorf("PlanRelease of a pod not recorded = %+v, want nothing to write", got)
	}
}

func TestSelecting(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "ns", Labels: map[string]string{"app": "nginx", "tier": "web"}}}
	mk := func(name, ns string, sel *metav1.LabelSelector) *policyv1.PodDisruptionBudget {
		return &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: policyv1.PodDisruptionBudgetSpec{Selector: sel}}
	}
	match := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "nginx"}}
	pdbs := []*policyv1.PodDisruptionBudget{
		mk("web-pdb", "ns", match),
		mk("other-ns", "elsewhere", match),
		mk("empty", "ns", &metav1.LabelSelector{}),
		mk("nil", "ns", nil),
		mk("db", "ns", &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}),
		mk("tier", "ns", &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "web"}}),
	}
	got := Selecting(pdbs, pod)
	var names []string
	for _, p := range got {
		names = append(names, p.Name)
	}
	if strings.Join(names, ",") != "web-pdb,empty,tier" {
		t.Fatalf("Selecting = %v, want web-pdb,empty,tier (policy/v1: an empty selector selects all, a missing one none)", names)
	}
	if msg := OneBudget(got, pod); !strings.HasPrefix(msg, "The disruption budget web-pdb is one of 3") {
		t.Errorf("OneBudget = %q", msg)
	}
	if msg := OneBudget(got[:1], pod); msg != "" {
		t.Errorf("OneBudget of one budget = %q, want none", msg)
	}
}
