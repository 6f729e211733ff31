package controller

import (
	"iter"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/kroll-dev/kroll/pkg/inplace"
	"github.com/kroll-dev/kroll/pkg/rollout"
)

// ControllerIndex indexes objects (pods, ReplicaSets) by the UID of their controller;
// orphans are indexed as OrphanIndexKey(namespace), so that a sync reads only its own
// objects and the orphans it might adopt, not its whole namespace: with hundreds of
// Deployments in a namespace, listing and sifting its ReplicaSets on every sync was
// most of a Deployment sync's CPU (bench/profiles/many-200x10-controllers.md).
const ControllerIndex = "kroll.dev/controller-uid"

// PodControllerIndex is ControllerIndex on the pod informer.
const PodControllerIndex = ControllerIndex

// OrphanIndexKey is the index value of a namespace's objects that have no controller.
func OrphanIndexKey(namespace string) string { return "orphan/" + namespace }

func controllerIndex(obj any) ([]string, error) {
	o, ok := obj.(metav1.Object)
	if !ok {
		return nil, nil
	}
	if ref := metav1.GetControllerOfNoCopy(o); ref != nil {
		return []string{string(ref.UID)}, nil
	}
	return []string{OrphanIndexKey(o.GetNamespace())}, nil
}

// AddControllerIndex adds ControllerIndex to an informer that has not started.
func AddControllerIndex(informer cache.SharedIndexInformer) error {
	if _, exists := informer.GetIndexer().GetIndexers()[ControllerIndex]; exists {
		return nil
	}
	return informer.AddIndexers(cache.Indexers{ControllerIndex: controllerIndex})
}

// AddPodControllerIndex adds ControllerIndex to a pod informer that has not started.
func AddPodControllerIndex(pods cache.SharedIndexInformer) error { return AddControllerIndex(pods) }

// PodsOf yields the pods that the object with uid controls, as the indexed cache shows
// them now (shared objects: do not modify them). A sync that only asks a question of
// them (how many are active, does any carry a gate) reads them without a slice.
func PodsOf(indexer cache.Indexer, uid string) iter.Seq[*corev1.Pod] {
	return func(yield func(*corev1.Pod) bool) {
		objs, err := indexer.ByIndex(PodControllerIndex, uid)
		if err != nil {
			return
		}
		for _, o := range objs {
			if p, ok := o.(*corev1.Pod); ok && !yield(p) {
				return
			}
		}
	}
}

// ActivePodsOf yields PodsOf's active pods: not finished, not being deleted.
func ActivePodsOf(indexer cache.Indexer, uid string) iter.Seq[*corev1.Pod] {
	return func(yield func(*corev1.Pod) bool) {
		for p := range PodsOf(indexer, uid) {
			if rollout.IsPodActive(p) && !yield(p) {
				return
			}
		}
	}
}

// ActivePodCount counts the active pods that the object with uid controls.
func ActivePodCount(indexer cache.Indexer, uid string) int32 {
	var n int32
	for range ActivePodsOf(indexer, uid) {
		n++
	}
	return n
}

// ActivePods returns the active pods that the object with uid controls, as cached
// (shared objects: do not modify them).
func ActivePods(indexer cache.Indexer, uid string) []*corev1.Pod {
	return slices.Collect(ActivePodsOf(indexer, uid))
}

// PodGateIndex indexes the pods that carry the in-place readiness gate by the UID of
// their controller (pods without it are not indexed): whether a Deployment that is not
// opted in has in-place work left is then a lookup, where reading each of its pods on
// every sync was a Deployment controller's largest cost in a plain rollout of 1,000
// (bench/profiles/gated-pods.md).
const PodGateIndex = "kroll.dev/in-place-gate"

func podGateIndex(obj any) ([]string, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok || !inplace.HasGate(pod) {
		return nil, nil
	}
	if ref := metav1.GetControllerOfNoCopy(pod); ref != nil {
		return []string{string(ref.UID)}, nil
	}
	return nil, nil
}

// AddPodGateIndex adds PodGateIndex to a pod informer that has not started.
func AddPodGateIndex(pods cache.SharedIndexInformer) error {
	if _, exists := pods.GetIndexer().GetIndexers()[PodGateIndex]; exists {
		return nil
	}
	return pods.AddIndexers(cache.Indexers{PodGateIndex: podGateIndex})
}

// HasGatedPods tells whether the object with uid controls a pod that carries the
// in-place readiness gate, as the indexed cache shows. An indexer without
// PodGateIndex answers yes: a caller then reads the pods rather than miss one.
func HasGatedPods(indexer cache.Indexer, uid string) bool {
	keys, err := indexer.IndexKeys(PodGateIndex, uid)
	return err != nil || len(keys) > 0
}

// PodNodeIndex indexes pods by the node they are bound to (unbound pods are not
// indexed): what an in-place resize's fit is judged against (inplace.Unfit).
const PodNodeIndex = "kroll.dev/node"

func podNodeIndex(obj any) ([]string, error) {
	if pod, ok := obj.(*corev1.Pod); ok && pod.Spec.NodeName != "" {
		return []string{pod.Spec.NodeName}, nil
	}
	return nil, nil
}

// AddPodNodeIndex adds PodNodeIndex to a pod informer that has not started.
func AddPodNodeIndex(pods cache.SharedIndexInformer) error {
	if _, exists := pods.GetIndexer().GetIndexers()[PodNodeIndex]; exists {
		return nil
	}
	return pods.AddIndexers(cache.Indexers{PodNodeIndex: podNodeIndex})
}

// PodsOnNode returns the pods the indexed cache shows bound to node (shared objects: do
// not modify them).
func PodsOnNode(indexer cache.Indexer, node string) []*corev1.Pod {
	objs, err := indexer.ByIndex(PodNodeIndex, node)
	if err != nil {
		return nil
	}
	pods := make([]*corev1.Pod, 0, len(objs))
	for _, o := range objs {
		if p, ok := o.(*corev1.Pod); ok {
			pods = append(pods, p)
		}
	}
	return pods
}

// ResizeFit judges, for an in-place update's pod, whether its node can make its resize
// to to (inplace.Unfit, with the node and the pods on it from the caches); "" when it
// can or no resize is due. resized are pods as a plan being made leaves them (resized
// already, before the cache shows it): they stand in for their cached selves. A caller
// judging many pods in one pass keeps one NodeRooms instead.
func ResizeFit(nodes NodeGetter, pods cache.Indexer, pod *corev1.Pod, to *corev1.PodTemplateSpec, resized ...*corev1.Pod) string {
	return (&NodeRooms{Nodes: nodes, Pods: pods}).Unfit(pod, to, resized...)
}

// NodeRooms judges in-place resizes against nodes (inplace.UnfitBeside), summing what
// each node's pods hold once: a Deployment's pass judges up to maxUnavailable pods, each
// beside the fifty others of its node, and the pods resized before it in the pass. It
// reads the caches as they are when a node is first asked about: one per pass.
type NodeRooms struct {
	Nodes NodeGetter
	Pods  cache.Indexer
	rooms map[string]*nodeRoom
}

// nodeRoom is a node and what its active pods hold, in all and each.
type nodeRoom struct {
	node  *corev1.Node
	total corev1.ResourceList
	held  map[types.UID]corev1.ResourceList
}

// Unfit is ResizeFit on the rooms.
func (r *NodeRooms) Unfit(pod *corev1.Pod, to *corev1.PodTemplateSpec, resized ...*corev1.Pod) string {
	if msg, judged := inplace.JudgedWithoutRoom(pod, to); judged {
		return msg // the node's pods are not summed for nothing
	}
	room := r.room(pod.Spec.NodeName)
	if room == nil {
		return inplace.UnfitBeside(pod, to, nil, nil)
	}
	held := room.total.DeepCopy()
	if own, ok := room.held[pod.UID]; ok {
		inplace.SubHeld(held, own)
	}
	for _, p := range resized {
		if p.UID == pod.UID || p.Spec.NodeName != room.node.Name {
			continue
		}
		if before, ok := room.held[p.UID]; ok {
			inplace.SubHeld(held, before)
			inplace.AddHeld(held, inplace.Held(p))
		}
	}
	return inplace.UnfitBeside(pod, to, room.node, held)
}

// room is node's room, summed on first use; nil for a pod not bound or a node not in
// the cache.
func (r *NodeRooms) room(name string) *nodeRoom {
	if name == "" {
		return nil
	}
	if room, ok := r.rooms[name]; ok {
		return room
	}
	if r.rooms == nil {
		r.rooms = map[string]*nodeRoom{}
	}
	node, err := r.Nodes.Get(name)
	if err != nil || node == nil {
		r.rooms[name] = nil
		return nil
	}
	room := &nodeRoom{node: node, total: corev1.ResourceList{}, held: map[types.UID]corev1.ResourceList{}}
	for _, p := range PodsOnNode(r.Pods, name) {
		if !rollout.IsPodActive(p) {
			continue
		}
		h := inplace.Held(p)
		room.held[p.UID] = h
		inplace.AddHeld(room.total, h)
	}
	r.rooms[name] = room
	return room
}

// NodeGetter reads a node from a cache (a NodeLister is one).
type NodeGetter interface {
	Get(name string) (*corev1.Node, error)
}
