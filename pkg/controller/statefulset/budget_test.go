package statefulset

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"

	"github.com/kroll-dev/kroll/pkg/controller"
	"github.com/kroll-dev/kroll/pkg/disruption"
)

// refusal is the API server's 429 for an eviction web-pdb refuses.
func refusal() error {
	err := apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 0)
	err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{
		Type: "DisruptionBudget", Message: "The disruption budget web-pdb needs 3 healthy pods and has 3 currently"})
	return err
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
			set := newSet(3, appsv1.RetainPersistentVolumeClaimRetentionPolicyType, appsv1.RetainPersistentVolumeClaimRetentionPolicyType)
			set.Spec.VolumeClaimTemplates = nil
			set.Annotations = map[string]string{disruption.Annotation: tc.setting}
			ru := &appsv1.RollingUpdateStatefulSetStrategy{}
			if tc.maxUnavailable > 0 {
				mu := intstr.FromInt32(tc.maxUnavailable)
				ru.MaxUnavailable = &mu
				set.Spec.PodManagementPolicy = appsv1.ParallelPodManagement
			}
			set.Spec.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType, RollingUpdate: ru}
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
