package deployment

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kroll-dev/kroll/pkg/disruption"
	"github.com/kroll-dev/kroll/pkg/rollout"
	"github.com/kroll-dev/kroll/pkg/timeline"
)

// heldRS is an old ReplicaSet whose controller reports a budget holding message, since.
func heldRS(name, message string, since time.Time) *appsv1.ReplicaSet {
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if message != "" {
		rs.Status.Conditions = []appsv1.ReplicaSetCondition{{Type: disruption.ConditionType, Status: corev1.ConditionFalse,
			Reason: disruption.ReasonBudgetExhausted, Message: message, LastTransitionTime: metav1.NewTime(since)}}
	}
	return rs
}

func TestSetBudgetCondition(t *testing.T) {
	t0, t1, now := time.Unix(100, 0), time.Unix(150, 0), time.Unix(200, 0)
	held := func(message string, since time.Time) appsv1.DeploymentCondition {
		return appsv1.DeploymentCondition{Type: budgetConditionType, Status: corev1.ConditionFalse, Reason: disruption.ReasonBudgetExhausted,
			Message: message, LastTransitionTime: metav1.NewTime(since), LastUpdateTime: metav1.NewTime(since)}
	}
	for _, tc := range []struct {
		name    string
		before  []appsv1.DeploymentCondition
		setting string
		old     []*appsv1.ReplicaSet
		want    string // the condition's message after; "" for none
		since   time.Time
		updated time.Time
	}{
		{"no old ReplicaSet held: no condition", nil, "", []*appsv1.ReplicaSet{heldRS("a", "", t0)}, "", time.Time{}, time.Time{}},
		{"an old ReplicaSet held: the Deployment waits since it was", nil, "", []*appsv1.ReplicaSet{heldRS("a", "", t0), heldRS("b", "waiting for PodDisruptionBudget p", t1)},
			"waiting for PodDisruptionBudget p", t1, now},
		{"still held, same words: unchanged", []appsv1.DeploymentCondition{held("waiting for PodDisruptionBudget p", t0)}, "", []*appsv1.ReplicaSet{heldRS("b", "waiting for PodDisruptionBudget p", t1)},
			"waiting for PodDisruptionBudget p", t0, t0},
		{"still held, new numbers: message updated, transition kept", []appsv1.DeploymentCondition{held("old numbers", t0)}, "", []*appsv1.ReplicaSet{heldRS("b", "new numbers", t1)},
			"new numbers", t0, now},
		{"budget allows again: condition removed", []appsv1.DeploymentCondition{held("old numbers", t0)}, "", []*appsv1.ReplicaSet{heldRS("b", "", t1)},
			"", time.Time{}, time.Time{}},
		{"an invalid setting: said in the condition", nil, "respect", []*appsv1.ReplicaSet{heldRS("a", "", t0)},
			`kroll.dev/disruption-budget="respect" is not valid: want Respect or Ignore`, now, now},
	} {
		status := appsv1.DeploymentStatus{Conditions: append([]appsv1.DeploymentCondition(nil), tc.before...)}
		d := &appsv1.Deployment{}
		if tc.setting != "" {
			d.Annotations = map[string]string{disruption.Annotation: tc.setting}
		}
		setBudgetCondition(&status, &pass{d: d, oldRSs: tc.old}, now)
		c := rollout.Condition(&status, budgetConditionType)
		switch {
		case tc.want == "" && c != nil:
			t.Errorf("%s: condition %q left", tc.name, c.Message)
		case tc.want == "":
		case c == nil:
			t.Errorf("%s: no condition, want %q", tc.name, tc.want)
		case c.Message != tc.want || !c.LastTransitionTime.Time.Equal(tc.since) || !c.LastUpdateTime.Time.Equal(tc.updated) || (c.Reason != disruption.ReasonBudgetExhausted) != (tc.setting != ""):
			t.Errorf("%s: %q since %v updated %v (%s); want %q since %v updated %v", tc.name, c.Message, c.LastTransitionTime, c.LastUpdateTime, c.Reason, tc.want, tc.since, tc.updated)
		}
	}
}

func TestNotHeld(t *testing.T) {
	t0 := time.Unix(100, 0)
	free, held := heldRS("free", "", t0), heldRS("held", "waiting for PodDisruptionBudget p", t0)
	for _, tc := range []struct {
		name string
		old  []*appsv1.ReplicaSet
		want int
	}{
		{"none held: all drain in a moment", []*appsv1.ReplicaSet{free}, 1},
		{"a held one is left out: the new ReplicaSet may grow into the room there is", []*appsv1.ReplicaSet{free, held}, 1},
		{"only held ones: nothing to wait for", []*appsv1.ReplicaSet{held}, 0},
	} {
		got := NotHeld(tc.old)
		if len(got) != tc.want {
			t.Errorf("%s: %d ReplicaSets, want %d", tc.name, len(got), tc.want)
		}
		for _, rs := range got {
			if rs == held {
				t.Errorf("%s: the held ReplicaSet is among them", tc.name)
			}
		}
	}
}

// A rollout step (maxUnavailable 3, maxSurge 0) whose old ReplicaSet reports a budget
// holding it: the Deployment's status carries the condition, with one Warning event
// naming the budget; the new ReplicaSet grows into the room the pods leave (the old
// ReplicaSet's 8 pods for a size of 7 leave 2).
func TestSync_heldByBudget(t *testing.T) {
	const held = "waiting for PodDisruptionBudget web-pdb: 1 pod to take down, disruptionsAllowed 0 (8 of 10 pods must stay healthy, 8 are)"
	d := newDeployment(10, "nginx:2", "0", "3")
	d.Annotations = map[string]string{disruption.Annotation: "Respect", "deployment.kubernetes.io/revision": "2"}
	old := replicaSetOf(d, "nginx:1", 1, 7, 8, time.Hour)
	old.Status.Replicas = 8
	old.Status.Conditions = []appsv1.ReplicaSetCondition{{Type: disruption.ConditionType, Status: corev1.ConditionFalse,
		Reason: disruption.ReasonBudgetExhausted, Message: held, LastTransitionTime: metav1.Now()}}
	cur := replicaSetOf(d, "nginx:2", 2, 0, 0, time.Minute)
	for _, rs := range []*appsv1.ReplicaSet{old, cur} {
		rs.Annotations[disruption.Annotation] = "Respect" // the Deployment's settings, kept on every ReplicaSet
	}
	f := newFixture(t, d, old, cur)
	f.sync()
	t.Log(f.writes())
	got, err := f.client.AppsV1().Deployments("default").Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c := rollout.Condition(&got.Status, budgetConditionType); c == nil || c.Message != held || c.Status != corev1.ConditionFalse {
		t.Errorf("DisruptionBudget condition %+v, want False with %q", c, held)
	}
	if ev := f.events(); !strings.Contains(ev, "Warning BudgetExhausted Rollout "+held) {
		t.Errorf("events %q lack the BudgetExhausted warning", ev)
	}
	// The timeline stamped with the status write opens a wait on the budget.
	if tl, err := timeline.Parse(got.Annotations[timeline.Annotation]); err != nil || len(tl.Waits) != 1 || tl.Waits[0].PDB != "web-pdb" || !tl.Waits[0].Open {
		t.Errorf("timeline waits %+v (%v), want one open wait on web-pdb", tl.Waits, err)
	}
	if rs := f.lastReplicaSetWrite(); rs.Name != cur.Name || *rs.Spec.Replicas != 2 {
		t.Errorf("last ReplicaSet write %s to %d, want %s to 2", rs.Name, *rs.Spec.Replicas, cur.Name)
	}
}
