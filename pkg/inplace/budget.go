package inplace

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
