package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/kroll-dev/kroll/pkg/analysis"
	"github.com/kroll-dev/kroll/pkg/cluster"
	"github.com/kroll-dev/kroll/pkg/cluster/clustertest"
	"github.com/kroll-dev/kroll/pkg/failure"
	"github.com/kroll-dev/kroll/pkg/staging"
)

// setAnalysisChecks is analysisChecks for a StatefulSet: the update revision's pods
// are those whose controller-revision-hash label (scraped as controller_revision_hash)
// is its name, which both {{revision}} and {{pod-template-hash}} give.
var setAnalysisChecks = strings.NewReplacer(
	`pod_template_hash="{{pod-template-hash}}",code`, `controller_revision_hash="{{revision}}",code`,
	`pod_template_hash=`, `controller_revision_hash=`).Replace(analysisChecks)

// analyzedStatefulSet is StatefulSet web of app:1, 5 replicas, in steps "20%,
// analyze, 100%" (partition 4 while web-4 is analysed, then 0) judged by web-checks,
// rolled back on failure; its pods are scraped on their port 8080.
const analyzedStatefulSet = `apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: web
  annotations:
    kroll.dev/rollout-steps: "20%, analyze, 100%"
    kroll.dev/on-failure: Rollback
    kroll.dev/analysis: web-checks
spec:
  serviceName: nginx
  replicas: 5
  selector:
    matchLabels:
      app: nginx
  template:
    metadata:
      labels:
        app: nginx
      annotations:
        prometheus.io/scrape: "true"
        prometheus.io/port: "8080"
    spec:
      containers:
      - name: app
        image: app:1
        ports:
        - containerPort: 8080
`

// When a 5-replica StatefulSet in steps "20%, analyze, 100%" with on-failure Rollback
// and the check "5xx ratio < 1 % over 30 s" rolls out app:2, then the analysis of
// web-4 fails it and rolls it back as the set's self-healing does (every pod on the
// old template, RolloutFailed reason AnalysisFailed, the partition back to 0); and
// app:3, which serves no errors, goes to every pod with nobody promoting, the
// partition held at 4 until the check's two measurements. Every observed state keeps
// the set's bounds and the pods below the partition on the current revision.
func testAnalysisStatefulSet(t *testing.T, c *cluster.Cluster) {
	s := newScene(t, c, "analysis-sts", cluster.WorkloadControllersKroll)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("at the failure:\n%s", s.kubectl(t, "get", "statefulsets,controllerrevisions,pods,events", "-o", "wide"))
			t.Logf("%s", s.kubectl(t, "get", "statefulsets", "-o", "yaml"))
		}
	})
	s.apply(t, setAnalysisChecks)
	s.apply(t, analyzedStatefulSet)
	s.waitSTS(t, "web-0=r1 web-1=r1 web-2=r1 web-3=r1 web-4=r1")
	w := clustertest.WatchStatefulSet(t, s.c.Client, s.ns, "web")
	pw := watchPartition(t, s)

	if !t.Run("app:2, a fifth of its requests 500, rolled back after the analysis", func(t *testing.T) {
		setRollbacks.Lock() // in-process controllers roll a StatefulSet back
		defer setRollbacks.Unlock()
		s.kubectl(t, "set", "image", "statefulset/web", "app=app:2")
		s.waitSetsCondition(t, "statefulset/web", staging.ConditionType,
			`^True/StepPaused: step 1/3: 20% \(1 of 5 updated\), paused until promoted; analysis running: check "error-ratio": 0 of 2 measurements taken`)
		s.waitSTS(t, "web-0=r1 web-1=r1 web-2=r1 web-3=r1 web-4=r2")
		reached := time.Now()
		eventually(t, 2*time.Minute, "rolled back", func(context.Context) (bool, string) {
			got := s.setsAnnotation(t, "statefulset/web", failure.RolledBackFromAnnotation)
			return got == "2", "rolled back from " + got + "; " + s.setsCondition(t, "statefulset/web", staging.ConditionType)
		})
		t.Logf("rolled back %s after step 1/3 was seen reached", time.Since(reached).Round(time.Second))
		s.waitSetsCondition(t, "statefulset/web", failure.ConditionRolloutFailed,
			`^True/AnalysisFailed: check "error-ratio" failed: 0\.(19|2)\d* is not < 0\.01 \(1 failed measurement, limit 0\); rolled back from revision 2 to 1$`)
		s.waitSTS(t, "web-0=r3 web-1=r3 web-2=r3 web-3=r3 web-4=r3")
		s.expectEvent(t, failure.EventRolledBack, `check "error-ratio" failed: 0.`)
		eventually(t, 30*time.Second, "partition 0 and no step record", func(context.Context) (bool, string) {
			set := s.statefulSet(t)
			_, recorded := set.Annotations[staging.StepAnnotation]
			return deref(set.Spec.UpdateStrategy.RollingUpdate.Partition) == 0 && !recorded, fmt.Sprint(set.Annotations)
		})
		// The analysis decided it: one measurement, failed, after the initialDelay.
		st, err := analysis.ParseState(s.statefulSet(t).Annotations[analysis.StatusAnnotation])
		if err != nil || len(st.Checks) != 1 || st.Step != 1 || st.Checks[0].Taken != 1 || st.Checks[0].Outcome != analysis.Failed ||
			!onlyRetriesBefore(st.Checks[0].Recent) || st.Checks[0].Recent[0].At.Sub(st.Started) < analysisDelay {
			t.Errorf("analysis status %+v (%v): want step 1 decided Failed by its first measurement, %s after it started", st, err, analysisDelay)
		}
	}) {
		return // app:3 would start from a state nobody checked
	}

	t.Run("app:3, no errors, to every pod with nobody promoting", func(t *testing.T) {
		s.kubectl(t, "set", "image", "statefulset/web", "app=app:3")
		s.waitSTS(t, "web-0=r3 web-1=r3 web-2=r3 web-3=r3 web-4=r4")
		reached := time.Now()
		eventually(t, 2*time.Minute, "web records step 2/3", func(context.Context) (bool, string) {
			got := s.setsAnnotation(t, "statefulset/web", staging.StepAnnotation)
			return got == "2/3" || got == "3/3", "step " + got + "; " + s.setsCondition(t, "statefulset/web", staging.ConditionType)
		})
		held := time.Since(reached)
		s.waitSTS(t, "web-0=r4 web-1=r4 web-2=r4 web-3=r4 web-4=r4")
		t.Logf("held %s at step 1/3", held.Round(time.Second))
		if held < analysisDelay {
			t.Errorf("the analyze step held %s, less than the check's initialDelay %s", held, analysisDelay)
		}
		s.expectEvent(t, analysis.EventSucceeded, `step 1/3: check "error-ratio" succeeded: 0 is < 0.01 (2 of 2 measurements successful)`)
		s.waitSetsCondition(t, "statefulset/web", failure.ConditionRolloutFailed, `^/: $`)
	})

	// 4 for each rollout's analysed step; 0 after the rollback and after the analysis.
	if got := pw.String(); got != "[0 4 0 4 0]" {
		t.Errorf("partition went %s, want [0 4 0 4 0]", got)
	}
	w.Verify(t, 10)
}

// dsAnalysisChecks is analysisChecks for a DaemonSet, as ConfigMap logs-checks: its
// pods' controller-revision-hash is the hash {{pod-template-hash}} gives
// ({{revision}} is the revision's name).
var dsAnalysisChecks = strings.NewReplacer(`name: web-checks`, `name: logs-checks`,
	`pod_template_hash=`, `controller_revision_hash=`).Replace(analysisChecks)

// analyzedDaemonSet is DaemonSet logs of app:1 on the cluster's 3 nodes, in steps
// "1, analyze, 100%" (kroll-node-2, the last by name, analysed while the two others
// are held) judged by logs-checks, rolled back on failure; scraped on port 8080.
const analyzedDaemonSet = `apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: logs
  annotations:
    kroll.dev/rollout-steps: "1, analyze, 100%"
    kroll.dev/on-failure: Rollback
    kroll.dev/analysis: logs-checks
spec:
  selector:
    matchLabels:
      app: logs
  template:
    metadata:
      labels:
        app: logs
      annotations:
        prometheus.io/scrape: "true"
        prometheus.io/port: "8080"
    spec:
      containers:
      - name: agent
        image: app:1
        ports:
        - containerPort: 8080
`

// The same on a DaemonSet over 3 nodes in steps "1, analyze, 100%": app:2 is rolled
// back after the analysis of kroll-node-2's pod, app:3 goes to every node with nobody
// promoting; the held nodes never run the image analysed, and every observed state
// keeps the DaemonSet's bounds.
func testAnalysisDaemonSet(t *testing.T, c *cluster.Cluster) {
	s := newScene(t, c, "analysis-ds", cluster.WorkloadControllersKroll)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("at the failure:\n%s", s.kubectl(t, "get", "daemonsets,controllerrevisions,pods,events", "-o", "wide"))
			t.Logf("%s", s.kubectl(t, "get", "daemonsets", "-o", "yaml"))
		}
	})
	s.apply(t, dsAnalysisChecks)
	s.apply(t, analyzedDaemonSet)
	s.waitDS(t, onNodes("app:1", 0, 1, 2))
	w := clustertest.WatchDaemonSet(t, s.c.Client, s.ns, "logs")

	if !t.Run("app:2 rolled back after the analysis", func(t *testing.T) {
		setRollbacks.Lock() // in-process controllers roll a DaemonSet back
		defer setRollbacks.Unlock()
		hw := watchHeldNodes(t, s, "app:2", 0, 1)
		s.kubectl(t, "set", "image", "daemonset/logs", "agent=app:2")
		s.waitSetsCondition(t, "daemonset/logs", staging.ConditionType,
			`^True/StepPaused: step 1/3: .*paused until promoted; analysis running: check "error-ratio": 0 of 2 measurements taken`)
		eventually(t, 2*time.Minute, "rolled back", func(context.Context) (bool, string) {
			got := s.setsAnnotation(t, "daemonset/logs", failure.RolledBackFromAnnotation)
			return got == "2", "rolled back from " + got + "; " + s.setsCondition(t, "daemonset/logs", staging.ConditionType)
		})
		s.waitSetsCondition(t, "daemonset/logs", failure.ConditionRolloutFailed,
			`^True/AnalysisFailed: check "error-ratio" failed: 0\.(19|2)\d* is not < 0\.01 \(1 failed measurement, limit 0\); rolled back from revision 2 to 1$`)
		s.waitDS(t, onNodes("app:1", 0, 1, 2))
		hw.verify(t, 1)
		s.expectEvent(t, failure.EventRolledBack, `check "error-ratio" failed: 0.`)
	}) {
		return
	}

	t.Run("app:3 to every node with nobody promoting", func(t *testing.T) {
		hw := watchHeldNodes(t, s, "app:3", 0, 1)
		s.kubectl(t, "set", "image", "daemonset/logs", "agent=app:3")
		s.waitSetsCondition(t, "daemonset/logs", staging.ConditionType, `^True/StepPaused: step 1/3: `)
		reached := time.Now()
		eventually(t, 2*time.Minute, "logs records step 2/3", func(context.Context) (bool, string) {
			got := s.setsAnnotation(t, "daemonset/logs", staging.StepAnnotation)
			return got == "2/3" || got == "3/3", "step " + got + "; " + s.setsCondition(t, "daemonset/logs", staging.ConditionType)
		})
		held := time.Since(reached)
		// The analysis promoted the step itself, on its last measurement: the held
		// nodes may run app:3 from then on, before this test sees the step move.
		st, err := analysis.ParseState(s.setsAnnotation(t, "daemonset/logs", analysis.StatusAnnotation))
		if err != nil || len(st.Checks) != 1 || len(st.Checks[0].Recent) == 0 {
			t.Fatalf("logs' analysis state %+v (%v): want one check with its measurements", st, err)
		}
		hw.verifyBefore(t, 1, st.Checks[0].Recent[len(st.Checks[0].Recent)-1].At)
		hw.holding.Store(false)
		s.waitDS(t, onNodes("app:3", 0, 1, 2))
		if held < analysisDelay-5*time.Second {
			t.Errorf("the analyze step held %s, less than the check's initialDelay %s", held, analysisDelay)
		}
		s.expectEvent(t, analysis.EventSucceeded, `step 1/3: check "error-ratio" succeeded: 0 is < 0.01 (2 of 2 measurements successful)`)
	})
	w.Verify(t, 3)
}
