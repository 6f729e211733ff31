package disruption

import (
	"sort"
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
		ObjectMeta: metav1.ObjectMeta{Name: "web-pdb", Namespace: "ns", Generation: 1, ResourceVersion: "41"},
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

// readyPod is pod name of app=nginx, Ready (or not) since since.
func readyPod(name string, ready bool, since time.Time) *corev1.Pod {
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Labels: map[string]string{"app": "nginx"}},
		Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: status, LastTransitionTime: metav1.NewTime(since)}}}}
}

func TestOver(t *testing.T) {
	at := time.Date(2026, 1, 1, 10, 0, 0, 400e6, time.UTC) // taken at 10:00:00.4, stored as 10:00:00
	deleting := readyPod("web-1", true, at.Add(time.Second))
	deleting.DeletionTimestamp = &metav1.Time{Time: at.Add(2 * time.Second)}
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		want bool
	}{
		{"restarted, Ready again at 10:00:04: over", readyPod("web-1", true, at.Add(4*time.Second)), true},
		{"Ready again in the second it was taken in (stored to the second): over", readyPod("web-1", true, at.Truncate(time.Second)), true},
		{"Ready in the next second: over", readyPod("web-1", true, at.Truncate(time.Second).Add(time.Second)), true},
		{"Ready since 09:58 (a drain's eviction of a pod updated before): not over", readyPod("web-1", true, at.Add(-2*time.Minute)), false},
		{"restarting, not Ready: not over", readyPod("web-1", false, at.Add(time.Second)), false},
		{"being deleted: not over (an eviction's pod)", deleting, false},
		{"no Ready condition: not over", &corev1.Pod{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Over(tc.pod, at); got != tc.want {
				t.Errorf("Over = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestPlanInPlace(t *testing.T) {
	now := time.Date(2026, 1, 1, 10, 1, 0, 0, time.UTC)
	taken := now.Add(-30 * time.Second)
	ready := func(p *corev1.Pod) bool { return Over(p, time.Time{}) }
	back := func(name string) *corev1.Pod { return readyPod(name, true, now.Add(-5*time.Second)) }
	serving := func(name string) *corev1.Pod { return readyPod(name, true, now.Add(-time.Hour)) }
	entries := func(names ...string) map[string]metav1.Time {
		m := map[string]metav1.Time{}
		for _, n := range names {
			m[n] = metav1.NewTime(taken)
		}
		return m
	}
	for _, tc := range []struct {
		name        string
		pdb         *policyv1.PodDisruptionBudget
		pods        []*corev1.Pod // the updated pods
		restarting  []string
		wantGo      string
		wantWrite   bool
		allowed     int32
		disrupted   string // the written disruptedPods, sorted
		wantRefused string
	}{
		{name: "minAvailable 8 of 10, 2 allowed, 3 to restart: 2 go in one write, the third waits",
			pdb:  budgetOf(2, 8, 10, nil),
			pods: []*corev1.Pod{serving("web-3"), serving("web-4"), serving("web-5")}, restarting: []string{"web-3", "web-4", "web-5"},
			wantGo: "web-3,web-4", wantWrite: true, allowed: 0, disrupted: "web-3,web-4", wantRefused: "does not allow evicting pods currently"},
		{name: "web-1 and web-2 Ready again after their restarts: released, web-3 and web-4 take theirs, one write",
			pdb:  budgetOf(2, 8, 10, entries("web-1", "web-2")),
			pods: []*corev1.Pod{back("web-1"), back("web-2"), serving("web-3"), serving("web-4")}, restarting: []string{"web-3", "web-4"},
			wantGo: "web-3,web-4", wantWrite: true, allowed: 0, disrupted: "web-3,web-4"},
		{name: "an entry of a pod still restarting, and a drain's entry of a pod Ready from before: kept; nothing to restart: no write",
			pdb:       budgetOf(0, 8, 8, entries("web-1", "web-9")),
			pods:      []*corev1.Pod{readyPod("web-1", false, now), serving("web-9")},
			wantWrite: false},
		{name: "web-1 Ready again in the second it was taken in: released; web-2, taken then too but not yet updated (not among the updated pods): kept",
			pdb:       budgetOf(0, 8, 8, map[string]metav1.Time{"web-1": metav1.NewTime(now.Add(-400 * time.Millisecond)), "web-2": metav1.NewTime(now)}),
			pods:      []*corev1.Pod{readyPod("web-1", true, now.Add(-200*time.Millisecond).Truncate(time.Second))},
			wantWrite: true, allowed: 0, disrupted: "web-2"},
		{name: "budget spent (0 allowed, 8 of 8): nothing goes, nothing written",
			pdb:  budgetOf(0, 8, 8, nil),
			pods: []*corev1.Pod{serving("web-3")}, restarting: []string{"web-3"},
			wantGo: "", wantWrite: false, wantRefused: "needs 8 healthy pods and has 8"},
		{name: "released alone: the write drops the entry, disruptionsAllowed is the disruption controller's to raise",
			pdb:       budgetOf(0, 8, 9, entries("web-1")),
			pods:      []*corev1.Pod{back("web-1")},
			wantWrite: true, allowed: 0, disrupted: ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			byName := map[string]*corev1.Pod{}
			for _, p := range tc.pods {
				byName[p.Name] = p
			}
			var restarting []*corev1.Pod
			for _, n := range tc.restarting {
				restarting = append(restarting, byName[n])
			}
			got := PlanInPlace([]*policyv1.PodDisruptionBudget{tc.pdb}, tc.pods, restarting, ready, now)
			var names []string
			for _, p := range got.Go {
				names = append(names, p.Name)
			}
			if strings.Join(names, ",") != tc.wantGo {
				t.Errorf("Go = %v, want %s", names, tc.wantGo)
			}
			if (len(got.Writes) == 1) != tc.wantWrite || len(got.Writes) > 1 {
				t.Fatalf("writes %d, want one: %v", len(got.Writes), tc.wantWrite)
			}
			if !strings.Contains(got.Step.Refused, tc.wantRefused) || (tc.wantRefused == "") != (got.Step.Refused == "") {
				t.Errorf("refused %q, want %q", got.Step.Refused, tc.wantRefused)
			}
			if !tc.wantWrite {
				return
			}
			w := got.Writes[0]
			var disrupted []string
			for n := range w.Status.DisruptedPods {
				disrupted = append(disrupted, n)
			}
			sort.Strings(disrupted)
			if w.Status.DisruptionsAllowed != tc.allowed || strings.Join(disrupted, ",") != tc.disrupted {
				t.Errorf("written disruptionsAllowed %d disruptedPods %v, want %d [%s]", w.Status.DisruptionsAllowed, disrupted, tc.allowed, tc.disrupted)
			}
			if w.ResourceVersion != tc.pdb.ResourceVersion {
				t.Errorf("write on resourceVersion %q, want the budget's as read %q", w.ResourceVersion, tc.pdb.ResourceVersion)
			}
		})
	}
}
