package kubelet

import (
	"os"
	"path/filepath"
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
	}
	for _, tt := range tests {
		got, err := ParseFault(tt.in)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("ParseFault(%q) = %v, %v; want %v, error %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
	if s := (Fault{Kind: FaultReadyAfter, After: 30 * time.Second}).String(); s != "ReadyAfter(30s)" {
		t.Errorf("String() = %q", s)
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
