package kubelet

import (
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// In-place resize (the pods/resize subresource writes a running pod's container
// resources), as the kubelet of Kubernetes 1.36 carries it out at the API:
//
//  1. Allocation. When a pod's spec resources differ from what the kubelet allocated to
//     it, the kubelet runs its admission again for the desired resources against the
//     other pods' ALLOCATED resources (not their specs: a deferred increase of another
//     pod holds no room). If it fits, the allocation becomes the spec, the pod gets
//     condition PodResizeInProgress (no reason, observedGeneration = the generation
//     allocated) and a Normal ResizeStarted event. If not, PodResizePending with reason
//     Deferred and admission's message ("Node didn't have enough resource: cpu,
//     requested: 5000, used: 2000, capacity: 4000") and a Warning ResizeDeferred event;
//     it is retried when room frees. In 1.36 this is Deferred even when the request is
//     more than the node's whole allocatable: the kubelet's resource check does not tell
//     "not now" from "never". Infeasible is given only for what the node can never do
//     whatever it frees: here, a Guaranteed pod's CPU change on a node whose CPU manager
//     policy is static (Config.StaticCPUManager), with the kubelet's message.
//  2. Actuation. After the resize delay (AnnotationResizeDelay, default 200ms) each
//     container reports the allocated resources in status.containerStatuses[].resources;
//     a container whose changed resource has resizePolicy RestartContainer is restarted
//     (restartCount+1), NotRequired ones keep running. Then PodResizeInProgress goes
//     and a Normal ResizeCompleted event is recorded.
//
// Throughout, containerStatuses[].allocatedResources shows the allocated requests and
// status.observedGeneration the pod's generation (every sync writes it).

const (
	// AnnotationResizeDelay is how long one pod's accepted resize takes to be actuated
	// ("1s"); a bad value gives a Warning event and the default.
	AnnotationResizeDelay = "kroll.dev/resize-delay"
	// DefaultResizeDelay is the actuation time of a resize without the annotation.
	DefaultResizeDelay = 200 * time.Millisecond

	reasonResizeStarted      = "ResizeStarted"
	reasonResizeCompleted    = "ResizeCompleted"
	reasonResizeDeferred     = "ResizeDeferred"
	reasonResizeInfeasible   = "ResizeInfeasible"
	reasonInvalidAnnotation  = "InvalidAnnotation"
	messageStaticCPUManager  = `Resize is infeasible for Guaranteed Pods alongside CPU Manager policy "static"`
	resizeMessageStarted     = "Pod resize started"
	resizeMessageCompleted   = "Pod resize completed"
	resizeMessagePendingWord = "Pod resize "
)

// allocation is, per container name (init and app containers), the resources the
// kubelet allocated: what it admitted the pod with, or the last resize it accepted.
type allocation map[string]corev1.ResourceRequirements

// allocationOf is pod's spec resources, the allocation of a newly admitted pod.
func allocationOf(pod *corev1.Pod) allocation {
	a := allocation{}
	for _, c := range pod.Spec.InitContainers {
		a[c.Name] = *c.Resources.DeepCopy()
	}
	for _, c := range pod.Spec.Containers {
		a[c.Name] = *c.Resources.DeepCopy()
	}
	return a
}

// resumedAllocation is the allocation of a pod found running when the simulator starts:
// what its containers report as actuated (a real kubelet reads its checkpoint; an
// accepted resize the status does not show yet is decided again), else its spec.
func resumedAllocation(pod *corev1.Pod) allocation {
	a := allocationOf(pod)
	for _, list := range [][]corev1.ContainerStatus{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses} {
		for _, cs := range list {
			if _, ok := a[cs.Name]; ok && cs.Resources != nil {
				a[cs.Name] = *cs.Resources.DeepCopy()
			}
		}
	}
	return a
}

// matches tells whether pod's spec asks for exactly what is allocated: every container
// allocated what its spec asks, and no other container allocated (container names are
// unique in a pod, so equal counts then mean equal key sets). It runs on every pod sync,
// so it compares in place rather than building the spec's allocation to compare with.
func (a allocation) matches(pod *corev1.Pod) bool {
	return len(a) == len(pod.Spec.InitContainers)+len(pod.Spec.Containers) && !a.differsFrom(pod)
}

// applyTo is pod as the node's accounting sees it: its containers carry the allocated
// resources. It is pod itself when they already do (every pod not being resized), else
// a copy: read it, never write it. Each admission and each resize reads all the node's
// other pods this way, so the common case copies nothing.
func (a allocation) applyTo(pod *corev1.Pod) *corev1.Pod {
	if !a.differsFrom(pod) {
		return pod
	}
	p := pod.DeepCopy()
	for _, list := range [][]corev1.Container{p.Spec.InitContainers, p.Spec.Containers} {
		for i := range list {
			if r, ok := a[list[i].Name]; ok {
				list[i].Resources = *r.DeepCopy()
			}
		}
	}
	return p
}

// differsFrom tells whether any container of pod is allocated other resources than its
// spec asks for, or none at all.
func (a allocation) differsFrom(pod *corev1.Pod) bool {
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			if r, ok := a[list[i].Name]; !ok || !equality.Semantic.DeepEqual(r, list[i].Resources) {
				return true
			}
		}
	}
	return false
}

// resizeKind is the kubelet's decision on a pod's desired resources.
type resizeKind int

const (
	// resizeNone: the spec asks for what is allocated; nothing to decide.
	resizeNone resizeKind = iota
	// resizeAccepted: the desired resources fit; they are the allocation now.
	resizeAccepted
	// resizeDeferred: they do not fit beside the other pods now; retried when room frees.
	resizeDeferred
	// resizeInfeasible: the node can never carry them out.
	resizeInfeasible
)

// resizeDecision is what the kubelet decides about one pod's resize.
type resizeDecision struct {
	kind resizeKind
	// cause is the failed check's own reason ("OutOfcpu"), which the event names;
	// message is the condition's and the event's message. Both empty unless pending.
	cause, message string
}

// pendingReason is the PodResizePending condition's reason: Infeasible, or Deferred for
// every other refusal (the kubelet maps OutOfcpu, NodePorts, … all to Deferred).
func (d resizeDecision) pendingReason() string {
	if d.kind == resizeInfeasible {
		return corev1.PodReasonInfeasible
	}
	return corev1.PodReasonDeferred
}

// decideResize decides pod's resize on node, where others (allocated: see
// allocation.applyTo) hold their resources and alloc is what pod holds; others is asked
// for only when there is a resize to decide, not on every sync of every pod. The
// desired pod goes through the node's whole admission again, as the kubelet's does: its
// first failure defers the resize with that check's message. Worked numbers: a 4-CPU node,
// another pod holding 2 CPUs, this pod moving from 1 to 5 CPUs: "Node didn't have
// enough resource: cpu, requested: 5000, used: 2000, capacity: 4000", Deferred; once
// the other pod is gone, 5000 > 4000 - 0 still, Deferred still (never Infeasible).
func decideResize(node *corev1.Node, others func() []*corev1.Pod, pod *corev1.Pod, alloc allocation, staticCPUManager bool) resizeDecision {
	if alloc.matches(pod) {
		return resizeDecision{kind: resizeNone}
	}
	if staticCPUManager && pod.Status.QOSClass == corev1.PodQOSGuaranteed && cpuRequestChanged(pod, alloc) {
		return resizeDecision{kind: resizeInfeasible, cause: corev1.PodReasonInfeasible, message: messageStaticCPUManager}
	}
	if v := admit(node, others(), pod); v.rejected {
		return resizeDecision{kind: resizeDeferred, cause: v.reason, message: v.message}
	}
	return resizeDecision{kind: resizeAccepted}
}

// cpuRequestChanged tells whether any container's desired CPU request differs from its
// allocation (for a Guaranteed pod requests equal limits, so requests suffice).
func cpuRequestChanged(pod *corev1.Pod, alloc allocation) bool {
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range list {
			want, have := c.Resources.Requests[corev1.ResourceCPU], alloc[c.Name].Requests[corev1.ResourceCPU]
			if !want.Equal(have) {
				return true
			}
		}
	}
	return false
}

// resizeDelay is pod's actuation time and, for a bad annotation, the one-line problem
// to report (the default is used then).
func resizeDelay(pod *corev1.Pod) (time.Duration, string) {
	v, ok := pod.Annotations[AnnotationResizeDelay]
	if !ok {
		return DefaultResizeDelay, ""
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return DefaultResizeDelay, fmt.Sprintf("%s=%q is not valid: want a Go duration of 0 or more (\"500ms\"); the resize takes %s",
			AnnotationResizeDelay, v, DefaultResizeDelay)
	}
	return d, ""
}

// resizeState is what the kubelet knows of one pod's resize when it computes its status.
type resizeState struct {
	// alloc is the allocation; nil for a pod with no resize machinery (tests of other
	// behaviour), whose containers then report their spec resources.
	alloc allocation
	// pending is the Deferred or Infeasible decision on the desired resources; nil when
	// they are allocated.
	pending *resizeDecision
	// acceptedAt and acceptedGen are when the allocation last changed by a resize and
	// the generation allocated; zero when no resize was ever accepted.
	acceptedAt  time.Time
	acceptedGen int64
	// delay is how long actuation takes after acceptedAt.
	delay time.Duration
}

// actuate reports a running (or once-run) container's resources: the allocated ones once
// the resize delay has passed since acceptance, the previously reported ones before. It
// returns the status, whether the container still waits for actuation, and whether the
// actuation restarts it (a changed resource whose resizePolicy is RestartContainer).
func actuate(c corev1.Container, old *corev1.ContainerStatus, alloc corev1.ResourceRequirements, rs resizeState, now time.Time) (reported corev1.ResourceRequirements, waiting, restart bool) {
	if old == nil || old.Resources == nil || old.ContainerID == "" {
		return *alloc.DeepCopy(), false, false // first instance: created with its allocation
	}
	actual := *old.Resources
	if equality.Semantic.DeepEqual(actual, alloc) {
		return *actual.DeepCopy(), false, false
	}
	if old.State.Running != nil && now.Before(rs.acceptedAt.Add(rs.delay)) {
		return *actual.DeepCopy(), true, false
	}
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if resourceChanged(actual, alloc, name) && resizePolicyOf(c, name) == corev1.RestartContainer {
			restart = old.State.Running != nil
		}
	}
	return *alloc.DeepCopy(), false, restart
}

func resourceChanged(a, b corev1.ResourceRequirements, name corev1.ResourceName) bool {
	ar, br := a.Requests[name], b.Requests[name]
	al, bl := a.Limits[name], b.Limits[name]
	return !ar.Equal(br) || !al.Equal(bl)
}

// resizePolicyOf is c's restart policy for resource name; NotRequired when unset.
func resizePolicyOf(c corev1.Container, name corev1.ResourceName) corev1.ResourceResizeRestartPolicy {
	for _, p := range c.ResizePolicy {
		if p.ResourceName == name {
			return p.RestartPolicy
		}
	}
	return corev1.NotRequired
}

// setResizeConditions sets or removes PodResizePending and PodResizeInProgress. A
// condition keeps its transition time while its reason stays (the kubelet's rule), and
// its probe time while nothing in it changes, so an unchanged resize is not rewritten.
func setResizeConditions(st *corev1.PodStatus, rs resizeState, generation int64, inProgress bool, now time.Time) {
	put := func(t corev1.PodConditionType, reason, message string, gen int64) {
		c := corev1.PodCondition{Type: t, Status: corev1.ConditionTrue, Reason: reason, Message: message, ObservedGeneration: gen,
			LastProbeTime: metav1.Time{Time: now}, LastTransitionTime: metav1.Time{Time: now}}
		for i := range st.Conditions {
			old := st.Conditions[i]
			if old.Type != t {
				continue
			}
			// A new resize accepted while one is in progress sets the condition afresh.
			if old.Reason == reason && (t != corev1.PodResizeInProgress || old.ObservedGeneration == gen) {
				c.LastTransitionTime = old.LastTransitionTime
				if old.Message == message && old.ObservedGeneration == gen {
					c.LastProbeTime = old.LastProbeTime
				}
			}
			st.Conditions[i] = c
			return
		}
		st.Conditions = append(st.Conditions, c)
	}
	drop := func(t corev1.PodConditionType) {
		kept := st.Conditions[:0]
		for _, c := range st.Conditions {
			if c.Type != t {
				kept = append(kept, c)
			}
		}
		st.Conditions = kept
	}
	if rs.pending != nil {
		put(corev1.PodResizePending, rs.pending.pendingReason(), rs.pending.message, generation)
	} else {
		drop(corev1.PodResizePending)
	}
	if inProgress {
		put(corev1.PodResizeInProgress, "", "", rs.acceptedGen)
	} else {
		drop(corev1.PodResizeInProgress)
	}
}

// resizeEventMessage is the kubelet's resize event message: a prefix, then the pod's
// container resources as JSON with the generation and, for a pending resize, the
// error: `Pod resize OutOfcpu: {"containers":[{"name":"c1","resources":{"requests":
// {"cpu":"5"}}}],"generation":2,"error":"Node didn't have enough resource: …"}`.
func resizeEventMessage(prefix string, pod *corev1.Pod, generation int64, errorMessage string) string {
	type named struct {
		Name      string                      `json:"name"`
		Resources corev1.ResourceRequirements `json:"resources,omitempty"`
	}
	summary := struct {
		InitContainers []named `json:"initContainers,omitempty"`
		Containers     []named `json:"containers,omitempty"`
		Generation     int64   `json:"generation"`
		Error          string  `json:"error,omitempty"`
	}{Generation: generation, Error: errorMessage}
	for _, c := range pod.Spec.InitContainers {
		summary.InitContainers = append(summary.InitContainers, named{c.Name, c.Resources})
	}
	for _, c := range pod.Spec.Containers {
		summary.Containers = append(summary.Containers, named{c.Name, c.Resources})
	}
	body, err := json.Marshal(summary)
	if err != nil {
		return prefix
	}
	return prefix + ": " + string(body)
}

// pendingIsNew tells whether decision d changes pod's PodResizePending condition (its
// reason or generation), which is when the kubelet records a pending event.
func pendingIsNew(pod *corev1.Pod, d resizeDecision) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodResizePending {
			return c.Reason != d.pendingReason() || c.ObservedGeneration != pod.Generation
		}
	}
	return true
}

// inProgressSince reads an accepted resize back from a pod's status (the simulator
// restarted and lost its clock): the condition's transition time and generation.
func inProgressSince(pod *corev1.Pod) (time.Time, int64) {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodResizeInProgress {
			return c.LastTransitionTime.Time, c.ObservedGeneration
		}
	}
	return time.Time{}, 0
}
