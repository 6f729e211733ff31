package daemonset

import (
	"sort"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/kroll-dev/kroll/pkg/placement"
	"github.com/kroll-dev/kroll/pkg/rollout"
)

// The labels and annotation that tie a DaemonSet's pods to its template.
const (
	RevisionLabel = appsv1.DefaultDaemonSetUniqueLabelKey // controller-revision-hash
	// TemplateGenerationLabel is the pod's copy of TemplateGenerationAnnotation.
	TemplateGenerationLabel = "pod-template-generation"
	// TemplateGenerationAnnotation is the API server's count of template changes.
	TemplateGenerationAnnotation = appsv1.DeprecatedTemplateGeneration
)

// isUpdated tells whether pod runs ds's current template: its hash label is hash, or its
// template generation is ds's.
func isUpdated(ds *appsv1.DaemonSet, pod *corev1.Pod, hash string) bool {
	if pod.Labels[RevisionLabel] == hash {
		return true
	}
	gen, ok := ds.Annotations[TemplateGenerationAnnotation]
	return ok && pod.Labels[TemplateGenerationLabel] == gen
}

// oldestFirst sorts pods scheduled before unscheduled, then by age, then by name: the
// first is the pod a node keeps.
func oldestFirst(pods []*corev1.Pod) {
	sort.SliceStable(pods, func(i, j int) bool {
		a, b := pods[i], pods[j]
		if (a.Spec.NodeName != "") != (b.Spec.NodeName != "") {
			return a.Spec.NodeName != ""
		}
		if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return a.CreationTimestamp.Before(&b.CreationTimestamp)
		}
		return a.Name < b.Name
	})
}

// onNode is one node's daemon pods that are not being deleted, split by template.
type onNode struct {
	node string
	// updated and old are the oldest pod of each kind; ok is false when a node has two
	// of a kind (the manage step removes the extra one first).
	updated, old *corev1.Pod
	ok           bool
	// shouldRun: the DaemonSet still places pods on this node.
	shouldRun bool
}

func splitPods(ds *appsv1.DaemonSet, node string, shouldRun bool, pods []*corev1.Pod, hash string) onNode {
	n := onNode{node: node, ok: true, shouldRun: shouldRun}
	for _, p := range pods {
		if p.DeletionTimestamp != nil {
			continue
		}
		if isUpdated(ds, p, hash) {
			if n.updated != nil {
				n.ok = false
			}
			n.updated = p
		} else {
			if n.old != nil {
				n.ok = false
			}
			n.old = p
		}
	}
	return n
}

// manage decides placement: a pod for each node that should run one and has none; the
// deletion of finished pods, of extra pods (a node keeps its oldest, or with surge its
// oldest updated and oldest old), of pods on nodes they no longer fit, and of unplaced
// pods for nodes that are gone.
//
// failedMayGo says whether a failed pod on a node may be deleted now (its back-off).
func manage(ds *appsv1.DaemonSet, nodes []*corev1.Node, fits map[string]placement.Fit, byNode map[string][]*corev1.Pod, hash string, failedMayGo func(node string) bool) (creates []string, deletes []*corev1.Pod) {
	surge := false
	if ru := ds.Spec.UpdateStrategy.RollingUpdate; ds.Spec.UpdateStrategy.Type == appsv1.RollingUpdateDaemonSetStrategyType && ru != nil && ru.MaxSurge != nil {
		surge = ru.MaxSurge.String() != "0" && ru.MaxSurge.String() != "0%"
	}
	known := map[string]bool{}
	for _, n := range nodes {
		known[n.Name] = true
		f := fits[n.Name]
		pods := byNode[n.Name]
		switch {
		case f.ShouldRun && len(pods) == 0:
			creates = append(creates, n.Name)
		case f.ShouldContinue:
			var running []*corev1.Pod
			for _, p := range pods {
				switch {
				case p.DeletionTimestamp != nil:
				case p.Status.Phase == corev1.PodFailed:
					if failedMayGo(n.Name) {
						deletes = append(deletes, p)
					}
				case p.Status.Phase == corev1.PodSucceeded:
					deletes = append(deletes, p)
				default:
					running = append(running, p)
				}
			}
			if !surge {
				if len(running) > 1 {
					deletes = append(deletes, running[1:]...)
				}
				continue
			}
			var keptNew, keptOld bool
			for _, p := range running {
				updated := isUpdated(ds, p, hash)
				switch {
				case updated && !keptNew:
					keptNew = true
				case !updated && !keptOld:
					keptOld = true
				default:
					deletes = append(deletes, p)
				}
			}
		case len(pods) > 0:
			for _, p := range pods {
				if p.DeletionTimestamp == nil {
					deletes = append(deletes, p)
				}
			}
		}
	}
	for node, pods := range byNode {
		if known[node] {
			continue
		}
		for _, p := range pods {
			if p.Spec.NodeName == "" && p.DeletionTimestamp == nil {
				deletes = append(deletes, p)
			}
		}
	}
	return creates, deletes
}

// updatePlan is one step of a rolling update: old pods to delete, nodes to give an
// updated pod (surge).
type updatePlan struct {
	deletes []*corev1.Pod
	creates []string
}

// planRollingUpdate is the next step of ds's rolling update over nodes (sorted by name).
//
// Without surge, old pods are deleted — never more than maxUnavailable nodes without an
// available pod: a node without pods, with two, or with an updated pod not yet
// available counts as unavailable; an old pod that is not available is replaced at
// once (it serves nothing); available old pods go while room is left. The manage step
// then creates their replacements. With 3 nodes and maxUnavailable 1: one old pod goes
// per step, the next once its replacement is available.
//
// With surge, an updated pod is started next to the old one first — on at most
// maxSurge nodes at a time (nodes whose old pod is not available do not wait) — and
// the old pod is deleted once the updated one is available.
func planRollingUpdate(ds *appsv1.DaemonSet, nodes []onNode, maxUnavailable, maxSurge int, now time.Time) updatePlan {
	available := func(p *corev1.Pod) bool { return rollout.IsPodAvailable(p, ds.Spec.MinReadySeconds, now) }
	var plan updatePlan
	if maxSurge == 0 {
		unavailable := 0
		var candidates []*corev1.Pod
		for _, n := range nodes {
			switch {
			case !n.ok, n.old == nil && n.updated == nil, n.old != nil && n.updated != nil:
				unavailable++
			case n.updated != nil:
				if !available(n.updated) {
					unavailable++
				}
			case !available(n.old):
				plan.deletes = append(plan.deletes, n.old)
				unavailable++
			case unavailable < maxUnavailable:
				candidates = append(candidates, n.old)
			}
		}
		room := min(max(maxUnavailable-unavailable, 0), len(candidates))
		plan.deletes = append(plan.deletes, candidates[:room]...)
		return plan
	}
	surging := 0
	var candidates []string
	for _, n := range nodes {
		switch {
		case !n.ok:
			surging++
		case n.updated == nil && n.old == nil:
		case n.updated == nil && !n.shouldRun:
			// No new pod goes where the DaemonSet no longer places pods (a taint added
			// since); an old pod that serves nothing there goes.
			if !available(n.old) {
				plan.deletes = append(plan.deletes, n.old)
			}
		case n.updated == nil && !available(n.old):
			plan.creates = append(plan.creates, n.node)
		case n.updated == nil:
			if surging < maxSurge {
				candidates = append(candidates, n.node)
			}
		case !available(n.updated):
			surging++
		case n.old != nil:
			plan.deletes = append(plan.deletes, n.old)
		}
	}
	room := min(max(maxSurge-surging, 0), len(candidates))
	plan.creates = append(plan.creates, candidates[:room]...)
	return plan
}
