package daemonset

import (
	"sort"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/kroll-dev/kroll/pkg/placement"
	"github.com/kroll-dev/kroll/pkg/rollout"
	"github.com/kroll-dev/kroll/pkg/staging/progress"
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
	return progress.DaemonPodUpdated(ds, pod, hash)
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
	// held: a partition keeps the node on its old pod (see staged.go).
	held bool
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

// planRollingUpdate is the next step of ds's rolling update over nodes (sorted by
// name): rollout.DaemonSetUpdate, the planner `kroll rollout plan` replays too, read
// from the nodes' pods and turned back into the pods to delete and the nodes to give an
// updated pod.
func planRollingUpdate(ds *appsv1.DaemonSet, nodes []onNode, maxUnavailable, maxSurge int, now time.Time) updatePlan {
	available := func(p *corev1.Pod) bool { return p != nil && rollout.IsPodAvailable(p, ds.Spec.MinReadySeconds, now) }
	view := make([]rollout.DaemonNode, len(nodes))
	old := map[string]*corev1.Pod{}
	for i, n := range nodes {
		view[i] = rollout.DaemonNode{Name: n.node, Extra: !n.ok, ShouldRun: n.shouldRun,
			HasOld: n.old != nil, OldAvailable: available(n.old), HasUpdated: n.updated != nil, UpdatedAvailable: available(n.updated), Held: n.held}
		old[n.node] = n.old
	}
	step := rollout.DaemonSetUpdate(view, maxUnavailable, maxSurge)
	plan := updatePlan{creates: step.Surge}
	for _, node := range step.DeleteOld {
		plan.deletes = append(plan.deletes, old[node])
	}
	return plan
}
