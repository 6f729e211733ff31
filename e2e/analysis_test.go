package e2e

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"runtime/pprof"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/kroll-dev/kroll/pkg/analysis"
	"github.com/kroll-dev/kroll/pkg/cluster"
	"github.com/kroll-dev/kroll/pkg/cluster/clustertest"
	"github.com/kroll-dev/kroll/pkg/failure"
	"github.com/kroll-dev/kroll/pkg/kubelet"
	"github.com/kroll-dev/kroll/pkg/rolloutview"
	"github.com/kroll-dev/kroll/pkg/staging"
)

// analysisChecks is ConfigMap web-checks: one check, the 5xx ratio of the new
// revision's pods over 30 s below 1 %, measured twice 10 s apart. Its first
// measurement waits 60 s: the pods of a step are found by Prometheus' discovery
// (batched every 5 s) once they run, scraped first within the 15 s interval and again
// 15 s later, and rate() over 30 s needs those two samples: 5 + 15 + 15 = 35 s at
// worst on a quiet machine. Before that the total is empty, and so is the result;
// once it is there, a revision without 500s has no 5xx series, hence `or vector(0)`.
// A loaded machine (pods running late, a scrape delayed or missed) has left the
// result empty even at 60 s, so an empty result is a measurement not taken (`empty:
// Error`), asked again 10 s later, up to 4 times, rather than Inconclusive, which
// would hold the step.
const analysisChecks = `apiVersion: v1
kind: ConfigMap
metadata:
  name: web-checks
data:
  analysis.yaml: |
    checks:
    - name: error-ratio
      query: |
        (sum(rate(http_requests_total{namespace="{{namespace}}",pod_template_hash="{{pod-template-hash}}",code=~"5.."}[30s])) or vector(0))
        / sum(rate(http_requests_total{namespace="{{namespace}}",pod_template_hash="{{pod-template-hash}}"}[30s]))
      successCondition: "< 0.01"
      interval: 10s
      count: 2
      initialDelay: 60s
      empty: Error
`

// analysisDelay is the check's initialDelay.
const analysisDelay = 60 * time.Second

// analyzedDeployment is Deployment web of app:1, 20 replicas, in steps judged by
// web-checks, rolled back on failure; its pods are scraped on their port 8080.
var analyzedDeployment = analyzedDeploymentOf("web", 20, "10%, analyze, 50%, analyze, 100%", "web-checks")

// brokenDeployment is Deployment broken, 4 replicas of app:1 in steps "25%, analyze,
// 100%", rolled back on failure, whose analysis names a ConfigMap that does not exist.
const brokenDeployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: broken
  annotations:
    kroll.dev/rollout-steps: "25%, analyze, 100%"
    kroll.dev/on-failure: Rollback
    kroll.dev/analysis: missing-checks
spec:
  replicas: 4
  selector:
    matchLabels:
      app: broken
  template:
    metadata:
      labels:
        app: broken
    spec:
      containers:
      - name: app
        image: app:1
`

// Given kroll's controllers asking the cluster's own Prometheus, and a kubelet whose
// app:2 answers a fifth of its requests 500 and whose app:slow takes 300 ms for each,
// analyze steps judge a Deployment's rollout (below), a StatefulSet's and a
// DaemonSet's (analysis_sets_test.go), a latency check and an inconclusive one
// (analysis_held_test.go), side by side on one cluster: most of each scenario's time
// is its checks' waiting. Then, alone, as it takes Prometheus away from every
// analysis: a rollout paused while Prometheus is stopped resumes when it is back.
func TestAnalysis(t *testing.T) {
	t.Parallel()
	rules, err := kubelet.NewFaultRules(kubelet.FaultRule{Image: "app:2", Fault: "ErrorRate(0.2)"}, kubelet.FaultRule{Image: "app:slow", Fault: "Latency(300ms)"})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	c := clustertest.Start(t, clustertest.WithPrometheus(t), clustertest.WithKubelet(func(k *kubelet.Config) { k.Faults = rules }), clustertest.WithDataDir(dir))
	unreachable := prepareAnalysisUnreachable(t, c) // scraped meanwhile
	// The latency scene rolls back after web's app:2 has: each holds
	// deploymentRollbacks some 50 s, and web's app:3 leaves it free for 2 minutes,
	// room for the latency scene's; in the other order web waited for it (+42 s).
	webRolledBack := make(chan struct{})
	t.Run("judged", func(t *testing.T) {
		for _, sc := range []struct {
			name string
			run  func(*testing.T, *cluster.Cluster)
		}{
			{"deployment", func(t *testing.T, c *cluster.Cluster) { testAnalysisDeployment(t, c, webRolledBack) }},
			{"statefulset", testAnalysisStatefulSet},
			{"daemonset", testAnalysisDaemonSet},
			{"latency", func(t *testing.T, c *cluster.Cluster) { testAnalysisLatency(t, c, webRolledBack) }},
			{"inconclusive", testAnalysisInconclusive},
		} {
			t.Run(sc.name, func(t *testing.T) {
				t.Parallel()
				// Said at the scene's end, while Prometheus still runs as it did.
				t.Cleanup(func() {
					if t.Failed() {
						t.Logf("at the failure:\n%s%s%s", scrapeTargets(c), discoveryLog(filepath.Join(dir, "kroll.log")), prometheusGoroutines())
					}
				})
				sc.run(t, c)
			})
		}
	})
	t.Run("prometheus stopped and back", func(t *testing.T) {
		testAnalysisUnreachable(t, c, unreachable)
	})
}

// When a 20-replica Deployment in steps "10%, analyze, 50%, analyze, 100%" with
// on-failure Rollback and the check "5xx ratio < 1 % over 30 s" rolls out app:2, then
// the first analysis fails it and rolls it back, every pod Ready on app:1,
// RolloutFailed naming the check, its value and its limit; and app:3, which serves no
// errors, goes to 100 % with nobody promoting, each analyze step held until its two
// measurements; kroll rollout status and kroll status -o json show the check, its
// value and decision. Beside them, Deployment broken, whose analysis names no
// ConfigMap, holds at its analyze step as a bare pause the whole time, with one
// InvalidAnalysis event and the Staged condition and kroll rollout status naming the
// problem; once the ConfigMap is created, its analysis runs and it rolls out. Every
// observed state keeps the Deployments' bounds and the step's pods on the old
// revision.
//
// rolledBack is closed once app:2's rollback is over (or did not happen).
func testAnalysisDeployment(t *testing.T, c *cluster.Cluster, rolledBack chan<- struct{}) {
	s := newScene(t, c, "analysis", cluster.WorkloadControllersKroll)
	s.apply(t, analysisChecks)
	s.apply(t, analyzedDeployment)
	s.apply(t, brokenDeployment)
	_, bounds := s.rolledOut(t, "web")
	_, brokenBounds := s.rolledOut(t, "broken")
	s.kubectl(t, "set", "image", "deployment/broken", "app=app:3") // held at 1/3 while web rolls
	w := watchStaged(t, s, "web", "app:1", tenPercentFloors)
	kroll := krollCLI{t: t, bin: krollBinary(t), kubeconfig: c.KubeconfigPath, ns: s.ns}

	if !t.Run("app:2, a fifth of its requests 500, rolled back after the first analysis", func(t *testing.T) {
		defer close(rolledBack)
		deploymentRollbacks.Lock() // in-process controllers roll a Deployment back
		defer deploymentRollbacks.Unlock()
		w.hold(18, 0) // 10 % of 20: 2 pods of app:2 at most, until it goes back
		s.kubectl(t, "set", "image", "deployment/web", "app=app:2")
		s.waitStep(t, "web", "1/5", "app:2", 2, 18)
		reached := time.Now()
		eventually(t, 30*time.Second, "the Staged condition to say the analysis runs", func(context.Context) (bool, string) {
			got := condition(s.deployment(t, "web"), staging.ConditionType)
			return strings.Contains(got, `analysis running: check "error-ratio": 0 of 2 measurements taken`), got
		})
		// kroll rollout status: the check's line under kubectl's while it holds the step.
		if _, out, errOut := kroll.run("rollout", "status", "deployment/web", "--watch=false"); !strings.Contains(out, "\n"+`analysis "error-ratio": Running, 0 of 2 measured (want < 0.01)`+"\n") {
			t.Errorf("kroll rollout status at the analyze step: %q %q, want the check's Running line", out, errOut)
		}
		eventually(t, 2*time.Minute, "rolled back", func(context.Context) (bool, string) {
			d := s.deployment(t, "web")
			return d.Annotations[failure.RolledBackFromAnnotation] == "2", condition(d, staging.ConditionType)
		})
		t.Logf("rolled back %s after step 1/5 was seen reached", time.Since(reached).Round(time.Second))
		s.kubectl(t, "rollout", "status", "deployment/web", "--timeout=2m")
		s.expectAllReady(t, "web", 20, "app:1")
		w.hold(0, 0)

		d := s.deployment(t, "web")
		want := regexp.MustCompile(`^True/AnalysisFailed: check "error-ratio" failed: 0\.(19|2)\d* is not < 0\.01 \(1 failed measurement, limit 0\); rolled back from revision 2 to 1$`)
		if got := condition(d, failure.ConditionRolloutFailed); !want.MatchString(got) {
			t.Errorf("RolloutFailed %q, want it to match %s", got, want)
		}
		s.expectEvent(t, failure.EventRolledBack, `check "error-ratio" failed: 0.`)
		// The first analysis decided it: one measurement, failed, taken after the
		// check's initialDelay (after empty results retried, if any).
		st, err := analysis.ParseState(d.Annotations[analysis.StatusAnnotation])
		if err != nil || len(st.Checks) != 1 || st.Step != 1 || st.Checks[0].Taken != 1 || st.Checks[0].Failed != 1 || st.Checks[0].Outcome != analysis.Failed ||
			!onlyRetriesBefore(st.Checks[0].Recent) || st.Checks[0].Recent[0].At.Sub(st.Started) < analysisDelay {
			t.Errorf("analysis status %q (%v): want step 1 decided Failed by its first measurement, %s after it started", d.Annotations[analysis.StatusAnnotation], err, analysisDelay)
		}
		if _, found := d.Annotations[staging.StepAnnotation]; found {
			t.Errorf("the step record stayed after the rollback: %v", d.Annotations)
		}
		expectAnalysisShown(t, kroll, st.Revision)
	}) {
		return // app:3 would start from a state nobody checked
	}

	t.Run("app:3, no errors, to 100 % with nobody promoting", func(t *testing.T) {
		s.kubectl(t, "set", "image", "deployment/web", "app=app:3")
		s.waitStep(t, "web", "1/5", "app:3", 2, 18)
		first := time.Now()
		waitAnalyzed(t, s, "web", "2/5")
		held1 := time.Since(first)
		s.waitStep(t, "web", "3/5", "app:3", 10, 10)
		second := time.Now()
		waitAnalyzed(t, s, "web", "4/5")
		held2 := time.Since(second)
		s.waitStep(t, "web", "5/5", "app:3", 20, 0)
		t.Logf("held %s at step 1/5 and %s at step 3/5", held1.Round(time.Second), held2.Round(time.Second))
		// Each step held for the check's 60 s and 10 s, less the moments the test
		// takes to see the step reached: at least the initialDelay.
		for _, held := range []time.Duration{held1, held2} {
			if held < analysisDelay {
				t.Errorf("an analyze step held %s, less than the check's initialDelay %s", held, analysisDelay)
			}
		}
		s.kubectl(t, "rollout", "status", "deployment/web", "--timeout=1m")
		s.expectAllReady(t, "web", 20, "app:3")
		if n := s.eventCount(t, "web", analysis.EventSucceeded); n != 2 {
			t.Errorf("%d AnalysisSucceeded events, want 2 (steps 1/5 and 3/5)", n)
		}
		s.expectEvent(t, analysis.EventSucceeded, `check "error-ratio" succeeded: 0 is < 0.01 (2 of 2 measurements successful)`)
		eventually(t, 30*time.Second, "RolloutFailed removed by the next revision's rollout", func(context.Context) (bool, string) {
			got := condition(s.deployment(t, "web"), failure.ConditionRolloutFailed)
			return got == "", got
		})
	})

	// The first revision's record, app:2's two steps (its record went with the
	// rollback), then each of app:3's once.
	if got, want := strings.Join(w.steps(), " "), "5/5 0/5 1/5 0/5 1/5 2/5 3/5 4/5 5/5"; got != want {
		t.Errorf("recorded steps %q, want %q", got, want)
	}
	w.verify(t)
	bounds.Verify(t, 20)

	// A broken analysis never promotes by itself: broken is still at 1/3, minutes on.
	s.waitStep(t, "broken", "1/3", "app:3", 1, 3)
	missing := "kroll.dev/analysis=missing-checks: ConfigMap analysis/missing-checks does not exist"
	if got := condition(s.deployment(t, "broken"), staging.ConditionType); !strings.Contains(got, "analysis not run: "+missing) {
		t.Errorf("broken's Staged condition %q, want it to say %q", got, missing)
	}
	if n := s.eventCount(t, "broken", analysis.EventInvalid); n != 1 {
		t.Errorf("%d InvalidAnalysis events for broken, want 1", n)
	}
	if _, out, _ := kroll.run("rollout", "status", "deployment/broken", "--watch=false"); !strings.Contains(out, "\nanalysis not run: "+missing+"; held until promoted or aborted\n") {
		t.Errorf("kroll rollout status deployment/broken: %q, want the problem's line", out)
	}
	// Fixed, it runs at once: the ConfigMap's creation wakes broken (nothing else
	// would: a step held by a problem is not requeued), its one measurement passes
	// and the rollout goes on to the end by itself.
	s.apply(t, fixedChecks)
	fixed := time.Now()
	waitAnalyzed(t, s, "broken", "2/3")
	t.Logf("broken's analysis passed %s after its ConfigMap was created", time.Since(fixed).Round(time.Second))
	s.kubectl(t, "rollout", "status", "deployment/broken", "--timeout=1m")
	s.expectAllReady(t, "broken", 4, "app:3")
	brokenBounds.Verify(t, 4)
}

// fixedChecks is ConfigMap missing-checks, which Deployment broken names: one check
// that passes at its first measurement, taken at once.
const fixedChecks = `apiVersion: v1
kind: ConfigMap
metadata:
  name: missing-checks
data:
  analysis.yaml: |
    checks:
    - name: always
      query: vector(0)
      successCondition: "< 1"
      count: 1
`

// expectAnalysisShown checks that kroll rollout status and kroll status -o json show
// the analysis that rolled Deployment web's revision (pod-template-hash) back: the
// check, the query as asked, the value measured (about 0.2), the condition, the
// decision with its time, and the rollback.
func expectAnalysisShown(t *testing.T, kroll krollCLI, revision string) {
	t.Helper()
	line := regexp.MustCompile(`(?m)^analysis "error-ratio": Failed at \d\d:\d\d:\d\dZ: (empty, )*0\.(19|2)\d* \(want < 0\.01\); rolled back$`)
	if code, out, errOut := kroll.run("rollout", "status", "deployment/web", "--watch=false"); code != 1 || !line.MatchString(out) || !strings.Contains(errOut, `rollout failed: check "error-ratio" failed`) {
		t.Errorf("kroll rollout status: exit %d, stdout %q, stderr %q; want exit 1, a line matching %s and the RolloutFailed line", code, out, errOut, line)
	}
	_, out, errOut := kroll.run("status", "-o", "json")
	var got struct{ Items []rolloutview.StatusItem }
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("kroll status -o json: %v: %s %s", err, out, errOut)
	}
	i := slices.IndexFunc(got.Items, func(it rolloutview.StatusItem) bool { return it.Name == "web" })
	if i < 0 || got.Items[i].Analysis == nil || len(got.Items[i].Analysis.Checks) != 1 {
		t.Fatalf("kroll status -o json: %s %s; want web with one check", out, errOut)
	}
	item, a := got.Items[i], got.Items[i].Analysis
	c := a.Checks[0]
	value := regexp.MustCompile(`^0\.(19|2)\d*$`)
	if item.Status != rolloutview.Reverted || a.Revision != revision || a.Outcome != analysis.Failed || a.Action != rolloutview.AnalysisRolledBack || !a.Current ||
		c.Name != "error-ratio" || !strings.Contains(c.Query, `pod_template_hash="`+revision+`"`) || strings.Contains(c.Query, "{{") ||
		c.SuccessCondition != "< 0.01" || c.Outcome != analysis.Failed || c.DecidedAt == nil || c.Count != 2 || c.Taken != 1 ||
		!onlyRetriesBefore(c.Measurements) || !value.MatchString(c.Measurements[len(c.Measurements)-1].Value) || !c.Measurements[len(c.Measurements)-1].At.Equal(*c.DecidedAt) {
		t.Errorf("kroll status -o json: %s; want web rolled-back, its analysis of %s Failed and RolledBack, error-ratio's query rendered for it, < 0.01, one measurement about 0.2 deciding it", out, revision)
	}
}

// onlyRetriesBefore says whether measurements end with one taken and hold only
// empty results before it (analysisChecks' `empty: Error`: retried): the first
// measurement alone, or after the retries a late scrape made of it.
func onlyRetriesBefore(measurements []analysis.Sample) bool {
	n := len(measurements)
	if n == 0 || measurements[n-1].Outcome == analysis.Error {
		return false
	}
	for _, m := range measurements[:n-1] {
		if m.Outcome != analysis.Error || m.Value != "empty" {
			return false
		}
	}
	return true
}

// waitAnalyzed waits until Deployment name records step, past an analyze step: its
// check measures after 60 s and again 10 s later, longer than waitRecord waits.
func waitAnalyzed(t *testing.T, s *scene, name, step string) {
	t.Helper()
	eventually(t, 2*time.Minute, name+" records step "+step, func(context.Context) (bool, string) {
		d := s.deployment(t, name)
		got := d.Annotations[staging.StepAnnotation]
		return got == step, fmt.Sprintf("step %q, Staged %q, %s %s", got, condition(d, staging.ConditionType), analysis.StatusAnnotation, d.Annotations[analysis.StatusAnnotation])
	})
}

// scrapeTargets says, for a failed analysis test, which pods Prometheus scrapes and
// how the last scrape of each went, beside every pod's address as the API server has
// it: an analysis held on an empty result is then explained (a pod never discovered,
// or a scrape failing, and what else holds its address).
func scrapeTargets(c *cluster.Cluster) string {
	var b strings.Builder
	q := url.Values{"query": {`up{job="kubernetes-pods"}`}}
	resp, err := http.Get(c.PrometheusURL + "/api/v1/query?" + q.Encode())
	if err != nil {
		fmt.Fprintf(&b, "Prometheus: %v\n", err)
	} else {
		var r struct {
			Data struct {
				Result []struct {
					Metric map[string]string `json:"metric"`
					Value  [2]any            `json:"value"`
				} `json:"result"`
			} `json:"data"`
		}
		err := json.NewDecoder(resp.Body).Decode(&r)
		resp.Body.Close()
		if err != nil {
			fmt.Fprintf(&b, "Prometheus: %v\n", err)
		}
		var lines []string
		for _, s := range r.Data.Result {
			m := s.Metric
			var rest []string
			for k, v := range m {
				if k != "namespace" && k != "pod" && k != "instance" && k != "__name__" && k != "job" {
					rest = append(rest, k+"="+v)
				}
			}
			slices.Sort(rest)
			lines = append(lines, fmt.Sprintf("%s/%s %s %s=%v {%s}", m["namespace"], m["pod"], m["instance"], cmp.Or(m["__name__"], "up"), s.Value[1], strings.Join(rest, ",")))
		}
		slices.Sort(lines)
		b.WriteString("scraped (up, and the target's labels):\n  " + strings.Join(lines, "\n  ") + "\n")
	}
	b.WriteString(failingTargets(c))
	pods, err := c.Client.CoreV1().Pods("").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		fmt.Fprintf(&b, "pods: %v\n", err)
		return b.String()
	}
	b.WriteString("pods:\n")
	for _, p := range pods.Items {
		deleting := ""
		if p.DeletionTimestamp != nil {
			deleting = " deleting"
		}
		fmt.Fprintf(&b, "  %s/%s %s %s %s%s %s\n", p.Namespace, p.Name, p.Spec.NodeName, p.Status.PodIP, p.Status.Phase, deleting, labels.FormatLabels(p.Labels))
	}
	return b.String()
}

// discoveryLog is what the cluster's log at path says of Prometheus (its components'
// warnings) and of the informers' watches (Prometheus' service discovery among
// them): the last 40 such lines.
func discoveryLog(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("log: %v\n", err)
	}
	var lines []string
	for l := range strings.Lines(string(data)) {
		if strings.Contains(l, "component=") || strings.Contains(l, "reflector") || strings.Contains(l, "discovery") {
			lines = append(lines, "  "+l)
		}
	}
	if len(lines) > 40 {
		lines = lines[len(lines)-40:]
	}
	return "Prometheus and watches in the cluster's log:\n" + strings.Join(lines, "")
}

// prometheusGoroutines are the stacks of the embedded Prometheus' managers (the
// cluster runs in the test's process): where its discovery or scrape manager waits
// when the scraped targets stop following the pods.
func prometheusGoroutines() string {
	var all strings.Builder
	_ = pprof.Lookup("goroutine").WriteTo(&all, 2)
	var b strings.Builder
	b.WriteString("Prometheus' goroutines:\n")
	for g := range strings.SplitSeq(all.String(), "\n\n") {
		// Not each target's scrape loop: the managers, the pools' syncs and the loops
		// being stopped, and discovery.
		if strings.Contains(g, "scrape.(*Manager)") || strings.Contains(g, "scrape.(*scrapePool)") || strings.Contains(g, "scrapeLoop).stop") ||
			strings.Contains(g, "prometheus/prometheus/discovery") {
			b.WriteString(g + "\n\n")
		}
	}
	return b.String()
}

// failingTargets are Prometheus' active targets whose last scrape failed, with its
// error (/api/v1/targets).
func failingTargets(c *cluster.Cluster) string {
	resp, err := http.Get(c.PrometheusURL + "/api/v1/targets?state=active")
	if err != nil {
		return fmt.Sprintf("targets: %v\n", err)
	}
	defer resp.Body.Close()
	var r struct {
		Data struct {
			ActiveTargets []struct {
				Labels             map[string]string `json:"labels"`
				ScrapeURL          string            `json:"scrapeUrl"`
				Health             string            `json:"health"`
				LastError          string            `json:"lastError"`
				LastScrape         string            `json:"lastScrape"`
				LastScrapeDuration float64           `json:"lastScrapeDuration"`
			} `json:"activeTargets"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return fmt.Sprintf("targets: %v\n", err)
	}
	var b strings.Builder
	b.WriteString("targets whose last scrape failed:\n")
	for _, t := range r.Data.ActiveTargets {
		if t.Health != "up" {
			fmt.Fprintf(&b, "  %s/%s %s %s at %s (%.3fs): %s\n", t.Labels["namespace"], t.Labels["pod"], t.ScrapeURL, t.Health, t.LastScrape, t.LastScrapeDuration, t.LastError)
		}
	}
	return b.String()
}
