package failure

import (
	"encoding/json"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// RolloutFailedAnnotation is on a workload kroll just acted on (rolled back, paused, or
// aborted on request): the report of that action — the RolloutFailed condition, the
// Warning event and the metric — written in the same Update as the action, as JSON
// ({"action":"Rollback","reason":"PodsFailed","message":"…"}). The controller reports
// it after the Update and then removes it. A controller stopped in between finds it on
// its next pass and makes the report it lost: the action is never taken again (the
// workload's other records say it was), so without this record the report would be
// lost with the process.
const RolloutFailedAnnotation = "kroll.dev/rollout-failed"

// Report is what kroll reports of an action it took on a failed rollout.
type Report struct {
	// Action is Rollback or Pause (an abort is a Rollback): it names the event
	// (RolledBack, RolloutPaused) and the metric.
	Action Action `json:"action"`
	// Reason and Message are the RolloutFailed condition's, and Message the event's.
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

// Record writes r into annotations as RolloutFailedAnnotation.
func (r Report) Record(annotations map[string]string) {
	b, _ := json.Marshal(r) // a struct of strings always marshals
	annotations[RolloutFailedAnnotation] = string(b)
}

// ReportOf reads the report recorded in annotations. present tells that the
// annotation is there; ok that it holds a report (an unreadable one — written by hand,
// or by another version — is only removed).
func ReportOf(annotations map[string]string) (r Report, present, ok bool) {
	v, present := annotations[RolloutFailedAnnotation]
	if !present {
		return Report{}, false, false
	}
	if err := json.Unmarshal([]byte(v), &r); err != nil || (r.Action != Rollback && r.Action != Pause) {
		return Report{}, true, false
	}
	return r, true, true
}

// Reported tells whether conds already show r: a RolloutFailed condition, True, with
// its reason and message. The status write is the first step of a report, so a
// report whose condition is there was made (but for its event and metric, when the
// process stopped in the instant between them and the write).
func Reported(r Report, conds []Condition) bool {
	c := find(conds, ConditionRolloutFailed)
	return c != nil && c.Status == corev1.ConditionTrue && c.Reason == r.Reason && c.Message == r.Message
}

// WithReport is conds with r's RolloutFailed condition.
func WithReport(conds []Condition, r Report, now time.Time) []Condition {
	return set(conds, Condition{Type: ConditionRolloutFailed, Status: corev1.ConditionTrue, Reason: r.Reason, Message: r.Message}, now)
}

// FailedReport is the report of act on verdict v, whose outcome is RolledBackOutcome
// or PausedOutcome.
func FailedReport(act Action, v Verdict, outcome string) Report {
	return Report{Action: act, Reason: v.Reason, Message: v.Message(outcome)}
}

// AbortedReport is the report of a rollback asked for by kroll.dev/abort.
func AbortedReport(outcome string) Report {
	return Report{Action: Rollback, Reason: ReasonAborted, Message: AbortedMessage(outcome)}
}
