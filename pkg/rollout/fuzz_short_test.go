package rollout

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// The seed corpus runs with every `go test`; this runs the fuzzing engine itself on
// each target for a few seconds, so that `go test ./...` (and CI with it) explores
// beyond the seeds. A failure leaves its input in testdata/fuzz/<target>/ to commit as
// a regression case. Skipped with -short.
func TestFuzzTargetsShortRun(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	list, err := exec.CommandContext(ctx, "go", "test", "-list", "^Fuzz", ".").Output()
	if err != nil {
		t.Fatalf("go test -list: %v", err)
	}
	var targets []string
	for _, line := range strings.Fields(string(list)) {
		if strings.HasPrefix(line, "Fuzz") {
			targets = append(targets, line)
		}
	}
	if len(targets) < 5 {
		t.Fatalf("found fuzz targets %v, want the 5 of fuzz_test.go", targets)
	}
	for _, target := range targets {
		t.Run(target, func(t *testing.T) {
			// One worker: the machines this runs on have two cores and other packages'
			// tests run alongside.
			out, err := exec.CommandContext(ctx, "go", "test", "-run", "^$", "-fuzz", "^"+target+"$", "-fuzztime", "4s", "-parallel", "1", ".").CombinedOutput()
			switch {
			case err == nil:
			case engineDeadline(string(out)):
				// Go's fuzzing engine can report its own -fuzztime running out while it
				// minimizes a new interesting input as a failure, with no input that
				// fails: not a finding.
				t.Logf("fuzzing %s: the engine's deadline passed mid-minimization, no failing input:\n%s", target, out)
			default:
				t.Fatalf("fuzzing %s: %v\n%s", target, err, out)
			}
		})
	}
}

// engineDeadline tells the fuzzing engine's own deadline artifact from a finding: the
// run failed with "context deadline exceeded" and wrote no failing input (a real
// failure always says "Failing input written to testdata/fuzz/...").
func engineDeadline(out string) bool {
	return strings.Contains(out, "context deadline exceeded") && !strings.Contains(out, "Failing input written to")
}

func TestEngineDeadline(t *testing.T) {
	deadline := "fuzz: elapsed: 4s, execs: 35879 (9498/sec), new interesting: 1 (total: 32)\n--- FAIL: FuzzX (4.06s)\n    context deadline exceeded\nFAIL\n"
	finding := "--- FAIL: FuzzX (0.10s)\n    fuzz_test.go:12: bad\n    Failing input written to testdata/fuzz/FuzzX/3b1f\n    context deadline exceeded\nFAIL\n"
	if !engineDeadline(deadline) {
		t.Error("the engine's deadline artifact is taken for a finding")
	}
	if engineDeadline(finding) || engineDeadline("--- FAIL: FuzzX\n    fuzz_test.go:12: bad\nFAIL\n") {
		t.Error("a finding is taken for the engine's deadline")
	}
}
