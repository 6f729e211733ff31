package conformance

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/onsi/ginkgo/v2/types"

	"k8s.io/kubernetes/test/e2e"
	"k8s.io/kubernetes/test/e2e/framework"

	"github.com/kroll-dev/kroll/internal/cli/asbinary"
)

// childEnv, set to a kubeconfig in the environment of this test binary, makes
// TestConformance a child: it runs the specs its own -ginkgo.* flags select against
// that cluster, instead of starting kroll up and spreading the specs over children.
const childEnv = "KROLL_CONFORMANCE_KUBECONFIG"

// parallelSpecs is how many specs run at once, each in its own child process, against
// the one kroll up. Most of a spec's time is its helpers' poll interval (10 s for the
// StatefulSet ones), not work: run one after another they took 450–530 s on 2 cores,
// of which the longest spec is some 80 s.
const parallelSpecs = 4

// childGrace is how long before the test's deadline the children are stopped, so
// that the test can still report what ran.
const childGrace = time.Minute

// runSharded runs the selected specs against the cluster of kubeconfig the way
// ginkgo's own parallel mode would: every spec that may run beside others in its own
// child process, parallelSpecs at a time, then the serial ones together in one child.
// It returns the reports of every spec that ran, of the suite's setup and teardown
// nodes in every child, and of the Conformance specs the selection skipped.
func runSharded(t *testing.T, ctx context.Context, runDir, kubeconfig string) []types.SpecReport {
	t.Helper()
	listArgs := []string{"-ginkgo.dry-run", "-ginkgo.focus=" + focus()}
	if len(excluded) > 0 { // an empty skip pattern would match, and skip, every spec
		listArgs = append(listArgs, "-ginkgo.skip="+skip())
	}
	listed, err := runChild(ctx, runDir, "list", kubeconfig, listArgs...)
	if err != nil {
		t.Fatalf("listing the specs: %v", err)
	}
	plan := planRun(listed)
	var reports []types.SpecReport
	for _, s := range listed { // the excluded specs, for checkCoverage
		if s.State == types.SpecStateSkipped && s.LeafNodeType == types.NodeTypeIt && strings.Contains(s.FullText(), "[Conformance]") {
			reports = append(reports, s)
		}
	}

	var mu sync.Mutex
	ran := func(name string, texts []string, specs []types.SpecReport, err error, took time.Duration) {
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			t.Errorf("%s: %v", name, err)
			return
		}
		t.Logf("%s: %d spec(s) in %s", name, len(texts), took.Round(100*time.Millisecond))
		for _, s := range specs {
			if s.State != types.SpecStateSkipped {
				reports = append(reports, s)
			}
		}
	}
	queue := make(chan int)
	var workers sync.WaitGroup
	for range min(parallelSpecs, len(plan.parallel)) {
		workers.Add(1)
		go func() {
			defer workers.Done()
			for i := range queue {
				name, began := fmt.Sprintf("parallel-%03d", i), time.Now()
				specs, err := runChild(ctx, runDir, name, kubeconfig, "-ginkgo.focus="+focusOn(plan.parallel[i]))
				ran(name, plan.parallel[i:i+1], specs, err, time.Since(began))
			}
		}()
	}
	for i := range plan.parallel {
		queue <- i
	}
	close(queue)
	workers.Wait()
	if len(plan.serial) > 0 {
		began := time.Now()
		specs, err := runChild(ctx, runDir, "serial", kubeconfig, "-ginkgo.focus="+focusOn(plan.serial...))
		ran("serial", plan.serial, specs, err, time.Since(began))
	}
	checkEachRanOnce(t, append(plan.parallel, plan.serial...), reports)
	return reports
}

// checkEachRanOnce fails t unless every planned spec has exactly one report that is
// not a skip: a child whose focus selected nothing, or more than its spec, would
// otherwise go unnoticed.
func checkEachRanOnce(t *testing.T, planned []string, reports []types.SpecReport) {
	t.Helper()
	count := map[string]int{}
	for _, s := range reports {
		if s.LeafNodeType == types.NodeTypeIt && s.State != types.SpecStateSkipped {
			count[s.FullText()]++
		}
	}
	for _, text := range planned {
		if count[text] != 1 {
			t.Errorf("the spec %q ran %d times, want once", text, count[text])
		}
		delete(count, text)
	}
	for text, n := range count {
		t.Errorf("the spec %q, which was not selected, ran %d times", text, n)
	}
}

// runChild runs this test binary as a child against kubeconfig with the given ginkgo
// flags, its output in runDir/name/output.log, and returns the spec reports of its
// JSON report runDir/name/report.json. A child that fails a spec is not an error
// here: its report says so.
func runChild(ctx context.Context, runDir, name, kubeconfig string, ginkgoArgs ...string) ([]types.SpecReport, error) {
	dir := filepath.Join(runDir, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	out, err := os.Create(filepath.Join(dir, "output.log"))
	if err != nil {
		return nil, err
	}
	defer out.Close()
	report := filepath.Join(dir, "report.json")
	args := append([]string{"-test.run=^TestConformance$", "-ginkgo.no-color", "-ginkgo.json-report=" + report}, ginkgoArgs...)
	if deadline, ok := ctx.Deadline(); ok {
		ctx, cancel := context.WithDeadline(ctx, deadline.Add(-childGrace))
		defer cancel()
		return runChildCmd(exec.CommandContext(ctx, exe, args...), out, kubeconfig, report)
	}
	return runChildCmd(exec.CommandContext(ctx, exe, args...), out, kubeconfig, report)
}

func runChildCmd(cmd *exec.Cmd, out *os.File, kubeconfig, report string) ([]types.SpecReport, error) {
	// Not kroll (asbinary), a child of this test.
	cmd.Env = append(os.Environ(), asbinary.EnvVar+"=", childEnv+"="+kubeconfig)
	cmd.Stdout, cmd.Stderr = out, out
	runErr := cmd.Run()
	specs, err := readReport(report)
	if err != nil {
		return nil, fmt.Errorf("no report from the child (%v, exit: %v); its output: %s", err, runErr, out.Name())
	}
	return specs, nil
}

// runAsChild is TestConformance in a child: the specs its flags select, against the
// cluster of kubeconfig, the framework's files beside its JSON report.
func runAsChild(t *testing.T, kubeconfig string) {
	framework.TestContext.KubeConfig = kubeconfig
	framework.TestContext.Provider = "skeleton"
	framework.TestContext.ReportDir = filepath.Dir(flag.Lookup("ginkgo.json-report").Value.String())
	framework.AfterReadingAllFlags(&framework.TestContext)
	e2e.RunE2ETests(t)
}
