package analysis

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kroll-dev/kroll/pkg/analysis/analysistest"
)

func mustParse(t *testing.T, yaml string) Spec {
	t.Helper()
	spec, problems := Parse(yaml, nil)
	if len(problems) > 0 {
		t.Fatalf("problems: %v", problems)
	}
	return spec
}

var webVars = Vars{Namespace: "default", Workload: "web", Revision: "6d5f7c9b8", PodTemplateHash: "6d5f7c9b8"}

func sec(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }

func TestStep(t *testing.T) {
	spec := mustParse(t, errorRatio)
	v2 := Target{Revision: "6d5f7c9b8", Step: 1}
	fresh := Step(spec, webVars, v2, State{}, t0).State
	// tallied is fresh with error-ratio's measurements at 30s and 40s, and p99's at
	// 0s, 15s and 30s.
	tallied := fresh
	tallied = Record(spec, tallied, []Result{{Check: "p99", Values: []float64{0.1}}}, sec(0))
	tallied = Record(spec, tallied, []Result{{Check: "p99", Values: []float64{0.1}}}, sec(15))
	tallied = Record(spec, tallied, []Result{{Check: "error-ratio", Values: []float64{0.002}}, {Check: "p99", Values: []float64{0.2}}}, sec(30))
	tallied = Record(spec, tallied, []Result{{Check: "error-ratio", Values: []float64{0.004}}}, sec(40))
	failed := Record(spec, fresh, []Result{{Check: "error-ratio", Values: []float64{0.2}}}, sec(30))

	cases := []struct {
		name    string
		spec    Spec
		vars    Vars
		target  Target
		st      State
		now     time.Time
		queries []string // the checks due
		want    Outcome  // empty when a problem is wanted
		msg     string   // a part of the status message or the problem
		next    int      // seconds from t0, when Running
		reset   bool     // the state was started afresh at now
	}{
		{name: "a first step: p99 has no initial delay, error-ratio waits 30s", spec: spec, vars: webVars, target: v2, now: t0,
			queries: []string{"p99"}, want: Running, next: 0, reset: true},
		{name: "at 10s nothing is due: back at 15s for p99", spec: spec, vars: webVars, target: v2, st: Record(spec, fresh, []Result{{Check: "p99", Values: []float64{0.1}}}, t0), now: sec(10),
			want: Running, msg: `check "error-ratio": 0 of 3 measurements taken; check "p99": 1 of 3 measurements taken`, next: 15},
		{name: "p99 done, error-ratio's third due at 50s", spec: spec, vars: webVars, target: v2, st: tallied, now: sec(45),
			want: Running, msg: `check "error-ratio": 2 of 3 measurements taken`, next: 50},
		{name: "at 50s the third is asked", spec: spec, vars: webVars, target: v2, st: tallied, now: sec(50),
			queries: []string{"error-ratio"}, want: Running, next: 50},
		{name: "a failed check decides the analysis: nothing more is asked", spec: spec, vars: webVars, target: v2, st: failed, now: sec(60),
			want: Failed, msg: `check "error-ratio" failed: 0.2 is not < 0.01 (1 failed measurement, limit 0)`},
		{name: "another revision starts afresh", spec: spec, vars: webVars, target: Target{Revision: "55d9f8c7b", Step: 1}, st: tallied, now: sec(45),
			queries: []string{"p99"}, want: Running, next: 45, reset: true},
		{name: "the next analyze step starts afresh", spec: spec, vars: webVars, target: Target{Revision: "6d5f7c9b8", Step: 3}, st: failed, now: sec(90),
			queries: []string{"p99"}, want: Running, next: 90, reset: true},
		{name: "other arguments start afresh", spec: spec, vars: withArgs(webVars, "window", "1m"), target: v2, st: tallied, now: sec(45),
			queries: []string{"p99"}, want: Running, next: 45, reset: true},
		{name: "a placeholder without a value is a problem", spec: mustParse(t, "checks:\n- name: c\n  query: up{service=\"{{args.service}}\"}\n  successCondition: '> 0'\n"), vars: webVars, target: v2, now: t0,
			msg: `check "c": the query's {{args.service}} has no value`, reset: true},
		{name: "a problem stays until the target or spec changes", spec: spec, vars: webVars, target: v2, st: Record(spec, fresh, []Result{{Check: "p99", Refused: "parse error"}}, t0), now: sec(30),
			msg: `check "p99": parse error`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := Step(tc.spec, tc.vars, tc.target, tc.st, tc.now)
			var due []string
			for _, q := range p.Queries {
				due = append(due, q.Check)
				if strings.Contains(q.PromQL, "{{") {
					t.Errorf("query %q not rendered", q.PromQL)
				}
			}
			if strings.Join(due, ",") != strings.Join(tc.queries, ",") {
				t.Errorf("queries for %v, want %v", due, tc.queries)
			}
			if tc.want == "" {
				if !strings.Contains(p.Problem, tc.msg) || p.State.Problem != p.Problem {
					t.Errorf("problem %q (state %q), want %q", p.Problem, p.State.Problem, tc.msg)
				}
			} else if p.Problem != "" || p.Status.Outcome != tc.want || !strings.Contains(p.Status.Message, tc.msg) {
				t.Errorf("%s %q (problem %q), want %s %q", p.Status.Outcome, p.Status.Message, p.Problem, tc.want, tc.msg)
			}
			if tc.want == Running && !p.Status.Next.Equal(sec(tc.next)) {
				t.Errorf("next at %v, want %ds", p.Status.Next.Sub(t0), tc.next)
			}
			if reset := p.State.Started.Equal(tc.now) && p.State.Revision == tc.target.Revision && p.State.Step == tc.target.Step; reset != tc.reset && tc.now != t0 {
				t.Errorf("started afresh: %v, want %v", reset, tc.reset)
			}
			for _, cs := range p.State.Checks {
				if tc.reset && (cs.Taken != 0 || len(cs.Recent) != 0) {
					t.Errorf("a fresh state has %s's measurements: %+v", cs.Name, cs)
				}
			}
		})
	}
}

// TestStep_keepsWhatJudges: the state keeps each check's query as asked (rendered
// for the workload, 1 KB at most), its conditions as written and its count, for the
// views that read no ConfigMap; the caller's state is not written through.
func TestStep_keepsWhatJudges(t *testing.T) {
	spec := mustParse(t, errorRatio)
	given := State{}
	p := Step(spec, webVars, Target{Revision: "6d5f7c9b8", Step: 1}, given, t0)
	ratio, p99 := p.State.Checks[0], p.State.Checks[1]
	wantRatio := `sum(rate(http_requests_total{namespace="default",pod=~"web-6d5f7c9b8-.*",code=~"5.."}[30s]))` + "\n" +
		`/ sum(rate(http_requests_total{namespace="default",pod=~"web-6d5f7c9b8-.*"}[30s]))` + "\n"
	if ratio.Query != wantRatio || ratio.SuccessCondition != "< 0.01" || ratio.FailureCondition != "" || ratio.Count != 3 {
		t.Errorf("error-ratio kept %q %q %q count %d, want %q < 0.01, no failure condition, count 3", ratio.Query, ratio.SuccessCondition, ratio.FailureCondition, ratio.Count, wantRatio)
	}
	if !strings.HasPrefix(p99.Query, "histogram_quantile(0.99, ") || p99.SuccessCondition != "result <= 0.25" || p99.FailureCondition != "> 0.5" || p99.Count != 3 {
		t.Errorf("p99 kept %+v, want its query with quantile 0.99, result <= 0.25, > 0.5, count 3 (40s at 15s)", p99)
	}
	// A query of 2 KB is kept shortened: the annotation stays small.
	long := mustParse(t, "checks:\n- name: c\n  query: up{a=\""+strings.Repeat("x", 2048)+"\"}\n  successCondition: '> 0'\n")
	if q := Step(long, webVars, Target{Revision: "r"}, State{}, t0).State.Checks[0].Query; len(q) != maxQueryLen+len("...") {
		t.Errorf("a 2 KB query kept as %d bytes, want %d", len(q), maxQueryLen+3)
	}
	// A state read from the annotation is not changed under its reader.
	stored := p.State
	stored.Checks[0].Query = "old"
	if again := Step(spec, webVars, Target{Revision: "6d5f7c9b8", Step: 1}, stored, t0); again.State.Checks[0].Query != wantRatio || stored.Checks[0].Query != "old" {
		t.Errorf("Step kept %q and left the given state's %q, want %q and \"old\"", again.State.Checks[0].Query, stored.Checks[0].Query, wantRatio)
	}
}

func withArgs(v Vars, kv ...string) Vars {
	v.Args = map[string]string{}
	for i := 0; i < len(kv); i += 2 {
		v.Args[kv[i]] = kv[i+1]
	}
	return v
}

// TestRecord: the samples kept per check (the last three, errors shortened, an
// empty result and NaN named) and the state's round trip through the annotation.
func TestRecord(t *testing.T) {
	spec := mustParse(t, "checks:\n- name: c\n  query: up\n  successCondition: '< 1'\n  interval: 10s\n  count: 10\n  inconclusiveLimit: 5\n  consecutiveErrorLimit: 9\n")
	st := Step(spec, webVars, Target{Revision: "r"}, State{}, t0).State
	long := strings.Repeat("connection refused ", 20)
	for i, r := range []Result{
		{Check: "c", Values: []float64{0.5}},
		{Check: "c", Err: long},
		{Check: "c"},
		{Check: "c", Values: []float64{0.25, math.NaN()}},
		{Check: "other", Values: []float64{5}},
	} {
		st = Record(spec, st, []Result{r}, sec(10*i).Add(300*time.Millisecond))
	}
	cs := st.Checks[0]
	if cs.Taken != 3 || cs.Successful != 1 || cs.Inconclusive != 2 || cs.ConsecutiveErrors != 0 || !cs.Last.Equal(sec(30)) {
		t.Errorf("tally %+v", cs.Tally)
	}
	if len(cs.Recent) != KeepMeasurements {
		t.Fatalf("%d samples kept, want %d", len(cs.Recent), KeepMeasurements)
	}
	want := []Sample{
		{At: sec(10), Outcome: Error, Error: long[:maxErrorLen] + "..."},
		{At: sec(20), Value: "empty", Outcome: Inconclusive},
		{At: sec(30), Value: "NaN", Outcome: Inconclusive},
	}
	for i := range want {
		if cs.Recent[i] != want[i] {
			t.Errorf("sample %d = %+v, want %+v", i, cs.Recent[i], want[i])
		}
	}
	back, err := ParseState(st.Encode())
	if err != nil {
		t.Fatal(err)
	}
	if back.Encode() != st.Encode() || len(back.Checks) != 1 || back.Checks[0].Recent[2].Value != "NaN" {
		t.Errorf("round trip:\n%s\n%s", st.Encode(), back.Encode())
	}
	if n := len(st.Encode()); n > 1024 {
		t.Errorf("the annotation is %d bytes for one check: %s", n, st.Encode())
	}
	// A decided check keeps its tally and samples: a late answer changes nothing.
	decided := Record(spec, st, []Result{{Check: "c", Values: []float64{5}}}, sec(40))
	decided = Record(spec, decided, []Result{{Check: "c", Values: []float64{5}}}, sec(50))
	if decided.Checks[0].Outcome != Failed || decided.Checks[0].Recent[2].At != sec(40) {
		t.Errorf("decided: %+v", decided.Checks[0])
	}
	// The Tally's message keeps the error shortened too.
	gone := mustParse(t, "checks:\n- name: c\n  query: up\n  successCondition: '< 1'\n  consecutiveErrorLimit: 0\n")
	st2 := Record(gone, Step(gone, webVars, Target{Revision: "r"}, State{}, t0).State, []Result{{Check: "c", Err: long}}, t0)
	if m := st2.Checks[0].Message; st2.Checks[0].Outcome != Error || strings.Contains(m, long) || !strings.Contains(m, long[:maxErrorLen]+"...") {
		t.Errorf("error message %q", m)
	}
	if _, err := ParseState("{"); err == nil || !strings.Contains(err.Error(), StatusAnnotation) {
		t.Errorf("a value that does not read: %v", err)
	}
}

// TestRun drives Runner.Run as a controller does: sync, requeue after Next, sync;
// the clock steps to each wake-up. Each story ends with the verdict, the queries
// asked and the times they were asked at.
func TestRun(t *testing.T) {
	const check = "checks:\n- name: error-ratio\n  query: sum(rate(x{pod=~\"{{workload}}-{{pod-template-hash}}-.*\"}[30s]))\n  successCondition: '< 0.01'\n  interval: 10s\n  count: 3\n  initialDelay: 30s\n  consecutiveErrorLimit: 2\n"
	cases := []struct {
		name    string
		answers []analysistest.Answer
		want    Outcome // empty for a problem
		msg     string
		at      []int // seconds from t0 of the queries
	}{
		{"three good measurements: successful at 50s", []analysistest.Answer{analysistest.Value(0), analysistest.Value(0.002), analysistest.Value(0.009)},
			Successful, `check "error-ratio" succeeded: 0.009 is < 0.01 (3 of 3 measurements successful)`, []int{30, 40, 50}},
		{"ErrorRate(0.2): failed at the first measurement", []analysistest.Answer{analysistest.Value(0.2)},
			Failed, `check "error-ratio" failed: 0.2 is not < 0.01`, []int{30}},
		{"Prometheus gone: Error after 3 in a row (limit 2)", []analysistest.Answer{analysistest.Value(0), analysistest.Failing("connection refused"), analysistest.Failing("connection refused"), analysistest.Failing("connection refused")},
			Error, `check "error-ratio": Prometheus unreachable: connection refused (3 errors in a row, limit 2)`, []int{30, 40, 50, 60}},
		{"Prometheus back after the limit: the analysis resumes where it stood", []analysistest.Answer{analysistest.Value(0), analysistest.Failing("refused"), analysistest.Failing("refused"), analysistest.Failing("refused"), analysistest.Failing("refused"), analysistest.Value(0), analysistest.Value(0)},
			Successful, `(3 of 3 measurements successful)`, []int{30, 40, 50, 60, 70, 80, 90}},
		{"errors do not count: back, it needs three taken", []analysistest.Answer{analysistest.Failing("refused"), analysistest.Value(0), analysistest.Failing("refused"), analysistest.Value(0), analysistest.Value(0)},
			Successful, `(3 of 3 measurements successful)`, []int{30, 40, 50, 60, 70}},
		{"a query Prometheus refuses is a problem, not asked again", []analysistest.Answer{analysistest.Refused("parse error")},
			"", `check "error-ratio": Prometheus at http://127.0.0.1:9090/api/v1/query refused the query "q": parse error`, []int{30}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			spec := mustParse(t, check)
			prom := &analysistest.Prometheus{Answers: tc.answers}
			clk := clocktesting.NewFakePassiveClock(t0)
			r := Runner{Prometheus: prom, Now: clk.Now}
			var st State
			var plan Plan
			var at []int
			for i := 0; i < 20; i++ {
				asked := len(prom.Asked)
				plan = r.Run(context.Background(), spec, webVars, Target{Revision: webVars.Revision, Step: 1}, st)
				if len(plan.Queries) != 0 {
					t.Fatalf("Run left queries: %v", plan.Queries)
				}
				if len(prom.Asked) > asked {
					at = append(at, int(clk.Now().Sub(t0)/time.Second))
				}
				st = plan.State
				// In Error the controller keeps coming back (to resume when Prometheus
				// does): the story ends when the script does.
				if plan.Problem != "" || plan.Status.Outcome != Running && (plan.Status.Outcome != Error || len(prom.Answers) == 0) {
					break
				}
				if !plan.Status.Next.After(clk.Now()) {
					t.Fatalf("running with nothing to wait for: next %v at %v", plan.Status.Next, clk.Now())
				}
				clk.SetTime(plan.Status.Next)
			}
			if tc.want == "" {
				if !strings.Contains(plan.Problem, tc.msg) {
					t.Errorf("problem %q, want %q", plan.Problem, tc.msg)
				}
			} else if plan.Status.Outcome != tc.want || !strings.Contains(plan.Status.Message, tc.msg) {
				t.Errorf("%s %q, want %s %q", plan.Status.Outcome, plan.Status.Message, tc.want, tc.msg)
			}
			if fmt.Sprint(at) != fmt.Sprint(tc.at) {
				t.Errorf("queries at %v s, want %v", at, tc.at)
			}
			if len(prom.Asked) > 0 && prom.Asked[0] != `sum(rate(x{pod=~"web-6d5f7c9b8-.*"}[30s]))` {
				t.Errorf("asked %q", prom.Asked[0])
			}
			if len(prom.Answers) != 0 {
				t.Errorf("%d answers not asked for", len(prom.Answers))
			}
			// The stored state judges the same after a round trip through the annotation.
			back, err := ParseState(st.Encode())
			if err != nil {
				t.Fatal(err)
			}
			again := Step(spec, webVars, Target{Revision: webVars.Revision, Step: 1}, back, clk.Now())
			if again.Status.Outcome != plan.Status.Outcome || again.Problem != plan.Problem || len(again.Queries) != 0 {
				t.Errorf("after a round trip: %s %q %v", again.Status.Outcome, again.Problem, again.Queries)
			}
		})
	}
}

// TestUnjudged: an analysis whose checks cannot be read is recorded once per
// target and problem; a new problem, step or revision records afresh; a state that
// had checks is replaced, and checks fixed later start afresh (no spec to match).
func TestUnjudged(t *testing.T) {
	v2 := Target{Revision: "6d5f7c9b8", Step: 1}
	missing := "kroll.dev/analysis=web-checks: ConfigMap default/web-checks does not exist"
	recorded := Unjudged(State{}, v2, missing, t0)
	running := Step(mustParse(t, errorRatio), webVars, v2, State{}, t0).State
	cases := []struct {
		name    string
		st      State
		target  Target
		problem string
		same    bool // the given state comes back as it was
	}{
		{name: "first seen: recorded", target: v2, problem: missing},
		{name: "seen again a minute later: unchanged, not written again", st: recorded, target: v2, problem: missing, same: true},
		{name: "another problem: recorded afresh", st: recorded, target: v2, problem: "ConfigMap default/web-checks has no key analysis.yaml"},
		{name: "the next analyze step: recorded afresh", st: recorded, target: Target{Revision: v2.Revision, Step: 3}, problem: missing},
		{name: "an analysis that ran, its ConfigMap deleted: replaced", st: running, target: v2, problem: missing},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := Unjudged(tc.st, tc.target, tc.problem, sec(60))
			if tc.same {
				if got.Encode() != tc.st.Encode() {
					t.Errorf("got %s, want it unchanged %s", got.Encode(), tc.st.Encode())
				}
				return
			}
			if got.Revision != tc.target.Revision || got.Step != tc.target.Step || got.Problem != tc.problem || !got.Started.Equal(sec(60)) || len(got.Checks) != 0 || got.Spec != "" {
				t.Errorf("got %s, want a fresh state of %+v with problem %q", got.Encode(), tc.target, tc.problem)
			}
		})
	}
	// Fixed: the checks start afresh from the recorded problem.
	if p := Step(mustParse(t, errorRatio), webVars, v2, recorded, sec(90)); p.Problem != "" || !p.State.Started.Equal(sec(90)) || len(p.State.Checks) != 2 {
		t.Errorf("after the fix: problem %q, started %v, %d checks; want a fresh analysis at 90s", p.Problem, p.State.Started, len(p.State.Checks))
	}
}
