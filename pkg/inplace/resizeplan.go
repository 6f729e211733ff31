package inplace

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Resize is what one pod needs written through its pods/resize subresource to have a
// template's container resources, and what the kubelet does to it then.
type Resize struct {
	// Containers and InitContainers are the new resources, by container name, of each
	// container whose cpu or memory request or limit differs; both empty: nothing to
	// resize.
	Containers, InitContainers map[string]corev1.ResourceRequirements
	// Restarts are the containers the kubelet restarts to apply the resize, sorted: a
	// container (or sidecar) whose resizePolicy is RestartContainer for a resource
	// whose request or limit changes. Empty: no container restarts, and the pod stays
	// in service throughout.
	Restarts []string
}

// Empty tells a pod that already has the template's resources.
func (r Resize) Empty() bool { return len(r.Containers) == 0 && len(r.InitContainers) == 0 }

// Restarting tells a resize that restarts a container: it takes the pod out of
// service like an image change, and is paced by the same take-out/put-back rules. One
// that restarts none changes the containers' cgroups under them, the pod keeps
// serving, and it is paced by maxUnavailable alone: a resize can still leave a pod
// unready (an application that reads its limits once, at start), and the budget keeps
// that to as many pods as the workload accepts losing.
func (r Resize) Restarting() bool { return len(r.Restarts) > 0 }

// PlanResize is the resize that gives pod (as it runs) to's container resources.
// Containers are matched by name; the cpu and memory requests and limits are compared
// as the kubelet does, in millicores and bytes (cpu 0.1 and 100m are one request; an
// unset one is zero). Whether a container restarts is its resizePolicy for each
// resource that changes (NotRequired when none is set), as in to (resizePolicy itself
// cannot change in place): a cpu request 100m → 200m with cpu NotRequired restarts
// nothing; a memory limit 128Mi → 256Mi with memory RestartContainer restarts that
// container. An init container that is not a sidecar has run and is never restarted.
func PlanResize(pod *corev1.Pod, to *corev1.PodTemplateSpec) Resize {
	var r Resize
	// Allocation-free for a pod that has its template's resources: asked of every pod of
	// an opted-in ReplicaSet at each of its status computations.
	plan := func(have, want []corev1.Container, init bool) map[string]corev1.ResourceRequirements {
		var out map[string]corev1.ResourceRequirements
		for _, w := range want {
			h, ok := containerNamed(have, w.Name)
			if !ok {
				continue
			}
			changed := changedResources(h.Resources, w.Resources)
			if len(changed) == 0 {
				continue
			}
			if out == nil {
				out = map[string]corev1.ResourceRequirements{}
			}
			out[w.Name] = *w.Resources.DeepCopy()
			if init && !isSidecar(w) {
				continue
			}
			for _, name := range changed {
				if resizePolicy(w, name) == corev1.RestartContainer {
					r.Restarts = append(r.Restarts, w.Name)
					break
				}
			}
		}
		return out
	}
	r.InitContainers = plan(pod.Spec.InitContainers, to.Spec.InitContainers, true)
	r.Containers = plan(pod.Spec.Containers, to.Spec.Containers, false)
	sort.Strings(r.Restarts)
	return r
}

// Patch is the strategic merge patch of pod to write through pods/resize: each
// container's new resources by name. Requests and limits are written whole (a resize
// never removes one, so nothing is left behind by the merge). The UID makes it fail on
// a pod recreated under the same name.
func (r Resize) Patch(pod *corev1.Pod) map[string]any {
	list := func(m map[string]corev1.ResourceRequirements) []map[string]any {
		var names []string
		for n := range m {
			names = append(names, n)
		}
		sort.Strings(names)
		var out []map[string]any
		for _, n := range names {
			res := map[string]any{}
			if req := m[n].Requests; len(req) > 0 {
				res["requests"] = req
			}
			if lim := m[n].Limits; len(lim) > 0 {
				res["limits"] = lim
			}
			out = append(out, map[string]any{"name": n, "resources": res})
		}
		return out
	}
	spec := map[string]any{}
	if len(r.Containers) > 0 {
		spec["containers"] = list(r.Containers)
	}
	if len(r.InitContainers) > 0 {
		spec["initContainers"] = list(r.InitContainers)
	}
	return map[string]any{"metadata": map[string]any{"uid": pod.UID}, "spec": spec}
}

// resizedResources are the resources a resize changes, in the kubelet's order.
var resizedResources = []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory}

// changedResources names cpu and memory when a request or limit of it differs.
func changedResources(have, want corev1.ResourceRequirements) []corev1.ResourceName {
	var out []corev1.ResourceName
	for _, name := range resizedResources {
		if !sameQuantity(have.Requests, want.Requests, name) || !sameQuantity(have.Limits, want.Limits, name) {
			out = append(out, name)
		}
	}
	return out
}

// sameQuantity compares one resource of two lists; unset is zero.
func sameQuantity(a, b corev1.ResourceList, name corev1.ResourceName) bool {
	qa, qb := a[name], b[name]
	return qa.Cmp(qb) == 0
}

// resizePolicy is c's restart policy for resource name; NotRequired when unset.
func resizePolicy(c corev1.Container, name corev1.ResourceName) corev1.ResourceResizeRestartPolicy {
	for _, p := range c.ResizePolicy {
		if p.ResourceName == name {
			return p.RestartPolicy
		}
	}
	return corev1.NotRequired
}

func isSidecar(c corev1.Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
}

func statusNamed(list []corev1.ContainerStatus, name string) (corev1.ContainerStatus, bool) {
	for _, c := range list {
		if c.Name == name {
			return c, true
		}
	}
	return corev1.ContainerStatus{}, false
}

func containerNamed(list []corev1.Container, name string) (corev1.Container, bool) {
	for _, c := range list {
		if c.Name == name {
			return c, true
		}
	}
	return corev1.Container{}, false
}

// ResizeState is where the kubelet is with a pod's resize, from its conditions.
type ResizeState string

const (
	// ResizeSettled: neither PodResizePending nor PodResizeInProgress.
	ResizeSettled ResizeState = ""
	// ResizeDeferred: PodResizePending, reason Deferred — the node could fit it but
	// other pods hold the room now; the kubelet retries as room frees.
	ResizeDeferred ResizeState = corev1.PodReasonDeferred
	// ResizeInfeasible: PodResizePending, reason Infeasible — the node can never fit
	// it (more than its allocatable), or the kubelet cannot make it.
	ResizeInfeasible ResizeState = corev1.PodReasonInfeasible
	// ResizeInProgress: PodResizeInProgress, and not pending — the kubelet accepted it
	// and is applying it (with an error message while it cannot, such as a memory limit
	// below what the container uses).
	ResizeInProgress ResizeState = "InProgress"
)

// ResizeStateOf reads pod's resize conditions, with the kubelet's message. Both can be
// set (a new resize pending while an older one is applied): pending wins, since it
// says whether the latest one can be made at all.
func ResizeStateOf(pod *corev1.Pod) (ResizeState, string) {
	var inProgress *corev1.PodCondition
	for i, c := range pod.Status.Conditions {
		switch {
		case c.Type == corev1.PodResizePending && c.Status == corev1.ConditionTrue:
			return ResizeState(c.Reason), c.Message
		case c.Type == corev1.PodResizeInProgress && c.Status == corev1.ConditionTrue:
			inProgress = &pod.Status.Conditions[i]
		}
	}
	if inProgress != nil {
		return ResizeInProgress, inProgress.Message
	}
	return ResizeSettled, ""
}

// ResizeDone tells whether the kubelet has made pod's resize to to's resources: every
// container of to (and every sidecar) reports them in
// status.containerStatuses[].resources (cpu and memory, compared as PlanResize does),
// no resize condition remains, and the pod's status.observedGeneration is at least its
// metadata.generation. The resize write raised the generation; comparing with the
// generation the cache shows, not one remembered from the write, lets a restarted
// controller decide from the pod alone, and a later write only makes it wait longer.
// A pod whose spec lacks the resources is not done: the write has not been made or
// not been seen.
func ResizeDone(pod *corev1.Pod, to *corev1.PodTemplateSpec) bool {
	if !PlanResize(pod, to).Empty() {
		return false
	}
	if state, _ := ResizeStateOf(pod); state != ResizeSettled {
		return false
	}
	if pod.Status.ObservedGeneration != 0 && pod.Status.ObservedGeneration < pod.Generation {
		return false // a kubelet that does not track generations reports 0: not waited for
	}
	reports := func(statuses []corev1.ContainerStatus, want []corev1.Container, init bool) bool {
		for _, w := range want {
			if init && !isSidecar(w) {
				continue // has run; its resources are only allocated
			}
			cs, ok := statusNamed(statuses, w.Name)
			if !ok {
				return false // not started: nothing reports the resources yet
			}
			var have corev1.ResourceRequirements
			if cs.Resources != nil {
				have = *cs.Resources
			}
			if len(changedResources(have, w.Resources)) > 0 {
				return false
			}
		}
		return true
	}
	return reports(pod.Status.InitContainerStatuses, to.Spec.InitContainers, true) &&
		reports(pod.Status.ContainerStatuses, to.Spec.Containers, false)
}

// ResizeStep is what a rollout does next with one pod's resize.
type ResizeStep string

const (
	// ResizeWrite: write the resize (Resize.Patch) through pods/resize.
	ResizeWrite ResizeStep = "Write"
	// ResizeWait: the kubelet is applying it, or deferred it until room frees (which
	// counts against the workload's progress deadline like any slow pod).
	ResizeWait ResizeStep = "Wait"
	// ResizeRecreate: the node can never fit it, and the workload allows falling back
	// (InPlaceIfPossible): this pod alone takes the kind's usual update, a new pod in
	// its place, counted in maxSurge and maxUnavailable.
	ResizeRecreate ResizeStep = "Recreate"
	// ResizeBlocked: the node can never fit it, and the workload is InPlaceOnly: the
	// pod is left as it is and the rollout blocks, naming it (JudgeInfeasible).
	ResizeBlocked ResizeStep = "Blocked"
	// ResizeFinished: the pod runs with the new resources (ResizeDone).
	ResizeFinished ResizeStep = "Finished"
)

// NextResize is the next step of resizing pod to to under mode (IfPossible or Only),
// with the kubelet's message for Recreate and Blocked. Decided from the pod alone: the
// spec first (not written yet: Write), then the conditions (Infeasible: Recreate or
// Blocked; Deferred or in progress: Wait), then ResizeDone.
func NextResize(mode Mode, pod *corev1.Pod, to *corev1.PodTemplateSpec) (ResizeStep, string) {
	if !PlanResize(pod, to).Empty() {
		return ResizeWrite, ""
	}
	switch state, msg := ResizeStateOf(pod); state {
	case ResizeInfeasible:
		if mode == Only {
			return ResizeBlocked, msg
		}
		return ResizeRecreate, msg
	case ResizeSettled:
		if ResizeDone(pod, to) {
			return ResizeFinished, ""
		}
	}
	return ResizeWait, ""
}

// InfeasibleMessage says why pod is recreated or blocks a rollout: its node and the
// kubelet's reason ("pod web-1: the resize cannot be made on node n1: Node didn't
// have enough capacity: cpu, requested: 3000, capacity: 2000").
func InfeasibleMessage(pod *corev1.Pod, kubelet string) string {
	return fmt.Sprintf("pod %s: the resize cannot be made on node %s: %s", pod.Name, pod.Spec.NodeName, kubelet)
}

// JudgeInfeasible is the verdict on an InPlaceOnly rollout blocked by pods whose
// resize their nodes can never fit (messages from InfeasibleMessage, any order):
// Blocked, naming them. Under IfPossible those pods are recreated one by one and the
// change is still made in place for the others: no new verdict (false).
func JudgeInfeasible(mode Mode, messages []string) (Verdict, bool) {
	if mode != Only || len(messages) == 0 {
		return Verdict{}, false
	}
	sorted := append([]string(nil), messages...)
	sort.Strings(sorted)
	return Verdict{corev1.ConditionFalse, ReasonBlocked, fmt.Sprintf("%s; %s recreates no pod", strings.Join(sorted, "; "), Only), corev1.EventTypeWarning}, true
}
