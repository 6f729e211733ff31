package rolloutview

import (
	"fmt"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kroll-dev/kroll/pkg/analysis"
	"github.com/kroll-dev/kroll/pkg/failure"
	"github.com/kroll-dev/kroll/pkg/history"
	"github.com/kroll-dev/kroll/pkg/placement"
	"github.com/kroll-dev/kroll/pkg/rolloutview/chart"
	"github.com/kroll-dev/kroll/pkg/staging"
	"github.com/kroll-dev/kroll/pkg/staging/progress"
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
// now, else staging.Decide over the progress its controller reads (pkg/staging/progress,
// on the snapshot) — the same decision, made by the same functions from the same
// counts, so the view never tells another step than the controller takes.
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

// stagingInput reads staging's Progress from a snapshot with the controllers' own
// functions (pkg/staging/progress), from what they count: a Deployment's
// ReplicaSets, a StatefulSet's pods by revision, a DaemonSet's eligible nodes (the
// snapshot's Nodes its template should run on).
func stagingInput(s Snapshot) (*metav1.ObjectMeta, staging.Progress, bool) {
	switch o := s.Object.(type) {
	case *appsv1.Deployment:
		newRS, old := history.NewReplicaSet(o, s.ReplicaSets)
		var pods []*corev1.Pod
		if newRS != nil {
			pods = ownedBy(s.Pods, newRS.UID)
		}
		return &o.ObjectMeta, progress.Deployment(o, newRS, old, pods, s.Now), true
	case *appsv1.StatefulSet:
		current, update := statefulSetRevisions(o, s.Revisions)
		return &o.ObjectMeta, progress.StatefulSet(o, s.Pods, current, update, s.Now), true
	case *appsv1.DaemonSet:
		eligible, byNode := daemonSetNodes(o, s)
		var newest *appsv1.ControllerRevision
		for _, r := range s.Revisions {
			if newest == nil || r.Revision > newest.Revision {
				newest = r
			}
		}
		if newest == nil {
			return &o.ObjectMeta, staging.Progress{Desired: int32(len(eligible)), Paused: daemonSetPaused(o)}, true
		}
		hash := newest.Labels[appsv1.DefaultDaemonSetUniqueLabelKey]
		return &o.ObjectMeta, progress.DaemonSet(o, eligible, byNode, hash, newest, s.Revisions, s.Now), true
	}
	return nil, staging.Progress{}, false
}

// statefulSetRevisions are set's current and update revisions as its status names
// them, from revs; a revision not listed (yet) is named only, and then neither is
// told older than the other.
func statefulSetRevisions(set *appsv1.StatefulSet, revs []*appsv1.ControllerRevision) (current, update *appsv1.ControllerRevision) {
	for _, r := range revs {
		switch r.Name {
		case set.Status.UpdateRevision:
			update = r
		case set.Status.CurrentRevision:
			current = r
		}
	}
	if current == nil || update == nil {
		current = &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: set.Status.CurrentRevision}}
		update = &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: set.Status.UpdateRevision}}
	}
	if set.Status.UpdateRevision == set.Status.CurrentRevision {
		current = update
	}
	return current, update
}

// daemonSetNodes are the nodes ds should run on (sorted by name), as its controller's
// placement decides, and the snapshot's pods by the node they run on or are bound for.
func daemonSetNodes(ds *appsv1.DaemonSet, s Snapshot) (eligible []string, byNode map[string][]*corev1.Pod) {
	for _, n := range s.Nodes {
		if placement.NodeFit(ds, n).ShouldRun {
			eligible = append(eligible, n.Name)
		}
	}
	sort.Strings(eligible)
	byNode = map[string][]*corev1.Pod{}
	for _, p := range s.Pods {
		if n := placement.TargetNode(p); n != "" {
			byNode[n] = append(byNode[n], p)
		}
	}
	return eligible, byNode
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

// RolloutMarks are the moments of the rollout t records worth a mark on its chart:
// its step boundaries, one per RolloutStep event, labelled with the step ("1/5") or
// partition ("partition 10"), and its analyses' verdicts: "analysis passed"
// (AnalysisSucceeded), "analysis held" (AnalysisHeld: inconclusive, Prometheus
// unreachable) and "analysis failed" (a RolledBack or RolloutPaused event whose
// reason is a check). Each at the event's first occurrence, of the workload's events
// since t started (those of an earlier revision's rollout come before it). Events
// expire (an hour by default), so an old rollout's chart has fewer marks or none.
func RolloutMarks(t timeline.Timeline, events []corev1.Event) []chart.Mark {
	var marks []chart.Mark
	for _, e := range events {
		label := markLabel(e)
		if label == "" {
			continue
		}
		at := e.FirstTimestamp.Time
		if at.IsZero() {
			at = e.EventTime.Time
		}
		if at.IsZero() || at.Before(t.Start) {
			continue
		}
		marks = append(marks, chart.Mark{At: at.Sub(t.Start), Label: label})
	}
	sort.SliceStable(marks, func(i, j int) bool { return marks[i].At < marks[j].At })
	return marks
}

// markLabel is e's mark on a rollout's chart, "" for an event that gets none.
func markLabel(e corev1.Event) string {
	switch e.Reason {
	case staging.EventReason:
		label, _, _ := strings.Cut(e.Message, ":")
		label, _ = strings.CutSuffix(strings.TrimPrefix(label, "step "), " reached")
		return label
	case analysis.EventSucceeded:
		return "analysis passed"
	case analysis.EventHeld:
		return "analysis held"
	case failure.EventRolledBack, failure.EventRolloutPaused:
		// The action's message is its reason's: a failed check's begins with it.
		if strings.HasPrefix(e.Message, `check "`) {
			return "analysis failed"
		}
	}
	return ""
}
