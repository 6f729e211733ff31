package analysis

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"sigs.k8s.io/yaml"
)

// The workload's settings and the ConfigMap key that holds the checks.
const (
	// Annotation names the ConfigMap, in the workload's namespace, that holds the
	// workload's checks: `kroll.dev/analysis: web-checks`.
	Annotation = "kroll.dev/analysis"
	// ArgsAnnotation gives the checks' user arguments from the workload, over the
	// ConfigMap's defaults: `kroll.dev/analysis-args: "service=web, quantile=0.99"`.
	ArgsAnnotation = "kroll.dev/analysis-args"
	// ConfigMapKey is the key of the ConfigMap whose value is the checks' YAML.
	ConfigMapKey = "analysis.yaml"
)

// DefaultConsecutiveErrorLimit is how many measurements in a row may fail to reach
// Prometheus before the check is in Error, as in Argo Rollouts.
const DefaultConsecutiveErrorLimit = 4

// Spec is the analysis of one ConfigMap: its checks, in the order written.
type Spec struct {
	Checks []Check
}

// Check is one check: a PromQL query measured Count times, Interval apart, after
// InitialDelay, each result judged by SuccessCondition and FailureCondition.
type Check struct {
	// Name names the check in every message; unique in its ConfigMap.
	Name string
	// Query is the PromQL query template ({{namespace}}, {{workload}}, {{revision}},
	// {{pod-template-hash}}, {{args.NAME}}).
	Query string
	// Success and Failure judge one value of a result; either may be nil, not both.
	// A value that meets Failure fails; one that meets Success (and not Failure)
	// succeeds; one that meets neither fails when there is no Failure condition, and
	// is inconclusive when there is one.
	Success, Failure *Condition
	// Interval is the time between measurements; zero when the check measures once.
	Interval time.Duration
	// Count is how many measurements the check takes (at least 1): `count`, or
	// `duration` / Interval rounded up (duration 30s at 10s is 3).
	Count int
	// InitialDelay is the wait, from the start of the analysis, before the first
	// measurement; zero to measure at once.
	InitialDelay time.Duration
	// FailureLimit and InconclusiveLimit are how many failed and inconclusive
	// measurements the check tolerates (0: the first one ends it).
	FailureLimit, InconclusiveLimit int
	// ConsecutiveErrorLimit is how many measurements in a row may fail to reach
	// Prometheus (DefaultConsecutiveErrorLimit when not written).
	ConsecutiveErrorLimit int
	// Empty and NaN say what a result with no series, and a NaN value, mean.
	Empty, NaN ResultRule
	// Args are the user arguments' defaults: the check's own over the ConfigMap's.
	Args map[string]string
}

// ResultRule is what an empty result or a NaN means: an outcome, or (Outcome empty)
// a value the conditions judge instead ("0": no 5xx series is a ratio of 0).
type ResultRule struct {
	Outcome Outcome
	Value   float64
}

func (r ResultRule) String() string {
	if r.Outcome != "" {
		return string(r.Outcome)
	}
	return strconv.FormatFloat(r.Value, 'g', -1, 64)
}

// file is the ConfigMap's YAML.
type file struct {
	Args   map[string]string `json:"args"`
	Checks []checkFile       `json:"checks"`
}

type checkFile struct {
	Name                  string            `json:"name"`
	Query                 string            `json:"query"`
	SuccessCondition      string            `json:"successCondition"`
	FailureCondition      string            `json:"failureCondition"`
	Interval              string            `json:"interval"`
	Count                 *int              `json:"count"`
	Duration              string            `json:"duration"`
	InitialDelay          string            `json:"initialDelay"`
	FailureLimit          *int              `json:"failureLimit"`
	InconclusiveLimit     *int              `json:"inconclusiveLimit"`
	ConsecutiveErrorLimit *int              `json:"consecutiveErrorLimit"`
	Empty                 string            `json:"empty"`
	NaN                   string            `json:"nan"`
	Args                  map[string]string `json:"args"`
}

// QueryParser reports why a PromQL query does not parse; nil when it does.
type QueryParser func(query string) error

// Parse reads the checks of a ConfigMap's analysis.yaml. Every problem is one line
// naming the check ("check \"error-ratio\": ..."); with any, the spec is not used (a
// workload with a broken analysis behaves as without one, and never promotes by
// itself). parse checks each query with its templates filled by stand-ins; nil
// checks only that brackets and quotes balance.
func Parse(data string, parse QueryParser) (Spec, []string) {
	if parse == nil {
		parse = balanced
	}
	var f file
	if err := yaml.UnmarshalStrict([]byte(data), &f); err != nil {
		return Spec{}, []string{fmt.Sprintf("%s does not read: %v", ConfigMapKey, err)}
	}
	if len(f.Checks) == 0 {
		return Spec{}, []string{fmt.Sprintf("%s has no checks: want `checks:` with at least one check (name, query, successCondition)", ConfigMapKey)}
	}
	var spec Spec
	var problems []string
	seen := map[string]bool{}
	for i, cf := range f.Checks {
		label := fmt.Sprintf("check %q", cf.Name)
		if cf.Name == "" {
			label = fmt.Sprintf("check %d", i+1)
		}
		c, errs := readCheck(cf, f.Args, parse)
		if cf.Name == "" {
			errs = append([]string{"has no name"}, errs...)
		} else if seen[cf.Name] {
			errs = append([]string{"is named twice: names must be unique"}, errs...)
		}
		seen[cf.Name] = true
		for _, e := range errs {
			problems = append(problems, label+": "+e)
		}
		spec.Checks = append(spec.Checks, c)
	}
	if len(problems) > 0 {
		return Spec{}, problems
	}
	return spec, nil
}

func readCheck(cf checkFile, shared map[string]string, parse QueryParser) (Check, []string) {
	var errs []string
	bad := func(format string, a ...any) { errs = append(errs, fmt.Sprintf(format, a...)) }
	c := Check{Name: cf.Name, Query: cf.Query, ConsecutiveErrorLimit: DefaultConsecutiveErrorLimit, Args: map[string]string{}}
	for k, v := range shared {
		c.Args[k] = v
	}
	for k, v := range cf.Args {
		c.Args[k] = v
	}
	duration := func(field, v string) time.Duration {
		if v == "" {
			return 0
		}
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			bad("%s %q is not a positive duration like 30s or 2m", field, v)
			return 0
		}
		return d
	}
	c.Interval = duration("interval", cf.Interval)
	c.InitialDelay = duration("initialDelay", cf.InitialDelay)
	total := duration("duration", cf.Duration)
	limit := func(field string, v *int, into *int) {
		if v == nil {
			return
		}
		if *v < 0 {
			bad("%s %d is negative: want 0 or more", field, *v)
			return
		}
		*into = *v
	}
	limit("failureLimit", cf.FailureLimit, &c.FailureLimit)
	limit("inconclusiveLimit", cf.InconclusiveLimit, &c.InconclusiveLimit)
	limit("consecutiveErrorLimit", cf.ConsecutiveErrorLimit, &c.ConsecutiveErrorLimit)
	switch {
	case cf.Count != nil && cf.Duration != "":
		bad("gives both count and duration: give one")
	case cf.Count != nil && *cf.Count < 1:
		bad("count %d: want at least 1", *cf.Count)
	case cf.Count != nil:
		c.Count = *cf.Count
	case total > 0 && c.Interval > 0:
		c.Count = int((total + c.Interval - 1) / c.Interval)
	case total > 0:
		bad("duration %s needs an interval between its measurements", cf.Duration)
	default:
		c.Count = 1
	}
	if c.Count > 1 && c.Interval == 0 && cf.Count != nil {
		bad("count %d needs an interval between its measurements", c.Count)
	}
	if cf.Query == "" {
		bad("has no query")
	} else if err := checkTemplate(cf.Query); err != nil {
		bad("%v", err)
	} else if err := parse(standIns(cf.Query)); err != nil {
		bad("the query does not parse: %v", err)
	}
	var err error
	if cf.SuccessCondition == "" && cf.FailureCondition == "" {
		bad("has neither successCondition nor failureCondition: give at least one, like successCondition: \"< 0.01\"")
	}
	if cf.SuccessCondition != "" {
		if c.Success, err = ParseCondition(cf.SuccessCondition); err != nil {
			bad("successCondition %q: %v", cf.SuccessCondition, err)
		}
	}
	if cf.FailureCondition != "" {
		if c.Failure, err = ParseCondition(cf.FailureCondition); err != nil {
			bad("failureCondition %q: %v", cf.FailureCondition, err)
		}
	}
	rule := func(field, v string) ResultRule {
		if v == "" {
			return ResultRule{Outcome: Inconclusive}
		}
		switch o := Outcome(v); o {
		case Successful, Failed, Inconclusive, Error:
			return ResultRule{Outcome: o}
		}
		if n, err := strconv.ParseFloat(v, 64); err == nil {
			return ResultRule{Value: n}
		}
		bad("%s %q: want Inconclusive, Failed, Successful, Error, or a number taken as the value (0)", field, v)
		return ResultRule{}
	}
	c.Empty = rule("empty", cf.Empty)
	c.NaN = rule("nan", cf.NaN)
	return c, errs
}

// placeholder is a template reference: {{namespace}}, {{ args.service }}.
var placeholder = regexp.MustCompile(`\{\{\s*([^{}]*?)\s*\}\}`)

// builtins are the placeholders kroll fills from the workload.
var builtins = []string{"namespace", "workload", "revision", "pod-template-hash"}

// checkTemplate refuses a placeholder that names nothing kroll fills.
func checkTemplate(q string) error {
	for _, m := range placeholder.FindAllStringSubmatch(q, -1) {
		name := m[1]
		if isBuiltin(name) {
			continue
		}
		if arg, ok := strings.CutPrefix(name, "args."); ok && arg != "" {
			continue
		}
		return fmt.Errorf("the query's {{%s}} is none of {{namespace}}, {{workload}}, {{revision}}, {{pod-template-hash}} or {{args.NAME}}", name)
	}
	return nil
}

func isBuiltin(name string) bool {
	for _, b := range builtins {
		if name == b {
			return true
		}
	}
	return false
}

// standIns fills every placeholder for parsing before the values are known: "1m"
// where a range or subquery wants a duration (after '[' or ':'), a word elsewhere
// ("x": a label value inside quotes, a metric name outside). A placeholder where
// PromQL wants a number (histogram_quantile({{args.q}}, ...)) reads as a metric
// name there; a parser that checks types refuses it, so the full check of a query
// is its rendered form's, when the analysis starts (see doc.go).
func standIns(q string) string {
	var b strings.Builder
	last := 0
	for _, loc := range placeholder.FindAllStringIndex(q, -1) {
		b.WriteString(q[last:loc[0]])
		before := strings.TrimRight(q[:loc[0]], " ")
		if strings.HasSuffix(before, "[") || strings.HasSuffix(before, ":") {
			b.WriteString("1m")
		} else {
			b.WriteString("x")
		}
		last = loc[1]
	}
	b.WriteString(q[last:])
	return b.String()
}

// Vars are what a query's placeholders are filled with for one workload and revision.
type Vars struct {
	Namespace, Workload string
	// Revision is the revision under analysis: a Deployment's new ReplicaSet's
	// pod-template-hash, a StatefulSet's or DaemonSet's ControllerRevision name.
	Revision string
	// PodTemplateHash is the label value that names the new revision's pods: a
	// Deployment's new ReplicaSet's pod-template-hash; a StatefulSet's or
	// DaemonSet's controller-revision-hash (a StatefulSet's is its revision's name,
	// as Revision; a DaemonSet's the hash in it: logs-5d8c7f9b6c's 5d8c7f9b6c).
	PodTemplateHash string
	// Args are the workload's kroll.dev/analysis-args, over the check's defaults.
	Args map[string]string
}

// Render fills check c's query for vars. A placeholder without a value is an error
// naming the check and where a value would come from.
func (c Check) Render(v Vars) (string, error) {
	var missing []string
	out := placeholder.ReplaceAllStringFunc(c.Query, func(m string) string {
		name := placeholder.FindStringSubmatch(m)[1]
		var val string
		switch name {
		case "namespace":
			val = v.Namespace
		case "workload":
			val = v.Workload
		case "revision":
			val = v.Revision
		case "pod-template-hash":
			val = v.PodTemplateHash
		default:
			arg := strings.TrimPrefix(name, "args.")
			var ok bool
			if val, ok = v.Args[arg]; !ok {
				val = c.Args[arg]
			}
		}
		if val == "" {
			missing = append(missing, "{{"+name+"}}")
		}
		return val
	})
	if len(missing) > 0 {
		sort.Strings(missing)
		return "", fmt.Errorf("check %q: the query's %s has no value: give args in the ConfigMap or the workload's %s",
			c.Name, strings.Join(missing, ", "), ArgsAnnotation)
	}
	return out, nil
}

// ParseArgs reads kroll.dev/analysis-args: "name=value" pairs separated by commas.
func ParseArgs(v string) (map[string]string, error) {
	args := map[string]string{}
	for _, pair := range strings.Split(v, ",") {
		pair = strings.TrimSpace(pair)
		if pair == "" {
			continue
		}
		k, val, ok := strings.Cut(pair, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, fmt.Errorf("%s=%q: %q is not name=value; want \"service=web, quantile=0.99\"", ArgsAnnotation, v, pair)
		}
		args[strings.TrimSpace(k)] = strings.TrimSpace(val)
	}
	return args, nil
}

// balanced is the check made without a PromQL parser: brackets, braces and
// parentheses pair up outside quotes, and quotes close.
func balanced(q string) error {
	var stack []rune
	pairs := map[rune]rune{')': '(', ']': '[', '}': '{'}
	var quote rune
	for i, r := range q {
		switch {
		case quote != 0:
			if r == quote && (i == 0 || q[i-1] != '\\') {
				quote = 0
			}
		case r == '"' || r == '\'' || r == '`':
			quote = r
		case r == '(' || r == '[' || r == '{':
			stack = append(stack, r)
		case pairs[r] != 0:
			if len(stack) == 0 || stack[len(stack)-1] != pairs[r] {
				return fmt.Errorf("unexpected %q at %d", r, i+1)
			}
			stack = stack[:len(stack)-1]
		}
	}
	switch {
	case quote != 0:
		return fmt.Errorf("unclosed %c", quote)
	case len(stack) > 0:
		return fmt.Errorf("unclosed %q", stack[len(stack)-1])
	}
	return nil
}
