package kubelet

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

func TestParseFault(t *testing.T) {
	tests := []struct {
		in      string
		want    Fault
		wantErr bool
	}{
		{"ImagePullBackOff", Fault{Kind: FaultImagePull}, false},
		{"CrashLoopBackOff", Fault{Kind: FaultCrashLoop}, false},
		{"NeverReady", Fault{Kind: FaultNeverReady}, false},
		{" None ", Fault{Kind: FaultNone}, false},
		{"ReadyAfter(30s)", Fault{Kind: FaultReadyAfter, After: 30 * time.Second}, false},
		{"ReadyAfter(1m30s)", Fault{Kind: FaultReadyAfter, After: 90 * time.Second}, false},
		{"ReadyAfter(soon)", Fault{}, true},
		{"ReadyAfter(-1s)", Fault{}, true},
		{"ReadyAfter(30s", Fault{}, true},
		{"Explode", Fault{}, true},
		{"ErrorRate(0.2)", Fault{ErrorRate: 0.2}, false},
		{"Latency(300ms)", Fault{Latency: 300 * time.Millisecond}, false},
		{"ErrorRate(0.05) + Latency(1s)", Fault{ErrorRate: 0.05, Latency: time.Second}, false},
		{"ReadyAfter(10s)+ErrorRate(1)", Fault{Kind: FaultReadyAfter, After: 10 * time.Second, ErrorRate: 1}, false},
		{"CrashLoopBackOff+Latency(5ms)", Fault{Kind: FaultCrashLoop, Latency: 5 * time.Millisecond}, false},
		{"ErrorRate(0)", Fault{}, false},
		{"ErrorRate(1.5)", Fault{}, true},
		{"ErrorRate(-0.1)", Fault{}, true},
		{"ErrorRate(20%)", Fault{}, true},
		{"ErrorRate(NaN)", Fault{}, true},
		{"ErrorRate", Fault{}, true},
		{"Latency(0s)", Fault{}, true},
		{"Latency(slow)", Fault{}, true},
		{"ErrorRate(0.1)+ErrorRate(0.2)", Fault{}, true},
		{"CrashLoopBackOff+NeverReady", Fault{}, true},
		{"None+ReadyAfter(1s)", Fault{}, true},
		{"ErrorRate(0.1)+", Fault{}, true},
		{"", Fault{}, true},
	}
	for _, tt := range tests {
		got, err := ParseFault(tt.in)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("ParseFault(%q) = %v, %v; want %v, error %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
	for _, f := range []Fault{
		{Kind: FaultReadyAfter, After: 30 * time.Second},
		{Kind: FaultCrashLoop},
		{ErrorRate: 0.2, Latency: 300 * time.Millisecond},
		{Kind: FaultNeverReady, ErrorRate: 0.05},
	} {
		if back, err := ParseFault(f.String()); err != nil || back != f {
			t.Errorf("ParseFault(%q) = %v, %v; want %v back", f.String(), back, err, f)
		}
	}
	if s := (Fault{Kind: FaultReadyAfter, After: 30 * time.Second}).String(); s != "ReadyAfter(30s)" {
		t.Errorf("String() = %q", s)
	}
	// Each refusal names the fault and the form it wants.
	for in, want := range map[string]string{
		"ErrorRate(1.5)":              `fault "ErrorRate(1.5)": the ratio in ErrorRate(...) must be a number from 0 to 1, like ErrorRate(0.2)`,
		"Latency(-1s)":                `fault "Latency(-1s)": the duration in Latency(...) must be positive, like 300ms`,
		"NeverReady+CrashLoopBackOff": `fault "NeverReady+CrashLoopBackOff": give at most one of`,
		"Latency(1s":                  `fault "Latency(1s": "Latency(1s" lacks its closing parenthesis`,
		"Slow(1s)":                    `unknown fault "Slow(1s)": use ImagePullBackOff, CrashLoopBackOff, NeverReady, ReadyAfter(30s) or None, and/or ErrorRate(0.2) and Latency(300ms)`,
	} {
		if _, err := ParseFault(in); err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("ParseFault(%q) error %v, want it to begin %q", in, err, want)
		}
	}
	// A serving fault does not decide the pull: its kind is empty, not an asked-for None.
	rules, _ := NewFaultRules(FaultRule{Image: "nginx:*", Fault: "ErrorRate(0.2)"})
	if f, asked := rules.lookup(&corev1.Pod{}, "nginx:9.9.9"); !asked || f.Kind != "" || f.ErrorRate != 0.2 {
		t.Errorf("lookup = %v, %v", f, asked)
	}
}

func TestFaultRules_firstMatchWinsThenDefaults(t *testing.T) {
	rules, err := NewFaultRules(
		FaultRule{Image: "registry.example/*", Fault: "CrashLoopBackOff"},
		FaultRule{Image: "*:slow", Fault: "ReadyAfter(5s)"},
		FaultRule{Image: "*:slow", Fault: "NeverReady"}, // shadowed by the rule above
		FaultRule{Image: "keep:404", Fault: "None"},     // overrides the default rule
	)
	if err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{}
	tests := []struct {
		image string
		want  Fault
	}{
		{"registry.example/team/app:v2", Fault{Kind: FaultCrashLoop}},
		{"nginx:slow", Fault{Kind: FaultReadyAfter, After: 5 * time.Second}},
		{"busybox:nonexistent", Fault{Kind: FaultImagePull}},
		{"gcr.io/x/busybox:non-existent", Fault{Kind: FaultImagePull}},
		{"nginx:404", Fault{Kind: FaultImagePull}},
		{"keep:404", Fault{Kind: FaultNone}},
		{"nginx:1.14.2", Fault{Kind: FaultNone}},
		{"nonexistent", Fault{Kind: FaultNone}}, // a name, not a tag
	}
	for _, tt := range tests {
		if got := rules.For(pod, tt.image); got != tt.want {
			t.Errorf("For(%q) = %v, want %v", tt.image, got, tt.want)
		}
	}
	pod.Annotations = map[string]string{AnnotationFault: "NeverReady"}
	if got := rules.For(pod, "nginx:1.14.2"); got.Kind != FaultNeverReady {
		t.Errorf("the pod annotation did not win: %v", got)
	}
}

func TestParseFaultRule(t *testing.T) {
	r, err := ParseFaultRule("*:broken=CrashLoopBackOff")
	if err != nil || r.Image != "*:broken" || r.Fault != "CrashLoopBackOff" {
		t.Errorf("got %+v, %v", r, err)
	}
	for _, bad := range []string{"CrashLoopBackOff", "=NeverReady", "*:x=Melt"} {
		if _, err := ParseFaultRule(bad); err == nil {
			t.Errorf("ParseFaultRule(%q) accepted", bad)
		}
	}
}

func TestLoadFaultRulesFile(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "rules.yaml")
	if err := os.WriteFile(good, []byte("rules:\n- image: \"*:broken\"\n  fault: CrashLoopBackOff\n- image: app:*\n  fault: ReadyAfter(2s)\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	rules, err := LoadFaultRulesFile(good)
	if err != nil || len(rules) != 2 || rules[1].Fault != "ReadyAfter(2s)" {
		t.Fatalf("got %+v, %v", rules, err)
	}
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("rules:\n- img: x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadFaultRulesFile(bad); err == nil {
		t.Error("a rule with an unknown field was accepted")
	}
	if _, err := LoadFaultRulesFile(filepath.Join(dir, "missing.yaml")); err == nil {
		t.Error("a missing file was accepted")
	}
}
