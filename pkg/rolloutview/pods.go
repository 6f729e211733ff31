package rolloutview

import (
	"sort"

	corev1 "k8s.io/api/core/v1"

	"github.com/kroll-dev/kroll/pkg/inplace"
	"github.com/kroll-dev/kroll/pkg/rollout"
)

// PodStatus is the STATUS kubectl's `get pods` shows (a container's waiting or
// terminated reason, Terminating, else the phase), InPlaceUpdating for a pod kroll
// is updating in place, and for a pod whose containers are being resized Resizing,
// or ResizeDeferred / ResizeInfeasible while the kubelet holds the resize pending.
func PodStatus(p *corev1.Pod) string {
	if p.DeletionTimestamp != nil {
		return "Terminating"
	}
	if _, ok := inplace.StateOf(p); ok {
		return "InPlaceUpdating"
	}
	if status := podResizeStatus(p); status != "" {
		return status
	}
	if reason := containerReason(p); reason != "" {
		return reason
	}
	if p.Status.Reason != "" {
		return p.Status.Reason
	}
	if p.Status.Phase == "" {
		return string(corev1.PodPending)
	}
	return string(p.Status.Phase)
}

// containerReason is the first waiting or terminated reason among p's init and app
// containers, init containers first as kubectl reports them.
func containerReason(p *corev1.Pod) string {
	for _, group := range [][]corev1.ContainerStatus{p.Status.InitContainerStatuses, p.Status.ContainerStatuses} {
		for _, c := range group {
			switch {
			case c.State.Waiting != nil && c.State.Waiting.Reason != "" && c.State.Waiting.Reason != "ContainerCreating":
				return c.State.Waiting.Reason
			case c.State.Terminated != nil && c.State.Terminated.Reason != "":
				return c.State.Terminated.Reason
			}
		}
	}
	return ""
}

// stuck are the reasons that do not go away without a change: a rollout waiting on such
// a pod is blocked rather than slow.
var stuck = map[string]bool{
	"ImagePullBackOff": true, "ErrImagePull": true, "InvalidImageName": true, "ErrImageNeverPull": true,
	"CrashLoopBackOff": true, "CreateContainerConfigError": true, "CreateContainerError": true, "RunContainerError": true,
	"Unschedulable": true,
}

// blocker is the pod a rollout waits on: of the latest revision's pods that are not
// ready, the one whose reason explains most (stuck reasons first, then unscheduled,
// then the rest), else an old pod still terminating.
func blocker(latest, all []*corev1.Pod) *Blocker {
	var candidates []Blocker
	seen := map[string]bool{}
	for _, p := range latest {
		seen[p.Name] = true
		if !rollout.IsPodActive(p) || (rollout.IsPodReady(p) && !hasState(p)) {
			continue
		}
		candidates = append(candidates, whyNotReady(p))
	}
	// A pod updated in place keeps its old revision's labels until its images change.
	for _, p := range all {
		if !seen[p.Name] && hasState(p) {
			candidates = append(candidates, whyNotReady(p))
		}
	}
	if len(candidates) == 0 {
		for _, p := range all {
			if p.DeletionTimestamp != nil {
				candidates = append(candidates, Blocker{Pod: p.Name, Reason: "Terminating"})
			}
		}
	}
	if len(candidates) == 0 {
		return nil
	}
	sort.SliceStable(candidates, func(i, j int) bool {
		si, sj := stuck[candidates[i].Reason], stuck[candidates[j].Reason]
		if si != sj {
			return si
		}
		return candidates[i].Pod < candidates[j].Pod
	})
	return &candidates[0]
}

func hasState(p *corev1.Pod) bool {
	_, ok := inplace.StateOf(p)
	return ok
}

// whyNotReady names what keeps p from serving, with the detail the scheduler or kubelet
// gave.
func whyNotReady(p *corev1.Pod) Blocker {
	b := Blocker{Pod: p.Name}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
			b.Reason, b.Message = c.Reason, c.Message
			if b.Reason == "" {
				b.Reason = "Unschedulable"
			}
			return b
		}
	}
	for _, c := range append(append([]corev1.ContainerStatus(nil), p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
		if w := c.State.Waiting; w != nil && w.Reason != "" {
			b.Reason, b.Message = w.Reason, w.Message
			return b
		}
	}
	switch status := PodStatus(p); status {
	case string(corev1.PodRunning), "InPlaceUpdating":
		b.Reason = "NotReady"
		if status == "InPlaceUpdating" {
			b.Reason = status
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Message != "" {
				b.Message = c.Message
			}
		}
	default:
		b.Reason = status
	}
	return b
}
