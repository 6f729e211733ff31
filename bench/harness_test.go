package bench

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestHarnessTinyRun runs `kroll bench` at scale 0.05 (50 replicas where the full run
// has 1,000), one repetition, so that the harness keeps working: every scenario must
// complete with every arm and the results, the chart and the README tables must be
// written. It asserts no timing.
func TestHarnessTinyRun(t *testing.T) {
	dir := t.TempDir()
	binary := filepath.Join(dir, "kroll")
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", binary, "github.com/kroll-dev/kroll/cmd/kroll").CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/kroll: %v\n%s", err, out)
	}
	readme := filepath.Join(dir, "README.md")
	if err := os.WriteFile(readme, []byte("# Benchmarks\n<!-- results: written by kroll bench -->\nold\n<!-- end of results -->\nafter\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "results")
	cmd := exec.CommandContext(ctx, binary, "bench", "--scale", "0.05", "--reps", "1", "--steady-window", "3s", "--out", out, "--readme", readme)
	progress, err := cmd.CombinedOutput()
	t.Logf("kroll bench:\n%s", progress)
	if err != nil {
		t.Fatalf("kroll bench: %v", err)
	}

	results, err := ReadResults(filepath.Join(out, resultsJSON))
	if err != nil {
		t.Fatal(err)
	}
	want := Scenarios(0.05, time.Second)
	if len(results.Scenarios) != len(want) {
		t.Errorf("results.json has %d scenarios, want %d", len(results.Scenarios), len(want))
	}
	for _, s := range want {
		for _, arm := range s.Arms {
			if !results.has(s.Name, arm.Name, 1) {
				t.Errorf("no sample of %s with %s", s.Name, arm.Name)
			}
		}
	}
	for _, s := range results.Samples {
		if s.Seconds <= 0 && s.ControllerMiB <= 0 {
			t.Errorf("sample %s/%s measured nothing: %+v", s.Scenario, s.Arm, s)
		}
		rollsDeployments := strings.HasPrefix(s.Scenario, "rolling-") || strings.HasPrefix(s.Scenario, "many-") || strings.HasPrefix(s.Scenario, "resize-")
		switch m := s.LeastAvailabilityMargin; {
		case rollsDeployments && m == nil:
			t.Errorf("sample %s/%s did not watch its Deployments' availability", s.Scenario, s.Arm)
		case rollsDeployments && s.Arm != upstreamArm.Name && *m < 0:
			t.Errorf("sample %s/%s: kroll reported %d fewer available replicas than the RollingUpdate allows", s.Scenario, s.Arm, -*m)
		}
	}
	for _, name := range []string{resultsMarkdown, resultsSVG} {
		data, err := os.ReadFile(filepath.Join(out, name))
		if err != nil || len(data) == 0 {
			t.Errorf("%s not written: %v", name, err)
		}
	}
	text, err := os.ReadFile(readme)
	if err != nil {
		t.Fatal(err)
	}
	if s := string(text); strings.Contains(s, "\nold\n") || !strings.Contains(s, "kroll / upstream") || !strings.HasSuffix(s, "<!-- end of results -->\nafter\n") {
		t.Errorf("README's results section not rewritten:\n%s", s)
	}
}
