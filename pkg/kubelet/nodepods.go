package kubelet

import (
	"sort"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	resourcehelper "k8s.io/component-helpers/resource"
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
	// alloc is, per holding pod, the resources the kubelet allocated to it (resize.go):
	// what the node's accounting counts, whatever the pod's spec asks for meanwhile.
	alloc map[types.UID]allocation
	// deferred are the pods (their queue keys) whose resize waits for room; they are
	// tried again when a pod releases its resources or a resize shrinks one.
	deferred map[types.UID]string
}

func newNodePods() *nodePods {
	return &nodePods{verdict: map[types.UID]admission{}, holding: map[types.UID]*corev1.Pod{},
		alloc: map[types.UID]allocation{}, deferred: map[types.UID]string{}}
}

// others are the pods holding resources besides uid, each with its allocated resources.
// The caller holds n.mu.
func (n *nodePods) others(uid types.UID) []*corev1.Pod {
	out := make([]*corev1.Pod, 0, len(n.holding))
	for id, p := range n.holding {
		if id != uid {
			out = append(out, n.alloc[id].applyTo(p))
		}
	}
	return out
}

// admitOnce returns the verdict on pod, deciding it against node and the pods holding
// resources the first time pod is seen. Admission is serialised per node, so two pods
// that each fit alone but not together never both get in.
func (n *nodePods) admitOnce(node *corev1.Node, pod *corev1.Pod) admission {
	n.mu.Lock()
	defer n.mu.Unlock()
	if v, seen := n.verdict[pod.UID]; seen {
		return v
	}
	alloc := resumedAllocation(pod)
	v := admit(node, n.others(pod.UID), alloc.applyTo(pod))
	n.verdict[pod.UID] = v
	if !v.rejected {
		n.holding[pod.UID] = pod
		n.alloc[pod.UID] = alloc
	}
	return v
}

// refresh keeps the latest version of an admitted pod (its labels, ports, and status:
// the accounting counts the larger of allocated and actuated resources). When what it
// counts shrinks (a decrease actuated), it returns the deferred resizes to try again, as
// the kubelet does on such a pod update.
func (n *nodePods) refresh(pod *corev1.Pod) []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	old, held := n.holding[pod.UID]
	if !held {
		return nil
	}
	n.holding[pod.UID] = pod
	if len(n.deferred) == 0 {
		return nil
	}
	opts := resourcehelper.PodResourcesOptions{UseStatusResources: true}
	before := resourcehelper.PodRequests(n.alloc[pod.UID].applyTo(old), opts)
	after := resourcehelper.PodRequests(n.alloc[pod.UID].applyTo(pod), opts)
	if after.Cpu().Cmp(*before.Cpu()) < 0 || after.Memory().Cmp(*before.Memory()) < 0 {
		return n.deferredKeys()
	}
	return nil
}

// resize decides an admitted pod's resize against the other pods' allocations and, when
// it is accepted, makes the desired resources its allocation. It returns the decision,
// the allocation now, and the deferred pods to try again (an accepted resize may shrink
// the pod and free room).
func (n *nodePods) resize(node *corev1.Node, pod *corev1.Pod, key string, staticCPUManager bool) (resizeDecision, allocation, []string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	alloc, held := n.alloc[pod.UID]
	if !held {
		return resizeDecision{kind: resizeNone}, allocationOf(pod), nil
	}
	d := decideResize(node, func() []*corev1.Pod { return n.others(pod.UID) }, pod, alloc, staticCPUManager)
	delete(n.deferred, pod.UID)
	var retry []string
	switch d.kind {
	case resizeAccepted:
		alloc = allocationOf(pod)
		n.alloc[pod.UID] = alloc
		retry = n.deferredKeys()
	case resizeDeferred:
		n.deferred[pod.UID] = key
	}
	return d, alloc, retry
}

// deferredKeys are the pods whose resize waits for room. The caller holds n.mu.
func (n *nodePods) deferredKeys() []string {
	out := make([]string, 0, len(n.deferred))
	for _, k := range n.deferred {
		out = append(out, k)
	}
	return out
}

// release records that pod's containers have stopped for good: it holds nothing now,
// and is not admitted again. It returns the deferred resizes to try again when it
// freed room.
func (n *nodePods) release(uid types.UID) []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.drop(uid)
}

// forget drops a pod that is gone, and returns the deferred resizes to try again.
func (n *nodePods) forget(uid types.UID) []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	delete(n.verdict, uid)
	return n.drop(uid)
}

// drop stops counting uid; the caller holds n.mu.
func (n *nodePods) drop(uid types.UID) []string {
	delete(n.deferred, uid)
	if _, held := n.holding[uid]; !held {
		return nil
	}
	delete(n.holding, uid)
	delete(n.alloc, uid)
	return n.deferredKeys()
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
