package kubelet

import "k8s.io/client-go/kubernetes"

// A real node writes as itself: system:node:<name> in system:nodes, which the API
// server's Node authorizer and NodeRestriction admission hold to its own Node, Lease
// and pods. The simulator acts for many nodes at once, so it reads (informers, which
// see every node's pods) through its own shared client, and writes each node's
// objects through that node's client when SetNodeClients gives them.

// SetNodeClients makes the writes of node N (its Node and Lease, its pods' status and
// their final deletion) go through pods(N) and heartbeats(N) instead of the shared
// clients New was given; heartbeats(N) should not queue behind pod work, as New's
// heartbeat client. Call it before Run.
func (k *Kubelet) SetNodeClients(pods, heartbeats func(node string) kubernetes.Interface) {
	k.nodePods, k.nodeHeartbeats = pods, heartbeats
}

// podWriter is the client writing the pods of node.
func (k *Kubelet) podWriter(node string) kubernetes.Interface {
	if k.nodePods == nil {
		return k.client
	}
	return k.nodePods(node)
}

// nodeWriter is the client writing node's Node and Lease.
func (k *Kubelet) nodeWriter(node string) kubernetes.Interface {
	if k.nodeHeartbeats == nil {
		return k.heartbeat
	}
	return k.nodeHeartbeats(node)
}
