package analysis

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

const errorRatio = `
args:
  window: 30s
checks:
- name: error-ratio
  query: |
    sum(rate(http_requests_total{namespace="{{namespace}}",pod=~"{{workload}}-{{pod-template-hash}}-.*",code=~"5.."}[{{args.window}}]))
    / sum(rate(http_requests_total{namespace="{{namespace}}",pod=~"{{workload}}-{{pod-template-hash}}-.*"}[{{args.window}}]))
  successCondition: "< 0.01"
  interval: 10s
  count: 3
  initialDelay: 30s
  empty: "0"
- name: p99
  query: histogram_quantile({{args.quantile}}, sum by (le) (rate(http_request_duration_seconds_bucket{namespace="{{namespace}}"}[1m])))
  successCondition: result <= 0.25
  failureCondition: "> 0.5"
  interval: 15s
  duration: 40s
  failureLimit: 1
  consecutiveErrorLimit: 2
  args:
    quantile: "0.99"
`

func TestParse(t *testing.T) {
	spec, problems := Parse(errorRatio, nil)
	if len(problems) > 0 {
		t.Fatalf("problems: %v", problems)
	}
	if len(spec.Checks) != 2 {
		t.Fatalf("%d checks", len(spec.Checks))
	}
	er, p99 := spec.Checks[0], spec.Checks[1]
	if er.Count != 3 || er.Interval != 10*time.Second || er.InitialDelay != 30*time.Second || er.ConsecutiveErrorLimit != DefaultConsecutiveErrorLimit ||
		er.Empty != (ResultRule{Value: 0}) || er.NaN != (ResultRule{Outcome: Inconclusive}) || er.Args["window"] != "30s" {
		t.Errorf("error-ratio = %+v", er)
	}
	// duration 40s at 15s is 3 measurements (rounded up).
	if p99.Count != 3 || p99.FailureLimit != 1 || p99.ConsecutiveErrorLimit != 2 || p99.Args["quantile"] != "0.99" || p99.Args["window"] != "30s" {
		t.Errorf("p99 = %+v", p99)
	}
}

func TestParseProblems(t *testing.T) {
	check := func(body string) string { return "checks:\n- name: c\n" + body }
	cases := []struct {
		name, yaml string
		parser     QueryParser
		want       string // one of the problems, whole
	}{
		{"no checks", "args: {}", nil, "analysis.yaml has no checks: want `checks:` with at least one check (name, query, successCondition)"},
		{"an unknown field", check("  query: up\n  treshold: 1\n"), nil, `unknown field "treshold"`},
		{"no name", "checks:\n- query: up\n  successCondition: '> 0'\n", nil, "check 1: has no name"},
		{"a name twice", "checks:\n- name: a\n  query: up\n  successCondition: '> 0'\n- name: a\n  query: up\n  successCondition: '> 0'\n", nil, `check "a": is named twice: names must be unique`},
		{"no query", check("  successCondition: '> 0'\n"), nil, `check "c": has no query`},
		{"no condition", check("  query: up\n"), nil, `check "c": has neither successCondition nor failureCondition: give at least one, like successCondition: "< 0.01"`},
		{"a condition that does not read", check("  query: up\n  successCondition: 'less than 1'\n"), nil, `check "c": successCondition "less than 1": "less than 1" is not a comparison like "< 0.01" or "result >= 0.95"`},
		{"an unknown placeholder", check("  query: up{pod=\"{{pod}}\"}\n  successCondition: '> 0'\n"), nil, `check "c": the query's {{pod}} is none of {{namespace}}, {{workload}}, {{revision}}, {{pod-template-hash}} or {{args.NAME}}`},
		{"unbalanced brackets, without a parser", check("  query: sum(rate(x[1m])\n  successCondition: '> 0'\n"), nil, `check "c": the query does not parse: unclosed '('`},
		{"the parser's own words", check("  query: sum by (le) rate(x)\n  successCondition: '> 0'\n"), func(string) error { return errors.New("1:16: parse error: unexpected identifier \"rate\"") },
			`check "c": the query does not parse: 1:16: parse error: unexpected identifier "rate"`},
		{"count and duration", check("  query: up\n  successCondition: '> 0'\n  interval: 10s\n  count: 3\n  duration: 30s\n"), nil, `check "c": gives both count and duration: give one`},
		{"count without interval", check("  query: up\n  successCondition: '> 0'\n  count: 3\n"), nil, `check "c": count 3 needs an interval between its measurements`},
		{"count 0", check("  query: up\n  successCondition: '> 0'\n  count: 0\n"), nil, `check "c": count 0: want at least 1`},
		{"a bad interval", check("  query: up\n  successCondition: '> 0'\n  interval: often\n"), nil, `check "c": interval "often" is not a positive duration like 30s or 2m`},
		{"a negative limit", check("  query: up\n  successCondition: '> 0'\n  failureLimit: -1\n"), nil, `check "c": failureLimit -1 is negative: want 0 or more`},
		{"a bad empty rule", check("  query: up\n  successCondition: '> 0'\n  empty: ignore\n"), nil, `check "c": empty "ignore": want Inconclusive, Failed, Successful, Error, or a number taken as the value (0)`},
	}
	for _, tc := range cases {
		spec, problems := Parse(tc.yaml, tc.parser)
		found := false
		for _, p := range problems {
			found = found || p == tc.want || strings.Contains(p, tc.want) && strings.HasPrefix(tc.want, "unknown")
		}
		if !found || len(spec.Checks) != 0 {
			t.Errorf("%s: problems %q, want %q and no checks", tc.name, problems, tc.want)
		}
	}
}

func TestStandIns(t *testing.T) {
	got := standIns(`rate(x{ns="{{namespace}}"}[{{ args.window }}])[5m:{{args.step}}] + {{args.metric}}`)
	if want := `rate(x{ns="x"}[1m])[5m:1m] + x`; got != want {
		t.Errorf("standIns = %q, want %q", got, want)
	}
}

func TestRender(t *testing.T) {
	spec, _ := Parse(errorRatio, nil)
	er, p99 := spec.Checks[0], spec.Checks[1]
	q, err := er.Render(Vars{Namespace: "shop", Workload: "web", PodTemplateHash: "5d8f7c9b4", Args: map[string]string{"window": "1m"}})
	if err != nil || !strings.Contains(q, `{namespace="shop",pod=~"web-5d8f7c9b4-.*",code=~"5.."}[1m]`) {
		t.Errorf("Render = %q, %v", q, err)
	}
	if q, err := p99.Render(Vars{Namespace: "shop"}); err != nil || !strings.HasPrefix(q, "histogram_quantile(0.99, ") {
		t.Errorf("the check's default argument: %q, %v", q, err)
	}
	// A placeholder without a value: the error names it and where values come from.
	_, err = er.Render(Vars{Namespace: "shop", Workload: "db", Revision: "db-7f9c"})
	want := `check "error-ratio": the query's {{pod-template-hash}}, {{pod-template-hash}} has no value`
	if err == nil || !strings.HasPrefix(err.Error(), want) || !strings.Contains(err.Error(), "kroll.dev/analysis-args") {
		t.Errorf("Render without a hash: %v, want it to begin %q", err, want)
	}
	c := Check{Name: "svc", Query: `up{service="{{ args.service }}"}`}
	if _, err := c.Render(Vars{}); err == nil || !strings.Contains(err.Error(), "{{args.service}} has no value") {
		t.Errorf("a missing argument: %v", err)
	}
	args, err := ParseArgs("service=web, quantile = 0.9")
	if err != nil || args["service"] != "web" || args["quantile"] != "0.9" {
		t.Errorf("ParseArgs = %v, %v", args, err)
	}
	if _, err := ParseArgs("service"); err == nil {
		t.Error("ParseArgs accepted a pair without =")
	}
}

func TestCondition(t *testing.T) {
	cases := []struct {
		cond string
		v    float64
		want bool
	}{
		{"< 0.01", 0.005, true},
		{"< 0.01", 0.01, false},
		{"result <= 0.25", 0.25, true},
		{">= 0 && < 0.01", -0.1, false},
		{">= 0 && < 0.01", 0, true},
		{"result < 0.1 || result > 10", 11, true},
		{"result < 0.1 || result > 10", 5, false},
		{"0.9 < result", 0.95, true},
		{"0.9 < result", 0.9, false},
		{"!= 0", 0, false},
		{"< 1", math.NaN(), false},
	}
	for _, tc := range cases {
		c, err := ParseCondition(tc.cond)
		if err != nil {
			t.Errorf("%q: %v", tc.cond, err)
			continue
		}
		if got := c.Holds(tc.v); got != tc.want {
			t.Errorf("%q holds for %v = %v, want %v", tc.cond, tc.v, got, tc.want)
		}
	}
	for _, bad := range []string{"", "< ", "result", "~ 1", "< 0.1 &&", "result < x", "1 < 2"} {
		if _, err := ParseCondition(bad); err == nil {
			t.Errorf("ParseCondition(%q) accepted", bad)
		}
	}
}

func TestDecide(t *testing.T) {
	less := func(s string) *Condition { c, _ := ParseCondition(s); return c }
	ratio := Check{Name: "error-ratio", Success: less("< 0.01"), Interval: 10 * time.Second, Count: 3, InitialDelay: 30 * time.Second,
		ConsecutiveErrorLimit: 4, Empty: ResultRule{Value: 0}, NaN: ResultRule{Outcome: Inconclusive}}
	p99 := Check{Name: "p99", Success: less("<= 0.25"), Failure: less("> 0.5"), Interval: 15 * time.Second, Count: 2, FailureLimit: 1,
		ConsecutiveErrorLimit: 2, Empty: ResultRule{Outcome: Inconclusive}, NaN: ResultRule{Outcome: Inconclusive}}
	at := func(s int, vs ...float64) Measurement {
		return Measurement{At: t0.Add(time.Duration(s) * time.Second), Values: vs}
	}
	errAt := func(s int) Measurement {
		return Measurement{At: t0.Add(time.Duration(s) * time.Second), Err: "Get \"http://127.0.0.1:9090/api/v1/query\": connection refused"}
	}
	cases := []struct {
		name    string
		check   Check
		ms      []Measurement
		want    Outcome
		message string
		next    time.Duration // from t0; when Running
	}{
		{"nothing yet: the first is due after the initial delay", ratio, nil, Running, `check "error-ratio": 0 of 3 measurements taken`, 30 * time.Second},
		{"two good ones: the third is due an interval after the second", ratio, []Measurement{at(30, 0.002), at(40, 0.004)}, Running, `check "error-ratio": 2 of 3 measurements taken`, 50 * time.Second},
		{"ErrorRate(0.2): the first measurement fails it", ratio, []Measurement{at(30, 0.2)}, Failed, `check "error-ratio" failed: 0.2 is not < 0.01 (1 failed measurement, limit 0)`, 0},
		{"three good ones succeed", ratio, []Measurement{at(30, 0), at(40, 0.001), at(50, 0.009)}, Successful, `check "error-ratio" succeeded: 0.009 is < 0.01 (3 of 3 measurements successful)`, 0},
		{"an empty result taken as 0 succeeds", ratio, []Measurement{at(30), at(40), at(50)}, Successful, `check "error-ratio" succeeded: the result is empty (no series), taken as 0: 0 is < 0.01 (3 of 3 measurements successful)`, 0},
		{"one pod's series fails the measurement", ratio, []Measurement{at(30, 0, 0.3, 0)}, Failed, `check "error-ratio" failed: 0.3 is not < 0.01`, 0},
		{"NaN is inconclusive by default", ratio, []Measurement{at(30, math.NaN())}, Inconclusive, `check "error-ratio" is inconclusive: the result is NaN, taken as Inconclusive (1 inconclusive measurement, limit 0)`, 0},
		{"errors in a row up to the limit keep it running; they do not count", ratio, []Measurement{at(30, 0), errAt(40), errAt(50), errAt(60), errAt(70)}, Running,
			`check "error-ratio": 1 of 3 measurements taken, 4 errors in a row (limit 4)`, 80 * time.Second},
		{"one error more is Prometheus unreachable; tried again an interval on", ratio, []Measurement{errAt(30), errAt(40), errAt(50), errAt(60), errAt(70)}, Error,
			`check "error-ratio": Prometheus unreachable: Get "http://127.0.0.1:9090/api/v1/query": connection refused (5 errors in a row, limit 4)`, 80 * time.Second},
		{"still unreachable: still in Error, the count goes on", ratio, []Measurement{errAt(30), errAt(40), errAt(50), errAt(60), errAt(70), errAt(80)}, Error,
			`check "error-ratio": Prometheus unreachable: Get "http://127.0.0.1:9090/api/v1/query": connection refused (6 errors in a row, limit 4)`, 90 * time.Second},
		{"Prometheus back: the check resumes and succeeds", ratio, []Measurement{errAt(30), errAt(40), errAt(50), errAt(60), errAt(70), at(80, 0), at(90, 0), at(100, 0)}, Successful,
			`check "error-ratio" succeeded: 0 is < 0.01 (3 of 3 measurements successful)`, 0},
		{"an error on a check measured once: tried again after 10s, not at once", Check{Name: "once", Success: less("< 1"), Count: 1, ConsecutiveErrorLimit: 4}, []Measurement{errAt(0)}, Running,
			`check "once": 0 of 1 measurements taken, 1 errors in a row (limit 4)`, 10 * time.Second},
		{"in Error on a check measured once: tried again after 10s", Check{Name: "once", Success: less("< 1"), Count: 1}, []Measurement{errAt(0)}, Error,
			`check "once": Prometheus unreachable`, 10 * time.Second},
		{"a failed check stays failed whatever comes after", ratio, []Measurement{at(30, 0.2), at(40, 0)}, Failed, `check "error-ratio" failed: 0.2 is not < 0.01`, 0},
		{"a measurement taken resets the errors in a row", ratio, []Measurement{errAt(30), errAt(40), errAt(50), errAt(60), at(70, 0), errAt(80), at(90, 0), at(100, 0)}, Successful, `check "error-ratio" succeeded`, 0},
		{"Latency(300ms): p99 0.4975 is between the conditions: inconclusive", p99, []Measurement{at(0, 0.4975)}, Inconclusive, `check "p99" is inconclusive: 0.4975 is neither <= 0.25 nor > 0.5 (1 inconclusive measurement, limit 0)`, 0},
		{"one failure within failureLimit 1 runs on", p99, []Measurement{at(0, 0.9)}, Running, `check "p99": 1 of 2 measurements taken`, 15 * time.Second},
		{"a second failure passes failureLimit 1", p99, []Measurement{at(0, 0.9), at(15, 0.75)}, Failed, `check "p99" failed: 0.75 meets the failure condition > 0.5 (2 failed measurements, limit 1)`, 0},
		{"a failure within the limit, then a success: successful at the count", p99, []Measurement{at(0, 0.9), at(15, 0.1)}, Successful, `check "p99" succeeded: 0.1 is <= 0.25 (1 of 2 measurements successful)`, 0},
		{"an empty result is inconclusive when the check says nothing", p99, []Measurement{at(0)}, Inconclusive, `check "p99" is inconclusive: the result is empty (no series), taken as Inconclusive`, 0},
	}
	for _, tc := range cases {
		s := tc.check.Decide(t0, tc.ms)
		if s.Outcome != tc.want || !strings.HasPrefix(s.Message, tc.message) {
			t.Errorf("%s: %s %q, want %s %q", tc.name, s.Outcome, s.Message, tc.want, tc.message)
		}
		if tc.want == Running && !s.Next.Equal(t0.Add(tc.next)) {
			t.Errorf("%s: next at %v, want %v", tc.name, s.Next.Sub(t0), tc.next)
		}
		if tc.want == Error && !s.Next.Equal(t0.Add(tc.next)) {
			t.Errorf("%s: in Error, next try at %v, want %v", tc.name, s.Next.Sub(t0), tc.next)
		}
		if tc.want != Running && tc.want != Error && !s.Next.IsZero() {
			t.Errorf("%s: decided, yet a next measurement at %v", tc.name, s.Next)
		}
	}
}

func TestOverall(t *testing.T) {
	run := func(name string, next int) Status {
		return Status{Check: name, Outcome: Running, Next: t0.Add(time.Duration(next) * time.Second), Message: name + " running"}
	}
	cases := []struct {
		name   string
		checks []Status
		want   Outcome
		msg    string
	}{
		{"all succeeded", []Status{{Outcome: Successful}, {Outcome: Successful}}, Successful, "all 2 checks succeeded"},
		{"one running: running, next at the earliest", []Status{{Outcome: Successful}, run("a", 20), run("b", 10)}, Running, "a running; b running"},
		{"a failure beats an error and a running check", []Status{run("a", 5), {Outcome: Error, Message: "e"}, {Outcome: Failed, Message: "f"}}, Failed, "f"},
		{"an error beats inconclusive", []Status{{Outcome: Inconclusive, Message: "i"}, {Outcome: Error, Message: "e"}}, Error, "e"},
		{"inconclusive beats running", []Status{run("a", 5), {Outcome: Inconclusive, Message: "i"}}, Inconclusive, "i"},
	}
	for _, tc := range cases {
		s := Overall(tc.checks)
		if s.Outcome != tc.want || s.Message != tc.msg {
			t.Errorf("%s: %s %q, want %s %q", tc.name, s.Outcome, s.Message, tc.want, tc.msg)
		}
	}
	if s := Overall([]Status{run("a", 20), run("b", 10)}); !s.Next.Equal(t0.Add(10 * time.Second)) {
		t.Errorf("next at %v, want the earliest", s.Next)
	}
}

func TestOverallSuccessfulNamesTheValues(t *testing.T) {
	one := Status{Check: "a", Outcome: Successful, Message: `check "a" succeeded: 0 is < 0.01 (3 of 3 measurements successful)`}
	two := Status{Check: "b", Outcome: Successful, Message: `check "b" succeeded: 0.1 is <= 0.25 (2 of 2 measurements successful)`}
	if s := Overall([]Status{one}); s.Message != one.Message {
		t.Errorf("one check: %q", s.Message)
	}
	if s := Overall([]Status{one, two}); s.Message != "all 2 checks succeeded: "+one.Message+"; "+two.Message {
		t.Errorf("two checks: %q", s.Message)
	}
}
