package deployment

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"

	"github.com/kroll-dev/kroll/pkg/disruption"
	"github.com/kroll-dev/kroll/pkg/inplace"
	"github.com/kroll-dev/kroll/pkg/rollout"
)

// webBudget is web-pdb over the Deployment's pods with disruptionsAllowed allowed
// (minAvailable 2 of 4) and disruptedPods disrupted.
func webBudget(allowed int32, disrupted map[string]metav1.Time) *policyv1.PodDisruptionBudget {
	return &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "web-pdb", Namespace: "default", Generation: 1, ResourceVersion: "7"},
		Spec:       policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}},
		Status: policyv1.PodDisruptionBudgetStatus{ObservedGeneration: 1, DisruptionsAllowed: allowed, DesiredHealthy: 2,
			CurrentHealthy: 2 + allowed, ExpectedPods: 4, DisruptedPods: disrupted},
	}
}

// respectScene is inPlaceScene under kroll.dev/disruption-budget: Respect.
func respectScene() (d *appsv1.Deployment, old, cur *appsv1.ReplicaSet, pods []runtime.Object) {
	d, old, cur, pods = inPlaceScene()
	for _, a := range []map[string]string{d.Annotations, old.Annotations, cur.Annotations} {
		a[disruption.Annotation] = "Respect" // the Deployment's settings, kept on every ReplicaSet
	}
	return d, old, cur, pods
}

// budgetFixture is newFixture for inPlaceScene's Deployment under Respect, with pdb in
// the controller's cache.
func budgetFixture(t *testing.T, pdb *policyv1.PodDisruptionBudget, objects ...runtime.Object) *fixture {
	f := newFixture(t, append(objects, pdb)...)
	factory := informers.NewSharedInformerFactory(f.client, 0)
	if err := f.c.RespectBudgets(factory.Policy().V1().PodDisruptionBudgets(), disruption.Ignore); err != nil {
		t.Fatal(err)
	}
	if err := factory.Policy().V1().PodDisruptionBudgets().Informer().GetIndexer().Add(pdb); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *fixture) budgetWritten() *policyv1.PodDisruptionBudget {
	pdb, err := f.client.PolicyV1().PodDisruptionBudgets("default").Get(context.Background(), "web-pdb", metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	return pdb
}

// Under Respect an in-place pick takes its pods' disruptions from the budget, in one
// status write before the hand-over record, and picks no more than it allows: with
// maxUnavailable 2 and disruptionsAllowed 1, one pod.
func TestSync_inPlaceTakesTheBudget(t *testing.T) {
	d, old, cur, pods := respectScene()
	f := budgetFixture(t, webBudget(1, nil), append([]runtime.Object{d, old, cur}, pods...)...)
	f.sync()
	want := []string{"update poddisruptionbudgets/status web-pdb", "patch replicasets " + old.Name}
	if got := f.writes(); !slices.Equal(got, want) {
		t.Fatalf("writes %v, want %v", got, want)
	}
	given := inplace.Names(f.lastReplicaSetWrite(), inplace.LeavingAnnotation)
	pdb := f.budgetWritten()
	if given.Len() != 1 || pdb.Status.DisruptionsAllowed != 0 || len(pdb.Status.DisruptedPods) != 1 {
		t.Fatalf("gave away %v, budget left %d allowed with %v disrupted; want one pod, given away and recorded, 0 allowed",
			given.UnsortedList(), pdb.Status.DisruptionsAllowed, pdb.Status.DisruptedPods)
	}
	if _, ok := pdb.Status.DisruptedPods[given.UnsortedList()[0]]; !ok {
		t.Errorf("the budget records %v, not the pod given away", pdb.Status.DisruptedPods)
	}
}

// A budget with no disruption left holds the pick: no pod is given away, and the
// Deployment says which budget holds it, with one Warning event.
func TestSync_inPlaceHeldByTheBudget(t *testing.T) {
	const held = "waiting for PodDisruptionBudget web-pdb: 2 pods to take down, disruptionsAllowed 0 (2 of 4 pods must stay healthy, 2 are)"
	d, old, cur, pods := respectScene()
	f := budgetFixture(t, webBudget(0, nil), append([]runtime.Object{d, old, cur}, pods...)...)
	f.sync()
	if got := f.writes(); !slices.Equal(got, []string{"update deployments/status web"}) {
		t.Fatalf("writes %v, want the status alone", got)
	}
	got, _ := f.client.AppsV1().Deployments("default").Get(context.Background(), "web", metav1.GetOptions{})
	if c := rollout.Condition(&got.Status, budgetConditionType); c == nil || c.Message != held || c.Reason != disruption.ReasonBudgetExhausted {
		t.Errorf("DisruptionBudget condition %+v, want BudgetExhausted %q", c, held)
	}
	if ev := f.events(); !strings.Contains(ev, "Warning BudgetExhausted Rollout "+held) {
		t.Errorf("events %q lack the BudgetExhausted warning", ev)
	}
}

// A pod Ready again after its in-place restart gives its disruption back: its entry
// leaves disruptedPods in the pass's one budget write. One whose restart has not
// begun (Ready since before the entry) keeps it.
func TestSync_inPlaceReleasesTheBudget(t *testing.T) {
	d, old, cur, _ := respectScene()
	taken := metav1.NewTime(time.Now().Add(-30 * time.Second))
	back, waiting := podOf(cur, "a"), podOf(old, "b")
	back.Status.Conditions[0].LastTransitionTime = metav1.NewTime(time.Now().Add(-5 * time.Second))
	pdb := webBudget(0, map[string]metav1.Time{"a": taken, "b": taken})
	f := budgetFixture(t, pdb, d, old, cur, back, waiting, podOf(old, "c"), podOf(old, "d"))
	if _, err := f.c.advanceInPlace(context.Background(), newPass(d, []*appsv1.ReplicaSet{old, cur}), false); err != nil {
		t.Fatal(err)
	}
	w := f.budgetWritten()
	if _, ok := w.Status.DisruptedPods["a"]; ok || len(w.Status.DisruptedPods) != 1 {
		t.Errorf("disruptedPods %v after the pass, want b alone (a Ready again, b not restarted)", w.Status.DisruptedPods)
	}
}
