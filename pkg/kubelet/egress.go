package kubelet

import (
	"context"
	"io"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// PodConnection is what a connection to a pod's IP and port reaches on a simulated
// node: the container model's answer to each HTTP request on it, as port-forward
// gives. The API server's pod and service proxies dial pod IPs; kroll routes them here.
//
// ok is false when no running pod of this kubelet's nodes has ip (a host-network pod
// shares its node's address and is not one); err when one has it but nothing in it
// listens on port, as a refused connection on a real node.
func (k *Kubelet) PodConnection(ip string, port int32) (serve func(ctx context.Context, conn io.ReadWriteCloser) error, ok bool, err error) {
	pods, err := k.podLister.List(labels.Everything())
	if err != nil {
		return nil, false, err
	}
	pod := podAt(pods, ip, k.hasNode)
	if pod == nil {
		return nil, false, nil
	}
	target := &streamTarget{k: k, pod: pod}
	if _, _, err := target.listenerOn(port); err != nil {
		return nil, true, err
	}
	return func(ctx context.Context, conn io.ReadWriteCloser) error {
		return target.PortForward(ctx, "", "", port, conn)
	}, true, nil
}

// podAt is the pod of pods that holds ip on one of the nodes ours names; nil when
// none. A pod that has terminated (Succeeded, Failed) gave its IP back, as a real
// node's network teardown does, and a later pod may hold it now; a pod being deleted
// still holds it, but yields to one that is not.
func podAt(pods []*corev1.Pod, ip string, ours func(node string) bool) *corev1.Pod {
	var found *corev1.Pod
	for _, pod := range pods {
		if pod.Spec.HostNetwork || pod.Status.PodIP != ip || !ours(pod.Spec.NodeName) ||
			pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
			continue
		}
		if found == nil || found.DeletionTimestamp != nil && pod.DeletionTimestamp == nil {
			found = pod
		}
	}
	return found
}

// hasNode says whether node is one of this kubelet's.
func (k *Kubelet) hasNode(node string) bool {
	_, ours := k.nodeIndex[node]
	return ours
}
