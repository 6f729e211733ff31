package controller

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kroll-dev/kroll/pkg/disruption"
)

// fakeBudgetStatus records the budget writes and returns each with its
// resourceVersion one higher, as the API server does; conflict makes every write fail.
type fakeBudgetStatus struct {
	writes   []string
	conflict bool
}

var _ BudgetStatusWriter = &fakeBudgetStatus{}

func (f *fakeBudgetStatus) UpdateStatus(_ context.Context, pdb *policyv1.PodDisruptionBudget, _ metav1.UpdateOptions) (*policyv1.PodDisruptionBudget, error) {
	if f.conflict {
		return nil, apierrors.NewConflict(schema.GroupResource{Group: "policy", Resource: "poddisruptionbudgets"}, pdb.Name, fmt.Errorf("the object has been modified"))
	}
	var disrupted []string
	for name := range pdb.Status.DisruptedPods {
		disrupted = append(disrupted, name)
	}
	sort.Strings(disrupted)
	f.writes = append(f.writes, fmt.Sprintf("%s@%s allowed %d disrupted [%s]", pdb.Name, pdb.ResourceVersion,
		pdb.Status.DisruptionsAllowed, strings.Join(disrupted, ",")))
	out := pdb.DeepCopy()
	var rv int
	fmt.Sscan(pdb.ResourceVersion, &rv)
	out.ResourceVersion = fmt.Sprint(rv + 1)
	return out, nil
}

// webPDB is web-pdb over app=nginx, minAvailable 3 of 4, with allowed disruptions
// allowed and disrupted's entries taken 30s before now.
func webPDB(allowed int32, now time.Time, disrupted ...string) *policyv1.PodDisruptionBudget {
	entries := map[string]metav1.Time{}
	for _, name := range disrupted {
		entries[name] = metav1.NewTime(now.Add(-30 * time.Second))
	}
	return &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "web-pdb", Namespace: "ns", Generation: 1, ResourceVersion: "7"},
		Spec:       policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "nginx"}}},
		Status: policyv1.PodDisruptionBudgetStatus{ObservedGeneration: 1, DisruptionsAllowed: allowed, DesiredHealthy: 3,
			CurrentHealthy: 3 + allowed, ExpectedPods: 4, DisruptedPods: entries},
	}
}

// budgetsWith is SetBudgets under the default def over a cache holding pdb.
func budgetsWith(t *testing.T, def disruption.Mode, pdb *policyv1.PodDisruptionBudget) *SetBudgets {
	t.Helper()
	factory := informers.NewSharedInformerFactory(fake.NewClientset(), 0)
	queue := NewQueue("inplace-budget-test")
	t.Cleanup(queue.ShutDown)
	b, _, err := NewSetBudgets(factory.Policy().V1().PodDisruptionBudgets(), def, queue)
	if err != nil {
		t.Fatal(err)
	}
	if err := factory.Policy().V1().PodDisruptionBudgets().Informer().GetIndexer().Add(pdb); err != nil {
		t.Fatal(err)
	}
	return b
}

// nginxPod is pod name (app=nginx) with image in its spec, reported running, Ready
// since readySince.
func nginxPod(name, image string, readySince time.Time) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name), Labels: map[string]string{"app": "nginx"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "nginx", Image: image}}},
		Status: corev1.PodStatus{
			ContainerStatuses: []corev1.ContainerStatus{{Name: "nginx", Image: image, Ready: true}},
			Conditions:        []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(readySince)}},
		},
	}
}

// Given a set's pods picked for an in-place update to nginx:2 and web-pdb, when the
// sync asks the budgets (Restart) and ends (Release), then the pods that restart take
// their disruptions in one conflict-checked status write before any of them is
// written, the releases of pods Ready again on nginx:2 ride in it, the pods refused
// stay and are counted held by web-pdb, and a set that ignores budgets writes nothing.
func TestInPlaceBudget(t *testing.T) {
	now := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	target := &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "nginx", Image: "nginx:2"}}}}
	old := func(name string) *corev1.Pod { return nginxPod(name, "nginx:1", now.Add(-time.Hour)) }
	back := func(name string) *corev1.Pod { return nginxPod(name, "nginx:2", now.Add(-5*time.Second)) }
	restarting := func(name string) *corev1.Pod {
		p := nginxPod(name, "nginx:2", now.Add(-time.Hour))
		p.Status.ContainerStatuses[0].Image = "nginx:1" // patched, the kubelet not yet restarting it
		return p
	}
	labelsOnly := nginxPod("web-1", "nginx:2", now.Add(-time.Hour)) // runs nginx:2 already: restarts nothing
	for _, tc := range []struct {
		name    string
		setting string
		pdb     *policyv1.PodDisruptionBudget
		updated []*corev1.Pod
		picked  []*corev1.Pod
		// conflict: the budget changed since it was read.
		conflict bool
		wantGo   string
		// wantWrites are the budget writes, Restart's then Release's.
		wantWrites string
		wantErr    bool
		outcome    disruption.Outcome
		heldBy     string
		held       int32
	}{
		{name: "Ignore: every pod goes, nothing written", setting: "Ignore", pdb: webPDB(0, now),
			picked: []*corev1.Pod{old("web-3"), old("web-2")}, wantGo: "web-3,web-2", wantWrites: "[]", outcome: disruption.NoneTried},
		{name: "1 allowed, 2 picked: web-3 takes it (one write), web-2 stays, held by web-pdb", setting: "Respect", pdb: webPDB(1, now),
			picked: []*corev1.Pod{old("web-3"), old("web-2")}, wantGo: "web-3",
			wantWrites: "[web-pdb@7 allowed 0 disrupted [web-3]]", outcome: disruption.Held, heldBy: "web-pdb", held: 1},
		{name: "0 allowed, 3 of 3 healthy: nothing goes, nothing written, held", setting: "Respect", pdb: webPDB(0, now),
			picked: []*corev1.Pod{old("web-3")}, wantWrites: "[]", outcome: disruption.Held, heldBy: "web-pdb", held: 1},
		{name: "a label-only change restarts nothing: goes free, nothing asked", setting: "Respect", pdb: webPDB(0, now),
			picked: []*corev1.Pod{labelsOnly}, wantGo: "web-1", wantWrites: "[]", outcome: disruption.NoneTried},
		{name: "web-3 already recorded (a retry after a failed pod write): goes, nothing new written", setting: "Respect", pdb: webPDB(0, now, "web-3"),
			picked: []*corev1.Pod{old("web-3")}, wantGo: "web-3", wantWrites: "[]", outcome: disruption.Taken},
		{name: "web-3 Ready again on nginx:2: released in the write that takes web-2's", setting: "Respect", pdb: webPDB(1, now, "web-3"),
			updated: []*corev1.Pod{back("web-3")}, picked: []*corev1.Pod{old("web-2")}, wantGo: "web-2",
			wantWrites: "[web-pdb@7 allowed 0 disrupted [web-2]]", outcome: disruption.Taken},
		{name: "nothing picked: the release is written at the sync's end", setting: "Respect", pdb: webPDB(0, now, "web-3"),
			updated: []*corev1.Pod{back("web-3")}, wantWrites: "[web-pdb@7 allowed 0 disrupted []]", outcome: disruption.NoneTried},
		{name: "web-3 patched, still restarting: its entry kept", setting: "Respect", pdb: webPDB(0, now, "web-3"),
			updated: []*corev1.Pod{restarting("web-3")}, wantWrites: "[]", outcome: disruption.NoneTried},
		{name: "the budget changed since read (Conflict): none goes, the error returned", setting: "Respect", pdb: webPDB(1, now),
			picked: []*corev1.Pod{old("web-3")}, conflict: true, wantWrites: "[]", wantErr: true, outcome: disruption.NoneTried},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := budgetsWith(t, disruption.Ignore, tc.pdb)
			set := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", Annotations: map[string]string{disruption.Annotation: tc.setting}}}
			w := &fakeBudgetStatus{conflict: tc.conflict}
			var takes Takes
			ib := b.InPlace(set, tc.updated, func(string) BudgetStatusWriter { return w }, &takes, now)
			went, err := ib.Restart(context.Background(), tc.picked, target)
			if (err != nil) != tc.wantErr {
				t.Fatalf("Restart error %v, want error %v", err, tc.wantErr)
			}
			if err == nil {
				if err := ib.Release(context.Background()); err != nil {
					t.Fatal(err)
				}
			}
			var names []string
			for _, p := range went {
				names = append(names, p.Name)
			}
			if got := strings.Join(names, ","); got != tc.wantGo {
				t.Errorf("went %q, want %q", got, tc.wantGo)
			}
			if got := fmt.Sprintf("%v", w.writes); got != tc.wantWrites {
				t.Errorf("writes %s, want %s", got, tc.wantWrites)
			}
			if got := takes.Outcome(); got != tc.outcome {
				t.Errorf("outcome %v, want %v", got, tc.outcome)
			}
			if by, n := takes.Held(); by != tc.heldBy || n != tc.held {
				t.Errorf("held %d by %q, want %d by %q", n, by, tc.held, tc.heldBy)
			}
		})
	}
}

// Two asks in one sync (a StatefulSet asks pod by pod): the second write carries the
// resourceVersion the first returned, and sees the first's take.
func TestInPlaceBudgetSecondAsk(t *testing.T) {
	now := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	target := &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "nginx", Image: "nginx:2"}}}}
	b := budgetsWith(t, disruption.Respect, webPDB(2, now))
	w := &fakeBudgetStatus{}
	var takes Takes
	ib := b.InPlace(&appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns"}}, nil,
		func(string) BudgetStatusWriter { return w }, &takes, now)
	for _, name := range []string{"web-3", "web-2", "web-1"} {
		if _, err := ib.Restart(context.Background(), []*corev1.Pod{nginxPod(name, "nginx:1", now.Add(-time.Hour))}, target); err != nil {
			t.Fatal(err)
		}
	}
	want := "[web-pdb@7 allowed 1 disrupted [web-3] web-pdb@8 allowed 0 disrupted [web-2,web-3]]"
	if got := fmt.Sprintf("%v", w.writes); got != want {
		t.Errorf("writes %s, want %s (web-1 refused)", got, want)
	}
	if by, n := takes.Held(); by != "web-pdb" || n != 1 {
		t.Errorf("held %d by %q, want web-1 held by web-pdb", n, by)
	}
}

func TestTakesAddInPlace(t *testing.T) {
	for _, tc := range []struct {
		name    string
		asks    [][2]int // asked, went
		limits  []string
		outcome disruption.Outcome
		heldBy  string
		held    int32
	}{
		{name: "2 asked, 2 went: taken", asks: [][2]int{{2, 2}}, limits: []string{""}, outcome: disruption.Taken},
		{name: "2 asked, 1 went, web-pdb refusing: held 1 by web-pdb", asks: [][2]int{{2, 1}}, limits: []string{"web-pdb"},
			outcome: disruption.Held, heldBy: "web-pdb", held: 1},
		{name: "refused by web-pdb, then by db-pdb: the first refuser named, both counted", asks: [][2]int{{1, 0}, {1, 0}},
			limits: []string{"web-pdb", "db-pdb"}, outcome: disruption.Held, heldBy: "web-pdb", held: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var takes Takes
			for i, a := range tc.asks {
				takes.addInPlace(a[0], a[1], tc.limits[i])
			}
			if got := takes.Outcome(); got != tc.outcome {
				t.Errorf("outcome %v, want %v", got, tc.outcome)
			}
			if by, n := takes.Held(); by != tc.heldBy || n != tc.held {
				t.Errorf("held %d by %q, want %d by %q", n, by, tc.held, tc.heldBy)
			}
		})
	}
}
