package inplace

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// ResourceChanges says what changes in the cpu and memory requests and limits of the
// containers from and to share, one entry per container, init containers first, for
// people: "app: cpu request 100m → 200m", "init setup: memory limit 64Mi → 128Mi",
// "app: cpu request 100m → 200m, cpu limit (none) → 400m". Quantities are printed as
// the templates hold them, and compared as the kubelet compares them (0.1 and 100m are
// one request: no entry). Containers added or removed are Diff's, not here.
func ResourceChanges(from, to *corev1.PodTemplateSpec) []string {
	var out []string
	describe := func(prefix string, have, want []corev1.Container) {
		for _, w := range want {
			h, ok := containerNamed(have, w.Name)
			if !ok {
				continue
			}
			var parts []string
			for _, name := range resizedResources {
				for _, l := range []struct {
					kind     string
					from, to corev1.ResourceList
				}{{"request", h.Resources.Requests, w.Resources.Requests}, {"limit", h.Resources.Limits, w.Resources.Limits}} {
					if !sameQuantity(l.from, l.to, name) {
						parts = append(parts, fmt.Sprintf("%s %s %s → %s", name, l.kind, quantityText(l.from, name), quantityText(l.to, name)))
					}
				}
			}
			if len(parts) > 0 {
				out = append(out, fmt.Sprintf("%s%s: %s", prefix, w.Name, strings.Join(parts, ", ")))
			}
		}
	}
	describe("init ", from.Spec.InitContainers, to.Spec.InitContainers)
	describe("", from.Spec.Containers, to.Spec.Containers)
	return out
}

// ResizeText is how a pod running from is resized in place to to, for people: its
// ResourceChanges and what the kubelet restarts for them (the containers' resizePolicy
// in to): "app: cpu request 100m → 200m (no restart)", "app: memory limit 128Mi →
// 256Mi (restarts app)". "" when no cpu or memory request or limit changes.
func ResizeText(from, to *corev1.PodTemplateSpec) string {
	changes := ResourceChanges(from, to)
	if len(changes) == 0 {
		return ""
	}
	restart := "no restart"
	if r := PlanResize(&corev1.Pod{Spec: from.Spec}, to); r.Restarting() {
		restart = "restarts " + strings.Join(r.Restarts, ", ")
	}
	return fmt.Sprintf("%s (%s)", strings.Join(changes, "; "), restart)
}

// quantityText is one resource of a list as written, or "(none)" when unset.
func quantityText(l corev1.ResourceList, name corev1.ResourceName) string {
	q, ok := l[name]
	if !ok {
		return "(none)"
	}
	return q.String()
}
