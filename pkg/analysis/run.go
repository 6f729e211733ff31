package analysis

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/kroll-dev/kroll/pkg/analysis/promclient"
)

// StatusAnnotation holds, on the workload, the analysis under way or last decided:
// State as JSON (see doc.go, "Where an analysis stands").
const StatusAnnotation = "kroll.dev/analysis-status"

// The reasons a workload's controller reports an analysis with.
const (
	// ReasonFailed is the RolloutFailed condition's reason (and the action's event
	// message's subject) when a check failed the rollout.
	ReasonFailed = "AnalysisFailed"
	// EventSucceeded is the Normal event of an analysis that passed its step.
	EventSucceeded = "AnalysisSucceeded"
	// EventHeld is the Warning event of an analysis that holds its step: a check
	// inconclusive, Prometheus unreachable, or failed without an on-failure action.
	EventHeld = "AnalysisHeld"
	// EventInvalid is the Warning event of an analysis that cannot run: no
	// ConfigMap, checks that do not parse, a query Prometheus refuses.
	EventInvalid = "InvalidAnalysis"
)

// KeepMeasurements is how many measurements per check State keeps for the views:
// the deciding one and the two before it. The decision itself needs only the Tally.
const KeepMeasurements = 3

// maxErrorLen bounds an error kept in a Sample: Prometheus' own messages run long
// (a parse error quotes the query), and the annotation is read on every sync.
const maxErrorLen = 160

// Target is what an analysis judges: the revision rolled out and the step it runs
// at. An analysis of another target starts afresh.
type Target struct {
	// Revision is the revision under analysis (a Deployment's new ReplicaSet's
	// pod-template-hash, a StatefulSet's or DaemonSet's ControllerRevision name).
	Revision string
	// Step is the index, from 0, of the analyze step in kroll.dev/rollout-steps;
	// the same revision analysed at its second analyze step starts afresh there.
	Step int
}

// State is one workload's analysis: what it judges, since when, and each check's
// Tally with its last few measurements. Stored as StatusAnnotation: a check takes
// at most about 1 KB of JSON (errors are shortened), 300 bytes while all is well.
type State struct {
	Revision string `json:"revision"`
	Step     int    `json:"step"`
	// Spec is a hash of the checks and their arguments: a ConfigMap edited during
	// an analysis restarts it, since its past measurements were judged by the old
	// conditions.
	Spec    string    `json:"spec"`
	Started time.Time `json:"started"`
	// Checks are in the spec's order.
	Checks []CheckState `json:"checks"`
	// Problem is why the analysis cannot judge (a query Prometheus refused as
	// bad_data, a placeholder without a value); empty when it can. A workload with
	// a problem holds as without analysis: it never promotes by itself.
	Problem string `json:"problem,omitempty"`
}

// CheckState is one check's measurements so far, and what judged them.
type CheckState struct {
	Name string `json:"name"`
	// Query is the query as asked: the check's template rendered for the workload,
	// shortened to 1 KB; SuccessCondition and FailureCondition are the check's
	// conditions as written (either may be empty), Count its measurements. They are
	// kept for the views (kroll rollout status, kroll status -o json), which read no
	// ConfigMap and must show what was asked, not what the ConfigMap says since.
	Query            string `json:"query,omitempty"`
	SuccessCondition string `json:"successCondition,omitempty"`
	FailureCondition string `json:"failureCondition,omitempty"`
	Count            int    `json:"count,omitempty"`
	Tally
	// Recent are the last KeepMeasurements measurements, oldest first.
	Recent []Sample `json:"recent,omitempty"`
}

// Sample is one measurement as kept for the views.
type Sample struct {
	At time.Time `json:"at"`
	// Value is the value judged ("0.002", "NaN", "+Inf"), "empty" for a result
	// without series, empty for an error.
	Value   string  `json:"value,omitempty"`
	Outcome Outcome `json:"outcome"`
	// Error is why the measurement could not be taken, shortened to 160 bytes (in
	// the Tally's message too).
	Error string `json:"error,omitempty"`
}

// ParseState reads StatusAnnotation; an empty value is no analysis yet. A value that
// does not read is an error (the caller starts afresh: an analysis that lost its
// past only takes longer).
func ParseState(v string) (State, error) {
	var s State
	if v == "" {
		return s, nil
	}
	if err := json.Unmarshal([]byte(v), &s); err != nil {
		return State{}, fmt.Errorf("%s does not read: %v", StatusAnnotation, err)
	}
	return s, nil
}

// Encode is s as StatusAnnotation holds it.
func (s State) Encode() string {
	b, err := json.Marshal(s)
	if err != nil {
		// State holds strings, numbers and times only.
		panic(err)
	}
	return string(b)
}

// Query is one measurement due: a check's query rendered for the workload.
type Query struct {
	Check  string
	PromQL string
}

// Plan is what Step decides.
type Plan struct {
	// State is the state to work from and to store: st, or a fresh one when the
	// target or the spec changed.
	State State
	// Queries are the measurements due now (empty when none is, or the analysis is
	// decided or has a Problem): run them and give the results to Record.
	Queries []Query
	// Status is the analysis's standing (Overall of its checks): decided, or
	// Running with Next the time to come back (a requeue-after of Next - now).
	Status Status
	// Problem, when set, is why the analysis cannot judge; Status is then zero.
	Problem string
}

// Step decides what analysis spec, for the workload of vars at target, does now
// given st (the stored state): start afresh if st is of another target or spec,
// report a problem, report the verdict once every check is decided (or one
// decides it: the first failed check fails the analysis, the others are not asked
// further), or list the queries due now. It asks nothing and waits for nothing: a
// controller calls it on each sync and requeues after Status.Next.
//
// With error-ratio (initialDelay 30s, interval 10s, count 3) started at 12:00:00:
// at 12:00:10 no query, Next 12:00:30; at 12:00:30 one query; after Record of
// 0.002 at 12:00:30, Next 12:00:40; after the third good measurement at
// 12:00:50, Successful.
func Step(spec Spec, vars Vars, target Target, st State, now time.Time) Plan {
	fp := fingerprint(spec, vars)
	if st.Revision != target.Revision || st.Step != target.Step || st.Spec != fp || st.Started.IsZero() || len(st.Checks) != len(spec.Checks) {
		st = State{Revision: target.Revision, Step: target.Step, Spec: fp, Started: now.Truncate(time.Second)}
		for _, c := range spec.Checks {
			st.Checks = append(st.Checks, CheckState{Name: c.Name})
		}
	}
	plan := Plan{State: st}
	if st.Problem != "" {
		plan.Problem = st.Problem
		return plan
	}
	queries := make([]string, len(spec.Checks))
	var problems []string
	for i, c := range spec.Checks {
		q, err := c.Render(vars)
		if err != nil {
			problems = append(problems, err.Error())
		}
		queries[i] = q
	}
	if len(problems) > 0 {
		plan.State.Problem = strings.Join(problems, "; ")
		plan.Problem = plan.State.Problem
		return plan
	}
	plan.State.Checks = slices.Clone(st.Checks)
	for i, c := range spec.Checks {
		plan.State.Checks[i].describe(c, queries[i])
	}
	statuses := make([]Status, len(spec.Checks))
	for i, c := range spec.Checks {
		statuses[i] = c.Standing(st.Started, st.Checks[i].Tally)
	}
	plan.Status = Overall(statuses)
	// Running: the checks due are asked. Error (Prometheus unreachable): the checks
	// in Error alone are asked again when due, and the first answer resumes them.
	if plan.Status.Outcome != Running && plan.Status.Outcome != Error {
		return plan
	}
	for i, s := range statuses {
		if s.Outcome == plan.Status.Outcome && !s.Next.After(now) {
			plan.Queries = append(plan.Queries, Query{Check: spec.Checks[i].Name, PromQL: queries[i]})
		}
	}
	return plan
}

// maxQueryLen bounds the rendered query kept in a CheckState: the annotation is read
// on every sync, and a view needs the query to recognise it, not to the last byte.
const maxQueryLen = 1024

// describe keeps in cs what judges it: check c, its query rendered as q.
func (cs *CheckState) describe(c Check, q string) {
	cs.Query, cs.Count = shorten(q, maxQueryLen), c.Count
	cs.SuccessCondition, cs.FailureCondition = "", ""
	if c.Success != nil {
		cs.SuccessCondition = c.Success.String()
	}
	if c.Failure != nil {
		cs.FailureCondition = c.Failure.String()
	}
}

// Unjudged is the state of an analysis at target that cannot start: its checks
// could not be read (no ConfigMap, checks that do not parse, arguments that do
// not), for problem. It is st when st already says so, so that a controller writes
// it once; a fresh one otherwise. The views read the problem where they read every
// analysis (kroll.dev/analysis-status); the checks, once fixed, start afresh (the
// state has no spec to match theirs).
func Unjudged(st State, target Target, problem string, now time.Time) State {
	if st.Revision == target.Revision && st.Step == target.Step && st.Problem == problem && st.Spec == "" && !st.Started.IsZero() {
		return st
	}
	return State{Revision: target.Revision, Step: target.Step, Started: now.Truncate(time.Second), Problem: problem}
}

// Result is one query's answer, or why there is none.
type Result struct {
	Check  string
	Values []float64
	// Err is why the measurement could not be taken (it counts towards the
	// check's consecutiveErrorLimit).
	Err string
	// Refused is Prometheus' word that the query is wrong (bad_data): the check's
	// configuration is broken and asking again gives the same answer.
	Refused string
}

// Record adds results, measured at now, to st: each check's Tally and Recent; a
// refused query sets st.Problem.
func Record(spec Spec, st State, results []Result, now time.Time) State {
	now = now.Truncate(time.Second)
	st.Checks = append([]CheckState(nil), st.Checks...)
	for _, r := range results {
		i := spec.index(r.Check)
		if i < 0 || i >= len(st.Checks) {
			continue
		}
		if r.Refused != "" {
			st.Problem = fmt.Sprintf("check %q: %s", r.Check, r.Refused)
			continue
		}
		c, cs := spec.Checks[i], st.Checks[i]
		if cs.Outcome != "" && cs.Outcome != Error {
			continue // decided: Step asks no more
		}
		m := Measurement{At: now, Values: r.Values, Err: shorten(r.Err, maxErrorLen)}
		cs.Tally = c.Record(cs.Tally, m)
		a := c.Assess(m)
		sample := Sample{At: now, Outcome: a.Outcome}
		switch {
		case m.Err != "":
			sample.Error = m.Err
		case len(m.Values) == 0:
			sample.Value = "empty"
		default:
			sample.Value = num(a.Value)
		}
		cs.Recent = append(append([]Sample(nil), cs.Recent...), sample)
		if len(cs.Recent) > KeepMeasurements {
			cs.Recent = cs.Recent[len(cs.Recent)-KeepMeasurements:]
		}
		st.Checks[i] = cs
	}
	return st
}

func (s Spec) index(name string) int {
	for i, c := range s.Checks {
		if c.Name == name {
			return i
		}
	}
	return -1
}

// Querier asks Prometheus one instant query; *promclient.Client is one.
type Querier interface {
	Query(ctx context.Context, query string, at time.Time) (promclient.Result, error)
}

var _ Querier = &promclient.Client{}

// Runner runs analyses against one Prometheus: a controller's sync calls Run and
// requeues after the plan's Status.Next.
type Runner struct {
	Prometheus Querier
	// Now is the clock: when measurements are due and taken.
	Now func() time.Time
}

// Run is one pass of the analysis: Step, the due queries asked one after another
// (each bounded by the client's timeout), Record, and Step again for the standing
// after them. The returned plan's State is what to store; it has no Queries left.
func (r Runner) Run(ctx context.Context, spec Spec, vars Vars, target Target, st State) Plan {
	now := r.Now()
	plan := Step(spec, vars, target, st, now)
	if len(plan.Queries) == 0 {
		return plan
	}
	results := make([]Result, 0, len(plan.Queries))
	for _, q := range plan.Queries {
		res := Result{Check: q.Check}
		ans, err := r.Prometheus.Query(ctx, q.PromQL, time.Time{})
		switch {
		case promclient.IsQueryError(err):
			res.Refused = err.Error()
		case err != nil:
			res.Err = err.Error()
		default:
			res.Values = ans.Values
		}
		results = append(results, res)
	}
	return Step(spec, vars, target, Record(spec, plan.State, results, now), now)
}

// fingerprint hashes what judging depends on: every check's fields and the
// workload's arguments.
func fingerprint(spec Spec, vars Vars) string {
	h := fnv.New64a()
	for _, c := range spec.Checks {
		fmt.Fprintf(h, "%s\x00%s\x00%v\x00%v\x00%v\x00%d\x00%v\x00%d\x00%d\x00%d\x00%v\x00%v\x00%s\x00",
			c.Name, c.Query, c.Success, c.Failure, c.Interval, c.Count, c.InitialDelay,
			c.FailureLimit, c.InconclusiveLimit, c.ConsecutiveErrorLimit, c.Empty, c.NaN, sortedArgs(c.Args))
	}
	fmt.Fprintf(h, "%s", sortedArgs(vars.Args))
	return fmt.Sprintf("%016x", h.Sum64())
}

func sortedArgs(m map[string]string) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(m)) {
		fmt.Fprintf(&b, "%s=%s,", k, m[k])
	}
	return b.String()
}

func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
