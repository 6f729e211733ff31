package controller

import (
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"

	"github.com/kroll-dev/kroll/pkg/failure"
	"github.com/kroll-dev/kroll/pkg/staging"
)

// The Warning events of staged rollouts (see pkg/staging) that the StatefulSet and
// DaemonSet controllers send.
const (
	// EventInvalidStaging: kroll.dev/partition or kroll.dev/rollout-steps does not
	// parse (the workload rolls out as without them).
	EventInvalidStaging = "InvalidStaging"
	// EventAbortIgnored: kroll.dev/abort names a revision that is not rolling out.
	EventAbortIgnored = "AbortIgnored"
)

// StagedNews is what a set controller reports of its staged rollout in one sync.
type StagedNews struct {
	// Condition is the Staged condition the status carries; nil: none (Unstaged).
	Condition *failure.Condition
	// Step is the message of a Normal RolloutStep event: the step or phase changed
	// since the condition in status. Empty: no event.
	Step string
	// Invalid is the problem of a Warning InvalidStaging event, sent once per distinct
	// message (the condition in status remembers it). Empty: no event.
	Invalid string
}

// PlanStaged decides the Staged condition from a staging decision (problem: the
// settings' Problem, which turns staging off) and the condition in status now (cur,
// nil without one):
//
//	invalid settings  False, InvalidAnnotation, the problem
//	Unstaged          none
//	otherwise         True, the phase, the decision's message
//
// The counts in the message change on most syncs; an event goes out only when the
// step or phase does: "step 0/5: rolling out to 10% (0 of 20 updated)" then "step 1/5:
// 10% (2 of 20 updated), paused until promoted" are two events (Progressing, then
// StepPaused), "(1 of 20 updated)" in between is none.
func PlanStaged(problem string, d staging.Decision, cur *failure.Condition, now time.Time) StagedNews {
	var next failure.Condition
	switch {
	case problem != "":
		next = failure.Condition{Type: staging.ConditionType, Status: corev1.ConditionFalse, Reason: failure.ReasonInvalidAnnotation, Message: problem}
	case d.Phase == staging.Unstaged:
		return StagedNews{}
	default:
		next = failure.Condition{Type: staging.ConditionType, Status: corev1.ConditionTrue, Reason: string(d.Phase), Message: d.Message}
	}
	next.LastTransitionTime = metav1.NewTime(now)
	if cur != nil && cur.Status == next.Status && cur.Reason == next.Reason {
		next.LastTransitionTime = cur.LastTransitionTime
	}
	news := StagedNews{Condition: &next}
	switch {
	case problem != "":
		if cur == nil || cur.Message != problem {
			news.Invalid = problem
		}
	case cur == nil || cur.Status != next.Status || stepKey(*cur) != stepKey(next):
		news.Step = next.Message
	}
	return news
}

// stepKey is what names a condition's step: its reason and the message up to the
// first colon ("step 1/5", "partition 7 reached").
func stepKey(c failure.Condition) string {
	head, _, _ := strings.Cut(c.Message, ":")
	return c.Reason + "|" + head
}

// StagedReports sends the events of staged rollouts, each once: the condition in
// status says what was reported before (it survives a restart), and this memory covers
// the syncs that run before the cache shows the status written after the last one.
// The zero value is ready to use.
type StagedReports struct {
	mu   sync.Mutex
	sent map[types.UID]sentStaged
}

// sentStaged is what was last reported of one object: the InvalidStaging message, and
// the step (stepKey) of the last RolloutStep event.
type sentStaged struct{ invalid, step string }

// Report sends news's events about obj (its UID uid), but not one just sent.
func (r *StagedReports) Report(recorder record.EventRecorder, obj runtime.Object, uid types.UID, news StagedNews) {
	r.mu.Lock()
	if r.sent == nil {
		r.sent = map[types.UID]sentStaged{}
	}
	sent := r.sent[uid]
	switch c := news.Condition; {
	case c == nil:
		sent = sentStaged{}
	case c.Status == corev1.ConditionFalse:
		if c.Message == sent.invalid {
			news.Invalid = ""
		}
		sent = sentStaged{invalid: c.Message}
	default:
		if stepKey(*c) == sent.step {
			news.Step = ""
		}
		sent = sentStaged{step: stepKey(*c)}
	}
	if sent == (sentStaged{}) {
		// Nothing to remember (a missing entry reads the same): only staged objects
		// keep an entry, not every StatefulSet and DaemonSet ever synced.
		delete(r.sent, uid)
	} else {
		r.sent[uid] = sent
	}
	r.mu.Unlock()
	if news.Invalid != "" {
		recorder.Event(obj, corev1.EventTypeWarning, EventInvalidStaging, news.Invalid)
	}
	if news.Step != "" {
		recorder.Event(obj, corev1.EventTypeNormal, staging.EventReason, news.Step)
	}
}

// Forget drops what was reported of uid: the object is gone. Without it the memory
// would keep an entry per staged object ever deleted, for the controller's lifetime.
func (r *StagedReports) Forget(uid types.UID) {
	r.mu.Lock()
	delete(r.sent, uid)
	r.mu.Unlock()
}

// StagedOf is the Staged condition among conds; nil without one.
func StagedOf[C any](k failure.Conditions[C], conds []C) *failure.Condition {
	for _, c := range conds {
		if v := k.View(c); v.Type == staging.ConditionType {
			return &v
		}
	}
	return nil
}

// WithStaged is conds with the Staged condition replaced by staged (nil: removed); the
// others keep their order.
func WithStaged[C any](k failure.Conditions[C], conds []C, staged *failure.Condition) []C {
	var out []C
	for _, c := range conds {
		if k.View(c).Type != staging.ConditionType {
			out = append(out, c)
		}
	}
	if staged != nil {
		out = append(out, k.Make(*staged))
	}
	return out
}

// AbortRequest reads a set's kroll.dev/abort against the revision it is rolling out
// (rolling; empty when no rollout is in progress). act: the request names it, roll
// back. ignored: the request is stale and is removed, with a Warning AbortIgnored
// event carrying this message. Both zero without a request.
func AbortRequest(annotations map[string]string, rolling string) (act bool, ignored string) {
	want, ok := annotations[staging.AbortAnnotation]
	switch {
	case !ok:
		return false, ""
	case rolling == "":
		return false, fmt.Sprintf("%s names revision %q, but no rollout is in progress; the request is removed", staging.AbortAnnotation, want)
	case want != rolling:
		return false, fmt.Sprintf("%s names revision %q, but revision %q is rolling out; the request is removed", staging.AbortAnnotation, want, rolling)
	}
	return true, ""
}

// StagedHolds tells a staging decision that holds the rollout where it is — at its
// partition, or at a step's pause — rather than rolling toward them: a set's failure
// policy runs no progress deadline then (failure.SetView.Held).
func StagedHolds(d staging.Decision) bool {
	return d.Phase == staging.PartitionReached || d.Phase == staging.StepPaused || d.Phase == staging.StepWaiting
}
