package rolloutplan

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kroll-dev/kroll/pkg/gates"
	"github.com/kroll-dev/kroll/pkg/history"
	"github.com/kroll-dev/kroll/pkg/inplace"
	"github.com/kroll-dev/kroll/pkg/rollout"
	"github.com/kroll-dev/kroll/pkg/staging"
	"github.com/kroll-dev/kroll/pkg/staging/progress"
)

// StatefulSet plans the change of cur into next; pods are cur's (terminating ones count
// as gone, to be created again), revisions its ControllerRevisions (a rollback to one
// that ran before is not staged, as the controller tells it: progress.StatefulSet).
//
// It replays kroll's StatefulSet controller by ordinal, each pass one batch:
//
//   - Scaling first. Missing ordinals are created lowest first: OrderedReady one per
//     batch, Parallel all in one batch (with the ordinals out of range). Ordinals out of
//     range are deleted highest first: OrderedReady one per batch, Parallel at once. A
//     pod created below the partition gets the current revision, else the new one.
//   - RollingUpdate then replaces pods not at the new revision, from the highest ordinal
//     down to the partition: one per batch, each batch deleting the pod and creating it
//     again at the new revision ("replace"); with rollingUpdate.maxUnavailable, as many
//     per batch as keep that many (rounded down, at least 1) unavailable. Pods below
//     the partition are left alone.
//   - In place (next annotated kroll.dev/update-strategy): when only images,
//     template metadata and the cpu and memory pods/resize accepts change, pods are
//     updated in place (and resized) instead, in the same order.
//     Otherwise InPlaceIfPossible replaces them, and InPlaceOnly touches none.
//   - OnDelete: no pod changes but for scaling; a pod you delete comes back at the new
//     revision.
//   - Steps (kroll.dev/rollout-steps, see pkg/staging): the rolling update runs step
//     by step, each to the partition the controller writes for it; a note per step
//     names its batches and the pause after it.
//
// OrderedReady waits for every pod in range to be available before any other change;
// a pod that is not available (and that the plan does not replace first) stops the plan,
// with a note. A pod of an abandoned revision (neither the current nor the new one) that
// is not available is replaced instead of waited for, as kroll's controller does.
//
// Revisions are ControllerRevision names: From is cur's status.currentRevision (else
// its updateRevision), To the name next's template gets ("web-677f98675c", hashed as
// the controller hashes it: next must be as the API server stores it).
func StatefulSet(cur *appsv1.StatefulSet, pods []*corev1.Pod, revisions []*appsv1.ControllerRevision, next *appsv1.StatefulSet, now time.Time) (Plan, error) {
	return StatefulSetWithGates(cur, pods, revisions, next, gates.Defaults(), now)
}

// StatefulSetWithGates is StatefulSet under the feature gates g the controller runs
// with (`kroll rollout plan --feature-gates`): with MaxUnavailableStatefulSet off, the
// controller updates one pod at a time whatever rollingUpdate.maxUnavailable says,
// and so does the plan.
func StatefulSetWithGates(cur *appsv1.StatefulSet, pods []*corev1.Pod, revisions []*appsv1.ControllerRevision, next *appsv1.StatefulSet, g gates.Gates, now time.Time) (Plan, error) {
	if cur == nil || next == nil {
		return Plan{}, fmt.Errorf("statefulset: both the current and the changed StatefulSet are needed")
	}
	if err := checkSame("StatefulSet", cur.ObjectMeta, next.ObjectMeta, cur.Kind, next.Kind, cur.Spec.Selector, next.Spec.Selector); err != nil {
		return Plan{}, err
	}
	obj := objectName("StatefulSet", cur.ObjectMeta)
	if next.Spec.UpdateStrategy.Type == "" || next.Spec.PodManagementPolicy == "" {
		return Plan{}, notStored(obj, "spec.updateStrategy.type, spec.podManagementPolicy")
	}
	mode, err := inplace.ModeOf(next.Annotations)
	if err != nil {
		return Plan{}, fmt.Errorf("%s: %w", obj, err)
	}
	current, update, err := statefulSetRevisions(cur, next)
	if err != nil {
		return Plan{}, fmt.Errorf("%s: %w", obj, err)
	}

	plan := Plan{Kind: "StatefulSet", Object: obj, From: current, To: update}
	plan.setFailurePolicy(next.Annotations, false, nil)
	plan.Changes = append(plan.Changes, replicasChange(cur.Spec.Replicas, next.Spec.Replicas)...)
	if a, b := partition(cur), partition(next); a != b {
		plan.Changes = append(plan.Changes, fmt.Sprintf("partition: %d → %d", a, b))
	}
	if a, b := cur.Spec.UpdateStrategy.Type, next.Spec.UpdateStrategy.Type; a != b && a != "" {
		plan.Changes = append(plan.Changes, fmt.Sprintf("updateStrategy: %s → %s", a, b))
	}
	plan.Changes = append(plan.Changes, modeChange(cur.Annotations, next.Annotations)...)
	plan.Changes = append(plan.Changes, templateChanges(&cur.Spec.Template, &next.Spec.Template)...)

	s := &setSim{set: next, current: current, update: update, now: now, gates: g, byOrdinal: map[int]*setPod{}}
	for _, p := range pods {
		if p == nil || p.DeletionTimestamp != nil || !rollout.IsPodActive(p) {
			continue
		}
		o, ok := ordinal(next.Name, p.Name)
		if !ok {
			continue
		}
		s.byOrdinal[o] = &setPod{name: p.Name, revision: p.Labels[appsv1.StatefulSetRevisionLabel],
			available: rollout.IsPodAvailable(p, cur.Spec.MinReadySeconds, now)}
	}
	initial := map[string]bool{}
	for _, p := range s.byOrdinal {
		initial[p.name] = p.available
	}

	rolling := next.Spec.UpdateStrategy.Type == appsv1.RollingUpdateStatefulSetStrategyType
	fields := inPlaceFields(&cur.Spec.Template, &next.Spec.Template)
	s.resize = inplace.ResizeText(&cur.Spec.Template, &next.Spec.Template)
	if mode != inplace.Off && rolling && s.staleInRange() {
		plan.InPlace = verdictText(mode, fields, "RollingUpdate", s.resize != "")
	}
	var v inplace.Verdict
	if rolling {
		v, _ = inplace.Judge(mode, fields)
	}
	s.inPlace = v.Proceeds()
	blocked := v.Reason == inplace.ReasonBlocked
	plan.Strategy = s.strategy(mode, v)

	// Steps drive the partition (kroll.dev/rollout-steps): the scaling and each stage
	// run at the partition the stage sets.
	settings := staging.StatefulSetSettingsOf(next.Annotations)
	if p := settings.Problem(); p != "" {
		plan.Notes = append(plan.Notes, p)
	}
	stages := []stage{{partition: int32(partition(next))}}
	prog := progress.StatefulSet(next, pods, namedRevision(revisions, current, now), namedRevision(revisions, update, now), now)
	switch {
	case len(settings.Steps) > 0 && rolling && prog.Rollback && current != update:
		// The controller writes partition 0 once it finds a rollback under way.
		plan.Notes = append(plan.Notes, "back to a revision that ran before: a rollback is not staged, every pod updates")
		if _, recorded := next.Annotations[staging.StepAnnotation]; recorded {
			stages = []stage{{}}
		}
	case len(settings.Steps) > 0 && rolling:
		stages = stagesOf(settings, prog.Desired)
	}
	s.setPartition(stages[0].partition)
	if s.scale() && rolling && !blocked {
		for _, st := range stages {
			s.setPartition(st.partition)
			first := len(s.batches) + 1
			s.rollingUpdate()
			if st.label != "" {
				plan.Notes = append(plan.Notes, stageNote(st, first, len(s.batches), int32(s.updatedInRange()), int32(s.replicas())))
			}
			if s.stuck != "" {
				break
			}
		}
	}
	plan.Batches = s.batches
	plan.bounds(initial)
	plan.Notes = append(plan.Notes, s.notes(cur, next, rolling, blocked)...)
	return plan, nil
}

// namedRevision is the revision of revisions named name; one the controller is about
// to create (created now, after every listed one) when none is.
func namedRevision(revisions []*appsv1.ControllerRevision, name string, now time.Time) *appsv1.ControllerRevision {
	created := metav1.NewTime(now)
	for _, r := range revisions {
		if r.Name == name {
			return r
		}
		if !r.CreationTimestamp.Before(&created) {
			created = metav1.NewTime(r.CreationTimestamp.Add(time.Second))
		}
	}
	return &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: created}}
}

// statefulSetRevisions names the revision pods below the partition keep (cur's current
// revision) and the one the others move to: cur's update revision when the template is
// unchanged, else the name of next's template, as the controller names it.
func statefulSetRevisions(cur, next *appsv1.StatefulSet) (current, update string, err error) {
	name := func(set *appsv1.StatefulSet) (string, error) {
		data, err := history.TemplatePatch(set)
		if err != nil {
			return "", err
		}
		var collisions int32
		if set.Status.CollisionCount != nil {
			collisions = *set.Status.CollisionCount
		}
		return history.RevisionName(set.Name, history.RevisionHash(data, collisions)), nil
	}
	update = cur.Status.UpdateRevision
	if update == "" || !history.EqualIgnoringHash(&cur.Spec.Template, &next.Spec.Template) {
		withStatus := next.DeepCopy()
		withStatus.Status.CollisionCount = cur.Status.CollisionCount
		if update, err = name(withStatus); err != nil {
			return "", "", err
		}
	}
	current = cur.Status.CurrentRevision
	if current == "" {
		current = cur.Status.UpdateRevision
	}
	if current == "" {
		if current, err = name(cur); err != nil {
			return "", "", err
		}
	}
	return current, update, nil
}

var ordinalSuffix = regexp.MustCompile(`^(.*)-([0-9]+)$`)

// ordinal is the ordinal of pod name of set; ok is false for a name not "<set>-<n>".
func ordinal(set, name string) (int, bool) {
	m := ordinalSuffix.FindStringSubmatch(name)
	if m == nil || m[1] != set {
		return 0, false
	}
	n, err := strconv.Atoi(m[2])
	return n, err == nil
}

func partition(set *appsv1.StatefulSet) int {
	if ru := set.Spec.UpdateStrategy.RollingUpdate; ru != nil && ru.Partition != nil {
		return int(*ru.Partition)
	}
	return 0
}

// setPartition sets the partition the model's rolling update runs to (the changed
// set's own, or the one a step writes).
func (s *setSim) setPartition(p int32) {
	if s.set.Spec.UpdateStrategy.RollingUpdate == nil {
		s.set.Spec.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateStatefulSetStrategy{}
	}
	s.set.Spec.UpdateStrategy.RollingUpdate.Partition = &p
}

// updatedInRange counts the in-range ordinals whose pod is at the new revision.
func (s *setSim) updatedInRange() int {
	n := 0
	for o := s.start(); o < s.start()+s.replicas(); o++ {
		if p := s.byOrdinal[o]; p != nil && p.revision == s.update {
			n++
		}
	}
	return n
}

// setPod is an ordinal's pod in the model.
type setPod struct {
	name, revision string
	available      bool
}

// setSim replays the StatefulSet controller on a model of its ordinals.
type setSim struct {
	set             *appsv1.StatefulSet // next
	current, update string
	inPlace         bool
	// resize is how a pod updated in place is resized (inplace.ResizeText); "" when
	// no cpu or memory changes.
	resize string
	now    time.Time
	// gates are the feature gates the controller runs with (MaxUnavailableStatefulSet).
	gates     gates.Gates
	byOrdinal map[int]*setPod
	batches   []Batch
	// waitingFor is the pod OrderedReady waits for (the plan stops there); stuck is why
	// the rolling update stops.
	waitingFor, stuck string
}

func (s *setSim) start() int {
	if s.set.Spec.Ordinals != nil {
		return int(s.set.Spec.Ordinals.Start)
	}
	return 0
}

func (s *setSim) replicas() int { return int(rollout.Replicas(s.set.Spec.Replicas)) }

func (s *setSim) ordered() bool {
	return s.set.Spec.PodManagementPolicy != appsv1.ParallelPodManagement
}

func (s *setSim) podName(o int) string { return fmt.Sprintf("%s-%d", s.set.Name, o) }

// strategy is Plan.Strategy: the update strategy, or the in-place mode when it
// decides (the update is made in place, or blocked), with the bounds.
func (s *setSim) strategy(mode inplace.Mode, v inplace.Verdict) string {
	if s.set.Spec.UpdateStrategy.Type != appsv1.RollingUpdateStatefulSetStrategyType {
		return fmt.Sprintf("%s (%s)", s.set.Spec.UpdateStrategy.Type, s.set.Spec.PodManagementPolicy)
	}
	name := "RollingUpdate"
	if v.Proceeds() || v.Reason == inplace.ReasonBlocked {
		name = string(mode)
	}
	m, off := 1, ""
	if p := s.maxUnavailable(); p != nil {
		m = *p
	} else if ru := s.set.Spec.UpdateStrategy.RollingUpdate; ru != nil && ru.MaxUnavailable != nil && !s.gates.MaxUnavailableStatefulSet {
		off = ", " + gates.MaxUnavailableStatefulSet + " off"
	}
	return fmt.Sprintf("%s (maxUnavailable %d%s, partition %d, %s)", name, m, off, partition(s.set), s.set.Spec.PodManagementPolicy)
}

// maxUnavailable is how many pods the rolling update may take down at once
// (rollout.StatefulSetMaxUnavailable, as the controller reads it under s.gates); nil
// is one at a time, each waited for. A value that does not resolve is read as nil:
// the controller reports it as an error and updates nothing.
func (s *setSim) maxUnavailable() *int {
	m, err := rollout.StatefulSetMaxUnavailable(s.set, s.gates.MaxUnavailableStatefulSet)
	if err != nil {
		return nil
	}
	return m
}

// staleInRange: some existing pod at or above the partition is not at the new revision.
func (s *setSim) staleInRange() bool {
	for o := s.start() + partition(s.set); o < s.start()+s.replicas(); o++ {
		if p := s.byOrdinal[o]; p != nil && p.revision != s.update {
			return true
		}
	}
	return false
}

// placeholderRevision is the revision a created ordinal gets: the current one below the
// partition of a RollingUpdate, else the new one.
func (s *setSim) placeholderRevision(o int) string {
	if s.set.Spec.UpdateStrategy.Type == appsv1.RollingUpdateStatefulSetStrategyType && o < s.start()+partition(s.set) {
		return s.current
	}
	return s.update
}

// abandoned: p runs neither the current nor the new revision.
func (s *setSim) abandoned(p *setPod) bool {
	return p.revision != s.current && p.revision != s.update
}

// scale replays the scaling part of a pass until nothing is left to create or delete;
// false when OrderedReady waits for a pod that stays unavailable.
func (s *setSim) scale() bool {
	start, n := s.start(), s.replicas()
	for {
		var ops []PodOp
		for o := start; o < start+n; o++ {
			p := s.byOrdinal[o]
			switch {
			case p == nil:
				rev := s.placeholderRevision(o)
				ops = append(ops, PodOp{Op: Create, Pod: s.podName(o), Revision: rev})
				s.byOrdinal[o] = &setPod{name: s.podName(o), revision: rev, available: true}
			case !p.available && s.ordered() && s.abandoned(p):
				rev := s.placeholderRevision(o)
				ops = append(ops, PodOp{Op: Delete, Pod: p.name, Revision: p.revision}, PodOp{Op: Create, Pod: p.name, Revision: rev})
				s.byOrdinal[o] = &setPod{name: p.name, revision: rev, available: true}
			case !p.available && s.ordered():
				if len(ops) == 0 {
					s.waitingFor = p.name
					return false
				}
			default:
				continue
			}
			if s.ordered() {
				break
			}
		}
		if len(ops) > 0 && s.ordered() {
			s.batches = append(s.batches, Batch{Ops: ops})
			continue
		}
		var condemned []int
		for o := range s.byOrdinal {
			if o < start || o >= start+n {
				condemned = append(condemned, o)
			}
		}
		sort.Sort(sort.Reverse(sort.IntSlice(condemned)))
		if s.ordered() && len(condemned) > 0 {
			condemned = condemned[:1]
		}
		for _, o := range condemned {
			p := s.byOrdinal[o]
			ops = append(ops, PodOp{Op: Delete, Pod: p.name, Revision: p.revision})
			delete(s.byOrdinal, o)
		}
		if len(ops) == 0 {
			return true
		}
		s.batches = append(s.batches, Batch{Ops: ops})
	}
}

// rollingUpdate replays the update part with the controller's planner
// (rollout.StatefulSetUpdate), one pass a batch: stale pods from the highest ordinal
// down to the partition, one at a time or as many as maxUnavailable allows, each
// replaced (deleted and created again at the new revision) or updated in place.
func (s *setSim) rollingUpdate() {
	start, n := s.start(), s.replicas()
	maxUnavailable := s.maxUnavailable()
	for range n + 1 {
		slots := make([]rollout.SetSlot, n)
		for i := range slots {
			p := s.byOrdinal[start+i]
			slots[i] = rollout.SetSlot{Stale: p.revision != s.update, Unavailable: !p.available}
		}
		var ops []PodOp
		for _, i := range rollout.StatefulSetUpdate(slots, partition(s.set), maxUnavailable) {
			p := s.byOrdinal[start+i]
			if s.inPlace {
				ops = append(ops, PodOp{Op: InPlace, Pod: p.name, Revision: s.update, Resize: s.resize})
			} else {
				ops = append(ops, PodOp{Op: Delete, Pod: p.name, Revision: p.revision}, PodOp{Op: Create, Pod: p.name, Revision: s.update})
			}
			s.byOrdinal[start+i] = &setPod{name: p.name, revision: s.update, available: true}
		}
		if len(ops) == 0 {
			s.explainStop(slots, maxUnavailable != nil)
			return
		}
		s.batches = append(s.batches, Batch{Ops: ops})
	}
}

// explainStop says why the rolling update stops with stale pods left at or above the
// partition: a pod at the new revision that is not available, waited for.
func (s *setSim) explainStop(slots []rollout.SetSlot, withMax bool) {
	if !s.staleInRange() {
		return
	}
	if withMax {
		s.stuck = "pods at the new revision that are not available take up maxUnavailable: the update waits for them"
		return
	}
	for i := len(slots) - 1; i >= partition(s.set); i-- {
		if slots[i].Unavailable {
			s.stuck = fmt.Sprintf("%s is at the new revision but not available: the update waits for it", s.byOrdinal[s.start()+i].name)
			return
		}
	}
}

// notes say what the batches leave alone, and where the plan stops.
func (s *setSim) notes(cur, next *appsv1.StatefulSet, rolling, blocked bool) []string {
	var notes []string
	if !rolling {
		notes = append(notes, "OnDelete: pods change only when you delete them; each comes back at "+s.update)
	}
	if s.waitingFor != "" {
		notes = append(notes, fmt.Sprintf("%s is not available: OrderedReady waits for it before any other change, so the plan stops here", s.waitingFor))
	}
	if rolling && !blocked && s.waitingFor == "" {
		if p := partition(next); p > 0 {
			var kept []string
			for o := s.start(); o < s.start()+min(p, s.replicas()); o++ {
				if pod := s.byOrdinal[o]; pod != nil && pod.revision != s.update {
					kept = append(kept, pod.name)
				}
			}
			if len(kept) > 0 {
				verb := "stay"
				if len(kept) == 1 {
					verb = "stays"
				}
				notes = append(notes, fmt.Sprintf("%s %s at their revision: below partition %d", strings.Join(kept, ", "), verb, p))
			}
		}
		if s.stuck != "" {
			notes = append(notes, s.stuck)
		}
	}
	if len(s.batches) == 0 && !blocked && s.waitingFor == "" && rolling && history.EqualIgnoringHash(&cur.Spec.Template, &next.Spec.Template) {
		notes = append(notes, "no pod changes: the template is the same")
	}
	return notes
}
