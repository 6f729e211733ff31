package bench

import (
	"bufio"
	"context"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestInterruptedRunLeavesResultsOfRecord runs `kroll bench --readme README.md --out
// results` (the smallest scenario: the API's ceiling at scale 0.05, no controllers, three
// repetitions), interrupts it with SIGINT as soon as its first sample is measured, and
// checks that the README and the results directory are byte for byte as they were,
// that the sample measured is kept for --resume outside them, and that --resume then
// finishes the run from it and writes both.
func TestInterruptedRunLeavesResultsOfRecord(t *testing.T) {
	binary, err := os.Executable() // kroll (main_test.go)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	out, readme := filepath.Join(dir, "results"), filepath.Join(dir, "README.md")
	record := map[string]string{
		resultsJSON:     `{"scale": 1, "samples": []}` + "\n",
		resultsMarkdown: "the tables of record\n",
		resultsSVG:      "<svg>the chart of record</svg>\n",
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, text := range record {
		if err := os.WriteFile(filepath.Join(out, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	readmeText := "# Benchmarks\n" + "<!-- results: written by kroll bench -->\nthe results of record\n<!-- end of results -->" + "\nafter\n"
	if err := os.WriteFile(readme, []byte(readmeText), 0o644); err != nil {
		t.Fatal(err)
	}
	cache := filepath.Join(dir, "cache")
	env := append(os.Environ(), "XDG_CACHE_HOME="+cache)
	scenario := ceilingScenario(50).Name
	args := []string{"bench", "--scale", "0.05", "--reps", "3", "--only", scenario, "--out", out, "--readme", readme}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Env = env
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var progress strings.Builder
	lines := bufio.NewScanner(stdout)
	interrupted := false
	for lines.Scan() {
		line := lines.Text()
		progress.WriteString(line + "\n")
		if !interrupted && strings.Contains(line, "run 1/3: ") && strings.Contains(line, "API writes") {
			if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
				t.Fatal(err)
			}
			interrupted = true
		}
	}
	io.Copy(io.Discard, stdout)
	waitErr := cmd.Wait()
	t.Logf("kroll bench, interrupted:\n%s%s", progress.String(), stderr.String())
	if !interrupted {
		t.Fatalf("the run measured no first sample to interrupt after (%v)", waitErr)
	}
	if waitErr == nil {
		t.Errorf("the interrupted run exited 0")
	}
	if !strings.Contains(progress.String(), "incomplete: ") {
		t.Errorf("the interrupted run did not say where its samples are kept")
	}
	if got := readFiles(t, out); !maps.Equal(got, record) {
		t.Errorf("the interrupted run changed the results directory:\ngot  %q\nwant %q", got, record)
	}
	if got, _ := os.ReadFile(readme); string(got) != readmeText {
		t.Errorf("the interrupted run changed the README:\n%s", got)
	}
	partial := partialFileUnder(t, cache, out)
	kept, err := ReadResults(partial)
	if err != nil {
		t.Fatalf("the interrupted run kept no samples for --resume: %v", err)
	}
	if n := len(kept.Samples); n < 1 || n > 2 {
		t.Fatalf("%d samples kept, want the 1 or 2 measured before the interrupt", n)
	}

	resume := exec.CommandContext(ctx, binary, append(args, "--resume")...)
	resume.Env = env
	output, err := resume.CombinedOutput()
	t.Logf("kroll bench --resume:\n%s", output)
	if err != nil {
		t.Fatalf("--resume: %v", err)
	}
	if got := strings.Count(string(output), "run "); got != 3-len(kept.Samples) {
		t.Errorf("--resume ran %d runs, want the %d missing", got, 3-len(kept.Samples))
	}
	done, err := ReadResults(filepath.Join(out, resultsJSON))
	if err != nil {
		t.Fatal(err)
	}
	if len(done.Samples) != 3 || done.Samples[0].Started != kept.Samples[0].Started {
		t.Errorf("results.json after --resume: %d samples, the first started %v; want 3, the first the kept one of %v",
			len(done.Samples), done.Samples[0].Started, kept.Samples[0].Started)
	}
	if got, _ := os.ReadFile(readme); strings.Contains(string(got), "the results of record") || !strings.Contains(string(got), scenario) {
		t.Errorf("the README's results were not rewritten by the complete run:\n%s", got)
	}
	if _, err := os.Stat(partial); !os.IsNotExist(err) {
		t.Errorf("the kept samples outlived the complete run: %v", err)
	}
}

// readFiles is every file in dir by name, with its content.
func readFiles(t *testing.T, dir string) map[string]string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		files[e.Name()] = string(data)
	}
	return files
}

// partialFileUnder is PartialFileFor(out) with the cache directory at cache.
func partialFileUnder(t *testing.T, cache, out string) string {
	t.Setenv("XDG_CACHE_HOME", cache)
	return PartialFileFor(out)
}
