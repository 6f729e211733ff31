package failure

import (
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kroll-dev/kroll/pkg/staging"
)

// StatefulSets and DaemonSets have no progressDeadlineSeconds and no Progressing
// condition; kroll reports one, as Deployments have, when a set opts in with
// kroll.dev/progress-deadline-seconds.
const (
	ConditionProgressing = "Progressing"

	ReasonReplicasUpdated      = "ReplicasUpdated"
	ReasonNewRevisionAvailable = "NewRevisionAvailable"
)

// Condition is one condition of a set's status in the shape both StatefulSetCondition
// and DaemonSetCondition have (they lack a Deployment's lastUpdateTime).
type Condition struct {
	Type               string
	Status             corev1.ConditionStatus
	Reason, Message    string
	LastTransitionTime metav1.Time
}

// SetView is what a StatefulSet or DaemonSet controller sees of its rollout in one sync.
type SetView struct {
	// Policy is the set's failure policy (PolicyOf its annotations).
	Policy Policy
	// Annotations are the set's: kroll's records of what it did are read from them.
	Annotations map[string]string
	// InProgress: the set is rolling out Revision (a StatefulSet's update revision
	// differs from its current one; some daemon pods are not on the newest revision).
	InProgress bool
	// Revision is the number of the revision being rolled out (the newest one);
	// RevisionName its ControllerRevision's name.
	Revision     int64
	RevisionName string
	// Complete: Revision completed once (its ControllerRevision is marked
	// CompleteAnnotation). It is never judged again. While a watched set's revision is
	// not, its pods are judged even when InProgress is false.
	Complete bool
	// Done: the rollout to Revision is over now — no old pod left, every pod the set
	// wants on Revision and available. With its pods settled (SettledAt), a watched
	// set's revision is marked complete.
	Done bool
	// Desired is the number of pods the set wants (replicas, or nodes to run on).
	Desired int32
	// NewPods are the set's pods on Revision.
	NewPods []*corev1.Pod
	// Progressed: this sync's status moved the rollout forward (more updated, ready or
	// available pods) from the status the set has.
	Progressed bool
	// Target is the number of the revision a rollback would return to; 0 when there is
	// none (the set's first revision failed): the rollout is then paused instead.
	Target int64
	// Held: a staged rollout holds at its partition or at a step's pause (see
	// pkg/staging). No progress deadline runs while it does: Progressing is True with
	// reason PartitionReached, and the clock starts again when the rollout moves on.
	Held bool
	// Subject names the set in the Progressing condition's messages: `StatefulSet "web"`.
	Subject string
	// Conditions are the set's conditions now (all types; the plan replaces only
	// FailurePolicy, Progressing and RolloutFailed).
	Conditions []Condition
}

// SetPlan is what to do about a set's failure policy in this sync.
type SetPlan struct {
	// Act is Rollback or Pause when the rollout failed now and kroll has not acted on
	// this revision yet; None otherwise.
	Act Action
	// Verdict is the judgement behind Act (its message goes into the RolloutFailed
	// condition and the event, with the outcome).
	Verdict Verdict
	// Conditions are the set's conditions as they should be before any action is
	// taken (after one, see WithRolloutFailed).
	Conditions []Condition
	// PolicyEvent is the problem of an invalid policy to report in a Warning event
	// (InvalidFailurePolicy): set only when it is news, not on every sync.
	PolicyEvent string
	// MarkComplete: mark Revision's ControllerRevision complete (CompleteAnnotation):
	// a watched set's rollout to it is Done and its pods settled.
	MarkComplete bool
	// Recheck is when to look again without any event coming (a ready timeout, the
	// progress deadline or the new pods' settling falls due); zero for never.
	Recheck time.Time
}

// Acted tells whether a set's records (its annotations) say kroll already rolled
// back from, or paused on, revision: it does not act again for it, nor judge it.
func Acted(annotations map[string]string, revision int64) bool {
	r := strconv.FormatInt(revision, 10)
	return annotations[RolledBackFromAnnotation] == r || annotations[PausedOnFailureAnnotation] == r
}

// Restoring tells a rollout of revision to the revision kroll rolled back to, a
// revision that completed before: it is never judged (a rollback is never rolled
// back). The rollback gives that revision the number after the failed one (revision
// 4 of 5 becomes 6: see history.CurrentRevision), and the user's next change comes
// after it (7); until the cache shows the renumbering, it still has its older number
// (4). A revision numbered at most one above the one rolled back from
// (RolledBackFromAnnotation), and not it, is that restore.
func Restoring(annotations map[string]string, revision int64) bool {
	from, err := strconv.ParseInt(annotations[RolledBackFromAnnotation], 10, 64)
	return err == nil && revision != from && revision <= from+1
}

// PlanSet decides, for a StatefulSet or DaemonSet, the conditions of its failure
// policy and whether to act on a failed rollout. Contract:
//
//   - FailurePolicy is False/InvalidAnnotation while an annotation of the policy does
//     not parse (the set then behaves as with None), and absent otherwise; its message
//     is reported in an event only when it changes.
//   - Progressing is there only with a progress deadline: True/ReplicasUpdated while a
//     rollout is in progress (its lastTransitionTime is the last progress: set
//     conditions have no lastUpdateTime, so the condition is written afresh on each
//     progress), True/NewRevisionAvailable when none is, False/ProgressDeadlineExceeded
//     once deadline seconds passed without progress; True/PartitionReached while a
//     staged rollout holds (Held), its clock starting again after. With 600 s and the
//     last progress at 12:00:00, the set is looked at again at 12:10:00 and is past its
//     deadline then.
//   - RolloutFailed stays until the user's next change starts a rollout of a revision
//     kroll did not act on; then it is removed.
//   - Judged (Judge): a rollout of a revision kroll has not acted on, that is not a
//     restore and did not complete once, while it is in progress — or, for a watched
//     set, until it completes: once Done with every new pod Ready SettleTime, it is
//     marked complete instead (MarkComplete; looked at again when they will have
//     been). A DaemonSet on one node has no old pod left as soon as its new one is
//     made, and is judged all the same.
func PlanSet(v SetView, now time.Time) SetPlan {
	plan := SetPlan{Act: None}
	conds := append([]Condition(nil), v.Conditions...)

	// FailurePolicy.
	if problem := v.Policy.Problem(); problem != "" {
		cur := find(conds, ConditionFailurePolicy)
		if cur == nil || cur.Message != problem {
			plan.PolicyEvent = problem
		}
		conds = set(conds, Condition{Type: ConditionFailurePolicy, Status: corev1.ConditionFalse, Reason: ReasonInvalidAnnotation, Message: problem}, now)
	} else {
		conds = remove(conds, ConditionFailurePolicy)
	}

	// Progressing.
	pastDeadline := false
	if d := v.Policy.ProgressDeadline; d == nil {
		conds = remove(conds, ConditionProgressing)
	} else if !v.InProgress {
		conds = set(conds, Condition{Type: ConditionProgressing, Status: corev1.ConditionTrue, Reason: ReasonNewRevisionAvailable,
			Message: fmt.Sprintf("%s has successfully progressed.", v.Subject)}, now)
	} else if v.Held {
		conds = set(conds, Condition{Type: ConditionProgressing, Status: corev1.ConditionTrue, Reason: string(staging.PartitionReached),
			Message: fmt.Sprintf("ControllerRevision %q reached its partition.", v.RevisionName)}, now)
	} else {
		progressing := Condition{Type: ConditionProgressing, Status: corev1.ConditionTrue, Reason: ReasonReplicasUpdated,
			Message: fmt.Sprintf("ControllerRevision %q is progressing.", v.RevisionName), LastTransitionTime: metav1.NewTime(now)}
		deadline := time.Duration(*d) * time.Second
		switch cur := find(conds, ConditionProgressing); {
		case cur == nil || cur.Reason == ReasonNewRevisionAvailable || cur.Reason == string(staging.PartitionReached) || !sameRevision(cur, v.RevisionName):
			conds = put(conds, progressing) // a new rollout starts its clock
			plan.Recheck = now.Add(deadline)
		case cur.Reason == ReasonProgressDeadlineExceeded:
			pastDeadline = true
			if v.Progressed {
				conds, pastDeadline = put(conds, progressing), false
				plan.Recheck = now.Add(deadline)
			}
		case v.Progressed:
			conds = put(conds, progressing)
			plan.Recheck = now.Add(deadline)
		case !now.Before(cur.LastTransitionTime.Add(deadline)):
			pastDeadline = true
			conds = put(conds, Condition{Type: ConditionProgressing, Status: corev1.ConditionFalse, Reason: ReasonProgressDeadlineExceeded,
				Message: fmt.Sprintf("ControllerRevision %q has timed out progressing.", v.RevisionName), LastTransitionTime: metav1.NewTime(now)})
		default:
			plan.Recheck = cur.LastTransitionTime.Add(deadline)
		}
	}

	// Completion: a watched set's revision done and settled is marked, not judged.
	watched := v.Policy.Watched()
	if watched && !v.Complete && v.Done && len(v.NewPods) > 0 {
		if at, ok := SettledAt(v.NewPods, SettleTime); ok {
			if !at.After(now) {
				plan.MarkComplete = true
			} else {
				plan.Recheck = earliest(plan.Recheck, at)
			}
		}
	}

	// RolloutFailed, and the judgement.
	acted := Acted(v.Annotations, v.Revision)
	unfinished := v.InProgress || (watched && !v.Complete && v.Revision > 0)
	if unfinished && !acted && !Restoring(v.Annotations, v.Revision) && !v.Complete && !plan.MarkComplete {
		conds = remove(conds, ConditionRolloutFailed)
		verdict := Judge(v.Policy, v.Desired, v.NewPods, pastDeadline, now)
		plan.Verdict = verdict
		plan.Recheck = earliest(plan.Recheck, verdict.Recheck)
		if verdict.Failed {
			plan.Act = v.Policy.Action
			if plan.Act == Rollback && v.Target == 0 {
				plan.Act = Pause // nothing completed before to go back to
			}
		}
	}
	plan.Conditions = conds
	return plan
}

// AbortedMessage is the message of a rollout rolled back on request (kroll.dev/abort):
// "aborted by request; rolled back from revision 5 to 4".
func AbortedMessage(outcome string) string { return "aborted by request; " + outcome }

func sameRevision(c *Condition, name string) bool {
	return c.Message == fmt.Sprintf("ControllerRevision %q is progressing.", name) ||
		c.Message == fmt.Sprintf("ControllerRevision %q has timed out progressing.", name)
}

func earliest(a, b time.Time) time.Time {
	switch {
	case a.IsZero():
		return b
	case b.IsZero() || a.Before(b):
		return a
	}
	return b
}

func find(conds []Condition, t string) *Condition {
	for i := range conds {
		if conds[i].Type == t {
			return &conds[i]
		}
	}
	return nil
}

func remove(conds []Condition, t string) []Condition {
	out := conds[:0:0]
	for _, c := range conds {
		if c.Type != t {
			out = append(out, c)
		}
	}
	return out
}

// set puts c in conds, keeping the transition time of an equal condition there (and
// its place), now otherwise.
func set(conds []Condition, c Condition, now time.Time) []Condition {
	if cur := find(conds, c.Type); cur != nil && cur.Status == c.Status && cur.Reason == c.Reason && cur.Message == c.Message {
		return conds
	}
	c.LastTransitionTime = metav1.NewTime(now)
	return put(conds, c)
}

// put replaces the condition of c's type (in place) or appends c.
func put(conds []Condition, c Condition) []Condition {
	out := append([]Condition(nil), conds...)
	if cur := find(out, c.Type); cur != nil {
		*cur = c
		return out
	}
	return append(out, c)
}

// Conditions converts between a kind's status conditions (StatefulSetCondition,
// DaemonSetCondition) and Condition.
type Conditions[C any] struct {
	View func(C) Condition
	Make func(Condition) C
}

// All is conds as Conditions.
func (k Conditions[C]) All(conds []C) []Condition {
	out := make([]Condition, len(conds))
	for i, c := range conds {
		out[i] = k.View(c)
	}
	return out
}

// Merge is conds with their FailurePolicy, Progressing and RolloutFailed conditions
// replaced by those of plan: the others keep their order, the failure ones follow.
func (k Conditions[C]) Merge(conds []C, plan []Condition) []C {
	ours := map[string]bool{ConditionFailurePolicy: true, ConditionProgressing: true, ConditionRolloutFailed: true}
	var out []C
	for _, c := range conds {
		if !ours[k.View(c).Type] {
			out = append(out, c)
		}
	}
	for _, c := range plan {
		if ours[c.Type] {
			out = append(out, k.Make(c))
		}
	}
	return out
}
