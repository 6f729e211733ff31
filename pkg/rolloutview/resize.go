package rolloutview

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/kroll-dev/kroll/pkg/inplace"
	"github.com/kroll-dev/kroll/pkg/rollout"
)

// Resizing is where the in-place resizes of a workload's pods stand: the pods with a
// resize written (through pods/resize) that the kubelet has not finished, and those
// of them it holds pending.
type Resizing struct {
	// Pods counts the pods resizing (podResizing).
	Pods int32 `json:"pods"`
	// Pending are the pods whose resize the kubelet holds (PodResizePending), by name:
	// reason Deferred (the node could fit it, other pods hold the room now: it waits)
	// or Infeasible (it never will), with the kubelet's message.
	Pending []Blocker `json:"pending,omitempty"`
}

// maxPendingShown is how many pending resizes a view lists; "+N more" beyond.
const maxPendingShown = 3

// resizingOf is the resizes among pods; nil when no pod is resizing, so that views
// and -o json say nothing of resizes where there are none.
func resizingOf(pods []*corev1.Pod) *Resizing {
	r := &Resizing{}
	for _, p := range pods {
		if !rollout.IsPodActive(p) || !podResizing(p) {
			continue
		}
		r.Pods++
		switch state, msg := inplace.ResizeStateOf(p); state {
		case inplace.ResizeDeferred, inplace.ResizeInfeasible:
			r.Pending = append(r.Pending, Blocker{Pod: p.Name, Reason: string(state), Message: msg})
		}
	}
	if r.Pods == 0 {
		return nil
	}
	sort.Slice(r.Pending, func(i, j int) bool { return r.Pending[i].Pod < r.Pending[j].Pod })
	return r
}

// podResizing tells a pod whose resize is written and not finished: the kubelet
// reports it pending or in progress (PodResizePending, PodResizeInProgress), or a
// running container reports cpu or memory (status.containerStatuses[].resources)
// other than its spec asks, the state between the pods/resize write and the kubelet
// taking it up. A container that reports no resources (not started, or a kubelet
// before 1.33) says nothing either way.
func podResizing(p *corev1.Pod) bool {
	if state, _ := inplace.ResizeStateOf(p); state != inplace.ResizeSettled {
		return true
	}
	// The pod as its containers run: their reported resources in place of the spec's;
	// PlanResize from it to the spec is what is left to make.
	running := &corev1.Pod{}
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Resources != nil {
			running.Spec.Containers = append(running.Spec.Containers, corev1.Container{Name: cs.Name, Resources: *cs.Resources})
		}
	}
	return !inplace.PlanResize(running, &corev1.PodTemplateSpec{Spec: p.Spec}).Empty()
}

// podResizeStatus is the STATUS of a pod resizing: "Resizing", or the kubelet's
// pending reason ("ResizeDeferred", "ResizeInfeasible"); "" for one that is not.
func podResizeStatus(p *corev1.Pod) string {
	if !podResizing(p) {
		return ""
	}
	switch state, _ := inplace.ResizeStateOf(p); state {
	case inplace.ResizeDeferred, inplace.ResizeInfeasible:
		return "Resize" + string(state)
	}
	return "Resizing"
}

// String is one line: "2 pods resizing", then the first pending ones,
// "2 pods resizing; web-1 resize Deferred: Node didn't have enough resources: cpu".
func (r *Resizing) String() string {
	if r == nil {
		return ""
	}
	parts := []string{fmt.Sprintf("%s resizing", pods(r.Pods))}
	for i, p := range r.Pending {
		if i == maxPendingShown {
			parts = append(parts, fmt.Sprintf("+%d more pending", len(r.Pending)-maxPendingShown))
			break
		}
		parts = append(parts, p.resizeText())
	}
	return strings.Join(parts, "; ")
}

// Lines are the resizes under a view's heading: the count, then each pending pod.
//
//	2 pods resizing
//	web-1 resize Deferred: Node didn't have enough resources: cpu, requested: 400, …
func (r *Resizing) Lines() string {
	if r == nil {
		return ""
	}
	out := fmt.Sprintf("%s resizing\n", pods(r.Pods))
	for i, p := range r.Pending {
		if i == maxPendingShown {
			out += fmt.Sprintf("+%d more pending\n", len(r.Pending)-maxPendingShown)
			break
		}
		out += p.resizeText() + "\n"
	}
	return out
}

// resizeText is a pending resize: "web-1 resize Deferred: <kubelet's message>".
func (b Blocker) resizeText() string {
	s := fmt.Sprintf("%s resize %s", b.Pod, b.Reason)
	if b.Message != "" {
		s += ": " + firstLine(b.Message, 100)
	}
	return s
}
