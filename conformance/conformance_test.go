// Package conformance runs upstream Kubernetes' own [sig-apps] [Conformance] specs for
// the workload kinds kroll's controllers serve against `kroll up`. The specs are
// upstream's test/e2e code from the k8s.io/kubernetes module kroll embeds, compiled into
// this test binary (only the framework and the apps suite, not the whole e2e.test), so
// they judge kroll by the suite the Kubernetes certification uses, not by cases this
// project wrote.
//
// This is the one place outside pkg/cluster that imports k8s.io/kubernetes: test code
// that never ships in the kroll binary.
package conformance

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/onsi/ginkgo/v2/types"

	"k8s.io/kubernetes/test/e2e"
	"k8s.io/kubernetes/test/e2e/framework"
	"k8s.io/kubernetes/test/e2e/framework/config"

	"github.com/kroll-dev/kroll/internal/cli/asbinary"

	// The specs: upstream's apps suite.
	_ "k8s.io/kubernetes/test/e2e/apps"

	// The framework's own hooks, as upstream's e2e.test links them.
	_ "k8s.io/kubernetes/test/e2e/framework/debug/init"
	_ "k8s.io/kubernetes/test/e2e/framework/metrics/init"
	_ "k8s.io/kubernetes/test/e2e/framework/node/init"
	_ "k8s.io/kubernetes/test/utils/format"
)

// kinds are the workload kinds whose Conformance specs run: those kroll's controllers
// serve, and ControllerRevision, which the set controllers keep.
var kinds = []string{"Deployment", "ReplicaSet", "ReplicationController", "StatefulSet", "Daemon set", "ControllerRevision"}

// excluded are the specs of those kinds that cannot run on kroll up's simulated nodes
// yet, each with the reason. The list shrinks as the node model grows; a spec on it
// that the nodes come to support should leave it.
var excluded = []struct{ spec, reason string }{}

func TestMain(m *testing.M) {
	asbinary.RunIfAsked()
	// Upstream's flags (its e2e.test registers the same), so that -ginkgo.* and the
	// framework's own flags can narrow or widen a run by hand.
	config.CopyFlags(config.Flags, flag.CommandLine)
	framework.RegisterCommonFlags(flag.CommandLine)
	framework.RegisterClusterFlags(flag.CommandLine)
	flag.Parse()
	os.Exit(m.Run())
}

// TestConformance starts `kroll up` with kroll's controllers and runs the specs, side
// by side in child processes as ginkgo's parallel mode would (runSharded). A failing
// spec is named with its failure and the file holding its whole log; the run's
// directory (kroll up's log, the children's reports and output) is kept when anything
// fails.
func TestConformance(t *testing.T) {
	if kubeconfig := os.Getenv(childEnv); kubeconfig != "" {
		runAsChild(t, kubeconfig)
		return
	}
	runDir, err := os.MkdirTemp("", "kroll-conformance-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if !t.Failed() {
			_ = os.RemoveAll(runDir)
		}
	})
	up := startUp(t, runDir)
	// A -ginkgo.focus given by hand (one spec, say) narrows the run, which then runs
	// in this process, one spec after another; the whole selection is then not
	// checked for coverage.
	whole := true
	flag.Visit(func(f *flag.Flag) { whole = whole && f.Name != "ginkgo.focus" })
	var specs []types.SpecReport
	if whole {
		ctx := context.Background()
		if deadline, ok := t.Deadline(); ok {
			var cancel context.CancelFunc
			ctx, cancel = context.WithDeadline(ctx, deadline)
			defer cancel()
		}
		specs = runSharded(t, ctx, runDir, up.kubeconfig)
		checkCoverage(t, specs)
	} else {
		specs = runHere(t, runDir, up.kubeconfig)
	}
	for i, s := range specs {
		if !s.State.Is(types.SpecStateFailureStates) {
			continue
		}
		log, err := writeSpecLog(runDir, i, s)
		if err != nil {
			t.Errorf("writing the log of %q: %v", s.FullText(), err)
		}
		t.Errorf("FAILED %s: %s\n    whole log: %s", s.FullText(), firstLine(s.Failure.Message), log)
	}
	if t.Failed() {
		t.Logf("kroll up's log: %s", up.logPath)
	}
}

// runHere runs the specs the command line's -ginkgo.focus selects in this process,
// against the cluster of kubeconfig, and returns their reports.
func runHere(t *testing.T, runDir, kubeconfig string) []types.SpecReport {
	t.Helper()
	report := filepath.Join(runDir, "report.json")
	for name, value := range map[string]string{"ginkgo.json-report": report, "ginkgo.no-color": "true"} {
		if err := flag.Set(name, value); err != nil {
			t.Fatalf("setting -%s: %v", name, err)
		}
	}
	framework.TestContext.KubeConfig = kubeconfig
	framework.TestContext.Provider = "skeleton"
	framework.TestContext.ReportDir = runDir
	framework.AfterReadingAllFlags(&framework.TestContext)

	e2e.RunE2ETests(t)

	specs, err := readReport(report)
	if err != nil {
		t.Fatalf("reading the specs' report %s: %v", report, err)
	}
	return specs
}

// checkCoverage fails the test unless every kind had Conformance specs that ran and
// passed, and every excluded spec still exists and was skipped: a run that selects
// nothing, or an exclusion that no longer names a spec (renamed upstream), would
// otherwise pass unnoticed.
func checkCoverage(t *testing.T, specs []types.SpecReport) {
	t.Helper()
	passed := map[string]int{}
	for _, s := range specs {
		if s.State != types.SpecStatePassed {
			continue
		}
		for _, k := range kinds {
			if strings.Contains(s.FullText(), "[sig-apps] "+k+" ") {
				passed[k]++
			}
		}
	}
	total := 0
	for _, k := range kinds {
		if passed[k] == 0 {
			t.Errorf("no %s Conformance spec ran and passed", k)
		}
		total += passed[k]
	}
	t.Logf("%d Conformance specs passed: %v", total, passed)
	for _, e := range excluded {
		found := false
		for _, s := range specs {
			found = found || (strings.Contains(s.FullText(), e.spec) && strings.Contains(s.FullText(), "[Conformance]") && s.State == types.SpecStateSkipped)
		}
		if !found {
			t.Errorf("the excluded spec %q is not among the skipped Conformance specs: drop it from the list or correct its name", e.spec)
		}
	}
}

// focus selects the sig-apps Conformance specs of kinds.
func focus() string {
	quoted := make([]string, len(kinds))
	for i, k := range kinds {
		quoted[i] = regexp.QuoteMeta(k)
	}
	return `\[sig-apps\] (` + strings.Join(quoted, "|") + `) .*\[Conformance\]`
}

// skip leaves out the excluded specs.
func skip() string {
	quoted := make([]string, len(excluded))
	for i, e := range excluded {
		quoted[i] = regexp.QuoteMeta(e.spec)
	}
	return strings.Join(quoted, "|")
}

// readReport reads the spec reports of ginkgo's JSON report.
func readReport(path string) ([]types.SpecReport, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var reports []types.Report
	if err := json.Unmarshal(data, &reports); err != nil {
		return nil, err
	}
	var specs []types.SpecReport
	for _, r := range reports {
		specs = append(specs, r.SpecReports...)
	}
	return specs, nil
}

// writeSpecLog writes a failed spec's failure and captured output to its own file in
// dir and returns the file's path.
func writeSpecLog(dir string, i int, s types.SpecReport) (string, error) {
	path := filepath.Join(dir, fmt.Sprintf("spec-%03d.log", i))
	body := fmt.Sprintf("%s\n%s\nat %s\n\n%s\n%s\n", s.FullText(), s.Failure.Message, s.Failure.Location, s.CapturedGinkgoWriterOutput, s.CapturedStdOutErr)
	return path, os.WriteFile(path, []byte(body), 0o644)
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
