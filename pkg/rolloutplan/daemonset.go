package rolloutplan

import (
	"fmt"
	"sort"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kroll-dev/kroll/pkg/history"
	"github.com/kroll-dev/kroll/pkg/inplace"
	"github.com/kroll-dev/kroll/pkg/placement"
	"github.com/kroll-dev/kroll/pkg/rollout"
	"github.com/kroll-dev/kroll/pkg/staging"
	"github.com/kroll-dev/kroll/pkg/staging/progress"
)

// DaemonSet plans the change of cur into next over nodes; pods are cur's (terminating
// ones count as gone), revisions its ControllerRevisions (a rollback to one that ran
// before is not staged, as the controller tells it: progress.DaemonSet).
//
// It replays kroll's DaemonSet controller node by node (nodes by name), each pass one
// batch:
//
//   - Placement first: a node next's template fits (nodeSelector, required node
//     affinity, taints against its tolerations) that has no pod gets one; a pod on a
//     node the template no longer fits goes.
//   - RollingUpdate, bounds resolved against the nodes that should run a pod (both
//     round up; both 0 means maxUnavailable 1). Without surge: an old pod that is not
//     available is replaced at once; available ones while no more than maxUnavailable
//     nodes are without an available pod — each node's pod deleted and created again
//     at the new revision in one batch ("replace"). With maxSurge: the new pod is
//     created next to the old one on up to maxSurge nodes (on a node whose old pod is
//     not available, at once), and the old pod deleted in the batch after, with the
//     next nodes' creates.
//   - In place (next annotated kroll.dev/update-strategy): when only images,
//     template metadata and the cpu and memory pods/resize accepts change, old pods
//     are updated in place (and resized), those not available
//     first, while no more than maxUnavailable nodes are without an available pod.
//     Otherwise InPlaceIfPossible rolls as above, and InPlaceOnly touches no pod.
//   - OnDelete: no pod changes but placement; a pod you delete comes back at the new
//     revision.
//   - Staged (kroll.dev/partition, kroll.dev/rollout-steps: see pkg/staging): the
//     update runs stage by stage, each to its partition, with the first partition
//     eligible nodes by name kept on their old pods (rollout.DaemonSetHeld); a note per
//     stage names its batches and the pause after it.
//
// Revisions are ControllerRevision names, "<daemonset>-<hash>", the hash computed as the
// controller computes it (next must be as the API server stores it); a pod is at a
// revision when its controller-revision-hash label is that hash.
func DaemonSet(cur *appsv1.DaemonSet, nodes []*corev1.Node, pods []*corev1.Pod, revisions []*appsv1.ControllerRevision, next *appsv1.DaemonSet, now time.Time) (Plan, error) {
	if cur == nil || next == nil {
		return Plan{}, fmt.Errorf("daemonset: both the current and the changed DaemonSet are needed")
	}
	if err := checkSame("DaemonSet", cur.ObjectMeta, next.ObjectMeta, cur.Kind, next.Kind, cur.Spec.Selector, next.Spec.Selector); err != nil {
		return Plan{}, err
	}
	obj := objectName("DaemonSet", cur.ObjectMeta)
	if next.Spec.UpdateStrategy.Type == "" {
		return Plan{}, notStored(obj, "spec.updateStrategy.type")
	}
	mode, err := inplace.ModeOf(next.Annotations)
	if err != nil {
		return Plan{}, fmt.Errorf("%s: %w", obj, err)
	}
	collisions := cur.Status.CollisionCount
	fromHash := history.TemplateHash(&cur.Spec.Template, collisions)
	toHash := history.TemplateHash(&next.Spec.Template, collisions)
	sameTemplate := history.EqualIgnoringHash(&cur.Spec.Template, &next.Spec.Template)
	if sameTemplate {
		toHash = fromHash
	}
	plan := Plan{Kind: "DaemonSet", Object: obj, From: history.RevisionName(cur.Name, fromHash), To: history.RevisionName(cur.Name, toHash)}
	plan.setFailurePolicy(next.Annotations, false, nil)
	if a, b := cur.Spec.UpdateStrategy.Type, next.Spec.UpdateStrategy.Type; a != b && a != "" {
		plan.Changes = append(plan.Changes, fmt.Sprintf("updateStrategy: %s → %s", a, b))
	}
	plan.Changes = append(plan.Changes, modeChange(cur.Annotations, next.Annotations)...)
	plan.Changes = append(plan.Changes, templateChanges(&cur.Spec.Template, &next.Spec.Template)...)

	s := &dsSim{ds: next, revision: plan.To, now: now}
	updated := func(p *corev1.Pod) bool {
		if p.Labels[appsv1.DefaultDaemonSetUniqueLabelKey] == toHash {
			return true
		}
		gen, ok := cur.Annotations[appsv1.DeprecatedTemplateGeneration]
		return sameTemplate && ok && p.Labels["pod-template-generation"] == gen
	}
	byNode := map[string][]*corev1.Pod{}
	for _, p := range pods {
		if p != nil && p.DeletionTimestamp == nil && rollout.IsPodActive(p) {
			if n := placement.TargetNode(p); n != "" {
				byNode[n] = append(byNode[n], p)
			}
		}
	}
	var sorted []*corev1.Node
	for _, n := range nodes {
		if n != nil {
			sorted = append(sorted, n)
		}
	}
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	initial := map[string]bool{}
	for _, n := range sorted {
		fit := placement.NodeFit(next, n)
		ns := &dsNode{name: n.Name, shouldRun: fit.ShouldRun, shouldContinue: fit.ShouldContinue}
		list := byNode[n.Name]
		sort.SliceStable(list, func(i, j int) bool { return list[i].CreationTimestamp.Before(&list[j].CreationTimestamp) })
		for _, p := range list {
			sp := &nodePod{name: p.Name, revision: revisionOf(cur.Name, p), available: rollout.IsPodAvailable(p, cur.Spec.MinReadySeconds, now)}
			initial[sp.name] = sp.available
			switch {
			case updated(p) && ns.updated == nil:
				sp.revision = plan.To
				ns.updated = sp
			case !updated(p) && ns.old == nil:
				ns.old = sp
			default:
				ns.extra = append(ns.extra, sp)
			}
		}
		s.nodes = append(s.nodes, ns)
	}

	maxUnavailable, maxSurge, err := s.fenceposts()
	if err != nil {
		return Plan{}, fmt.Errorf("%s: %w", obj, err)
	}
	rolling := next.Spec.UpdateStrategy.Type == appsv1.RollingUpdateDaemonSetStrategyType
	plan.Strategy = string(next.Spec.UpdateStrategy.Type)
	if rolling {
		plan.Strategy = fmt.Sprintf("RollingUpdate (maxSurge %d, maxUnavailable %d)", maxSurge, maxUnavailable)
	}
	s.place()
	var v inplace.Verdict
	if rolling && mode != inplace.Off {
		fields := inPlaceFields(&cur.Spec.Template, &next.Spec.Template)
		s.resize = inplace.ResizeText(&cur.Spec.Template, &next.Spec.Template)
		if s.oldPods() > 0 {
			plan.InPlace = verdictText(mode, fields, "RollingUpdate", s.resize != "")
		}
		v, _ = inplace.Judge(mode, fields)
		if v.Proceeds() || v.Reason == inplace.ReasonBlocked {
			plan.Strategy = fmt.Sprintf("%s (maxUnavailable %d)", mode, maxUnavailable)
		}
	}
	settings := staging.SettingsOf(next.Annotations)
	if p := settings.Problem(); p != "" {
		plan.Notes = append(plan.Notes, p)
	}
	var eligible []string
	for _, n := range s.nodes {
		if n.shouldRun {
			eligible = append(eligible, n.name)
		}
	}
	prog := daemonSetProgress(cur, next, eligible, byNode, toHash, plan.To, revisions, now)
	if settings.Staged() && prog.Rollback {
		plan.Notes = append(plan.Notes, "back to a revision that ran before: a rollback is not staged, every node updates")
		settings = staging.Settings{}
	}
	for _, st := range stagesOf(settings, prog.Desired) {
		if !rolling || v.Reason == inplace.ReasonBlocked {
			break
		}
		s.held = rollout.DaemonSetHeld(eligible, st.partition)
		first := len(s.batches) + 1
		if v.Proceeds() {
			s.inPlace(maxUnavailable)
		} else {
			s.rolling(maxUnavailable, maxSurge)
		}
		if st.label != "" {
			plan.Notes = append(plan.Notes, stageNote(st, first, len(s.batches), int32(len(eligible)-s.oldPods()), int32(len(eligible))))
		}
	}
	if len(s.held) > 0 && s.oldPods() > 0 {
		plan.Notes = append(plan.Notes, fmt.Sprintf("the first %d nodes by name keep %s: %s", len(s.held), plan.From, heldNames(s.nodes, s.held)))
	}
	plan.Batches = s.batches
	plan.bounds(initial)
	switch {
	case !rolling:
		plan.Notes = append(plan.Notes, "OnDelete: pods change only when you delete them; each comes back at "+plan.To)
	case len(plan.Batches) == 0 && sameTemplate:
		plan.Notes = append(plan.Notes, "no pod changes: the template is the same")
	}
	if skipped := s.unplaced(); len(skipped) > 0 {
		plan.Notes = append(plan.Notes, fmt.Sprintf("no pod on %s: the template does not fit", strings.Join(skipped, ", ")))
	}
	return plan, nil
}

// daemonSetProgress is the controller's staging progress (progress.DaemonSet) of
// next's rollout over eligible nodes as they stand now: of its revision (toHash, named
// to) when revisions has it, else of a revision the controller is about to create,
// newer than every other.
func daemonSetProgress(cur, next *appsv1.DaemonSet, eligible []string, byNode map[string][]*corev1.Pod, toHash, to string,
	revisions []*appsv1.ControllerRevision, now time.Time) staging.Progress {
	newest := &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: to, CreationTimestamp: metav1.NewTime(now),
		Labels: map[string]string{appsv1.DefaultDaemonSetUniqueLabelKey: toHash}}}
	for _, r := range revisions {
		if r.Name == to {
			return progress.DaemonSet(withoutStaleGeneration(cur, next), eligible, byNode, toHash, r, revisions, now)
		}
	}
	// Created now, and so after every listed revision even when this machine's clock
	// is behind the API server's.
	for _, r := range revisions {
		if !r.CreationTimestamp.Before(&newest.CreationTimestamp) {
			newest.CreationTimestamp = metav1.NewTime(r.CreationTimestamp.Add(time.Second))
		}
	}
	return progress.DaemonSet(withoutStaleGeneration(cur, next), eligible, byNode, toHash, newest, revisions, now)
}

// withoutStaleGeneration is next without cur's template generation when the template
// changes (the API server bumps it on the update): no old pod counts as updated by it.
func withoutStaleGeneration(cur, next *appsv1.DaemonSet) *appsv1.DaemonSet {
	if history.EqualIgnoringHash(&cur.Spec.Template, &next.Spec.Template) {
		return next
	}
	ds := next.DeepCopy()
	delete(ds.Annotations, appsv1.DeprecatedTemplateGeneration)
	return ds
}

// revisionOf is the ControllerRevision name of p's revision ("(unknown)" without the
// label).
func revisionOf(ds string, p *corev1.Pod) string {
	if h := p.Labels[appsv1.DefaultDaemonSetUniqueLabelKey]; h != "" {
		return history.RevisionName(ds, h)
	}
	return "(unknown)"
}

// nodePod is a daemon pod in the model.
type nodePod struct {
	name, revision string
	available      bool
}

// dsNode is one node in the model: its oldest updated pod and its oldest old one.
type dsNode struct {
	name                      string
	shouldRun, shouldContinue bool
	updated, old              *nodePod
	extra                     []*nodePod
}

// dsSim replays the DaemonSet controller on a model of its nodes.
type dsSim struct {
	ds       *appsv1.DaemonSet // next
	revision string
	// resize is how a pod updated in place is resized (inplace.ResizeText); "" when
	// no cpu or memory changes.
	resize  string
	now     time.Time
	nodes   []*dsNode
	created int
	batches []Batch
	// held are the nodes a partition keeps on their old pods in the stage replayed.
	held map[string]bool
}

// heldNames lists the held nodes, in the nodes' order.
func heldNames(nodes []*dsNode, held map[string]bool) string {
	var out []string
	for _, n := range nodes {
		if held[n.name] {
			out = append(out, n.name)
		}
	}
	return strings.Join(out, ", ")
}

// fenceposts are the controller's bounds over the nodes that should run a pod.
func (s *dsSim) fenceposts() (maxUnavailable, maxSurge int, err error) {
	desired := 0
	for _, n := range s.nodes {
		if n.shouldRun {
			desired++
		}
	}
	return rollout.DaemonSetFenceposts(s.ds.Spec.UpdateStrategy.RollingUpdate, desired)
}

func (s *dsSim) newPod(n *dsNode) (*nodePod, PodOp) {
	s.created++
	p := &nodePod{name: fmt.Sprintf("%s (new %d)", s.revision, s.created), revision: s.revision, available: true}
	return p, PodOp{Op: Create, Pod: p.name, Node: n.name, Revision: s.revision}
}

func deleteOp(n *dsNode, p *nodePod) PodOp {
	return PodOp{Op: Delete, Pod: p.name, Node: n.name, Revision: p.revision}
}

func (s *dsSim) flush(ops []PodOp) bool {
	if len(ops) == 0 {
		return false
	}
	s.batches = append(s.batches, Batch{Ops: ops})
	return true
}

// place is the controller's placement step: a pod on each node that should run one
// and has none; extra pods, and pods on nodes the template no longer fits, deleted.
func (s *dsSim) place() {
	surge := false
	if ru := s.ds.Spec.UpdateStrategy.RollingUpdate; s.ds.Spec.UpdateStrategy.Type == appsv1.RollingUpdateDaemonSetStrategyType && ru != nil && ru.MaxSurge != nil {
		surge = ru.MaxSurge.String() != "0" && ru.MaxSurge.String() != "0%"
	}
	var ops []PodOp
	for _, n := range s.nodes {
		switch {
		case n.updated == nil && n.old == nil && n.shouldRun:
			p, op := s.newPod(n)
			n.updated = p
			ops = append(ops, op)
		case !n.shouldContinue:
			for _, p := range append([]*nodePod{n.old, n.updated}, n.extra...) {
				if p != nil {
					ops = append(ops, deleteOp(n, p))
				}
			}
			n.old, n.updated, n.extra = nil, nil, nil
		default:
			extra := n.extra
			if !surge && n.old != nil && n.updated != nil {
				extra = append(extra, n.updated) // keeps its oldest: the old one, here
				n.updated = nil
			}
			for _, p := range extra {
				ops = append(ops, deleteOp(n, p))
			}
			n.extra = nil
		}
	}
	s.flush(ops)
}

func (s *dsSim) oldPods() int {
	count := 0
	for _, n := range s.nodes {
		if n.old != nil {
			count++
		}
	}
	return count
}

// unplaced names the nodes next's template does not fit.
func (s *dsSim) unplaced() []string {
	var out []string
	for _, n := range s.nodes {
		if !n.shouldRun && n.old == nil && n.updated == nil {
			out = append(out, n.name)
		}
	}
	return out
}

// rolling replays the rolling update, one step a batch, with the controller's planner
// (rollout.DaemonSetUpdate) on the model's nodes: without surge, each old pod it lets go
// is deleted and created again at the new revision in one batch ("replace"); with
// surge, the new pod is created beside the old one, and the old one deleted in the
// batch after, with the next nodes' creates.
func (s *dsSim) rolling(maxUnavailable, maxSurge int) {
	for range 2*len(s.nodes) + 1 {
		var view []rollout.DaemonNode
		byName := map[string]*dsNode{}
		for _, n := range s.nodes {
			if n.old == nil && n.updated == nil {
				continue // no pod here, nor one to place (placement came first): not the rollout's
			}
			byName[n.name] = n
			view = append(view, rollout.DaemonNode{Name: n.name, ShouldRun: n.shouldRun,
				HasOld: n.old != nil, OldAvailable: n.old != nil && n.old.available,
				HasUpdated: n.updated != nil, UpdatedAvailable: n.updated != nil && n.updated.available, Held: s.held[n.name]})
		}
		step := rollout.DaemonSetUpdate(view, maxUnavailable, maxSurge)
		var ops []PodOp
		for _, name := range step.DeleteOld {
			n := byName[name]
			ops = append(ops, deleteOp(n, n.old))
			n.old = nil
			if maxSurge == 0 && n.shouldRun {
				p, op := s.newPod(n) // the placement step's replacement
				n.updated = p
				ops = append(ops, op)
			}
		}
		for _, name := range step.Surge {
			n := byName[name]
			p, op := s.newPod(n)
			n.updated = p
			ops = append(ops, op)
		}
		if !s.flush(ops) {
			return
		}
	}
}

// inPlace updates old pods in place as the controller picks them
// (inplace.WithinBudget): those not available first, then by node, while no more than
// maxUnavailable nodes are without an available pod.
func (s *dsSim) inPlace(maxUnavailable int) {
	for range len(s.nodes) + 1 {
		unavailable := 0
		var old []*dsNode
		for _, n := range s.nodes {
			for _, p := range []*nodePod{n.old, n.updated} {
				if p != nil && !p.available {
					unavailable++
				}
			}
			if n.old != nil && !s.held[n.name] {
				old = append(old, n)
			}
		}
		serving := func(n *dsNode) bool { return n.old.available }
		var ops []PodOp
		for _, n := range inplace.WithinBudget(inplace.NotServingFirst(old, serving), serving, maxUnavailable, unavailable) {
			ops = append(ops, PodOp{Op: InPlace, Pod: n.old.name, Node: n.name, Revision: s.revision, Resize: s.resize})
			n.updated, n.old = &nodePod{name: n.old.name, revision: s.revision, available: true}, nil
		}
		if !s.flush(ops) {
			return
		}
	}
}
