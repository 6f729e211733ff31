package inplace

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
)

// WithinBudget walks pods (of any form: the controllers' pods, `kroll rollout plan`'s
// model of them) in order and returns those an in-place update moves on now,
// within maxUnavailable: a pod that is not in service costs nothing, one that is costs
// one of the maxUnavailable − unavailable pods that may still go out of service. The
// walk stops at the first pod in service that the budget cannot pay for, so the order
// is kept (a StatefulSet's highest ordinal first: a later pod never jumps the queue).
// With maxUnavailable 2, 1 unavailable and pods [in, out, in, in]: the first two.
func WithinBudget[P any](pods []P, inService func(P) bool, maxUnavailable, unavailable int) []P {
	budget := maxUnavailable - unavailable
	var out []P
	for _, p := range pods {
		if inService(p) {
			if budget <= 0 {
				break
			}
			budget--
		}
		out = append(out, p)
	}
	return out
}

// NotServingFirst orders pods with those not in service first (updating them costs no
// availability), each group in its given order.
func NotServingFirst[P any](pods []P, inService func(P) bool) []P {
	var first, rest []P
	for _, p := range pods {
		if inService(p) {
			rest = append(rest, p)
		} else {
			first = append(first, p)
		}
	}
	return append(first, rest...)
}

// Budgeted is picked without the pods whose update to target restarts a container
// (new images, or a resize with resizePolicy RestartContainer) and that disrupt (the
// workload's PodDisruptionBudgets, disruption.PlanInPlace) does not let restart now;
// the others keep their order. A resize that restarts nothing disrupts nothing and
// is never held. nil disrupt keeps every pod. With 3 picked pods to new images and a
// budget allowing 2: the first 2.
func Budgeted(picked []*corev1.Pod, target *corev1.PodTemplateSpec, disrupt func([]*corev1.Pod) []*corev1.Pod) []*corev1.Pod {
	if disrupt == nil {
		return picked
	}
	var restarting []*corev1.Pod
	for _, pod := range picked {
		if restarts(pod, target) {
			restarting = append(restarting, pod)
		}
	}
	if len(restarting) == 0 {
		return picked
	}
	may := sets.New[types.UID]()
	for _, pod := range disrupt(restarting) {
		may.Insert(pod.UID)
	}
	var out []*corev1.Pod
	for _, pod := range picked {
		if !restarts(pod, target) || may.Has(pod.UID) {
			out = append(out, pod)
		}
	}
	return out
}

// Restarted is the pods of pods that run the images their spec names (not
// Restarting): of a workload's pods on its new revision, those whose in-place
// restart, if any, has been made, and whose disruption may be over
// (disruption.Over). A pod just patched to new images, its kubelet still reporting
// the old ones, is not among them: it may report Ready from before its restart.
func Restarted(pods []*corev1.Pod) []*corev1.Pod {
	var out []*corev1.Pod
	for _, pod := range pods {
		if !Restarting(pod) {
			out = append(out, pod)
		}
	}
	return out
}
