package controllertest

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
)

// Seed puts objects in the caches of factory's informers of their kinds, as a
// controller's sync would find them (the informers are not started).
func Seed(t testing.TB, factory informers.SharedInformerFactory, objects ...runtime.Object) {
	t.Helper()
	for _, o := range objects {
		var inf cache.SharedIndexInformer
		switch o.(type) {
		case *appsv1.StatefulSet:
			inf = factory.Apps().V1().StatefulSets().Informer()
		case *appsv1.DaemonSet:
			inf = factory.Apps().V1().DaemonSets().Informer()
		case *appsv1.ControllerRevision:
			inf = factory.Apps().V1().ControllerRevisions().Informer()
		case *corev1.ConfigMap:
			inf = factory.Core().V1().ConfigMaps().Informer()
		case *corev1.Pod:
			inf = factory.Core().V1().Pods().Informer()
		case *corev1.Node:
			inf = factory.Core().V1().Nodes().Informer()
		case *policyv1.PodDisruptionBudget:
			inf = factory.Policy().V1().PodDisruptionBudgets().Informer()
		default:
			t.Fatalf("Seed: no informer for %T", o)
		}
		if err := inf.GetIndexer().Add(o); err != nil {
			t.Fatal(err)
		}
	}
}
