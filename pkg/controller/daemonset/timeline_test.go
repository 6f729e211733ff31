package daemonset

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kroll-dev/kroll/pkg/controller/controllertest"
	"github.com/kroll-dev/kroll/pkg/disruption"
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
