package dashboard

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	krt "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// thousandDeployments are 1,000 one-pod Deployments across 10 namespaces, each with
// its ReplicaSet, its pod and three events.
func thousandDeployments() []krt.Object {
	var objs []krt.Object
	yes := true
	for i := range 1000 {
		ns := fmt.Sprintf("scale-%d", i%10)
		d := deployment(ns, fmt.Sprintf("app-%03d", i/10), 1, false)
		d.Annotations = map[string]string{"deployment.kubernetes.io/revision": "1"}
		d.Status = appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1}
		labels := map[string]string{"app": d.Name, "pod-template-hash": "h"}
		one := int32(1)
		rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: d.Name + "-h", UID: types.UID("rs-" + ns + d.Name), Labels: labels,
			Annotations:     map[string]string{"deployment.kubernetes.io/revision": "1"},
			OwnerReferences: []metav1.OwnerReference{{Kind: "Deployment", Name: d.Name, UID: d.UID, Controller: &yes}}},
			Spec: appsv1.ReplicaSetSpec{Replicas: &one, Template: d.Spec.Template}, Status: appsv1.ReplicaSetStatus{Replicas: 1, ReadyReplicas: 1, AvailableReplicas: 1}}
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: d.Name + "-h-x", UID: types.UID("pod-" + ns + d.Name), Labels: labels,
			OwnerReferences: []metav1.OwnerReference{{Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID, Controller: &yes}}},
			Spec: d.Spec.Template.Spec, Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}}
		objs = append(objs, d, rs, p)
		for e := range 3 {
			objs = append(objs, &corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("%s.%d", d.Name, e)}, Reason: "ScalingReplicaSet",
				Message: "Scaled up replica set " + rs.Name + " from 0 to 1", InvolvedObject: corev1.ObjectReference{Kind: "Deployment", Name: d.Name, UID: d.UID}})
		}
	}
	return objs
}

// BenchmarkListOfThousandDeployments is the list's first page of 1,000 Deployments
// (100 rows, all 1,000 computed to order them), rendered from the informers' caches
// as a browser asks for it after a change (the rows are computed again each time, as
// for a first render):
//
//	go test -run '^$' -bench ListOfThousand -benchtime 10x ./pkg/dashboard
func BenchmarkListOfThousandDeployments(b *testing.B) {
	h := newHarness(b, nil, thousandDeployments()...)
	resp, err := h.browser.Get(h.http.URL + "/?token=secret-token-123")
	if err != nil {
		b.Fatal(err)
	}
	if n := strings.Count(readBody(resp), `data-workload="scale-`); n != ListPageSize {
		b.Fatalf("the list's first page has %d rows, want %d", n, ListPageSize)
	}
	b.ResetTimer()
	for range b.N {
		// As after a change in the cluster: the rows are computed again, not reused.
		h.server.opts.Cache.changed(true)
		resp, err := h.browser.Get(h.http.URL + "/")
		if err != nil {
			b.Fatal(err)
		}
		readBody(resp)
	}
	b.StopTimer()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	b.ReportMetric(float64(m.HeapInuse>>20), "MiB-heap")
}
