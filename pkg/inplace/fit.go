package inplace

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/kroll-dev/kroll/pkg/rollout"
)

// Unfit says why pod's node cannot make pod's resize to to's container resources, as
// InfeasibleMessage words it; "" when it can, or when no resize is due or waiting.
//
// The kubelet reports Infeasible only for what its node can never do whatever it frees
// (a Guaranteed pod's cpu under the static CPU manager); a resize larger than the room
// the other pods leave, even larger than the whole node, it reports Deferred and
// retries as room frees. A rollout cannot tell from the kubelet whether room will ever
// free, so it judges as the kubelet admits: the pod's new requests against the node's
// allocatable less what the node's other active pods hold (their allocated requests,
// status.containerStatuses[].allocatedResources, or their spec's where none is
// reported; the actual ones while a decrease is being made). A 2-cpu node whose other pods hold 1800m cannot take a pod from 100m to
// 300m: "needs cpu 300m, 200m free (1800m of 2 held by other pods)". Judged before the
// resize is written, no write is made that the kubelet would only defer; judged while
// the kubelet defers it, pods of the same rollout resized beside it on that node count
// with what they now hold. A Deferred resize that fits by this count is waiting for
// room being freed (a pod terminating) and is waited for.
//
// node nil (not in the cache) judges nothing: the kubelet's Infeasible alone.
func Unfit(pod *corev1.Pod, to *corev1.PodTemplateSpec, node *corev1.Node, others []*corev1.Pod) string {
	if msg, judged := prejudge(pod, to, node); judged {
		return msg
	}
	held := corev1.ResourceList{}
	for _, o := range others {
		if o.UID != pod.UID && o.Spec.NodeName == node.Name && rollout.IsPodActive(o) {
			AddHeld(held, Held(o))
		}
	}
	return UnfitBeside(pod, to, node, held)
}

// prejudge is what Unfit says without counting the node's pods: the kubelet's
// Infeasible, or nothing to judge (no node, or no resize due or deferred); judged
// false: count them.
func prejudge(pod *corev1.Pod, to *corev1.PodTemplateSpec, node *corev1.Node) (string, bool) {
	if msg, judged := JudgedWithoutRoom(pod, to); judged || node != nil {
		return msg, judged
	}
	return "", true
}

// JudgedWithoutRoom is what Unfit says of pod whatever its node holds, when that is
// all it says (judged): the kubelet's Infeasible, or "" for no resize due or deferred.
// A controller asks it before summing the pods of pod's node, which a rollout of an
// image change, or a pod already resized, never needs.
func JudgedWithoutRoom(pod *corev1.Pod, to *corev1.PodTemplateSpec) (string, bool) {
	state, kubelet := ResizeStateOf(pod)
	if state == ResizeInfeasible {
		return InfeasibleMessage(pod, kubelet), true
	}
	if state != ResizeDeferred && PlanResize(pod, to).Empty() {
		return "", true
	}
	return "", false
}

// UnfitBeside is Unfit with what the node's other active pods hold summed already
// (held, AddHeld of their Held): a controller judging many pods of one node counts its
// pods once.
func UnfitBeside(pod *corev1.Pod, to *corev1.PodTemplateSpec, node *corev1.Node, held corev1.ResourceList) string {
	if msg, judged := prejudge(pod, to, node); judged {
		return msg
	}
	want := *pod
	want.Spec.InitContainers = slices.Clone(pod.Spec.InitContainers)
	want.Spec.Containers = slices.Clone(pod.Spec.Containers)
	setResources(want.Spec.InitContainers, to.Spec.InitContainers)
	setResources(want.Spec.Containers, to.Spec.Containers)
	need := resourcehelper.PodRequests(&want, resourcehelper.PodResourcesOptions{SkipPodLevelResources: true})
	var short []string
	for _, name := range resizedResources {
		n, ok := need[name]
		if !ok {
			continue
		}
		capacity := node.Status.Allocatable[name]
		free := capacity.DeepCopy()
		free.Sub(held[name])
		if n.Cmp(free) > 0 {
			h := held[name]
			short = append(short, fmt.Sprintf("needs %s %s, %s free (%s of %s held by other pods)",
				name, n.String(), free.String(), h.String(), capacity.String()))
		}
	}
	if len(short) == 0 {
		return ""
	}
	return InfeasibleMessage(pod, strings.Join(short, "; "))
}

// Held is what pod holds on its node as the kubelet's admission counts it: its
// containers' allocated requests (allocated), or the actual ones while larger.
func Held(pod *corev1.Pod) corev1.ResourceList {
	return resourcehelper.PodRequests(allocated(pod), resourcehelper.PodResourcesOptions{UseStatusResources: true, SkipPodLevelResources: true})
}

// AddHeld adds what one pod holds to a node's sum.
func AddHeld(sum, held corev1.ResourceList) {
	for name, q := range held {
		s := sum[name]
		s.Add(q)
		sum[name] = s
	}
}

// SubHeld takes what one pod holds from a node's sum.
func SubHeld(sum, held corev1.ResourceList) {
	for name, q := range held {
		s := sum[name]
		s.Sub(q)
		sum[name] = s
	}
}

// setResources gives each container of cs the resources of its namesake in to.
func setResources(cs, to []corev1.Container) {
	for i := range cs {
		if t, ok := containerNamed(to, cs[i].Name); ok {
			cs[i].Resources = t.Resources
		}
	}
}

// allocated is pod with each container's requests as the kubelet allocated them
// (allocatedResources), where it reports them: what the kubelet's admission counts. A
// deferred increase holds no room; an accepted one does before it is actuated.
func allocated(pod *corev1.Pod) *corev1.Pod {
	out := *pod
	apply := func(cs []corev1.Container, statuses []corev1.ContainerStatus) []corev1.Container {
		cs = slices.Clone(cs)
		for i := range cs {
			if st, ok := statusNamed(statuses, cs[i].Name); ok && st.AllocatedResources != nil {
				cs[i].Resources.Requests = st.AllocatedResources
			}
		}
		return cs
	}
	out.Spec.InitContainers = apply(pod.Spec.InitContainers, pod.Status.InitContainerStatuses)
	out.Spec.Containers = apply(pod.Spec.Containers, pod.Status.ContainerStatuses)
	return &out
}
