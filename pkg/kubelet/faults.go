package kubelet

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/kroll-dev/kroll/pkg/container"
)

// FaultKind names how a simulated container misbehaves.
type FaultKind string

const (
	// FaultNone runs the container normally; a rule with it overrides later rules and
	// the image catalogue (the image pulls even if the catalogue does not list its tag).
	FaultNone FaultKind = "None"
	// FaultImagePull never pulls: waiting ErrImagePull, then ImagePullBackOff; never Ready.
	FaultImagePull FaultKind = "ImagePullBackOff"
	// FaultCrashLoop starts, exits with code 1 after the startup delay and is restarted
	// with exponential back-off (waiting CrashLoopBackOff); restartCount grows.
	FaultCrashLoop FaultKind = "CrashLoopBackOff"
	// FaultNeverReady runs but never passes readiness.
	FaultNeverReady FaultKind = "NeverReady"
	// FaultReadyAfter runs and becomes ready Fault.After after it started.
	FaultReadyAfter FaultKind = "ReadyAfter"
)

// Fault is what happens to one container: at most one kind (how it runs) and how
// its HTTP servers answer their synthetic load (pkg/container's Traffic).
type Fault struct {
	// Kind is how the container runs; empty for a fault that only sets how it serves
	// (ErrorRate, Latency), which runs and pulls as the catalogue says.
	Kind FaultKind
	// After is the readiness delay of FaultReadyAfter; zero for the other kinds.
	After time.Duration
	// ErrorRate is the fraction of its load's requests answered 500, 0 to 1.
	ErrorRate float64
	// Latency is how long each request of its load takes; zero for the default.
	Latency time.Duration
}

// The serving faults: ErrorRate(0.2) answers a fifth of requests with 500,
// Latency(300ms) takes 300ms over each.
const (
	faultErrorRate = "ErrorRate"
	faultLatency   = "Latency"
)

// String renders the fault the way ParseFault reads it: "ReadyAfter(30s)",
// "ErrorRate(0.2)+Latency(300ms)".
func (f Fault) String() string {
	var terms []string
	switch f.Kind {
	case "":
	case FaultReadyAfter:
		terms = append(terms, fmt.Sprintf("%s(%s)", f.Kind, f.After))
	default:
		terms = append(terms, string(f.Kind))
	}
	if f.ErrorRate != 0 {
		terms = append(terms, fmt.Sprintf("%s(%s)", faultErrorRate, strconv.FormatFloat(f.ErrorRate, 'g', -1, 64)))
	}
	if f.Latency != 0 {
		terms = append(terms, fmt.Sprintf("%s(%s)", faultLatency, f.Latency))
	}
	return strings.Join(terms, "+")
}

// Traffic is the synthetic load the container's HTTP servers answer under the fault.
func (f Fault) Traffic() container.Traffic {
	return container.Traffic{ErrorRatio: f.ErrorRate, Latency: f.Latency}
}

// faultForms lists what ParseFault reads, for its errors.
const faultForms = "ImagePullBackOff, CrashLoopBackOff, NeverReady, ReadyAfter(30s) or None, and/or ErrorRate(0.2) and Latency(300ms), joined with '+'"

// ParseFault reads a fault: one of "ImagePullBackOff", "CrashLoopBackOff",
// "NeverReady", "ReadyAfter(30s)", "None", and the serving faults "ErrorRate(0.2)"
// and "Latency(300ms)", joined with '+': "ReadyAfter(10s)+ErrorRate(0.05)".
func ParseFault(s string) (Fault, error) {
	s = strings.TrimSpace(s)
	var f Fault
	var seen []string
	for _, term := range strings.Split(s, "+") {
		term = strings.TrimSpace(term)
		name, arg, hasArg := strings.Cut(term, "(")
		if hasArg {
			var closed bool
			if arg, closed = strings.CutSuffix(arg, ")"); !closed {
				return Fault{}, fmt.Errorf("fault %q: %q lacks its closing parenthesis", s, term)
			}
		}
		for _, n := range seen {
			if n == name || isKind(n) && isKind(name) {
				return Fault{}, fmt.Errorf("fault %q: give at most one of ImagePullBackOff, CrashLoopBackOff, NeverReady, ReadyAfter(...), None, and each of ErrorRate(...) and Latency(...) once", s)
			}
		}
		seen = append(seen, name)
		switch {
		case !hasArg && isKind(name) && FaultKind(name) != FaultReadyAfter:
			f.Kind = FaultKind(name)
		case hasArg && FaultKind(name) == FaultReadyAfter:
			d, err := time.ParseDuration(arg)
			if err != nil || d < 0 {
				return Fault{}, fmt.Errorf("fault %q: the duration in ReadyAfter(...) must be like 30s", s)
			}
			f.Kind, f.After = FaultReadyAfter, d
		case hasArg && name == faultErrorRate:
			r, err := strconv.ParseFloat(arg, 64)
			if err != nil || !(r >= 0 && r <= 1) {
				return Fault{}, fmt.Errorf("fault %q: the ratio in ErrorRate(...) must be a number from 0 to 1, like ErrorRate(0.2) for a fifth of requests", s)
			}
			f.ErrorRate = r
		case hasArg && name == faultLatency:
			d, err := time.ParseDuration(arg)
			if err != nil || d <= 0 {
				return Fault{}, fmt.Errorf("fault %q: the duration in Latency(...) must be positive, like 300ms", s)
			}
			f.Latency = d
		default:
			return Fault{}, fmt.Errorf("unknown fault %q: use %s", s, faultForms)
		}
	}
	return f, nil
}

// isKind says whether name names a FaultKind (how a container runs).
func isKind(name string) bool {
	switch FaultKind(name) {
	case FaultNone, FaultImagePull, FaultCrashLoop, FaultNeverReady, FaultReadyAfter:
		return true
	}
	return false
}

// FaultRule applies Fault to every container whose image matches Image, a glob in which
// '*' matches any run of characters, '/' and ':' included ("*:broken", "registry.example/*").
type FaultRule struct {
	Image string `json:"image"`
	Fault string `json:"fault"`

	pattern *regexp.Regexp
	fault   Fault
}

// DefaultFaultRules make the image tags upstream's own tests use for images that never
// pull behave that way here.
var DefaultFaultRules = []FaultRule{
	{Image: "*:nonexistent", Fault: string(FaultImagePull)},
	{Image: "*:non-existent", Fault: string(FaultImagePull)},
	{Image: "*:404", Fault: string(FaultImagePull)},
}

// FaultRules is an ordered rule list; the first rule whose pattern matches wins.
type FaultRules struct {
	rules []FaultRule
}

// NewFaultRules compiles rules, in order, ahead of DefaultFaultRules.
func NewFaultRules(rules ...FaultRule) (*FaultRules, error) {
	all := append(append([]FaultRule{}, rules...), DefaultFaultRules...)
	for i := range all {
		r := &all[i]
		f, err := ParseFault(r.Fault)
		if err != nil {
			return nil, fmt.Errorf("fault rule for image %q: %w", r.Image, err)
		}
		if r.Image == "" {
			return nil, fmt.Errorf("fault rule %q: the image pattern is empty", r.Fault)
		}
		r.fault = f
		r.pattern = globToRegexp(r.Image)
	}
	return &FaultRules{rules: all}, nil
}

// ParseFaultRule reads the flag form "PATTERN=FAULT", e.g. "*:broken=CrashLoopBackOff".
func ParseFaultRule(s string) (FaultRule, error) {
	i := strings.LastIndex(s, "=")
	if i <= 0 {
		return FaultRule{}, fmt.Errorf("fault rule %q: want IMAGE-PATTERN=FAULT, e.g. '*:broken=CrashLoopBackOff'", s)
	}
	r := FaultRule{Image: s[:i], Fault: s[i+1:]}
	if _, err := ParseFault(r.Fault); err != nil {
		return FaultRule{}, err
	}
	return r, nil
}

// faultRulesFile is the YAML (or JSON) file form:
//
//	rules:
//	- image: "*:broken"
//	  fault: CrashLoopBackOff
type faultRulesFile struct {
	Rules []FaultRule `json:"rules"`
}

// LoadFaultRulesFile reads the rules of a YAML or JSON rules file.
func LoadFaultRulesFile(path string) ([]FaultRule, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("fault rules file: %w", err)
	}
	var f faultRulesFile
	if err := yaml.UnmarshalStrict(data, &f); err != nil {
		return nil, fmt.Errorf("fault rules file %s: %w", path, err)
	}
	return f.Rules, nil
}

// For returns the fault of container c of pod: the pod's AnnotationFault if set,
// otherwise the first matching rule; FaultNone when nothing applies.
func (fr *FaultRules) For(pod *corev1.Pod, image string) Fault {
	f, _ := fr.lookup(pod, image)
	return f
}

// lookup is For, also telling whether the fault was asked for (by the annotation or a
// rule) rather than the FaultNone of nothing applying: an asked-for None overrides the
// image catalogue, the default one does not.
func (fr *FaultRules) lookup(pod *corev1.Pod, image string) (Fault, bool) {
	if v, ok := pod.Annotations[AnnotationFault]; ok {
		if f, err := ParseFault(v); err == nil {
			return f, true
		}
	}
	if fr == nil {
		return Fault{Kind: FaultNone}, false
	}
	for _, r := range fr.rules {
		if r.pattern.MatchString(image) {
			return r.fault, true
		}
	}
	return Fault{Kind: FaultNone}, false
}

func globToRegexp(glob string) *regexp.Regexp {
	parts := strings.Split(glob, "*")
	for i, p := range parts {
		parts[i] = regexp.QuoteMeta(p)
	}
	return regexp.MustCompile("^" + strings.Join(parts, ".*") + "$")
}
