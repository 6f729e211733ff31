package e2e

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kroll-dev/kroll/pkg/analysis"
	"github.com/kroll-dev/kroll/pkg/cluster"
	"github.com/kroll-dev/kroll/pkg/failure"
	"github.com/kroll-dev/kroll/pkg/staging"
)

// analyzedDeploymentOf is Deployment name of app:1 with replicas, 25 % surge and
// unavailability, in steps judged by ConfigMap checks, rolled back on failure; its
// pods are scraped on their port 8080.
func analyzedDeploymentOf(name string, replicas int, steps, checks string) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: %[1]s
  annotations:
    kroll.dev/rollout-steps: %[3]q
    kroll.dev/on-failure: Rollback
    kroll.dev/analysis: %[4]s
spec:
  replicas: %[2]d
  selector:
    matchLabels:
      app: %[1]s
  strategy:
    type: RollingUpdate
    rollingUpdate:
      maxSurge: 25%%
      maxUnavailable: 25%%
  template:
    metadata:
      labels:
        app: %[1]s
      annotations:
        prometheus.io/scrape: "true"
        prometheus.io/port: "8080"
    spec:
      containers:
      - name: app
        image: app:1
        ports:
        - containerPort: 8080
`, name, replicas, steps, checks)
}

// latencyChecks is ConfigMap latency-checks: the new revision's p99 request latency
// over 30 s below 250 ms, measured twice 10 s apart after analysisChecks' 60 s (the
// buckets' rate needs two scrapes of the step's pods, as the 5xx ratio does). Every
// request of app:slow takes 300 ms: all of them fall in the 0.25–0.5 s bucket, which
// histogram_quantile interpolates to 0.25 + 0.99 × 0.25 = 0.4975. An empty result
// is retried, as analysisChecks' is.
const latencyChecks = `apiVersion: v1
kind: ConfigMap
metadata:
  name: latency-checks
data:
  analysis.yaml: |
    checks:
    - name: p99-latency
      query: |
        histogram_quantile(0.99, sum by (le) (rate(http_request_duration_seconds_bucket{namespace="{{namespace}}",pod_template_hash="{{pod-template-hash}}"}[30s])))
      successCondition: "< 0.25"
      interval: 10s
      count: 2
      initialDelay: 60s
      empty: Error
`

// When a 4-replica Deployment in steps "25%, analyze, 100%" with on-failure Rollback
// and the check "p99 latency < 250 ms over 30 s" rolls out app:slow, whose every
// request takes 300 ms, then the analysis fails it and rolls it back, every pod
// Ready on app:1, RolloutFailed and the RolledBack event naming the check, its value
// (0.4975) and its limit. Every observed state keeps the Deployment's bounds and the
// step's 3 pods on app:1. It rolls out once after (closed, or 5 minutes).
func testAnalysisLatency(t *testing.T, c *cluster.Cluster, after <-chan struct{}) {
	s := newScene(t, c, "analysis-latency", cluster.WorkloadControllersKroll)
	s.apply(t, latencyChecks)
	s.apply(t, analyzedDeploymentOf("slow", 4, "25%, analyze, 100%", "latency-checks"))
	_, bounds := s.rolledOut(t, "slow")
	w := watchStaged(t, s, "slow", "app:1", map[string]int{"0/3": 3, "1/3": 3})

	select {
	case <-after:
	case <-time.After(5 * time.Minute):
	}
	deploymentRollbacks.Lock() // in-process controllers roll a Deployment back
	defer deploymentRollbacks.Unlock()
	w.hold(3, 0) // 25 % of 4: one pod of app:slow at most, until it goes back
	s.kubectl(t, "set", "image", "deployment/slow", "app=app:slow")
	s.waitStep(t, "slow", "1/3", "app:slow", 1, 3)
	eventually(t, 2*time.Minute, "rolled back", func(context.Context) (bool, string) {
		d := s.deployment(t, "slow")
		return d.Annotations[failure.RolledBackFromAnnotation] == "2", condition(d, staging.ConditionType)
	})
	s.kubectl(t, "rollout", "status", "deployment/slow", "--timeout=2m")
	s.expectAllReady(t, "slow", 4, "app:1")
	w.hold(0, 0)

	want := regexp.MustCompile(`^True/AnalysisFailed: check "p99-latency" failed: 0\.49\d* is not < 0\.25 \(1 failed measurement, limit 0\); rolled back from revision 2 to 1$`)
	if got := condition(s.deployment(t, "slow"), failure.ConditionRolloutFailed); !want.MatchString(got) {
		t.Errorf("RolloutFailed %q, want it to match %s", got, want)
	}
	s.expectEvent(t, failure.EventRolledBack, `check "p99-latency" failed: 0.49`)
	w.verify(t)
	bounds.Verify(t, 4)
}

// inconclusiveChecks is ConfigMap flaky-checks: the 5xx ratio of analysisChecks,
// with a failure condition too, "> 0.5". app:2's 0.2 meets neither: the measurement
// is inconclusive, and with the inconclusiveLimit left at 0 the first one decides.
var inconclusiveChecks = strings.NewReplacer("name: web-checks", "name: flaky-checks",
	`successCondition: "< 0.01"`, `successCondition: "< 0.01"`+"\n      failureCondition: \"> 0.5\"").Replace(analysisChecks)

// When a 4-replica Deployment in steps "25%, analyze, 100%" rolls out app:2, whose
// fifth of requests answered 500 is neither below the check's 1 % nor above its
// 50 %, then the analysis is inconclusive and the rollout pauses at its step: no
// rollback, the Staged condition and an AnalysisHeld event saying the check, its
// value and both conditions, and kroll rollout status a line that says so and how
// it ends; kroll rollout promote moves it on to the end. Every observed state keeps
// the Deployment's bounds and, until promoted, the step's 3 pods on app:1.
func testAnalysisInconclusive(t *testing.T, c *cluster.Cluster) {
	s := newScene(t, c, "analysis-inconclusive", cluster.WorkloadControllersKroll)
	s.apply(t, inconclusiveChecks)
	s.apply(t, analyzedDeploymentOf("flaky", 4, "25%, analyze, 100%", "flaky-checks"))
	_, bounds := s.rolledOut(t, "flaky")
	w := watchStaged(t, s, "flaky", "app:1", map[string]int{"0/3": 3, "1/3": 3})
	kroll := krollCLI{t: t, bin: krollBinary(t), kubeconfig: c.KubeconfigPath, ns: s.ns}

	w.hold(3, 0)
	s.kubectl(t, "set", "image", "deployment/flaky", "app=app:2")
	s.waitStep(t, "flaky", "1/3", "app:2", 1, 3)
	held := regexp.MustCompile(`^True/StepPaused: step 1/3: .*paused until promoted; analysis held: check "error-ratio" is inconclusive: 0\.(19|2)\d* is neither < 0\.01 nor > 0\.5 \(1 inconclusive measurement, limit 0\)$`)
	eventually(t, 2*time.Minute, "the Staged condition to say the analysis is inconclusive", func(context.Context) (bool, string) {
		got := condition(s.deployment(t, "flaky"), staging.ConditionType)
		return held.MatchString(got), got
	})
	// Paused there, not rolled back: the step stays, its pods too.
	s.holdStep(t, 15*time.Second, "flaky", "1/3", "app:2", 1, 3)
	d := s.deployment(t, "flaky")
	if got := condition(d, failure.ConditionRolloutFailed); got != "" {
		t.Errorf("RolloutFailed %q on an inconclusive analysis, want none", got)
	}
	if got := d.Annotations[failure.RolledBackFromAnnotation]; got != "" {
		t.Errorf("rolled back from %q on an inconclusive analysis", got)
	}
	s.expectEvent(t, analysis.EventHeld, `check "error-ratio" is inconclusive: 0.`)
	line := regexp.MustCompile(`(?m)^analysis "error-ratio": Inconclusive at \d\d:\d\d:\d\dZ: (empty, )*0\.(19|2)\d* \(want < 0\.01, failure > 0\.5\); held until promoted or aborted$`)
	if _, out, errOut := kroll.run("rollout", "status", "deployment/flaky", "--watch=false"); !line.MatchString(out) {
		t.Errorf("kroll rollout status: %q %q; want a line matching %s", out, errOut, line)
	}

	w.hold(0, 0)
	if code, out, errOut := kroll.run("rollout", "promote", "deployment/flaky"); code != 0 {
		t.Fatalf("kroll rollout promote: exit %d: %s %s", code, out, errOut)
	}
	s.kubectl(t, "rollout", "status", "deployment/flaky", "--timeout=2m")
	s.expectAllReady(t, "flaky", 4, "app:2")
	w.verify(t)
	bounds.Verify(t, 4)
}

// unreachableChecks is ConfigMap steady-checks: the 5xx ratio of every pod of the
// namespace over a minute, below 1 %, measured 4 times 5 s apart from the start,
// and 2 errors in a row reaching Prometheus are the limit. The namespace's pods run
// minutes before the rollout, so its first measurement has samples at once; and a
// minute spans the ~25 s Prometheus is away: two scrapes from before stay in it.
const unreachableChecks = `apiVersion: v1
kind: ConfigMap
metadata:
  name: steady-checks
data:
  analysis.yaml: |
    checks:
    - name: error-ratio
      query: |
        (sum(rate(http_requests_total{namespace="{{namespace}}",code=~"5.."}[1m])) or vector(0))
        / sum(rate(http_requests_total{namespace="{{namespace}}"}[1m]))
      successCondition: "< 0.01"
      interval: 5s
      count: 4
      consecutiveErrorLimit: 1
`

// prepareAnalysisUnreachable creates Deployment steady (2 replicas of app:1 in steps
// "50%, analyze, 100%", judged by steady-checks) so that Prometheus scrapes its pods
// while the other scenes run.
func prepareAnalysisUnreachable(t *testing.T, c *cluster.Cluster) *scene {
	s := newScene(t, c, "analysis-unreachable", cluster.WorkloadControllersKroll)
	s.apply(t, unreachableChecks)
	s.apply(t, analyzedDeploymentOf("steady", 2, "50%, analyze, 100%", "steady-checks"))
	return s
}

// When Deployment steady rolls out app:3 and its analysis has taken a measurement,
// and the cluster's Prometheus stops, then after 2 errors in a row (the limit 1
// passed; the count goes on at each retry, 10 s apart) the rollout pauses at its step with "Prometheus unreachable" in the Staged
// condition and kroll rollout status; once Prometheus is back on the same address
// the analysis resumes where it stood, takes its 4 measurements and promotes the
// step itself. Every observed state keeps the Deployment's bounds and, until the
// analysis succeeds, the step's pod on app:1.
func testAnalysisUnreachable(t *testing.T, c *cluster.Cluster, s *scene) {
	_, bounds := s.rolledOut(t, "steady")
	w := watchStaged(t, s, "steady", "app:1", map[string]int{"0/3": 1, "1/3": 1})
	kroll := krollCLI{t: t, bin: krollBinary(t), kubeconfig: c.KubeconfigPath, ns: s.ns}
	restarted := false
	t.Cleanup(func() {
		if !restarted {
			_ = c.StartPrometheus() // the cluster's end is not the place to find it gone
		}
	})

	w.hold(1, 0)
	s.kubectl(t, "set", "image", "deployment/steady", "app=app:3")
	s.waitStep(t, "steady", "1/3", "app:3", 1, 1)
	eventually(t, 30*time.Second, "a first measurement", func(context.Context) (bool, string) {
		got := condition(s.deployment(t, "steady"), staging.ConditionType)
		return regexp.MustCompile(`analysis running: check "error-ratio": [123] of 4 measurements taken`).MatchString(got), got
	})
	if err := c.StopPrometheus(); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	unreachable := regexp.MustCompile(`^True/StepPaused: step 1/3: .*paused until promoted; analysis held: check "error-ratio": Prometheus unreachable: Prometheus at http://127\.0\.0\.1:\d+/api/v1/query unreachable: .* \(\d+ errors in a row, limit 1\)$`)
	eventually(t, time.Minute, "the Staged condition to say Prometheus is unreachable", func(context.Context) (bool, string) {
		got := condition(s.deployment(t, "steady"), staging.ConditionType)
		return unreachable.MatchString(got), got
	})
	t.Logf("paused %s after Prometheus stopped", time.Since(stopped).Round(time.Second))
	line := regexp.MustCompile(`(?m)^analysis "error-ratio": Error at \d\d:\d\d:\d\dZ: .*error, error \(want < 0\.01\); Prometheus at \S+ unreachable: .*; held until Prometheus answers, or promoted or aborted$`)
	if _, out, errOut := kroll.run("rollout", "status", "deployment/steady", "--watch=false"); !line.MatchString(out) {
		t.Errorf("kroll rollout status: %q %q; want a line matching %s", out, errOut, line)
	}
	s.expectEvent(t, analysis.EventHeld, `check "error-ratio": Prometheus unreachable: `)
	if got := s.images(t, "steady"); got["app:3"] != 1 || got["app:1"] != 1 {
		t.Errorf("pods %v while Prometheus is away, want the step's: 1 on app:3, 1 on app:1", got)
	}

	if err := c.StartPrometheus(); err != nil {
		t.Fatal(err)
	}
	restarted = true
	back := time.Now()
	waitAnalyzed(t, s, "steady", "2/3")
	t.Logf("the analysis succeeded %s after Prometheus came back", time.Since(back).Round(time.Second))
	w.hold(0, 0)
	s.kubectl(t, "rollout", "status", "deployment/steady", "--timeout=1m")
	s.expectAllReady(t, "steady", 2, "app:3")
	// It resumed where it stood: the measurement from before the stop counts, the
	// errors do not.
	s.expectEvent(t, analysis.EventSucceeded, `check "error-ratio" succeeded: 0 is < 0.01 (4 of 4 measurements successful)`)
	st, err := analysis.ParseState(s.deployment(t, "steady").Annotations[analysis.StatusAnnotation])
	if err != nil || len(st.Checks) != 1 || st.Checks[0].Taken != 4 || st.Checks[0].Outcome != analysis.Successful {
		t.Errorf("analysis state %+v (%v): want error-ratio Successful with 4 measurements taken", st, err)
	}
	w.verify(t)
	bounds.Verify(t, 2)
}
