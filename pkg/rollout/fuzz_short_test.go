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
	if testing.Short() {
		t.Skip("fuzzing skipped with -short")
	}
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
			if err != nil {
				t.Fatalf("fuzzing %s: %v\n%s", target, err, out)
			}
		})
	}
}
