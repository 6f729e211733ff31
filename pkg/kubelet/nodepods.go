package kubelet

import (
	"sort"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// nodePods is what one node's kubelet remembers of the pods bound to it: the admission
// verdict on every pod it has seen (a pod is admitted or rejected once, when first seen,
// as a kubelet does), and which admitted pods still hold their resources.
type nodePods struct {
	mu      sync.Mutex
	verdict map[types.UID]admission
	// holding are the admitted pods whose containers have not stopped for good: what the
	// next pod's admission counts as used (requests, host ports, the pod count).
	holding map[types.UID]*corev1.Pod
}

func newNodePods() *nodePods {
	return &nodePods{verdict: map[types.UID]admission{}, holding: map[types.UID]*corev1.Pod{}}
}

// admitOnce returns the verdict on pod, deciding it against node and the pods holding
// resources the first time pod is seen. Admission is serialised per node, so two pods
// that each fit alone but not together never both get in.
func (n *nodePods) admitOnce(node *corev1.Node, pod *corev1.Pod) admission {
	n.mu.Lock()
	defer n.mu.Unlock()
	if v, seen := n.verdict[pod.UID]; seen {
		if _, held := n.holding[pod.UID]; held {
			n.holding[pod.UID] = pod // the latest spec (a resize changes requests)
		}
		return v
	}
	others := make([]*corev1.Pod, 0, len(n.holding))
	for _, p := range n.holding {
		others = append(others, p)
	}
	v := admit(node, others, pod)
	n.verdict[pod.UID] = v
	if !v.rejected {
		n.holding[pod.UID] = pod
	}
	return v
}

// release records that pod's containers have stopped for good: it holds nothing now,
// and is not admitted again.
func (n *nodePods) release(uid types.UID) {
	n.mu.Lock()
	defer n.mu.Unlock()
	delete(n.holding, uid)
}

// forget drops a pod that is gone.
func (n *nodePods) forget(uid types.UID) {
	n.mu.Lock()
	defer n.mu.Unlock()
	delete(n.holding, uid)
	delete(n.verdict, uid)
}

// byCreation sorts pods oldest first (then by namespace and name), the order a kubelet
// admits the pods it finds bound to its node when it starts.
func byCreation(pods []*corev1.Pod) {
	sort.Slice(pods, func(i, j int) bool {
		a, b := pods[i], pods[j]
		if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return a.CreationTimestamp.Before(&b.CreationTimestamp)
		}
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		return a.Name < b.Name
	})
}
