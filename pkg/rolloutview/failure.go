package rolloutview

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kroll-dev/kroll/pkg/failure"
)

// Failure is the RolloutFailed condition of a workload's current rollout: kroll's
// controllers judged it failed and rolled it back or paused it (pkg/failure).
type Failure struct {
	// Reason is the condition's: PodsFailing or ProgressDeadlineExceeded.
	Reason string `json:"reason"`
	// Message is the condition's one line, "3 of 4 new pods failed, threshold 1
	// (web-7d9f-abcde: CrashLoopBackOff); rolled back from revision 5 to 4".
	Message string `json:"message"`
	// Recovered: the workload was rolled back and is healthy again on a revision kroll
	// judged complete — every pod updated and available, the revision marked
	// kroll.dev/complete. `kroll status` reports it rolled-back without failing
	// (unless --fail-on=rolled-back).
	Recovered bool `json:"recovered,omitempty"`
}

// condition is the part of a Deployment's, StatefulSet's or DaemonSet's condition the
// failure view reads.
type condition struct {
	Type, Status, Reason, Message string
}

// failureState is what a workload's failure records say about its current rollout.
type failureState struct {
	// phase is RolledBack or PausedOnFailure, else Failed for a RolloutFailed condition
	// without a record of the action; empty when the current rollout did not fail.
	phase   Phase
	failure *Failure
	// pending: read from kroll's record of an action not yet reported; the action
	// just happened, so the workload has not recovered from it.
	pending bool
	// warnings are the FailurePolicy=False messages: the policy's annotations do not
	// parse, so the rollout is not watched.
	warnings []string
}

// failureOf reads the failure view of a workload from its conditions and records.
// observed is its status.observedGeneration; paused whether kroll holds it paused now
// (spec.paused, a partition raised by kroll, kroll.dev/paused).
//
// The RolloutFailed condition counts for the current rollout only once the status
// describes the spec (observed ≥ generation): the user's next change removes it with the
// status write that observes the change, so right after `kubectl set image` a
// condition still standing is the previous rollout's, not this one's. Which action
// was taken the records say: a workload paused on failure and still paused is
// PausedOnFailure; one resumed by its user is rolling out again (the condition may
// stand until the next change, but nothing is failed any more); one with
// kroll.dev/rolled-back-from was RolledBack.
func failureOf(meta metav1.ObjectMeta, observed int64, conds []condition, paused bool) failureState {
	var s failureState
	for _, c := range conds {
		if c.Type == failure.ConditionFailurePolicy && c.Status == string(corev1.ConditionFalse) {
			s.warnings = append(s.warnings, c.Message)
		}
	}
	var failed *condition
	for i, c := range conds {
		if c.Type == failure.ConditionRolloutFailed && c.Status == string(corev1.ConditionTrue) {
			failed = &conds[i]
		}
	}
	if r, _, ok := failure.ReportOf(meta.Annotations); ok && (failed == nil || observed < meta.Generation) {
		// kroll acted and has not reported yet (its record is written with the action,
		// the condition after): the action is the verdict already, so that no status
		// read in between can show the restored revision as a complete rollout.
		s.phase, s.failure, s.pending = RolledBack, &Failure{Reason: r.Reason, Message: r.Message}, true
		if r.Action == failure.Pause {
			s.phase = PausedOnFailure
		}
		return s
	}
	if failed == nil || observed < meta.Generation {
		return s
	}
	_, pausedOnFailure := meta.Annotations[failure.PausedOnFailureAnnotation]
	_, rolledBack := meta.Annotations[failure.RolledBackFromAnnotation]
	switch {
	case pausedOnFailure && paused:
		s.phase = PausedOnFailure
	case pausedOnFailure && !rolledBack:
		return s // resumed by its user
	case rolledBack:
		s.phase = RolledBack
	default:
		s.phase = Failed
	}
	s.failure = &Failure{Reason: failed.Reason, Message: failed.Message}
	return s
}

// apply sets the failure view on p: the phase, the failure, and the error kroll's
// status verbs exit 1 with ("deployment "web" rollout failed: …"), which also is its
// message. A failed rollout's record wins over kubectl's own error (a deadline).
// currentComplete tells that the revision p is on now is marked complete: a rolled
// back workload whose rollout kubectl calls done there has Recovered.
func (s failureState) apply(p *Progress, currentComplete bool) {
	p.Warnings = append(p.Warnings, s.warnings...)
	if s.failure == nil {
		return
	}
	s.failure.Recovered = s.phase == RolledBack && !s.pending && currentComplete && p.Done && p.Err == nil && p.Phase == ""
	p.Phase, p.Failure, p.Done = s.phase, s.failure, false
	p.Err = fmt.Errorf("%s %q rollout failed: %s", p.Kind, p.Name, s.failure.Message)
	p.Message = p.Err.Error()
}

// conditionsOf reads any kind's conditions through one accessor: the three kinds'
// condition types differ only in name.
func conditionsOf[C any](cs []C, read func(C) condition) []condition {
	out := make([]condition, len(cs))
	for i, c := range cs {
		out[i] = read(c)
	}
	return out
}

// statefulSetPaused tells a StatefulSet whose partition kroll raised to pause it.
func statefulSetPaused(set *appsv1.StatefulSet) bool {
	_, ok := set.Annotations[failure.PartitionBeforePauseAnnotation]
	return ok
}

// daemonSetPaused tells a DaemonSet kroll's controller holds: kroll.dev/paused "true".
func daemonSetPaused(ds *appsv1.DaemonSet) bool {
	return ds.Annotations[failure.PausedAnnotation] == "true"
}
