package rolloutview

import (
	"fmt"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kroll-dev/kroll/pkg/failure"
	"github.com/kroll-dev/kroll/pkg/history"
	"github.com/kroll-dev/kroll/pkg/rollout"
	"github.com/kroll-dev/kroll/pkg/rolloutview/chart"
	"github.com/kroll-dev/kroll/pkg/staging"
	"github.com/kroll-dev/kroll/pkg/timeline"
)

// Staged is where a staged rollout (kroll.dev/partition, kroll.dev/rollout-steps)
// stands: what `kroll rollout status` prints with -o json as "staged".
type Staged struct {
	// Phase is staging's: Progressing, PartitionReached, StepPaused, StepWaiting or
	// StepsDone.
	Phase staging.Phase `json:"phase"`
	// Step is the steps done of Total ("1/5" is Step 1, Total 5); both 0 for a
	// partition without steps.
	Step  int `json:"step,omitempty"`
	Total int `json:"total,omitempty"`
	// Partition is the pods (a DaemonSet's: nodes) kept on the old revisions now.
	Partition int32 `json:"partition"`
	// Message is the Staged condition's: "step 1/5: 10% (2 of 20 updated), paused
	// until promoted".
	Message string `json:"message"`
	// Revision is the revision the steps run for, as kroll.dev/rollout-step-revision
	// names it: a Deployment's new ReplicaSet's pod-template-hash, a StatefulSet's
	// update revision, a DaemonSet's current ControllerRevision.
	Revision string `json:"revision"`
	// Continue is the command that moves a held rollout on; empty while it moves by
	// itself.
	Continue string `json:"continue,omitempty"`
}

// Held tells a staged rollout that stays where it is until something changes: at its
// partition, at a pause (a timed one ends by itself, but is a pause all the same).
func (s *Staged) Held() bool {
	return s != nil && (s.Phase == staging.PartitionReached || s.Phase == staging.StepPaused || s.Phase == staging.StepWaiting)
}

// Where is a held rollout in a few words, for `kroll status`: "paused at step 1/5",
// "paused at step 3/5 until 12:00:05Z", "at partition 10".
func (s *Staged) Where() string {
	switch {
	case s.Phase == staging.PartitionReached:
		return fmt.Sprintf("at partition %d", s.Partition)
	case s.Phase == staging.StepWaiting:
		if _, until, ok := strings.Cut(s.Message, " until "); ok {
			return fmt.Sprintf("paused at step %d/%d until %s", s.Step, s.Total, until)
		}
	}
	return fmt.Sprintf("paused at step %d/%d", s.Step, s.Total)
}

// stagedOf derives the staged state of the workload in s from what its controller
// decides: the Staged condition while it describes the revision and step recorded
// now, else staging.Decide over the snapshot's pods — the same decision, made from
// the same counts, so the view never tells another step than the controller takes.
// nil when nothing stages the rollout (no settings, invalid ones, a rollback, a
// workload's first revision, a partition of 0, another kind).
//
// conds are the workload's conditions, observed its status.observedGeneration.
func stagedOf(s Snapshot, ref string, conds []condition, observed int64) *Staged {
	meta, progress, ok := stagingInput(s)
	if !ok {
		return nil
	}
	settings := settingsOf(s.Object, meta)
	if !settings.Staged() {
		return nil
	}
	var recorded *staging.Record
	if r, ok := staging.RecordOf(meta.Annotations); ok {
		recorded = &r
	}
	d := staging.Decide(settings, recorded, progress, s.Now)
	if d.Phase == staging.Unstaged {
		return nil
	}
	out := &Staged{Phase: d.Phase, Partition: d.Partition, Message: d.Message, Revision: progress.Revision}
	if d.Record != nil {
		out.Step, out.Total = d.Record.Done, d.Record.Total
	}
	// The controller's word wins while it speaks of this revision and of the step
	// recorded: the message's counts are then the controller's (a sync behind the
	// pods at most), and a step the pods now allow but the controller has not yet
	// recorded is not shown before it is.
	if c := stagedCondition(conds); c != nil && c.Status == string(corev1.ConditionTrue) && observed >= meta.Generation {
		switch {
		case recorded != nil && recorded.Revision == progress.Revision && strings.HasPrefix(c.Message, "step "+recorded.String()+":"):
			// The partition of the recorded step: decided as if paused, which
			// moves no step on (the pods may allow the next one already).
			held := progress
			held.Paused = true
			out.Phase, out.Message, out.Step, out.Total = staging.Phase(c.Reason), c.Message, recorded.Done, recorded.Total
			out.Partition = staging.Decide(settings, recorded, held, s.Now).Partition
		case len(settings.Steps) == 0 && recorded == nil && strings.HasPrefix(c.Message, "partition "):
			out.Phase, out.Message = staging.Phase(c.Reason), c.Message
		}
	}
	out.Continue = continueCommand(ref, out, len(settings.Steps) > 0)
	return out
}

// stage sets the staged view on p: a staged rollout is not done before its steps are
// (kubectl's viewer calls a StatefulSet done at its partition, and waits on a held
// Deployment or DaemonSet as on a paused one), and one held at a pause or its
// partition is Paused, its message saying where and what moves it on. A failure or
// kubectl's own pause keeps its phase and message; the staged state still comes with
// them.
func (p *Progress) stage(s Snapshot, conds []condition, observed int64) {
	if meta, _, ok := stagingInput(s); ok {
		// Annotations that do not parse turn staging off: a warning, as the
		// controller's InvalidStaging event and Staged=False condition say.
		if problem := staging.SettingsOf(meta.Annotations).Problem(); problem != "" {
			p.Warnings = append(p.Warnings, problem)
		}
		if _, ok := s.Object.(*appsv1.StatefulSet); ok && meta.Annotations[staging.PartitionAnnotation] != "" {
			p.Warnings = append(p.Warnings, fmt.Sprintf("%s is for Deployments and DaemonSets, not used on a StatefulSet: use spec.updateStrategy.rollingUpdate.partition", staging.PartitionAnnotation))
		}
	}
	st := stagedOf(s, p.Kind+"/"+p.Name, conds, observed)
	p.Staged = st
	if st == nil || st.Phase == staging.StepsDone || p.Phase != "" || p.Err != nil {
		return
	}
	p.Done = false
	p.Target = max(p.Desired-st.Partition, 0)
	// The partition staging holds now (a StatefulSet's field may lag a sync behind).
	p.Partition = nil
	if st.Partition > 0 {
		p.Partition = &st.Partition
	}
	if st.Held() {
		p.Phase = Paused
		p.Message = fmt.Sprintf("%s %q: %s; to continue: %s", p.Kind, p.Name, st.Message, st.Continue)
		return
	}
	p.Message = fmt.Sprintf("Waiting for %s %q rollout to finish: %s...", p.Kind, p.Name, st.Message)
}

// settingsOf are the staging settings the workload's controller follows: a
// StatefulSet has a partition field of its own, and does not take kroll.dev/partition.
func settingsOf(obj any, meta *metav1.ObjectMeta) staging.Settings {
	settings := staging.SettingsOf(meta.Annotations)
	if _, ok := obj.(*appsv1.StatefulSet); ok {
		settings.Partition = nil
	}
	return settings
}

// continueCommand is what moves a held rollout on: promote for steps, a lower
// partition for kroll.dev/partition.
func continueCommand(ref string, st *Staged, steps bool) string {
	if !st.Held() {
		return ""
	}
	if steps {
		return "kroll rollout promote " + ref
	}
	return fmt.Sprintf("kroll annotate %s %s=0 --overwrite", ref, staging.PartitionAnnotation)
}

// stagingInput reads staging's Progress from a snapshot, as the controllers count it
// (see staging.Progress): the revision being rolled out, whether it ran before, and
// its pods.
func stagingInput(s Snapshot) (*metav1.ObjectMeta, staging.Progress, bool) {
	pol := func(meta *metav1.ObjectMeta) failure.Policy { return failure.PolicyOf(meta.Annotations) }
	switch o := s.Object.(type) {
	case *appsv1.Deployment:
		p := staging.Progress{Desired: rollout.DesiredReplicas(o), Paused: o.Spec.Paused}
		var newRS *appsv1.ReplicaSet // the oldest with the template, as the controller picks it
		for _, rs := range rollout.ByCreation(s.ReplicaSets) {
			if newRS == nil && history.EqualIgnoringHash(&rs.Spec.Template, &o.Spec.Template) {
				newRS = rs
			}
		}
		// A rollback brings an older ReplicaSet back, as the controller tells it.
		var others []*appsv1.ReplicaSet
		for _, rs := range s.ReplicaSets {
			if rs != newRS {
				others = append(others, rs)
			}
		}
		p.Rollback = history.BroughtBack(newRS, others)
		for _, rs := range s.ReplicaSets {
			pods := ownedBy(s.Pods, rs.UID)
			if rs == newRS {
				p.Revision = rs.Labels[appsv1.DefaultDeploymentUniqueLabelKey]
				if p.Revision == "" {
					p.Revision = rs.Spec.Template.Labels[appsv1.DefaultDeploymentUniqueLabelKey]
				}
				countUpdated(&p, pods, o.Spec.MinReadySeconds, pol(&o.ObjectMeta), s)
			} else {
				p.Old += activePods(pods)
			}
		}
		return &o.ObjectMeta, p, true
	case *appsv1.StatefulSet:
		p := staging.Progress{Revision: o.Status.UpdateRevision, Desired: rollout.Replicas(o.Spec.Replicas), Paused: statefulSetPaused(o)}
		var update, current *appsv1.ControllerRevision
		for _, r := range s.Revisions {
			switch r.Name {
			case o.Status.UpdateRevision:
				update = r
			case o.Status.CurrentRevision:
				current = r
			}
		}
		p.Rollback = o.Status.UpdateRevision == o.Status.CurrentRevision ||
			(current != nil && history.RevisionBroughtBack(update, []*appsv1.ControllerRevision{current}))
		countByRevision(&p, s, update, o.Spec.MinReadySeconds, pol(&o.ObjectMeta), func(pods []*corev1.Pod) int32 { return activePods(pods) })
		return &o.ObjectMeta, p, true
	case *appsv1.DaemonSet:
		p := staging.Progress{Desired: o.Status.DesiredNumberScheduled, Paused: daemonSetPaused(o)}
		var current *appsv1.ControllerRevision
		for _, r := range s.Revisions {
			if current == nil || r.Revision > current.Revision {
				current = r
			}
		}
		if current != nil {
			p.Revision = current.Name
			// A rollback makes an older revision current again (its number raised), as
			// the controller tells it: history.RevisionBroughtBack among the revisions
			// whose pods still run.
			var others []*appsv1.ControllerRevision
			for _, r := range s.Revisions {
				if r != current && len(podsOfRevision(s.Pods, r)) > 0 {
					others = append(others, r)
				}
			}
			p.Rollback = history.RevisionBroughtBack(current, others)
		}
		// A DaemonSet counts nodes: those running an old pod.
		countByRevision(&p, s, current, o.Spec.MinReadySeconds, pol(&o.ObjectMeta), nodesOf)
		return &o.ObjectMeta, p, true
	}
	return nil, staging.Progress{}, false
}

// countByRevision sets p's counts for a StatefulSet or DaemonSet: the pods of latest
// updated, those of every other revision old (counted by old).
func countByRevision(p *staging.Progress, s Snapshot, latest *appsv1.ControllerRevision, minReadySeconds int32, pol failure.Policy, old func([]*corev1.Pod) int32) {
	var oldPods []*corev1.Pod
	for _, r := range s.Revisions {
		pods := podsOfRevision(s.Pods, r)
		if r == latest {
			countUpdated(p, pods, minReadySeconds, pol, s)
		} else {
			oldPods = append(oldPods, pods...)
		}
	}
	p.Old = old(oldPods)
}

// countUpdated sets Updated, UpdatedAvailable and Failed from the pods of the revision
// rolled out.
func countUpdated(p *staging.Progress, pods []*corev1.Pod, minReadySeconds int32, pol failure.Policy, s Snapshot) {
	for _, pod := range pods {
		if !rollout.IsPodActive(pod) {
			continue
		}
		p.Updated++
		if rollout.IsPodAvailable(pod, minReadySeconds, s.Now) {
			p.UpdatedAvailable++
		}
		if failure.PodFailure(pod, pol, s.Now) != "" {
			p.Failed++
		}
	}
}

func activePods(pods []*corev1.Pod) int32 {
	var n int32
	for _, p := range pods {
		if rollout.IsPodActive(p) {
			n++
		}
	}
	return n
}

// nodesOf counts the nodes the active pods run on (a pod not yet scheduled counts as
// one node of its own: it holds a node's place).
func nodesOf(pods []*corev1.Pod) int32 {
	nodes := map[string]bool{}
	var unscheduled int32
	for _, p := range pods {
		switch {
		case !rollout.IsPodActive(p):
		case p.Spec.NodeName == "":
			unscheduled++
		default:
			nodes[p.Spec.NodeName] = true
		}
	}
	return int32(len(nodes)) + unscheduled
}

func stagedCondition(conds []condition) *condition {
	for i, c := range conds {
		if c.Type == staging.ConditionType {
			return &conds[i]
		}
	}
	return nil
}

// StepChanged tells a staged rollout that crossed a step boundary between two views of
// it: its recorded step moved, or it reached (or left) its partition. Neither nil:
// the first view of a rollout is no boundary.
func StepChanged(prev, cur *Staged) bool {
	if prev == nil || cur == nil {
		return false
	}
	return prev.Step != cur.Step || prev.Total != cur.Total || prev.Phase != cur.Phase
}

// StepMarks are the step boundaries of the rollout t records, for its chart: one mark
// per RolloutStep event of the workload since t started (events of an earlier
// revision's rollout come before it), at the event's first occurrence, labelled with
// its step ("1/5") or partition ("partition 10"). Events expire (an hour by
// default), so an old rollout's chart has fewer marks or none.
func StepMarks(t timeline.Timeline, events []corev1.Event) []chart.Mark {
	var marks []chart.Mark
	for _, e := range events {
		if e.Reason != staging.EventReason {
			continue
		}
		at := e.FirstTimestamp.Time
		if at.IsZero() {
			at = e.EventTime.Time
		}
		if at.IsZero() || at.Before(t.Start) {
			continue
		}
		label, _, _ := strings.Cut(e.Message, ":")
		label, _ = strings.CutSuffix(strings.TrimPrefix(label, "step "), " reached")
		marks = append(marks, chart.Mark{At: at.Sub(t.Start), Label: label})
	}
	sort.SliceStable(marks, func(i, j int) bool { return marks[i].At < marks[j].At })
	return marks
}
