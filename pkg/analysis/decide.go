package analysis

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Outcome is what one measurement, one check or a whole analysis came to.
type Outcome string

const (
	// Running: more measurements are due (a check or analysis only).
	Running Outcome = "Running"
	// Successful: the value met the success condition; a check: it took its count
	// of measurements without passing a limit.
	Successful Outcome = "Successful"
	// Failed: the value met the failure condition (or, without one, missed the
	// success condition); a check: more failed measurements than its failureLimit.
	Failed Outcome = "Failed"
	// Inconclusive: the value met neither condition, or the result was empty or NaN
	// (unless the check says otherwise); a check: more than its inconclusiveLimit.
	Inconclusive Outcome = "Inconclusive"
	// Error: Prometheus could not be asked or could not answer; a check: more errors
	// in a row than its consecutiveErrorLimit.
	Error Outcome = "Error"
)

// severity orders outcomes from best to worst, for the analysis of many checks: one
// failed check fails it whatever the others say.
var severity = map[Outcome]int{Successful: 0, Running: 1, Inconclusive: 2, Error: 3, Failed: 4}

// Measurement is one query's result at an instant.
type Measurement struct {
	At time.Time
	// Values are the result's samples, one per series; empty when it had none.
	Values []float64
	// Err is why there is no result (Prometheus unreachable, an error it answered);
	// empty when there is one.
	Err string
}

// Assessment is the judgement of one measurement.
type Assessment struct {
	Outcome Outcome
	// Value is the value judged: the first that decided the outcome; NaN for an
	// error or an empty result.
	Value float64
	// Why says it in a few words: "0.2 is not < 0.01".
	Why string
}

// Assess judges measurement m: an error is Error; an empty result or a NaN is what
// the check's Empty and NaN rules say (a number rule is judged as that value). Every
// value of a result with many series is judged, and the worst decides: one pod's
// failing series fails the measurement.
func (c Check) Assess(m Measurement) Assessment {
	if m.Err != "" {
		return Assessment{Outcome: Error, Value: math.NaN(), Why: m.Err}
	}
	if len(m.Values) == 0 {
		if c.Empty.Outcome != "" {
			return Assessment{Outcome: c.Empty.Outcome, Value: math.NaN(), Why: "the result is empty (no series), taken as " + string(c.Empty.Outcome)}
		}
		a := c.judge(c.Empty.Value)
		a.Why = "the result is empty (no series), taken as " + c.Empty.String() + ": " + a.Why
		return a
	}
	worst := Assessment{Outcome: Successful}
	for i, v := range m.Values {
		var a Assessment
		switch {
		case math.IsNaN(v) && c.NaN.Outcome != "":
			a = Assessment{Outcome: c.NaN.Outcome, Value: v, Why: "the result is NaN, taken as " + string(c.NaN.Outcome)}
		case math.IsNaN(v):
			a = c.judge(c.NaN.Value)
			a.Why = "the result is NaN, taken as " + c.NaN.String() + ": " + a.Why
		default:
			a = c.judge(v)
		}
		if i == 0 || severity[a.Outcome] > severity[worst.Outcome] {
			worst = a
		}
	}
	return worst
}

// judge applies the conditions to one number.
func (c Check) judge(v float64) Assessment {
	n := num(v)
	switch {
	case c.Failure != nil && c.Failure.Holds(v):
		return Assessment{Outcome: Failed, Value: v, Why: fmt.Sprintf("%s meets the failure condition %s", n, c.Failure)}
	case c.Success != nil && c.Success.Holds(v):
		return Assessment{Outcome: Successful, Value: v, Why: fmt.Sprintf("%s is %s", n, c.Success)}
	case c.Success == nil:
		return Assessment{Outcome: Successful, Value: v, Why: fmt.Sprintf("%s does not meet the failure condition %s", n, c.Failure)}
	case c.Failure == nil:
		return Assessment{Outcome: Failed, Value: v, Why: fmt.Sprintf("%s is not %s", n, c.Success)}
	}
	return Assessment{Outcome: Inconclusive, Value: v, Why: fmt.Sprintf("%s is neither %s nor %s", n, c.Success, c.Failure)}
}

func num(v float64) string { return strconv.FormatFloat(v, 'g', 4, 64) }

// Status is where one check stands.
type Status struct {
	Check   string
	Outcome Outcome
	// Message names the check, what decided it (the value measured and the limit),
	// in one line for a condition and an event.
	Message string
	// Next is when the next measurement is due; zero once the check is decided.
	Next time.Time
	// The measurements' outcomes so far; Errors counts those in a row at the end.
	Successful, Failed, Inconclusive, ConsecutiveErrors int
}

// Decide is where check c stands after measurements ms (oldest first), the analysis
// having started at start. As in Argo Rollouts' AnalysisRuns: the first measurement
// is due InitialDelay after start, each next one Interval after the last; the check
// fails once its failed measurements exceed FailureLimit, is inconclusive once its
// inconclusive ones exceed InconclusiveLimit, is in Error once more than
// ConsecutiveErrorLimit measurements in a row could not be taken (a measurement taken
// resets that count), and succeeds once Count measurements were taken without any of
// these. A measurement that could not be taken does not count towards Count: a
// flaky Prometheus does not shorten the check.
//
// With failureLimit 0, count 3 and interval 10s: measurements 0.002, 0.004 →
// Running, next 10s after the second; a third 0.2 against "< 0.01" → Failed,
// "check "error-ratio" failed: 0.2 is not < 0.01 (1 failed measurement, limit 0)".
//
// Decide is Record over ms, then Standing: a workload keeps the Tally, not the
// measurements (see State).
func (c Check) Decide(start time.Time, ms []Measurement) Status {
	var t Tally
	for _, m := range ms {
		t = c.Record(t, m)
	}
	return c.Standing(start, t)
}

// Tally is what Decide needs of a check's measurements so far, kept in their place
// on the workload: how many of each outcome, the errors in a row at the end, when
// the last was taken, and, once decided, the outcome and its message.
type Tally struct {
	Successful   int `json:"successful,omitempty"`
	Failed       int `json:"failed,omitempty"`
	Inconclusive int `json:"inconclusive,omitempty"`
	// ConsecutiveErrors are the measurements in a row, at the end, not taken.
	ConsecutiveErrors int `json:"errors,omitempty"`
	// Taken counts the measurements taken (not Error): the ones towards Count.
	Taken int `json:"taken,omitempty"`
	// Last is when the last measurement, taken or not, was made; zero before the first.
	Last time.Time `json:"last,omitzero"`
	// Outcome is empty while the check runs, and what decided it after.
	Outcome Outcome `json:"outcome,omitempty"`
	// Message is the deciding message (the value and the limit); empty while running.
	Message string `json:"message,omitempty"`
}

// Record adds measurement m to tally t. A decided tally stays as it is: the
// measurements after the deciding one change nothing; except Error, which holds the
// check rather than ends it (kroll's choice: a rollout paused because Prometheus is
// unreachable resumes when it returns): a measurement taken resumes the check with
// its counts as they were, one more error keeps it in Error.
func (c Check) Record(t Tally, m Measurement) Tally {
	if t.Outcome == Error {
		t.Outcome, t.Message = "", ""
	}
	if t.Outcome != "" {
		return t
	}
	t.Last = m.At
	a := c.Assess(m)
	if a.Outcome == Error {
		t.ConsecutiveErrors++
	} else {
		t.ConsecutiveErrors = 0
		t.Taken++
	}
	switch a.Outcome {
	case Successful:
		t.Successful++
	case Failed:
		t.Failed++
	case Inconclusive:
		t.Inconclusive++
	}
	switch {
	case t.Failed > c.FailureLimit:
		t.Outcome = Failed
		t.Message = fmt.Sprintf("check %q failed: %s (%s, limit %d)", c.Name, a.Why, plural(t.Failed, "failed measurement"), c.FailureLimit)
	case t.Inconclusive > c.InconclusiveLimit:
		t.Outcome = Inconclusive
		t.Message = fmt.Sprintf("check %q is inconclusive: %s (%s, limit %d)", c.Name, a.Why, plural(t.Inconclusive, "inconclusive measurement"), c.InconclusiveLimit)
	case t.ConsecutiveErrors > c.ConsecutiveErrorLimit:
		t.Outcome = Error
		t.Message = fmt.Sprintf("check %q: Prometheus unreachable: %s (%d errors in a row, limit %d)", c.Name, a.Why, t.ConsecutiveErrors, c.ConsecutiveErrorLimit)
	case t.Taken >= c.Count:
		t.Outcome = Successful
		t.Message = fmt.Sprintf("check %q succeeded: %s (%d of %d measurements successful)", c.Name, a.Why, t.Successful, t.Taken)
	}
	return t
}

// ErrorRetryInterval is the least wait after a measurement that could not be taken,
// as Argo Rollouts waits (10s): a check measured once (no interval) does not ask a
// failing Prometheus in a loop.
const ErrorRetryInterval = 10 * time.Second

// Standing is where check c stands with tally t, the analysis having started at
// start: decided, or Running with the next measurement due InitialDelay after start
// (none yet), Interval after the last, or, after an error, the longer of Interval
// and ErrorRetryInterval. A check in Error has its next try in Next too.
func (c Check) Standing(start time.Time, t Tally) Status {
	s := Status{Check: c.Name, Outcome: t.Outcome, Message: t.Message,
		Successful: t.Successful, Failed: t.Failed, Inconclusive: t.Inconclusive, ConsecutiveErrors: t.ConsecutiveErrors}
	if s.Outcome == Error {
		s.Next = t.Last.Add(max(c.Interval, ErrorRetryInterval))
	}
	if s.Outcome != "" {
		return s
	}
	s.Outcome = Running
	s.Next = start.Add(c.InitialDelay)
	switch {
	case t.ConsecutiveErrors > 0:
		s.Next = t.Last.Add(max(c.Interval, ErrorRetryInterval))
	case !t.Last.IsZero():
		s.Next = t.Last.Add(c.Interval)
	}
	s.Message = fmt.Sprintf("check %q: %d of %d measurements taken", c.Name, t.Taken, c.Count)
	if s.ConsecutiveErrors > 0 {
		s.Message += fmt.Sprintf(", %d errors in a row (limit %d)", s.ConsecutiveErrors, c.ConsecutiveErrorLimit)
	}
	return s
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// Overall is the analysis of all its checks: the worst check decides (Failed, then
// Error, then Inconclusive), Successful only when every check is; otherwise Running
// with the earliest measurement due. Its message is the deciding check's, the
// running checks' joined, or, when all succeeded, theirs (which give the values).
func Overall(checks []Status) Status {
	if len(checks) == 0 {
		return Status{Outcome: Successful, Message: "no checks"}
	}
	worst := checks[0]
	var running []string
	var next time.Time
	for _, s := range checks {
		if severity[s.Outcome] > severity[worst.Outcome] {
			worst = s
		}
		if s.Outcome == Running {
			running = append(running, s.Message)
			if next.IsZero() || s.Next.Before(next) {
				next = s.Next
			}
		}
	}
	switch worst.Outcome {
	case Running:
		return Status{Outcome: Running, Next: next, Message: strings.Join(running, "; ")}
	case Successful:
		if len(checks) == 1 && worst.Message != "" {
			return worst
		}
		msg := fmt.Sprintf("all %d checks succeeded", len(checks))
		var each []string
		for _, s := range checks {
			if s.Message != "" {
				each = append(each, s.Message)
			}
		}
		if len(each) > 0 {
			msg += ": " + strings.Join(each, "; ")
		}
		return Status{Outcome: Successful, Message: msg}
	}
	return worst
}
