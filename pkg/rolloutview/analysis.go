package rolloutview

import (
	"fmt"
	"strings"
	"time"

	"github.com/kroll-dev/kroll/pkg/analysis"
	"github.com/kroll-dev/kroll/pkg/staging"
)

// Analysis is a workload's last analysis (pkg/analysis) as its controller recorded
// it in kroll.dev/analysis-status: what `kroll rollout status -o json` and each item
// of `kroll status -o json` carry as "analysis". The record stays on the workload
// after its decision (a rollback, the step moved on) until the next analysis
// replaces it, so Revision and Current say whether it speaks of the rollout now.
type Analysis struct {
	// Revision is the revision analysed: a Deployment's new ReplicaSet's
	// pod-template-hash, as staged.revision names it.
	Revision string `json:"revision"`
	// Step is the staged step it ran at (steps done, as staged.step: the analyze
	// step of kroll.dev/rollout-steps at index Step, from 0).
	Step    int       `json:"step"`
	Started time.Time `json:"started"`
	// Outcome is the analysis's: Running, Successful, Failed, Inconclusive or Error
	// (the worst check decides); Invalid when it cannot judge (Problem says why).
	Outcome analysis.Outcome `json:"outcome"`
	// Problem is why the analysis cannot judge (a query Prometheus refused, a
	// placeholder without a value); the step then holds as a bare pause.
	Problem string `json:"problem,omitempty"`
	// Action is what the decision did to the rollout: Promoted (the step moved on
	// by itself), RolledBack or PausedOnFailure (kroll.dev/on-failure, the
	// RolloutFailed condition's reason AnalysisFailed), Held (the step holds until
	// promoted or aborted: inconclusive, Prometheus unreachable, a failure without an
	// on-failure action, a problem); empty while it runs, or once it no longer
	// speaks of the rollout now.
	Action AnalysisAction `json:"action,omitempty"`
	// Current: the analysis is what holds the rollout now (its step is the one held)
	// or what failed it (the RolloutFailed condition is its); false for the record
	// of an earlier one.
	Current bool `json:"current"`
	// Checks are in the ConfigMap's order.
	Checks []AnalysisCheck `json:"checks"`
}

// AnalysisAction is what an analysis's decision did to the rollout.
type AnalysisAction string

const (
	Promoted              AnalysisAction = "Promoted"
	AnalysisRolledBack    AnalysisAction = "RolledBack"
	AnalysisPausedFailure AnalysisAction = "PausedOnFailure"
	Held                  AnalysisAction = "Held"
)

// Invalid is Analysis.Outcome for an analysis that cannot judge.
const Invalid analysis.Outcome = "Invalid"

// AnalysisCheck is one check: the query as asked, what judges its values, its
// last measurements and its decision.
type AnalysisCheck struct {
	Name string `json:"name"`
	// Query is the PromQL asked: the check's template rendered for the workload
	// (cut at 1 KB).
	Query string `json:"query"`
	// SuccessCondition and FailureCondition are the check's conditions as written
	// ("< 0.01", "result <= 0.25"); either may be empty.
	SuccessCondition string `json:"successCondition,omitempty"`
	FailureCondition string `json:"failureCondition,omitempty"`
	// Outcome is the check's decision, Running while it measures.
	Outcome analysis.Outcome `json:"outcome"`
	// DecidedAt is when the deciding measurement was taken; absent while running.
	DecidedAt *time.Time `json:"decidedAt,omitempty"`
	// Message is the decision in one line, as the events and conditions say it
	// (`check "error-ratio" failed: 0.2 is not < 0.01 (1 failed measurement,
	// limit 0)`), or how far a running check is.
	Message string `json:"message"`
	// Count is the measurements the check takes; Taken those taken so far (an
	// error is not one), Failed and Inconclusive among them; Errors the
	// measurements in a row, at the end, that Prometheus did not answer.
	Count        int `json:"count"`
	Taken        int `json:"taken"`
	Failed       int `json:"failed"`
	Inconclusive int `json:"inconclusive"`
	Errors       int `json:"errors"`
	// Measurements are the last few (3), oldest first: value ("0.2", "NaN",
	// "empty"), outcome, or the error.
	Measurements []analysis.Sample `json:"measurements"`
}

// analysisOf reads the analysis record in annotations (nil when there is none, or
// it does not read: the controller starts afresh then) and says what it did to the
// rollout p describes: p's Staged and Failure are set before (stage, failure apply).
func analysisOf(annotations map[string]string, p *Progress) *Analysis {
	st, err := analysis.ParseState(annotations[analysis.StatusAnnotation])
	if err != nil || st.Revision == "" {
		return nil
	}
	a := &Analysis{Revision: st.Revision, Step: st.Step, Started: st.Started, Problem: st.Problem, Checks: []AnalysisCheck{}}
	statuses := make([]analysis.Status, 0, len(st.Checks))
	for _, cs := range st.Checks {
		c := AnalysisCheck{Name: cs.Name, Query: cs.Query, SuccessCondition: cs.SuccessCondition, FailureCondition: cs.FailureCondition,
			Outcome: cs.Outcome, Message: cs.Message, Count: cs.Count, Taken: cs.Taken, Failed: cs.Failed, Inconclusive: cs.Inconclusive,
			Errors: cs.ConsecutiveErrors, Measurements: cs.Recent}
		if c.Outcome == "" {
			c.Outcome = analysis.Running
			c.Message = fmt.Sprintf("check %q: %d of %d measurements taken", cs.Name, cs.Taken, cs.Count)
		} else {
			at := cs.Last
			c.DecidedAt = &at
		}
		if c.Measurements == nil {
			c.Measurements = []analysis.Sample{}
		}
		a.Checks = append(a.Checks, c)
		statuses = append(statuses, analysis.Status{Check: c.Name, Outcome: c.Outcome})
	}
	a.Outcome = analysis.Overall(statuses).Outcome
	if a.Problem != "" {
		a.Outcome = Invalid
	}
	a.Action, a.Current = analysisAction(a, p)
	return a
}

// analysisAction is what analysis a did to the rollout p describes, and whether it
// speaks of it now. The rollout's own record decides, not the analysis's outcome
// alone: a failed analysis rolled back only if the RolloutFailed condition
// (reason AnalysisFailed) says so, and it holds only while its step is the one held.
//
//	Failed, RolloutFailed AnalysisFailed, phase RolledBack        → RolledBack, current
//	Failed, held at its step (no kroll.dev/on-failure action)     → Held, current
//	Running, held at its step                                     → "", current
//	Successful (its step moved on)                                → Promoted, not current
//	anything, another revision or step held now, no failure of it → "", not current
func analysisAction(a *Analysis, p *Progress) (AnalysisAction, bool) {
	if p.Failure != nil && p.Failure.Reason == analysis.ReasonFailed && a.Outcome == analysis.Failed {
		if p.Phase == PausedOnFailure {
			return AnalysisPausedFailure, true
		}
		return AnalysisRolledBack, true
	}
	atItsStep := p.Staged != nil && p.Staged.Phase == staging.StepPaused && p.Staged.Revision == a.Revision && p.Staged.Step == a.Step
	switch {
	case a.Outcome == analysis.Successful:
		return Promoted, false
	case !atItsStep:
		return "", false
	case a.Outcome == analysis.Running:
		return "", true
	}
	return Held, true
}

// Lines are the analysis's lines under a view's heading, one per check, while it
// speaks of the rollout now (Current); empty otherwise, and for nil. A check says
// its decision and when, the values measured (the last few, oldest first) and what
// they were judged against, then what the decision did:
//
//	analysis "error-ratio": Running, 1 of 2 measured: 0.002 (want < 0.01)
//	analysis "error-ratio": Failed at 12:00:45Z: 0.2 (want < 0.01); rolled back
//	analysis "error-ratio": Inconclusive at 12:00:45Z: empty (want < 0.01, failure >= 0.05); held until promoted or aborted
//	analysis not run: check "error-ratio": the query's {{args.service}} has no value ...; held until promoted or aborted
func (a *Analysis) Lines() string {
	if a == nil || !a.Current {
		return ""
	}
	var b strings.Builder
	if a.Problem != "" {
		fmt.Fprintf(&b, "analysis not run: %s%s\n", a.Problem, actionWords(a.Action, Invalid))
		return b.String()
	}
	for _, c := range a.Checks {
		b.WriteString(c.line())
		if c.Outcome != analysis.Running && c.Outcome != analysis.Successful {
			b.WriteString(actionWords(a.Action, c.Outcome))
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// line is one check's line, without the action.
func (c AnalysisCheck) line() string {
	var b strings.Builder
	fmt.Fprintf(&b, "analysis %q: ", c.Name)
	if c.Outcome == analysis.Running {
		fmt.Fprintf(&b, "Running, %d of %d measured", c.Taken, c.Count)
	} else {
		fmt.Fprintf(&b, "%s at %s", c.Outcome, c.DecidedAt.UTC().Format("15:04:05Z"))
	}
	var values []string
	lastErr := ""
	for _, m := range c.Measurements {
		switch {
		case m.Error != "":
			values = append(values, "error")
			lastErr = m.Error
		default:
			values = append(values, m.Value)
			lastErr = ""
		}
	}
	if len(values) > 0 {
		b.WriteString(": " + strings.Join(values, ", "))
	}
	var want []string
	if c.SuccessCondition != "" {
		want = append(want, "want "+c.SuccessCondition)
	}
	if c.FailureCondition != "" {
		want = append(want, "failure "+c.FailureCondition)
	}
	if len(want) > 0 {
		fmt.Fprintf(&b, " (%s)", strings.Join(want, ", "))
	}
	if lastErr != "" {
		// Prometheus' word for the errors at the end, once: "unreachable: ...".
		b.WriteString("; " + lastErr)
	}
	return b.String()
}

// actionWords say what action a did, after a check decided o: a check in Error
// is asked again each interval, so its hold also ends when Prometheus answers.
func actionWords(a AnalysisAction, o analysis.Outcome) string {
	switch {
	case a == AnalysisRolledBack:
		return "; rolled back"
	case a == AnalysisPausedFailure:
		return "; paused on failure"
	case a == Held && o == analysis.Error:
		return "; held until Prometheus answers, or promoted or aborted"
	case a == Held:
		return "; held until promoted or aborted"
	}
	return ""
}

// summary is the analysis in a few words for `kroll status`'s DETAIL: its checks'
// lines joined; empty unless Current.
func (a *Analysis) summary() string {
	return strings.ReplaceAll(strings.TrimSuffix(a.Lines(), "\n"), "\n", "; ")
}
