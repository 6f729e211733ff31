package controller

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
)

// The pods a controller owns, read from the controller index: every pod, the active
// ones, and their count agree, and an early break stops the walk.
func TestPodsOfAndActivePods(t *testing.T) {
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{PodControllerIndex: controllerIndex})
	yes := true
	pod := func(name string, owner types.UID, mutate func(*corev1.Pod)) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
			Status: corev1.PodStatus{Phase: corev1.PodRunning}}
		if owner != "" {
			p.OwnerReferences = []metav1.OwnerReference{{UID: owner, Controller: &yes, Name: string(owner), Kind: "ReplicaSet"}}
		}
		if mutate != nil {
			mutate(p)
		}
		return p
	}
	deleting := metav1.Now()
	for _, p := range []*corev1.Pod{
		pod("running", "rs-a", nil),
		pod("pending", "rs-a", func(p *corev1.Pod) { p.Status.Phase = corev1.PodPending }),
		pod("succeeded", "rs-a", func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }),
		pod("failed", "rs-a", func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed }),
		pod("deleting", "rs-a", func(p *corev1.Pod) { p.DeletionTimestamp = &deleting }),
		pod("other", "rs-b", nil),
		pod("orphan", "", nil),
	} {
		if err := indexer.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	names := func(pods []*corev1.Pod) []string {
		var out []string
		for _, p := range pods {
			out = append(out, p.Name)
		}
		slices.Sort(out)
		return out
	}

	tests := []struct {
		uid        string
		all        []string
		active     []string
		activeSize int32
	}{
		{uid: "rs-a", all: []string{"deleting", "failed", "pending", "running", "succeeded"}, active: []string{"pending", "running"}, activeSize: 2},
		{uid: "rs-b", all: []string{"other"}, active: []string{"other"}, activeSize: 1},
		{uid: "rs-none"},
	}
	for _, tt := range tests {
		t.Run(tt.uid, func(t *testing.T) {
			if got := names(slices.Collect(PodsOf(indexer, tt.uid))); !slices.Equal(got, tt.all) {
				t.Errorf("PodsOf = %v, want %v", got, tt.all)
			}
			if got := names(ActivePods(indexer, tt.uid)); !slices.Equal(got, tt.active) {
				t.Errorf("ActivePods = %v, want %v", got, tt.active)
			}
			if got := ActivePodCount(indexer, tt.uid); got != tt.activeSize {
				t.Errorf("ActivePodCount = %d, want %d", got, tt.activeSize)
			}
		})
	}

	seen := 0
	for range PodsOf(indexer, "rs-a") {
		seen++
		break
	}
	if seen != 1 {
		t.Errorf("PodsOf went on after a break: %d pods", seen)
	}
}
