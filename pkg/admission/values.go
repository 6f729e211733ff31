package admission

import (
	"github.com/kroll-dev/kroll/pkg/configrollout"
	"github.com/kroll-dev/kroll/pkg/disruption"
	"github.com/kroll-dev/kroll/pkg/failure"
	"github.com/kroll-dev/kroll/pkg/inplace"
	"github.com/kroll-dev/kroll/pkg/staging"
)

// The kinds the policy checks. ReplicaSets and ReplicationControllers are not among
// them: no setting is read from a bare one (a Deployment's ReplicaSets carry copies of
// its annotations, which the Deployment controller writes and must never be refused).
const (
	Deployment  = "Deployment"
	StatefulSet = "StatefulSet"
	DaemonSet   = "DaemonSet"
)

// Kinds are the kinds the policy checks.
var Kinds = []string{Deployment, StatefulSet, DaemonSet}

// Problems are the lines kroll's controllers report for a workload of kind with
// annotations (Warning events, the FailurePolicy and Staged conditions, `kroll rollout
// plan`): one per setting that does not parse, in the order the policy lists them. The
// policy's message for a write that sets every one of them is these lines joined by "; ".
func Problems(kind string, annotations map[string]string) []string {
	problems := failure.PolicyOf(annotations).Problems
	if kind == StatefulSet {
		problems = append(problems, staging.StatefulSetSettingsOf(annotations).Problems...)
	} else {
		problems = append(problems, staging.SettingsOf(annotations).Problems...)
	}
	if _, err := inplace.ModeOf(annotations); err != nil {
		problems = append(problems, err.Error())
	}
	if _, err := inplace.GracePeriodOf(annotations); err != nil {
		problems = append(problems, err.Error())
	}
	if p := disruption.Problem(annotations); p != "" {
		problems = append(problems, p)
	}
	if _, problem := configrollout.Enabled(annotations); problem != "" {
		problems = append(problems, problem)
	}
	return problems
}

// Settings are the annotations the policy checks: every kroll.dev/ annotation a user
// writes on a workload to set how kroll rolls it out. kroll's records of what it did
// (failure.RolledBackFromAnnotation, staging.Records, ...) and requests kroll's CLI
// writes and the controller removes (staging.AbortAnnotation) are not settings.
var Settings = []string{
	failure.OnFailureAnnotation, failure.ThresholdAnnotation, failure.RestartsAnnotation,
	failure.ReadyTimeoutAnnotation, failure.ProgressDeadlineAnnotation,
	staging.PartitionAnnotation, staging.StepsAnnotation,
	inplace.StrategyAnnotation, inplace.GracePeriodAnnotation,
	disruption.Annotation,
	configrollout.Annotation,
}

// Value is one row of the settings table: a value of one setting and whether kroll
// accepts it on each kind.
type Value struct {
	// Key is the annotation, Value its value.
	Key, Value string
	// Valid tells whether the parsers (and so the policy) accept it.
	Valid bool
	// Kinds are the kinds the row holds for; empty: all of Kinds.
	Kinds []string
	// With are other annotations written together with it; nil: none.
	With map[string]string
}

// Annotations are the row's annotations: Key=Value and With.
func (v Value) Annotations() map[string]string {
	a := map[string]string{v.Key: v.Value}
	for k, w := range v.With {
		a[k] = w
	}
	return a
}

// KindsOf are the kinds the row holds for.
func (v Value) KindsOf() []string {
	if len(v.Kinds) == 0 {
		return Kinds
	}
	return v.Kinds
}

// notStatefulSet: kroll.dev/partition alone is a problem on a StatefulSet (it has its
// own partition field).
var notStatefulSet = []string{Deployment, DaemonSet}

// row builders: valid and invalid values of one key on every kind.
func valid(key string, values ...string) []Value   { return rows(key, true, values) }
func invalid(key string, values ...string) []Value { return rows(key, false, values) }
func rows(key string, ok bool, values []string) []Value {
	var out []Value
	for _, v := range values {
		out = append(out, Value{Key: key, Value: v, Valid: ok})
	}
	return out
}

// Values is the table of settings: each setting's accepted forms, their edges (signs,
// leading zeros, 32-bit bounds, Go's duration grammar, spaces the parsers trim) and
// values that are refused, with quotes and control characters that the messages quote.
// The parsers' tests (values_test.go) and the policy's test against the API server
// (e2e/admission_test.go) both read it, so the two cannot drift.
var Values = concat(
	valid(failure.OnFailureAnnotation, "Rollback", "Pause", "None"),
	invalid(failure.OnFailureAnnotation, "Sometimes", "rollback", "", " Rollback", `Pa"use`, "None\n", "Roll\\back"),

	valid(failure.ThresholdAnnotation, "1", "2", "+3", "007", "2147483647", "25%", "100%", "+50%", "01%"),
	invalid(failure.ThresholdAnnotation, "abc", "0", "-1", "0%", "101%", "-5%", "2147483648", "1.5", "", "50%%", " 2", "2 ", "%", "99999999999999999999", "1e3"),

	valid(failure.RestartsAnnotation, "1", "3", "+4", "2147483647"),
	invalid(failure.RestartsAnnotation, "0", "-3", "three", "2147483648", "", "3.0", "0x10"),

	valid(failure.ReadyTimeoutAnnotation, "60s", "5m", "1h30m", "1.5s", ".5s", "5.s", "500ms", "2µs", "2μs", "3us", "7ns", "+1s", "1h0m0s"),
	invalid(failure.ReadyTimeoutAnnotation, "0", "0s", "-5s", "+0", "60", "5 m", "1d", "", ".s", "1s.", "1h-5m", "5sm", "00", "s"),

	valid(failure.ProgressDeadlineAnnotation, "1", "600", "+30", "2147483646"),
	invalid(failure.ProgressDeadlineAnnotation, "0", "-1", "2147483647", "10s", "", "1.5"),

	// A partition is a Deployment's or a DaemonSet's; on a StatefulSet only with steps.
	validOn(notStatefulSet, staging.PartitionAnnotation, "0", "10", " 5 ", "50%", "0%", "100%", "-0", "+2", "2147483647"),
	invalid(staging.PartitionAnnotation, "-1", "150%", "101%", "-1%", "abc", "10.5", "", "%", "10 %", "2147483648"),
	[]Value{
		{Key: staging.PartitionAnnotation, Value: "1", Kinds: []string{StatefulSet}},
		{Key: staging.PartitionAnnotation, Value: "50%", Kinds: []string{StatefulSet}},
		{Key: staging.PartitionAnnotation, Value: "1", Valid: true, Kinds: []string{StatefulSet}, With: map[string]string{staging.StepsAnnotation: "50%, 100%"}},
	},

	valid(staging.StepsAnnotation, "10%, pause, 50%, pause: 5m, 100%", "1, 3, 100%", "pause", "  25% ,100%", "10%, 5, 50%, 7",
		"pause:1m30s", "pause :  2m", "0%, 0", "100%", "10%,10%", "10%, analyze, 50%, analyze, 100%", "analyze", "analyze,20%"),
	invalid(staging.StepsAnnotation, "10%, wait, 100%", "", " ", "50%, 10%", "5, 3", "10%, 5, 50%, 3", "pause: 0s", "pause:", "pause 2m",
		"paused", "10%,,100%", "pause: 2", "150%", "10%, pause: -1m", "10%, pause: 1d", `"10%"`, "10%, 100%, 50%, 2, 1", "10%, analyse, 100%", "analyze: p99", "Analyze", "analyze 2m"),

	valid(inplace.StrategyAnnotation, "", "InPlaceIfPossible", "InPlaceOnly"),
	invalid(inplace.StrategyAnnotation, "inplace", "InPlace", "RollingUpdate", "InPlaceOnly "),

	valid(inplace.GracePeriodAnnotation, "0", "30", "+5", "05", "2147483647"),
	invalid(inplace.GracePeriodAnnotation, "-1", "1.5", "30s", "", "null", " 5", "2147483648"),

	valid(disruption.Annotation, "Respect", "Ignore"),
	invalid(disruption.Annotation, "respect", "", " Respect", "Respect ", "On", `Re"spect`),
	// As strconv.ParseBool reads it.
	valid(configrollout.Annotation, "true", "false", "True", "TRUE", "t", "1", "F", "0"),
	invalid(configrollout.Annotation, "yes", "on", "", " true", "true ", "tRUE", `"true"`),
)

// validOn is valid values of key on kinds only (a partition on a StatefulSet is a
// problem: the rows for it name StatefulSet alone).
func validOn(kinds []string, key string, values ...string) []Value {
	var out []Value
	for _, v := range values {
		out = append(out, Value{Key: key, Value: v, Valid: true, Kinds: kinds})
	}
	return out
}

func concat(parts ...[]Value) []Value {
	var out []Value
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}
