package kubelet

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
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

// Fault is what happens to one container.
type Fault struct {
	Kind FaultKind
	// After is the readiness delay of FaultReadyAfter; zero for the other kinds.
	After time.Duration
}

// String renders the fault the way ParseFault reads it: "ReadyAfter(30s)".
func (f Fault) String() string {
	if f.Kind == FaultReadyAfter {
		return fmt.Sprintf("%s(%s)", f.Kind, f.After)
	}
	return string(f.Kind)
}

// ParseFault reads "ImagePullBackOff", "CrashLoopBackOff", "NeverReady", "ReadyAfter(30s)" or "None".
func ParseFault(s string) (Fault, error) {
	s = strings.TrimSpace(s)
	switch FaultKind(s) {
	case FaultNone, FaultImagePull, FaultCrashLoop, FaultNeverReady:
		return Fault{Kind: FaultKind(s)}, nil
	}
	if rest, ok := strings.CutPrefix(s, string(FaultReadyAfter)+"("); ok && strings.HasSuffix(rest, ")") {
		d, err := time.ParseDuration(strings.TrimSuffix(rest, ")"))
		if err != nil || d < 0 {
			return Fault{}, fmt.Errorf("fault %q: the duration in ReadyAfter(...) must be like 30s", s)
		}
		return Fault{Kind: FaultReadyAfter, After: d}, nil
	}
	return Fault{}, fmt.Errorf("unknown fault %q: use ImagePullBackOff, CrashLoopBackOff, NeverReady, ReadyAfter(30s) or None", s)
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
