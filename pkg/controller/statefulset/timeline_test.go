package statefulset

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kroll-dev/kroll/pkg/controller/controllertest"
	"github.com/kroll-dev/kroll/pkg/disruption"
	"github.com/kroll-dev/kroll/pkg/timeline"
)

// budgetSync runs one sync of web, which respects budgets, against a cache holding
// objects, with every eviction refused by web-pdb, and returns the client.
func budgetSync(t *testing.T, objects ...runtime.Object) *fake.Clientset {
	t.Helper()
	client, _ := syncOnce(t, func(c *Controller, client *fake.Clientset, factory informers.SharedInformerFactory) error {
		controllertest.RefuseEvictions(client, "web-pdb")
		return c.RespectBudgets(factory.Policy().V1().PodDisruptionBudgets(), disruption.Ignore)
	}, objects...)
	return client
}

// A rolling update whose first eviction web-pdb refuses: the status write that puts
// the DisruptionBudget condition on the set stamps an open wait on web-pdb into its
// timeline.
func TestSync_budgetWaitIsRecordedInTheTimeline(t *testing.T) {
	two := int32(2)
	set := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "set-uid", Annotations: map[string]string{disruption.Annotation: "Respect"}},
		Spec: appsv1.StatefulSetSpec{Replicas: &two, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			PodManagementPolicy: appsv1.ParallelPodManagement,
			UpdateStrategy:      appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "busybox:1"}}}}},
	}
	client := budgetSync(t, set)
	revs := revisionsOf(t, client)
	pods, err := client.CoreV1().Pods("default").List(context.Background(), metav1.ListOptions{})
	if err != nil || len(revs) != 1 || len(pods.Items) != 2 {
		t.Fatalf("first sync: %d revisions, pods %v (%v), want 1 and 2", len(revs), pods, err)
	}
	objects := []runtime.Object{&revs[0]}
	for i := range pods.Items {
		p := pods.Items[i].DeepCopy()
		p.Status = corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
		objects = append(objects, p)
	}
	next := set.DeepCopy()
	next.Status = appsv1.StatefulSetStatus{Replicas: 2, ReadyReplicas: 2, AvailableReplicas: 2, CurrentReplicas: 2, UpdatedReplicas: 2,
		CurrentRevision: revs[0].Name, UpdateRevision: revs[0].Name}
	next.Spec.Template.Spec.Containers[0].Image = "busybox:2"
	client = budgetSync(t, append(objects, next)...)
	live, err := client.AppsV1().StatefulSets("default").Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tl, err := timeline.Parse(live.Annotations[timeline.Annotation])
	if err != nil || tl.Revision != live.Status.UpdateRevision || len(tl.Waits) != 1 || tl.Waits[0].PDB != "web-pdb" || !tl.Waits[0].Open {
		t.Errorf("timeline %+v (%v), want revision %s with one open wait on web-pdb; conditions %v", tl, err, live.Status.UpdateRevision, live.Status.Conditions)
	}
}
