package controller

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

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
