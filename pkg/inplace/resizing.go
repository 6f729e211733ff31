package inplace

import (
	corev1 "k8s.io/api/core/v1"
)

// Resizing tells whether pod's in-place resize to to's container cpu and memory is
// under way: due (its spec lacks them: PlanResize is not empty), or written and not yet
// made — a resize condition is set, or a container the kubelet reports on has other
// cpu and memory allocated or actuated than its spec asks. A container not yet started
// reports nothing and counts as made: a new pod is created with its resources, and it
// is not resizing (it is unavailable until it runs anyway).
//
// Rollouts pace by it: a pod resizing counts against maxUnavailable even when no
// container restarts. A cpu request 100m → 200m with NotRequired keeps serving, but an
// application that read its limits once, at start, may go unready or slow under the
// new cgroup; with maxUnavailable 1 of 4 pods, one pod at a time is left to find out,
// never four. It is ResizeDone's opposite for a pod that has started: a generation
// the kubelet has not observed yet (the write it has not seen may be the resize) keeps
// it resizing, where the kubelet reports observedGeneration at all (a kubelet older
// than the tracking reports 0, and is judged by the resources alone).
func Resizing(pod *corev1.Pod, to *corev1.PodTemplateSpec) bool {
	if !PlanResize(pod, to).Empty() {
		return true
	}
	if state, _ := ResizeStateOf(pod); state != ResizeSettled {
		return true
	}
	if started(pod) && pod.Status.ObservedGeneration != 0 && pod.Status.ObservedGeneration < pod.Generation {
		return true
	}
	differs := func(spec []corev1.Container, statuses []corev1.ContainerStatus) bool {
		for _, c := range spec {
			cs, ok := statusNamed(statuses, c.Name)
			if !ok {
				continue
			}
			if cs.Resources != nil && len(changedResources(*cs.Resources, c.Resources)) > 0 {
				return true
			}
			allocated := corev1.ResourceRequirements{Requests: cs.AllocatedResources}
			if cs.AllocatedResources != nil && len(changedResources(allocated, corev1.ResourceRequirements{Requests: c.Resources.Requests})) > 0 {
				return true
			}
		}
		return false
	}
	var sidecars []corev1.Container
	for _, c := range pod.Spec.InitContainers {
		if isSidecar(c) {
			sidecars = append(sidecars, c) // a plain init container has run: its resources are only allocated
		}
	}
	return differs(sidecars, pod.Status.InitContainerStatuses) || differs(pod.Spec.Containers, pod.Status.ContainerStatuses)
}

// started tells a pod some of whose containers the kubelet reports on.
func started(pod *corev1.Pod) bool {
	return len(pod.Status.ContainerStatuses) > 0 || len(pod.Status.InitContainerStatuses) > 0
}
