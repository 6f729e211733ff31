package daemonset

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kroll-dev/kroll/pkg/controller"
	"github.com/kroll-dev/kroll/pkg/controller/controllertest"
	"github.com/kroll-dev/kroll/pkg/disruption"
	"github.com/kroll-dev/kroll/pkg/inplace"
	"github.com/kroll-dev/kroll/pkg/timeline"
)

// budgetSync runs one sync of logs, which respects budgets, on one node against a
// cache holding objects, with every eviction refused by logs-pdb, and returns the
// client.
func budgetSync(t *testing.T, objects ...runtime.Object) *fake.Clientset {
	t.Helper()
	return syncOnce(t, "default/logs", func(c *Controller, client *fake.Clientset, factory informers.SharedInformerFactory) error {
		controllertest.RefuseEvictions(client, "logs-pdb")
		return c.RespectBudgets(factory.Policy().V1().PodDisruptionBudgets(), disruption.Ignore)
	}, objects...)
}

// A rolling update whose eviction of node-0's old pod logs-pdb refuses: the status
// write that puts the DisruptionBudget condition on the DaemonSet stamps an open wait
// on logs-pdb into its timeline.
func TestSync_budgetWaitIsRecordedInTheTimeline(t *testing.T) {
	ds := newDaemonSet("1", "0")
	ds.Annotations[disruption.Annotation] = "Respect"
	client := budgetSync(t, ds)
	revs, err := client.AppsV1().ControllerRevisions("default").List(context.Background(), metav1.ListOptions{})
	if err != nil || len(revs.Items) != 1 {
		t.Fatalf("first sync: revisions %v (%v), want 1", revs, err)
	}
	pods, err := client.CoreV1().Pods("default").List(context.Background(), metav1.ListOptions{})
	if err != nil || len(pods.Items) != 1 {
		t.Fatalf("first sync: pods %v (%v), want 1", pods, err)
	}
	old := pods.Items[0].DeepCopy()
	old.Spec.NodeName = "node-0"
	old.Status = corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
		{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(time.Now().Add(-time.Hour))}}}
	next := ds.DeepCopy()
	next.Spec.Template.Spec.Containers[0].Image = "fluentd:v3"
	next.Annotations[TemplateGenerationAnnotation] = "3" // as the API server counts template changes
	client = budgetSync(t, next, &revs.Items[0], old)
	live, err := client.AppsV1().DaemonSets("default").Get(context.Background(), "logs", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tl, err := timeline.Parse(live.Annotations[timeline.Annotation])
	if err != nil || len(tl.Waits) != 1 || tl.Waits[0].PDB != "logs-pdb" || !tl.Waits[0].Open {
		t.Errorf("timeline %+v (%v), want one open wait on logs-pdb; conditions %v", tl, err, live.Status.Conditions)
	}
}

// A DaemonSet updated in place under Respect: node-0's old pod restarts on fluentd:v3
// only once its disruption is taken from logs-pdb (the budget's status written, the
// pod recorded); with none allowed, the pod is left as it is and the DisruptionBudget
// condition names logs-pdb.
func TestSync_inPlaceTakesTheBudget(t *testing.T) {
	for _, tc := range []struct {
		name      string
		allowed   int32
		wantImage string
		wantTaken bool
	}{
		{"1 allowed: taken, then patched", 1, "fluentd:v3", true},
		{"0 allowed: left on fluentd:v2, held by logs-pdb", 0, "fluentd:v2", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ds := newDaemonSet("1", "0")
			ds.Annotations[disruption.Annotation] = "Respect"
			ds.Annotations[inplace.StrategyAnnotation] = string(inplace.IfPossible)
			client := syncOnce(t, "default/logs", func(*Controller, *fake.Clientset, informers.SharedInformerFactory) error { return nil }, ds)
			revs := must(client.AppsV1().ControllerRevisions("default").List(context.Background(), metav1.ListOptions{}))
			old := must(client.CoreV1().Pods("default").List(context.Background(), metav1.ListOptions{})).Items[0].DeepCopy()
			old.Spec.NodeName = "node-0"
			old.Status = corev1.PodStatus{Phase: corev1.PodRunning,
				ContainerStatuses: []corev1.ContainerStatus{{Name: "agent", Image: "fluentd:v2", Ready: true}},
				Conditions:        []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(time.Now().Add(-time.Hour))}}}
			pdb := &policyv1.PodDisruptionBudget{
				ObjectMeta: metav1.ObjectMeta{Name: "logs-pdb", Namespace: "default", Generation: 1},
				Spec:       policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "logs"}}},
				Status: policyv1.PodDisruptionBudgetStatus{ObservedGeneration: 1, DisruptionsAllowed: tc.allowed,
					DesiredHealthy: 1 - tc.allowed, CurrentHealthy: 1, ExpectedPods: 1},
			}
			next := ds.DeepCopy()
			next.Spec.Template.Spec.Containers[0].Image = "fluentd:v3"
			next.Annotations[TemplateGenerationAnnotation] = "3"
			client = syncOnce(t, "default/logs", func(c *Controller, _ *fake.Clientset, factory informers.SharedInformerFactory) error {
				return c.RespectBudgets(factory.Policy().V1().PodDisruptionBudgets(), disruption.Ignore)
			}, next, &revs.Items[0], old, pdb)
			pod := must(client.CoreV1().Pods("default").Get(context.Background(), old.Name, metav1.GetOptions{}))
			if got := pod.Spec.Containers[0].Image; got != tc.wantImage {
				t.Errorf("pod runs %s, want %s", got, tc.wantImage)
			}
			written := must(client.PolicyV1().PodDisruptionBudgets("default").Get(context.Background(), "logs-pdb", metav1.GetOptions{}))
			if _, taken := written.Status.DisruptedPods[old.Name]; taken != tc.wantTaken || (taken && written.Status.DisruptionsAllowed != 0) {
				t.Errorf("logs-pdb disruptedPods %v, allowed %d; want the pod recorded: %v", written.Status.DisruptedPods, written.Status.DisruptionsAllowed, tc.wantTaken)
			}
			live := must(client.AppsV1().DaemonSets("default").Get(context.Background(), "logs", metav1.GetOptions{}))
			w := controller.BudgetWaitOf(failureConditions, live.Status.Conditions)
			if held := !tc.wantTaken; (w.Reason == disruption.ReasonBudgetExhausted) != held || (held && !strings.Contains(w.Message, "PodDisruptionBudget logs-pdb")) {
				t.Errorf("DisruptionBudget condition %+v, want held %v naming logs-pdb", w, held)
			}
		})
	}
}
