package clustertest

import (
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes/fake"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
)

// Given a 20-replica Deployment scaled to 30 and its ReplicaSets already resized for
// 30, when the watcher still holds the 20-replica spec, then the mixed state is dropped
// if the live Deployment is past it, and recorded as broken if it is not.
func TestDeploymentWatcherDropsMixedStates(t *testing.T) {
	deployment := func(generation int64, replicas int32) *appsv1.Deployment {
		surge := intstr.FromString("25%")
		return &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "d-uid", Generation: generation},
			Spec: appsv1.DeploymentSpec{Replicas: ptr.To(replicas),
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
				Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
					RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: &surge, MaxUnavailable: &surge}}},
			Status: appsv1.DeploymentStatus{ObservedGeneration: generation, AvailableReplicas: replicas},
		}
	}
	replicaSet := func(hash string, replicas int32) *appsv1.ReplicaSet {
		return &appsv1.ReplicaSet{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-" + hash,
				Labels:          map[string]string{appsv1.DefaultDeploymentUniqueLabelKey: hash},
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", UID: "d-uid", Controller: ptr.To(true)}}},
			Spec:   appsv1.ReplicaSetSpec{Replicas: ptr.To(replicas)},
			Status: appsv1.ReplicaSetStatus{AvailableReplicas: replicas},
		}
	}
	for _, tc := range []struct {
		name       string
		live       *appsv1.Deployment
		wantBroken string
		wantMixed  int
	}{
		{"live spec is newer", deployment(2, 30), "", 1},
		{"live spec is the cached one", deployment(1, 20), "ReplicaSets want 33 pods, more than 20 replicas + 5 surge", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			deployments := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
			replicaSets := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
			pods := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
			must(t, deployments.Add(deployment(1, 20)))
			older, newer := replicaSet("older", 23), replicaSet("newer", 10)
			older.Spec.Template.Spec.NodeName, newer.Spec.Template.Spec.NodeName = "a", "b" // two templates
			must(t, replicaSets.Add(older))
			must(t, replicaSets.Add(newer))
			w := &DeploymentWatcher{name: "web", client: fake.NewClientset(tc.live),
				deployments: appslisters.NewDeploymentLister(deployments).Deployments("ns"),
				replicaSets: appslisters.NewReplicaSetLister(replicaSets).ReplicaSets("ns"),
				pods:        corelisters.NewPodLister(pods).Pods("ns")}
			w.synced.Store(true)
			w.check()
			broken := strings.Join(w.violations, "\n")
			if !strings.Contains(broken, tc.wantBroken) || (tc.wantBroken == "") != (broken == "") || w.mixed != tc.wantMixed {
				t.Errorf("violations %q, mixed %d; want %q, %d mixed", w.violations, w.mixed, tc.wantBroken, tc.wantMixed)
			}
		})
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// A pod the API server removes in the request that deletes it is never seen terminating:
// the StatefulSet watcher counts its ordinal as unavailable while it is gone (unless the
// set scaled it away), and records it replaced once a pod of a new UID takes its name.
func TestStatefulSetWatcherCountsGonePods(t *testing.T) {
	pod := func(ordinal int, uid string, ready bool) *corev1.Pod {
		status := corev1.ConditionFalse
		if ready {
			status = corev1.ConditionTrue
		}
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("web-%d", ordinal), UID: types.UID(uid), Labels: map[string]string{"app": "web"}},
			Status:     corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}},
		}
	}
	sets := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	pods := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	set := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"},
		Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](3), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}
	must(t, sets.Add(set))
	w := &StatefulSetWatcher{name: "web", sets: appslisters.NewStatefulSetLister(sets).StatefulSets("ns"),
		pods: corelisters.NewPodLister(pods).Pods("ns"), seen: map[string]types.UID{}, terminating: map[string]bool{}, lost: map[string]bool{}}
	w.synced.Store(true)
	for i := range 3 {
		must(t, pods.Add(pod(i, fmt.Sprintf("a%d", i), true)))
	}
	w.check()
	must(t, pods.Delete(pod(2, "a2", true))) // web-2 gone: one unavailable, within the bound
	w.check()
	if len(w.violations) != 0 {
		t.Fatalf("violations %q with one pod gone, want none", w.violations)
	}
	must(t, pods.Update(pod(1, "a1", false))) // and web-1 not ready: two
	w.check()
	if len(w.violations) != 1 || !strings.Contains(w.violations[0], "2 pods not ready (web-1,web-2(gone)), more than 1") {
		t.Fatalf("violations %q, want web-1 and the gone web-2 over the bound of 1", w.violations)
	}
	must(t, pods.Add(pod(2, "b2", false)))
	must(t, pods.Update(pod(1, "a1", true)))
	w.check()
	set = set.DeepCopy()
	set.Spec.Replicas = ptr.To[int32](1)
	must(t, sets.Update(set))
	must(t, pods.Delete(pod(2, "b2", false)))
	must(t, pods.Delete(pod(1, "a1", true)))
	w.check() // both scaled away: not unavailable
	if len(w.violations) != 1 {
		t.Errorf("violations %q after a scale-down, want only the one before", w.violations)
	}
	if fmt.Sprint(w.Created, w.Terminated) != "[web-0 web-1 web-2 web-2] [web-2 web-1 web-2]" {
		t.Errorf("created %v, terminated %v", w.Created, w.Terminated)
	}
}
