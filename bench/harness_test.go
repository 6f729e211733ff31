package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// tinyRunProcesses is how many `kroll bench` processes share the tiny run's scenarios.
// Each scenario's runs mostly wait (on simulated pods, settles, the rollback window),
// and each process starts its own clusters, so their measurements stay apart. Two, not
// more: every run starts a cluster, and the end-to-end tests start theirs beside these
// on the same two cores; an API server bootstrapping among too many misses its
// post-start hooks' deadlines.
const tinyRunProcesses = 2

// TestHarnessTinyRun runs `kroll bench` at scale 0.05 (50 replicas where the full run
// has 1,000), one repetition, so that the harness keeps working: every scenario must
// complete with every arm and the results, the chart and the README tables must be
// written. It asserts no timing. The scenarios are dealt to tinyRunProcesses processes
// (--only) that run at once. The rollback scenario watches 20s instead of 150s: kroll's
// arm recovers in a few seconds, and upstream's, which never does, would take the whole
// window.
func TestHarnessTinyRun(t *testing.T) {
	dir := t.TempDir()
	// This test binary is kroll for the processes it starts (main_test.go's TestMain).
	binary, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()

	scenarios := Scenarios(0.05, time.Second, time.Second)
	shares := make([][]Scenario, tinyRunProcesses)
	for i, s := range scenarios {
		shares[i%len(shares)] = append(shares[i%len(shares)], s)
	}
	var wg sync.WaitGroup
	progress, errs := make([]string, len(shares)), make([]error, len(shares))
	for i, share := range shares {
		wg.Add(1)
		go func() {
			defer wg.Done()
			progress[i], errs[i] = tinyRun(ctx, binary, filepath.Join(dir, fmt.Sprint(i)), share)
		}()
	}
	wg.Wait()
	for i, share := range shares {
		t.Run(fmt.Sprintf("share %d", i+1), func(t *testing.T) {
			t.Logf("kroll bench:\n%s", progress[i])
			if errs[i] != nil {
				t.Fatal(errs[i])
			}
			checkTinyRun(t, filepath.Join(dir, fmt.Sprint(i)), share)
		})
	}
}

// tinyRun runs the scenarios in a `kroll bench` of their own, its results and README in
// dir, and returns the bench's progress.
func tinyRun(ctx context.Context, binary, dir string, scenarios []Scenario) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	readme := filepath.Join(dir, "README.md")
	if err := os.WriteFile(readme, []byte("# Benchmarks\n<!-- results: written by kroll bench -->\nold\n<!-- end of results -->\nafter\n"), 0o644); err != nil {
		return "", err
	}
	var names []string
	for _, s := range scenarios {
		names = append(names, s.Name)
	}
	cmd := exec.CommandContext(ctx, binary, "bench", "--scale", "0.05", "--reps", "1", "--steady-window", "3s", "--rollback-window", "20s",
		"--only", strings.Join(names, ","), "--out", filepath.Join(dir, "results"), "--readme", readme)
	progress, err := cmd.CombinedOutput()
	if err != nil {
		err = fmt.Errorf("kroll bench --only %s: %v", strings.Join(names, ","), err)
	}
	return string(progress), err
}

// checkTinyRun checks what a tiny run of scenarios wrote into dir.
func checkTinyRun(t *testing.T, dir string, want []Scenario) {
	out := filepath.Join(dir, "results")
	results, err := ReadResults(filepath.Join(out, resultsJSON))
	if err != nil {
		t.Fatal(err)
	}
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
		if missing := missingFigures(s); len(missing) > 0 {
			t.Errorf("sample %s/%s measured no %s: %+v", s.Scenario, s.Arm, strings.Join(missing, ", no "), s)
		}
		if strings.HasPrefix(s.Scenario, "rollback-") && s.Arm != upstreamArm.Name && s.FailingToReadySeconds <= 0 {
			t.Errorf("sample %s/%s: kroll did not roll back to every pod Ready within the window: %+v", s.Scenario, s.Arm, s)
		}
		if w := s.PodStatusWrites; w != nil && *w > 0 {
			t.Errorf("sample %s/%s: %.0f pod status writes at rest, where no probe result changes", s.Scenario, s.Arm, *w)
		}
		rollsDeployments := strings.HasPrefix(s.Scenario, "rolling-") || strings.HasPrefix(s.Scenario, "many-") || strings.HasPrefix(s.Scenario, "resize-") ||
			strings.HasPrefix(s.Scenario, "config-")
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
	text, err := os.ReadFile(filepath.Join(dir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if s := string(text); strings.Contains(s, "\nold\n") || !strings.HasSuffix(s, "<!-- end of results -->\nafter\n") {
		t.Errorf("README's results section not rewritten:\n%s", s)
	}
	for _, s := range want {
		if hasArm(s, krollArm.Name) && hasArm(s, upstreamArm.Name) && !strings.Contains(string(text), "kroll / upstream") {
			t.Errorf("README's results compare no kroll / upstream (%s has both arms):\n%s", s.Name, text)
			break
		}
	}
}

// missingFigures names the figures a sample should have measured and has not: every
// sample measures a time and a memory. The time is the change's (Seconds), or the
// window upstream's rollback arm watched without a recovery; a steady-state sample
// measures over its window, and its CPU at rest may round to zero ticks in the tiny
// run's 3 s, so it has no time figure to check. The memory is the controllers'
// process's, or, for the API arm that runs none, the harness's own.
func missingFigures(s Sample) []string {
	var missing []string
	steady := strings.HasPrefix(s.Scenario, "steady-")
	if !steady && s.Seconds <= 0 && s.NotRecoveredWithinSeconds <= 0 {
		missing = append(missing, "time")
	}
	if strings.HasSuffix(s.Scenario, "-probed") && s.PodStatusWrites == nil {
		missing = append(missing, "pod status writes")
	}
	if s.Arm == apiArm.Name {
		if s.ClusterMiB <= 0 {
			missing = append(missing, "memory")
		}
	} else if s.ControllerMiB <= 0 {
		missing = append(missing, "memory")
	}
	return missing
}

func TestMissingFigures(t *testing.T) {
	tests := []struct {
		name string
		s    Sample
		want []string
	}{
		{"a rollout with its time and memory", Sample{Scenario: "rolling-1000-qps20", Arm: "kroll", Seconds: 41, ControllerMiB: 60}, nil},
		{"a rollout that measured its time only", Sample{Scenario: "rolling-1000-qps20", Arm: "kroll", Seconds: 41}, []string{"memory"}},
		{"a rollout that measured its memory only", Sample{Scenario: "rolling-1000-qps20", Arm: "upstream", ControllerMiB: 60}, []string{"time"}},
		{"a rollout that measured nothing", Sample{Scenario: "many-200x10", Arm: "kroll"}, []string{"time", "memory"}},
		{"upstream's rollback arm: the window it watched is its time", Sample{Scenario: "rollback-1000", Arm: "upstream", NotRecoveredWithinSeconds: 150, ControllerMiB: 55}, nil},
		{"the API arm runs no controllers: the harness's memory", Sample{Scenario: "ceiling-1000", Arm: "api", Seconds: 12, ClusterMiB: 300}, nil},
		{"the API arm without the harness's memory", Sample{Scenario: "ceiling-1000", Arm: "api", Seconds: 12, ControllerMiB: 1}, []string{"memory"}},
		{"steady state: its window is its time", Sample{Scenario: "steady-10000", Arm: "kroll", ControllerMiB: 120}, nil},
		{"steady state without memory", Sample{Scenario: "steady-10000", Arm: "kroll", ControllerCores: 0.01}, []string{"memory"}},
		{"probed steady state: no status write counted is a figure", Sample{Scenario: "steady-10000-probed", Arm: "kroll", ControllerMiB: 120, PodStatusWrites: new(float64)}, nil},
		{"probed steady state that did not count status writes", Sample{Scenario: "steady-10000-probed", Arm: "kroll", ControllerMiB: 120}, []string{"pod status writes"}},
	}
	for _, tt := range tests {
		if got := missingFigures(tt.s); !slices.Equal(got, tt.want) {
			t.Errorf("%s: got %q, want %q", tt.name, got, tt.want)
		}
	}
}
