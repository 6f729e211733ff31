package statefulset

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"

	"github.com/kroll-dev/kroll/pkg/controller"
	"github.com/kroll-dev/kroll/pkg/disruption"
	"github.com/kroll-dev/kroll/pkg/inplace"
)

// refusal is the API server's 429 for an eviction web-pdb refuses.
func refusal() error {
	err := apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 0)
	err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{
		Type: "DisruptionBudget", Message: "The disruption budget web-pdb needs 3 healthy pods and has 3 currently"})
	return err
}

// budgetSet is a 3-replica set web without claims, with kroll.dev/disruption-budget:
// setting, updated one pod at a time in order (maxUnavailable 0) or maxUnavailable at
// a time in parallel.
func budgetSet(setting string, maxUnavailable int32) *appsv1.StatefulSet {
	set := newSet(3, appsv1.RetainPersistentVolumeClaimRetentionPolicyType, appsv1.RetainPersistentVolumeClaimRetentionPolicyType)
	set.Spec.VolumeClaimTemplates = nil
	set.Annotations = map[string]string{disruption.Annotation: setting}
	ru := &appsv1.RollingUpdateStatefulSetStrategy{}
	if maxUnavailable > 0 {
		mu := intstr.FromInt32(maxUnavailable)
		ru.MaxUnavailable = &mu
		set.Spec.PodManagementPolicy = appsv1.ParallelPodManagement
	}
	set.Spec.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType, RollingUpdate: ru}
	return set
}

// A rolling update of a set that respects budgets evicts the pods it replaces; a pod
// the budget keeps stays, is not counted as replaced, and the sync's takes say Held —
// which the DisruptionBudget condition then reports, with one Warning event.
func TestUpdateEvictsUnderRespect(t *testing.T) {
	for _, tc := range []struct {
		name           string
		setting        string
		maxUnavailable int32
		refuse         []string
		wantEvicted    string
		wantDeleted    string
		wantOutcome    disruption.Outcome
	}{
		{"Ignore: deleted as upstream, no take-down through a budget", "Ignore", 0, nil, "[]", "[web-2]", disruption.NoneTried},
		{"Respect, ordered: web-2 evicted", "Respect", 0, nil, "[web-2]", "[web-2]", disruption.Taken},
		{"Respect, ordered: web-2 kept by the budget, nothing else tried", "Respect", 0, []string{"web-2"}, "[]", "[]", disruption.Held},
		{"Respect, maxUnavailable 2: web-2 kept, web-1 evicted", "Respect", 2, []string{"web-2"}, "[web-1]", "[web-1]", disruption.Held},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set := budgetSet(tc.setting, tc.maxUnavailable)
			pods := &controller.FakePodControl{EvictErr: map[string]error{}}
			for _, name := range tc.refuse {
				pods.EvictErr[name] = refusal()
			}
			c := updateController(pods)
			c.queue = controller.NewQueue("statefulset-test")
			defer c.queue.ShutDown()
			client := fake.NewClientset()
			factory := informers.NewSharedInformerFactory(client, 0)
			if err := c.RespectBudgets(factory.Policy().V1().PodDisruptionBudgets(), disruption.Ignore); err != nil {
				t.Fatal(err)
			}
			recorder := record.NewFakeRecorder(10)
			c.recorder = recorder
			revs := revisions{current: rev("A"), update: rev("B"), currentSet: set, updateSet: set}
			var takes controller.Takes
			status, err := c.update(context.Background(), set,
				[]*corev1.Pod{setPod(set, 0, "A", true), setPod(set, 1, "A", true), setPod(set, 2, "A", true)}, revs, &takes, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			if got := fmt.Sprint(pods.Evicted); got != tc.wantEvicted {
				t.Errorf("evicted %s, want %s", got, tc.wantEvicted)
			}
			if got := fmt.Sprint(pods.Deleted); got != tc.wantDeleted {
				t.Errorf("deleted %s, want %s", got, tc.wantDeleted)
			}
			if got := takes.Outcome(); got != tc.wantOutcome {
				t.Errorf("outcome %v, want %v", got, tc.wantOutcome)
			}
			c.settleBudget(set, &status, &takes, time.Now())
			w := controller.BudgetWaitOf(failureConditions, status.Conditions)
			if held := tc.wantOutcome == disruption.Held; (w.Reason == disruption.ReasonBudgetExhausted) != held ||
				(held && !strings.Contains(w.Message, "waiting for PodDisruptionBudget web-pdb")) {
				t.Errorf("condition %+v, want held %v naming web-pdb", w, held)
			}
			if tc.wantOutcome == disruption.Held {
				select {
				case e := <-recorder.Events:
					if !strings.Contains(e, "Warning BudgetExhausted Rollout waiting for PodDisruptionBudget web-pdb") {
						t.Errorf("event %q", e)
					}
				default:
					t.Errorf("no BudgetExhausted event")
				}
			}
		})
	}
}

// webPDB is web-pdb over app=nginx in default, minAvailable 2 of 3, allowing allowed.
func webPDB(allowed int32) *policyv1.PodDisruptionBudget {
	return &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "web-pdb", Namespace: "default", Generation: 1, ResourceVersion: "7"},
		Spec:       policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "nginx"}}},
		Status: policyv1.PodDisruptionBudgetStatus{ObservedGeneration: 1, DisruptionsAllowed: allowed, DesiredHealthy: 2,
			CurrentHealthy: 2 + allowed, ExpectedPods: 3},
	}
}

// Given a 3-replica set updated in place from nginx to nginx:2 (revision A → B) and
// web-pdb, when the controller syncs once, then under Respect each pod's image patch
// follows the take of its disruption from the budget (one status write), a pod the
// budget refuses is left as it is and counted held (ordered: nothing further), and a
// budget changed since read (Conflict) lets no pod be written.
func TestUpdateInPlaceTakesTheBudget(t *testing.T) {
	for _, tc := range []struct {
		name           string
		setting        string
		maxUnavailable int32
		allowed        int32
		conflict       bool
		wantPods       string // the pod writes
		wantBudget     string // web-pdb's written disruptedPods, "-" when not written
		wantOutcome    disruption.Outcome
	}{
		{"Ignore: web-2 patched, the budget untouched", "Ignore", 0, 0, false, "[patch web-2]", "-", disruption.NoneTried},
		{"Respect, 1 allowed: web-2's disruption taken, then its patch", "Respect", 0, 1, false, "[patch web-2]", "map[web-2]", disruption.Taken},
		{"Respect, 0 allowed: web-2 left as it is, held", "Respect", 0, 0, false, "[]", "-", disruption.Held},
		{"Respect, maxUnavailable 2, 1 allowed: web-2 patched, web-1 held", "Respect", 2, 1, false, "[patch web-2]", "map[web-2]", disruption.Held},
		{"Respect, the budget changed since read: nothing patched", "Respect", 0, 1, true, "[]", "-", disruption.NoneTried},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set := func(image string) *appsv1.StatefulSet {
				s := budgetSet(tc.setting, tc.maxUnavailable)
				s.Annotations[inplace.StrategyAnnotation] = string(inplace.IfPossible)
				s.Spec.Template.Spec.Containers[0].Image = image
				return s
			}
			from, to := set("nginx"), set("nginx:2")
			pdb := webPDB(tc.allowed)
			pods := &fakePods{}
			c := updateController(pods)
			c.queue = controller.NewQueue("statefulset-test")
			defer c.queue.ShutDown()
			client := fake.NewClientset(pdb)
			if tc.conflict {
				client.PrependReactor("update", "poddisruptionbudgets", func(k8stesting.Action) (bool, runtime.Object, error) {
					return true, nil, apierrors.NewConflict(policyv1.Resource("poddisruptionbudgets"), "web-pdb", fmt.Errorf("modified"))
				})
			}
			c.client = client
			factory := informers.NewSharedInformerFactory(client, 0)
			if err := c.RespectBudgets(factory.Policy().V1().PodDisruptionBudgets(), disruption.Ignore); err != nil {
				t.Fatal(err)
			}
			if err := factory.Policy().V1().PodDisruptionBudgets().Informer().GetIndexer().Add(pdb); err != nil {
				t.Fatal(err)
			}
			revs := revisions{current: rev("A"), update: rev("B"), currentSet: from, updateSet: to}
			var takes controller.Takes
			var set3 []*corev1.Pod
			for i := range 3 {
				p := setPod(from, i, "A", true)
				p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "nginx", Image: "nginx", Ready: true}}
				set3 = append(set3, p)
			}
			_, err := c.update(context.Background(), to, set3, revs, &takes, time.Now())
			if (err != nil) != tc.conflict {
				t.Fatalf("update error %v, want one: %v", err, tc.conflict)
			}
			if got := fmt.Sprint(pods.actions); got != tc.wantPods {
				t.Errorf("pod writes %s, want %s", got, tc.wantPods)
			}
			got, _ := client.PolicyV1().PodDisruptionBudgets("default").Get(context.Background(), "web-pdb", metav1.GetOptions{})
			written := "-"
			if got.ResourceVersion != pdb.ResourceVersion || len(got.Status.DisruptedPods) > 0 {
				var names []string
				for n := range got.Status.DisruptedPods {
					names = append(names, n)
				}
				written = fmt.Sprintf("map%v", names)
			}
			if written != tc.wantBudget {
				t.Errorf("web-pdb written %s, want %s", written, tc.wantBudget)
			}
			if got := takes.Outcome(); got != tc.wantOutcome {
				t.Errorf("outcome %v, want %v", got, tc.wantOutcome)
			}
		})
	}
}
