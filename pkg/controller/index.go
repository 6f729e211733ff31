package controller

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/kroll-dev/kroll/pkg/inplace"
	"github.com/kroll-dev/kroll/pkg/rollout"
)

// PodControllerIndex indexes pods by the UID of their controller; orphans are indexed
// as OrphanIndexKey(namespace), so that a sync reads only its own pods and the orphans
// it might adopt, not its whole namespace.
const PodControllerIndex = "kroll.dev/controller-uid"

// OrphanIndexKey is the index value of a namespace's pods that have no controller.
func OrphanIndexKey(namespace string) string { return "orphan/" + namespace }

func podControllerIndex(obj any) ([]string, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return nil, nil
	}
	if ref := metav1.GetControllerOf(pod); ref != nil {
		return []string{string(ref.UID)}, nil
	}
	return []string{OrphanIndexKey(pod.Namespace)}, nil
}

// AddPodControllerIndex adds PodControllerIndex to a pod informer that has not started.
func AddPodControllerIndex(pods cache.SharedIndexInformer) error {
	if _, exists := pods.GetIndexer().GetIndexers()[PodControllerIndex]; exists {
		return nil
	}
	return pods.AddIndexers(cache.Indexers{PodControllerIndex: podControllerIndex})
}

// ActivePodsOf counts the active pods (not finished, not being deleted) that the object
// with uid controls, as the indexed cache shows them now.
func ActivePodsOf(indexer cache.Indexer, uid string) int32 {
	return int32(len(ActivePods(indexer, uid)))
}

// ActivePods returns the active pods that the object with uid controls, as cached
// (shared objects: do not modify them).
func ActivePods(indexer cache.Indexer, uid string) []*corev1.Pod {
	objs, err := indexer.ByIndex(PodControllerIndex, uid)
	if err != nil {
		return nil
	}
	var pods []*corev1.Pod
	for _, o := range objs {
		if p, ok := o.(*corev1.Pod); ok && rollout.IsPodActive(p) {
			pods = append(pods, p)
		}
	}
	return pods
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
// already, before the cache shows it): they stand in for their cached selves.
func ResizeFit(nodes NodeGetter, pods cache.Indexer, pod *corev1.Pod, to *corev1.PodTemplateSpec, resized ...*corev1.Pod) string {
	var node *corev1.Node
	if pod.Spec.NodeName != "" {
		node, _ = nodes.Get(pod.Spec.NodeName)
	}
	var others []*corev1.Pod
	if node != nil {
		others = PodsOnNode(pods, node.Name)
		for i, o := range others {
			for _, r := range resized {
				if r.UID == o.UID {
					others[i] = r
				}
			}
		}
	}
	return inplace.Unfit(pod, to, node, others)
}

// NodeGetter reads a node from a cache (a NodeLister is one).
type NodeGetter interface {
	Get(name string) (*corev1.Node, error)
}
