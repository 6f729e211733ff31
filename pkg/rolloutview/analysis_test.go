package rolloutview

import (
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/kroll-dev/kroll/pkg/analysis"
	"github.com/kroll-dev/kroll/pkg/failure"
	"github.com/kroll-dev/kroll/pkg/staging"
)

const analyzeSteps = "10%, analyze, 50%, analyze, 100%"

// errorRatioQuery is the check's query as the controller rendered it for revision
// 6f9c7d.
const errorRatioQuery = `(sum(rate(http_requests_total{namespace="default",pod_template_hash="6f9c7d",code=~"5.."}[30s])) or vector(0))
/ sum(rate(http_requests_total{namespace="default",pod_template_hash="6f9c7d"}[30s]))
`

// analysisState is kroll.dev/analysis-status of revision 6f9c7d's analysis at step
// 1, started a minute before the snapshot, with error-ratio's tally as given.
func analysisState(cs analysis.CheckState, problem string) string {
	cs.Name, cs.Query, cs.SuccessCondition, cs.Count = "error-ratio", errorRatioQuery, "< 0.01", 2
	return analysis.State{Revision: "6f9c7d", Step: 1, Spec: "f2ef9dc25cd99618", Started: now.Add(-time.Minute),
		Checks: []analysis.CheckState{cs}, Problem: problem}.Encode()
}

// measured is a sample of value v, judged o, taken s seconds before the snapshot.
func measured(s int, v string, o analysis.Outcome) analysis.Sample {
	return analysis.Sample{At: now.Add(-time.Duration(s) * time.Second), Value: v, Outcome: o}
}

// analyzingDeployment is the 20-replica Deployment held at its first
// analyze step (1/5, 2 of 20 updated) with the analysis state given and the
// Staged condition's message as the controller extends it.
func analyzingDeployment(state, staged string) Snapshot {
	return withStaged(stagedDeployment(map[string]string{staging.StepsAnnotation: analyzeSteps, analysis.Annotation: "web-checks",
		failure.OnFailureAnnotation: "Rollback", analysis.StatusAnnotation: state}, 18, 2, "1/5"),
		staging.StepPaused, "step 1/5: 10% (2 of 20 updated), paused until promoted; "+staged)
}

// analysisRunning: one of error-ratio's two measurements taken, 0.002.
func analysisRunning() Snapshot {
	return analyzingDeployment(analysisState(analysis.CheckState{
		Tally:  analysis.Tally{Successful: 1, Taken: 1, Last: now.Add(-5 * time.Second)},
		Recent: []analysis.Sample{measured(5, "0.002", analysis.Successful)},
	}, ""), `analysis running: check "error-ratio": 1 of 2 measurements taken`)
}

// errorRatioFailed is error-ratio decided Failed by its first measurement, 0.2, 15 s
// before the snapshot.
func errorRatioFailed() analysis.CheckState {
	return analysis.CheckState{
		Tally: analysis.Tally{Failed: 1, Taken: 1, Last: now.Add(-15 * time.Second), Outcome: analysis.Failed,
			Message: `check "error-ratio" failed: 0.2 is not < 0.01 (1 failed measurement, limit 0)`},
		Recent: []analysis.Sample{measured(15, "0.2", analysis.Failed)},
	}
}

// analysisRolledBack: error-ratio failed revision 2 (6f9c7d) at step 1/5 and
// kroll's controller rolled it back: revision 1's template restored as revision 3,
// revision 2's pods scaling down. The record of the analysis stays; the step
// record went with the rollback.
func analysisRolledBack() Snapshot {
	s := rolledBack()
	d := s.Object.(*appsv1.Deployment)
	d.Annotations[staging.StepsAnnotation] = analyzeSteps
	d.Annotations[analysis.Annotation] = "web-checks"
	d.Annotations[analysis.StatusAnnotation] = analysisState(errorRatioFailed(), "")
	c := &d.Status.Conditions[len(d.Status.Conditions)-1]
	c.Reason, c.Message = analysis.ReasonFailed, `check "error-ratio" failed: 0.2 is not < 0.01 (1 failed measurement, limit 0); rolled back from revision 2 to 1`
	return s
}

// analysisSnapshots have golden views beside the others.
var analysisSnapshots = []struct {
	name string
	snap func() Snapshot
}{
	{"deployment-analysis-running", analysisRunning},
	{"deployment-analysis-rolled-back", analysisRolledBack},
}

// TestAnalysisView: what the record of an analysis says about the rollout now,
// decided from the rollout's own records (its step held, its RolloutFailed
// condition), and the line each case gets.
func TestAnalysisView(t *testing.T) {
	running := analysis.CheckState{Tally: analysis.Tally{Successful: 1, Taken: 1, Last: now.Add(-5 * time.Second)},
		Recent: []analysis.Sample{measured(5, "0.002", analysis.Successful)}}
	inconclusive := analysis.CheckState{Tally: analysis.Tally{Inconclusive: 1, Taken: 1, Last: now.Add(-5 * time.Second), Outcome: analysis.Inconclusive,
		Message: `check "error-ratio" is inconclusive: the result is empty (no series), taken as Inconclusive (1 inconclusive measurement, limit 0)`},
		Recent: []analysis.Sample{measured(5, "empty", analysis.Inconclusive)}}
	unreachable := analysis.CheckState{Tally: analysis.Tally{Successful: 1, Taken: 1, ConsecutiveErrors: 2, Last: now.Add(-5 * time.Second), Outcome: analysis.Error,
		Message: `check "error-ratio": Prometheus unreachable: connection refused (2 errors in a row, limit 1)`},
		Recent: []analysis.Sample{measured(25, "0.002", analysis.Successful),
			{At: now.Add(-15 * time.Second), Outcome: analysis.Error, Error: "connection refused"},
			{At: now.Add(-5 * time.Second), Outcome: analysis.Error, Error: "connection refused"}}}
	succeeded := analysis.CheckState{Tally: analysis.Tally{Successful: 2, Taken: 2, Last: now.Add(-5 * time.Second), Outcome: analysis.Successful,
		Message: `check "error-ratio" succeeded: 0 is < 0.01 (2 of 2 measurements successful)`},
		Recent: []analysis.Sample{measured(15, "0", analysis.Successful), measured(5, "0", analysis.Successful)}}
	pausedOnFailure := func() Snapshot {
		s := analyzingDeployment(analysisState(errorRatioFailed(), ""), "")
		d := s.Object.(*appsv1.Deployment)
		d.Spec.Paused = true
		d.Annotations[failure.OnFailureAnnotation] = "Pause"
		d.Annotations[failure.PausedOnFailureAnnotation] = "2"
		d.Status.Conditions = append(d.Status.Conditions, appsv1.DeploymentCondition{Type: failure.ConditionRolloutFailed, Status: corev1.ConditionTrue,
			Reason: analysis.ReasonFailed, Message: `check "error-ratio" failed: 0.2 is not < 0.01 (1 failed measurement, limit 0); paused on revision 2`})
		return s
	}
	atStep := func(step string, cs analysis.CheckState) func() Snapshot {
		return func() Snapshot {
			s := analyzingDeployment(analysisState(cs, ""), "")
			s.Object.(*appsv1.Deployment).Annotations[staging.StepAnnotation] = step
			return s
		}
	}
	tests := []struct {
		name    string
		snap    func() Snapshot
		outcome analysis.Outcome
		action  AnalysisAction
		current bool
		line    string // the whole of Lines; "" when none
	}{
		{name: "running at its step: current, no action yet", snap: analysisRunning, outcome: analysis.Running, current: true,
			line: `analysis "error-ratio": Running, 1 of 2 measured: 0.002 (want < 0.01)` + "\n"},
		{name: "failed and rolled back: the RolloutFailed condition is the analysis's", snap: analysisRolledBack, outcome: analysis.Failed, action: AnalysisRolledBack, current: true,
			line: `analysis "error-ratio": Failed at 11:59:45Z: 0.2 (want < 0.01); rolled back` + "\n"},
		{name: "failed and paused on failure", snap: pausedOnFailure, outcome: analysis.Failed, action: AnalysisPausedFailure, current: true,
			line: `analysis "error-ratio": Failed at 11:59:45Z: 0.2 (want < 0.01); paused on failure` + "\n"},
		{name: "failed without an on-failure action: held at its step", snap: atStep("1/5", errorRatioFailed()), outcome: analysis.Failed, action: Held, current: true,
			line: `analysis "error-ratio": Failed at 11:59:45Z: 0.2 (want < 0.01); held until promoted or aborted` + "\n"},
		{name: "inconclusive: held", snap: atStep("1/5", inconclusive), outcome: analysis.Inconclusive, action: Held, current: true,
			line: `analysis "error-ratio": Inconclusive at 11:59:55Z: empty (want < 0.01); held until promoted or aborted` + "\n"},
		{name: "Prometheus unreachable: held, the error said once", snap: atStep("1/5", unreachable), outcome: analysis.Error, action: Held, current: true,
			line: `analysis "error-ratio": Error at 11:59:55Z: 0.002, error, error (want < 0.01); connection refused; held until Prometheus answers, or promoted or aborted` + "\n"},
		{name: "succeeded: the step moved on, no line", snap: atStep("2/5", succeeded), outcome: analysis.Successful, action: Promoted},
		{name: "running, but another step is held now: a record, no line", snap: atStep("3/5", running), outcome: analysis.Running},
		{name: "a problem: held as a bare pause", snap: func() Snapshot {
			return analyzingDeployment(analysisState(analysis.CheckState{}, `check "error-ratio": the query's {{args.service}} has no value`), "")
		}, outcome: Invalid, action: Held, current: true,
			line: `analysis not run: check "error-ratio": the query's {{args.service}} has no value; held until promoted or aborted` + "\n"},
		{name: "no record: no analysis", snap: stepOnePaused},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := ProgressOf(tt.snap())
			if err != nil {
				t.Fatal(err)
			}
			a := p.Analysis
			if tt.outcome == "" {
				if a != nil {
					t.Errorf("analysis %+v, want none", a)
				}
				return
			}
			if a == nil {
				t.Fatal("no analysis")
			}
			if a.Outcome != tt.outcome || a.Action != tt.action || a.Current != tt.current {
				t.Errorf("outcome %s action %q current %v, want %s %q %v", a.Outcome, a.Action, a.Current, tt.outcome, tt.action, tt.current)
			}
			if got := a.Lines(); got != tt.line {
				t.Errorf("lines\n%q\nwant\n%q", got, tt.line)
			}
			if c := a.Checks[0]; c.Query != errorRatioQuery || c.SuccessCondition != "< 0.01" || (c.Outcome == analysis.Running) != (c.DecidedAt == nil) {
				t.Errorf("check %+v: want the query as asked, its condition, a decision time once decided", c)
			}
		})
	}
}

func TestAnalysisGolden(t *testing.T) {
	var ps []Progress
	for _, tt := range analysisSnapshots {
		t.Run(tt.name, func(t *testing.T) {
			p, err := ProgressOf(tt.snap())
			if err != nil {
				t.Fatal(err)
			}
			ps = append(ps, p)
			golden(t, tt.name+".bar.txt", Bar(p))
			golden(t, tt.name+".plain.txt", Plain(p))
			golden(t, tt.name+".json", JSON(p)+"\n")
			golden(t, tt.name+".tree.txt", Tree(tt.snap(), p))
		})
	}
	golden(t, "summary-analysis.txt", Summary(ps, false))
	golden(t, "status-analysis.json", StatusJSON(ps))
	if d := Detail(ps[0]); !strings.Contains(d, `paused at step 1/5; analysis "error-ratio": Running, 1 of 2 measured: 0.002`) {
		t.Errorf("detail %q, want where it holds and the analysis", d)
	}
}
