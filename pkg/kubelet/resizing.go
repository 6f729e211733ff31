package kubelet

import (
	"time"

	corev1 "k8s.io/api/core/v1"
)

// resizeStateOf decides pod's resize (resize.go) on its node, records the events the
// kubelet records for that decision, and returns what the pod's status is computed
// from. clk keeps when the last accepted resize was allocated.
func (k *Kubelet) resizeStateOf(pod *corev1.Pod, key string, clk *podClock, now time.Time) resizeState {
	d, alloc, retry := k.pods[pod.Spec.NodeName].resize(k.node(pod.Spec.NodeName), pod, key, k.cfg.StaticCPUManager)
	k.retryResizes(retry, key)
	delay, problem := resizeDelay(pod)
	rec := k.recorders[pod.Spec.NodeName]
	rs := resizeState{alloc: alloc, delay: delay}
	switch d.kind {
	case resizeAccepted:
		clk.resizeAt, clk.resizeGen = now, pod.Generation
		rec.Event(pod, corev1.EventTypeNormal, reasonResizeStarted, resizeEventMessage(resizeMessageStarted, pod, pod.Generation, ""))
		if problem != "" && !clk.resizeDelayWarned {
			clk.resizeDelayWarned = true
			rec.Event(pod, corev1.EventTypeWarning, reasonInvalidAnnotation, problem)
		}
	case resizeDeferred, resizeInfeasible:
		rs.pending = &d
		if pendingIsNew(pod, d) {
			reason := reasonResizeDeferred
			if d.kind == resizeInfeasible {
				reason = reasonResizeInfeasible
			}
			rec.Event(pod, corev1.EventTypeWarning, reason, resizeEventMessage(resizeMessagePendingWord+d.cause, pod, pod.Generation, d.message))
		}
	}
	if clk.resizeAt.IsZero() {
		clk.resizeAt, clk.resizeGen = inProgressSince(pod)
	}
	rs.acceptedAt, rs.acceptedGen = clk.resizeAt, clk.resizeGen
	return rs
}

// retryResizes queues the deferred resizes that freed room may now let through, as the
// kubelet retries pending resizes when a pod is removed or resized.
func (k *Kubelet) retryResizes(keys []string, except string) {
	for _, key := range keys {
		if key != except {
			k.queue.Add(key)
		}
	}
}

// resizeCompleted records the kubelet's ResizeCompleted event, naming the allocated
// resources, when a status write took the PodResizeInProgress condition away: the
// resize is actuated.
// (The room a decrease frees is counted once the informer brings the written status
// back: nodePods.refresh then retries the deferred resizes.)
func (k *Kubelet) resizeCompleted(pod *corev1.Pod, alloc allocation, written corev1.PodStatus) {
	at, gen := inProgressSince(pod)
	if at.IsZero() && gen == 0 {
		return
	}
	for _, c := range written.Conditions {
		if c.Type == corev1.PodResizeInProgress {
			return
		}
	}
	k.recorders[pod.Spec.NodeName].Event(pod, corev1.EventTypeNormal, reasonResizeCompleted, resizeEventMessage(resizeMessageCompleted, alloc.applyTo(pod), gen, ""))
}

// deferredRetry is how often the kubelet tries its deferred resizes again even when
// nothing it watches freed room (its allocation manager's periodic retry).
const deferredRetry = 3 * time.Minute

// nextResizeRetry brings due forward to the periodic retry of a deferred resize.
func nextResizeRetry(rs resizeState, due, now time.Time) time.Time {
	if rs.pending == nil || rs.pending.kind != resizeDeferred {
		return due
	}
	w := wake{at: due}
	w.offer(now.Add(deferredRetry))
	return w.at
}
