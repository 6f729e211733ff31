package controller

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
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

// countingNodes is a NodeGetter that counts its reads.
type countingNodes struct {
	node  *corev1.Node
	reads int
}

func (n *countingNodes) Get(string) (*corev1.Node, error) {
	n.reads++
	return n.node, nil
}

// NodeRooms sums a node's pods only for a resize it has to judge, once per node: a pod
// that needs no resize (an image change, or one already made) reads no node.
func TestNodeRoomsSumsANodeOnlyForAResizeDue(t *testing.T) {
	cpu := func(q string) corev1.ResourceRequirements {
		return corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(q)}}
	}
	pod := func(name, request string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(name)},
			Spec:   corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "app", Resources: cpu(request)}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	}
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{PodNodeIndex: podNodeIndex})
	a, b := pod("a", "500m"), pod("b", "500m")
	for _, p := range []*corev1.Pod{a, b} {
		if err := indexer.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	nodes := &countingNodes{node: &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"},
		Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1200m")}}}}
	rooms := &NodeRooms{Nodes: nodes, Pods: indexer}
	to := func(request string) *corev1.PodTemplateSpec {
		return &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Resources: cpu(request)}}}}
	}
	if why := rooms.Unfit(a, to("500m")); why != "" || nodes.reads != 0 {
		t.Errorf("no resize due: %q, %d node reads; want fit and none", why, nodes.reads)
	}
	if why := rooms.Unfit(a, to("600m")); why != "" {
		t.Errorf("500m → 600m beside 500m of 1200m: %q, want fit", why)
	}
	if why := rooms.Unfit(b, to("800m")); !strings.Contains(why, "needs cpu 800m, 700m free") {
		t.Errorf("500m → 800m beside 500m of 1200m: %q, want unfit", why)
	}
	if nodes.reads != 1 {
		t.Errorf("%d node reads for two judgements on one node; want 1", nodes.reads)
	}
}
