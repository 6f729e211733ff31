package inplace

import (
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
)

// ResizeRules are what a cluster allows a resize beyond the API server's fixed rules.
type ResizeRules struct {
	// InitContainers: the resources of init containers that are not sidecars may be
	// resized. The API server allows it with the feature gate
	// InPlacePodVerticalScalingInitContainers (beta, on by default in 1.36), and its
	// NodeDeclaredFeatures admission only on a node that declares the feature. Sidecars
	// (init containers with restartPolicy Always) may always be resized. False: a change
	// of a plain init container's resources is named, as the API would refuse it.
	InitContainers bool
}

// DiffResize is Diff with one more kind of change made in place: the cpu and memory
// requests and limits of containers, when the API server's pods/resize would accept
// the change (ResizeFields). Diff itself still names every resources change: the
// controllers write images, not resources, so until they write pods/resize a change
// Diff let through would be called made in place and never reach a pod.
func DiffResize(from, to *corev1.PodTemplateSpec, rules ResizeRules) []string {
	return diff(from, to, &rules)
}

// ResizeFields names why the API server's pods/resize (1.36) would refuse to change
// from's container resources to to's, one entry per refusal, as a JSON path with the
// reason; none when it would accept them or nothing changes. It looks only at
// resources, resizePolicy and what decides whether a resize is allowed at all; the
// other fields are Diff's. The rules, in the API server's order:
//
//   - A Windows pod (spec.os.name windows) is never resized.
//   - The QoS class may not change: BestEffort, Burstable and Guaranteed are computed
//     from the sum of the cpu and memory requests and limits of every container and
//     init container (qosClass). cpu 100m/100m, memory 64Mi/128Mi is Burstable;
//     making the memory request 128Mi makes it Guaranteed: refused.
//   - A pod with pod-level resources (spec.resources) has further rules between the
//     pod's and the containers' resources; kroll does not resize such a pod (named
//     conservatively).
//   - Requests and limits may change or be added, never removed.
//   - Only cpu and memory may change; any other resource name (ephemeral-storage,
//     hugepages-2Mi, nvidia.com/gpu) may not. A container with resources.claims has
//     none the API would keep on resize: it refuses every resize of that pod.
//   - An init container that is not a sidecar: only with rules.InitContainers, and
//     never with a resizePolicy of RestartContainer.
//
// A memory limit decrease is accepted whatever the container's resizePolicy: the 1.36
// API server does not refuse one with NotRequired. The kubelet then refuses to
// apply it while the container uses more than the new limit (the resize stays in
// progress, with an error), which ResizeDone waits out.
func ResizeFields(from, to *corev1.PodTemplateSpec, rules ResizeRules) []string {
	changed := resourcesChanged(from, to)
	if len(changed) == 0 {
		return nil
	}
	var fields []string
	switch {
	case to.Spec.OS != nil && to.Spec.OS.Name == corev1.Windows:
		for _, c := range changed {
			fields = append(fields, c.path+" (a Windows pod cannot be resized)")
		}
		return fields
	case from.Spec.Resources != nil || to.Spec.Resources != nil:
		for _, c := range changed {
			fields = append(fields, c.path+" (the pod has pod-level resources)")
		}
		return fields
	}
	if a, b := qosClass(&from.Spec), qosClass(&to.Spec); a != b {
		for _, c := range changed {
			fields = append(fields, fmt.Sprintf("%s (QoS class %s → %s)", c.path, a, b))
		}
	}
	// The API rebuilds each container it may resize from its cpu and memory alone and
	// compares it with the old one: claims make them differ, whichever container changed.
	for _, c := range from.Spec.InitContainers {
		if len(c.Resources.Claims) > 0 && (isSidecar(c) || rules.InitContainers) {
			fields = append(fields, fmt.Sprintf("spec.initContainers[%s].resources.claims (a pod with resource claims cannot be resized)", c.Name))
		}
	}
	for _, c := range from.Spec.Containers {
		if len(c.Resources.Claims) > 0 {
			fields = append(fields, fmt.Sprintf("spec.containers[%s].resources.claims (a pod with resource claims cannot be resized)", c.Name))
		}
	}
	for _, c := range changed {
		fields = append(fields, c.refusals(rules)...)
	}
	sort.Strings(fields)
	return fields
}

// containerChange is one container whose resources differ between two templates.
type containerChange struct {
	path     string // "spec.containers[app].resources"
	init     bool   // an init container
	sidecar  bool   // an init container with restartPolicy Always
	from, to corev1.Container
}

// resourcesChanged lists the containers whose resources differ, matched by position
// and name (containers added, removed or renamed are Diff's to name).
func resourcesChanged(from, to *corev1.PodTemplateSpec) []containerChange {
	var out []containerChange
	add := func(path string, init bool, a, b []corev1.Container) {
		if len(a) != len(b) {
			return
		}
		for i := range a {
			if a[i].Name != b[i].Name || equality.Semantic.DeepEqual(a[i].Resources, b[i].Resources) {
				continue
			}
			out = append(out, containerChange{fmt.Sprintf("%s[%s].resources", path, a[i].Name), init, init && isSidecar(b[i]), a[i], b[i]})
		}
	}
	add("spec.initContainers", true, from.Spec.InitContainers, to.Spec.InitContainers)
	add("spec.containers", false, from.Spec.Containers, to.Spec.Containers)
	return out
}

// refusals names what the API refuses in one container's change (QoS and claims
// aside).
func (c containerChange) refusals(rules ResizeRules) []string {
	if c.init && !c.sidecar {
		if !rules.InitContainers {
			return []string{c.path + " (resources of an init container that is not a sidecar cannot be resized on this cluster)"}
		}
		for _, p := range c.to.ResizePolicy {
			if p.RestartPolicy == corev1.RestartContainer {
				return []string{c.path + " (an init container that is not a sidecar, with resizePolicy RestartContainer, cannot be resized)"}
			}
		}
	}
	var out []string
	for _, l := range []struct {
		kind     string
		from, to corev1.ResourceList
	}{{"requests", c.from.Resources.Requests, c.to.Resources.Requests}, {"limits", c.from.Resources.Limits, c.to.Resources.Limits}} {
		for _, name := range resourceNames(l.from, l.to) {
			a, inFrom := l.from[name]
			b, inTo := l.to[name]
			path := fmt.Sprintf("%s.%s[%s]", c.path, l.kind, name)
			switch {
			case inFrom && !inTo:
				out = append(out, path+" (removed: "+l.kind+" cannot be removed on resize)")
			case name == corev1.ResourceCPU || name == corev1.ResourceMemory:
			case !inFrom || a.Cmp(b) != 0:
				out = append(out, path+" (only cpu and memory can be resized)")
			}
		}
	}
	if !equality.Semantic.DeepEqual(c.from.Resources.Claims, c.to.Resources.Claims) {
		out = append(out, c.path+".claims (only cpu and memory can be resized)")
	}
	return out
}

// resourceNames is the names in either list, sorted.
func resourceNames(a, b corev1.ResourceList) []corev1.ResourceName {
	seen := map[corev1.ResourceName]bool{}
	var out []corev1.ResourceName
	for _, l := range []corev1.ResourceList{a, b} {
		for n := range l {
			if !seen[n] {
				seen[n] = true
				out = append(out, n)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// qosClass is the QoS class the API computes for a pod of spec (without pod-level
// resources): only cpu and memory count, and only positive quantities. No request and
// no limit: BestEffort. Guaranteed: every container and init container has a cpu and a
// memory limit, and the pod's summed requests equal its summed limits, name by name.
// Otherwise Burstable. Two containers of cpu 100m/100m and memory 64Mi/64Mi:
// Guaranteed; one of them without a memory limit: Burstable.
func qosClass(spec *corev1.PodSpec) corev1.PodQOSClass {
	requests, limits := corev1.ResourceList{}, corev1.ResourceList{}
	guaranteed := true
	sum := func(into, from corev1.ResourceList) (counted int) {
		for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			q, ok := from[name]
			if !ok || q.Sign() <= 0 {
				continue
			}
			counted++
			total := into[name]
			total.Add(q)
			into[name] = total
		}
		return counted
	}
	for _, list := range [][]corev1.Container{spec.Containers, spec.InitContainers} {
		for _, c := range list {
			sum(requests, c.Resources.Requests)
			if sum(limits, c.Resources.Limits) < 2 {
				guaranteed = false
			}
		}
	}
	if len(requests) == 0 && len(limits) == 0 {
		return corev1.PodQOSBestEffort
	}
	for name, req := range requests {
		if lim, ok := limits[name]; !ok || lim.Cmp(req) != 0 {
			guaranteed = false
		}
	}
	if guaranteed && len(requests) == len(limits) {
		return corev1.PodQOSGuaranteed
	}
	return corev1.PodQOSBurstable
}
