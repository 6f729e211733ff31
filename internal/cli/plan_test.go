package cli

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kroll-dev/kroll/pkg/disruption"
	"github.com/kroll-dev/kroll/pkg/gates"
	"github.com/kroll-dev/kroll/pkg/history"
)

// The plan of a StatefulSet that respects budgets reads its namespace's
// PodDisruptionBudgets: minAvailable 3 of 3 holds its first replacement. A user who
// may not list budgets gets the plan with a note.
func TestRolloutPlan_accountsForBudgets(t *testing.T) {
	n, zero := int32(3), int32(0)
	app := map[string]string{"app": "web"}
	set := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "web-uid", Annotations: map[string]string{disruption.Annotation: "Respect"}},
		Spec: appsv1.StatefulSetSpec{Replicas: &n, Selector: &metav1.LabelSelector{MatchLabels: app},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: app},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1.25"}}}},
			PodManagementPolicy: appsv1.OrderedReadyPodManagement,
			UpdateStrategy: appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType,
				RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{Partition: &zero}}},
	}
	data, err := history.TemplatePatch(set)
	if err != nil {
		t.Fatal(err)
	}
	rev := history.RevisionName("web", history.RevisionHash(data, 0))
	set.Status.CurrentRevision, set.Status.UpdateRevision = rev, rev
	objs := []runtime.Object{set, &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "web-pdb", Namespace: "default"},
		Spec:       policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: app}},
		Status:     policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: 0, DesiredHealthy: 3, CurrentHealthy: 3, ExpectedPods: 3},
	}}
	for o := range 3 {
		objs = append(objs, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("web-%d", o), Namespace: "default",
				Labels:          map[string]string{"app": "web", appsv1.StatefulSetRevisionLabel: rev},
				OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(set, appsv1.SchemeGroupVersion.WithKind("StatefulSet"))}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
				{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(time.Now().Add(-time.Hour))}}},
		})
	}
	next := set.DeepCopy()
	next.Spec.Template.Spec.Containers[0].Image = "nginx:1.26"
	ref := workloadRef{kind: kindStatefulSet, namespace: "default", name: "web"}

	client := fake.NewClientset(objs...)
	plan, err := ref.plan(context.Background(), client, next, gates.Defaults())
	if err != nil {
		t.Fatal(err)
	}
	want := "batch 1: PodDisruptionBudget web-pdb allows 0 disruptions: the step takes down 0 of 1 old pods now, the rest as the budget allows"
	if plan.Budget != want {
		t.Errorf("budget %q\nwant %q\n%s", plan.Budget, want, plan.Text())
	}

	client = fake.NewClientset(objs...)
	client.PrependReactor("list", "poddisruptionbudgets", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.NewForbidden(policyv1.Resource("poddisruptionbudgets"), "", fmt.Errorf("no"))
	})
	plan, err = ref.plan(context.Background(), client, next, gates.Defaults())
	if err != nil || plan.Budget != "" || len(plan.Notes) == 0 || len(plan.Batches) != 3 {
		t.Errorf("budgets forbidden: %v, budget %q, notes %q, %d batches; want the plan with a note", err, plan.Budget, plan.Notes, len(plan.Batches))
	}
}
