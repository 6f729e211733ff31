package inplace

import corev1 "k8s.io/api/core/v1"

// WithinBudget walks pods in order and returns those an in-place update moves on now,
// within maxUnavailable: a pod that is not in service costs nothing, one that is costs
// one of the maxUnavailable − unavailable pods that may still go out of service. The
// walk stops at the first pod in service that the budget cannot pay for, so the order
// is kept (a StatefulSet's highest ordinal first: a later pod never jumps the queue).
// With maxUnavailable 2, 1 unavailable and pods [in, out, in, in]: the first two.
func WithinBudget(pods []*corev1.Pod, inService func(*corev1.Pod) bool, maxUnavailable, unavailable int) []*corev1.Pod {
	budget := maxUnavailable - unavailable
	var out []*corev1.Pod
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
func NotServingFirst(pods []*corev1.Pod, inService func(*corev1.Pod) bool) []*corev1.Pod {
	var first, rest []*corev1.Pod
	for _, p := range pods {
		if inService(p) {
			rest = append(rest, p)
		} else {
			first = append(first, p)
		}
	}
	return append(first, rest...)
}
