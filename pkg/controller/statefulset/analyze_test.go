package statefulset

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"github.com/kroll-dev/kroll/pkg/analysis"
	"github.com/kroll-dev/kroll/pkg/analysis/analysistest"
	"github.com/kroll-dev/kroll/pkg/controller"
	"github.com/kroll-dev/kroll/pkg/controller/controllertest"
	"github.com/kroll-dev/kroll/pkg/failure"
	"github.com/kroll-dev/kroll/pkg/staging"
)

// setErrorRatioCheck is "5xx ratio < 1 %" of the update revision's pods, measured
// twice, 10 s apart, from the start.
const setErrorRatioCheck = `checks:
- name: error-ratio
  query: sum(rate(http_requests_total{namespace="{{namespace}}",revision="{{revision}}",controller_revision_hash="{{pod-template-hash}}",code=~"5.."}[30s]))
  successCondition: "< 0.01"
  interval: 10s
  count: 2
  consecutiveErrorLimit: 1
`

// setAnalysis is a pass of the StatefulSet controller at an analyze step, against
// fakes: the set and its pods as the cache shows them, its writes and events.
type setAnalysis struct {
	t    *testing.T
	c    *Controller
	w    *controllertest.SetWriter[*appsv1.StatefulSet]
	rec  *record.FakeRecorder
	set  *appsv1.StatefulSet
	pods []*corev1.Pod
	revs revisions
}

// analyzingSet is healSet's 4 pods rolling from web-1 (app:1) to web-2 (app:crash)
// with "25%, analyze, 100%", past its first step (web-3 updated, partition 3): held
// at the analyze step since t0, its checks in ConfigMap web-checks (checks; none
// when empty), asked of prom; the controller's clock at t0.
func analyzingSet(t *testing.T, annotations map[string]string, checks string, prom analysis.Querier) (*setAnalysis, time.Time) {
	t.Helper()
	t0 := time.Date(2026, 12, 7, 16, 0, 0, 0, time.UTC)
	a := map[string]string{staging.StepsAnnotation: "25%, analyze, 100%", analysis.Annotation: "web-checks"}
	for k, v := range annotations {
		a[k] = v
	}
	staging.Record{Done: 1, Total: 3, Revision: "web-2", Since: t0}.Set(a)
	set, revs := healSet(3, a)
	pods := []*corev1.Pod{setPod(set, 0, "web-1", true), setPod(set, 1, "web-1", true), setPod(set, 2, "web-1", true), setPod(set, 3, "web-2", true)}
	cms := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	if checks != "" {
		if err := cms.Add(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "web-checks", Namespace: "default"}, Data: map[string]string{analysis.ConfigMapKey: checks}}); err != nil {
			t.Fatal(err)
		}
	}
	f := &setAnalysis{t: t, w: &controllertest.SetWriter[*appsv1.StatefulSet]{}, rec: record.NewFakeRecorder(20), set: set, pods: pods, revs: revs}
	f.c = &Controller{setWriter: f.w, recorder: f.rec, queue: controller.NewQueue("statefulset-test"), now: func() time.Time { return t0 }}
	f.c.SetAnalysis(corelisters.NewConfigMapLister(cms), prom)
	return f, t0
}

// pass runs the staging plan and the analyze step at now, over the set as last
// written (the cache caught up), and returns the plan as the step left it.
func (f *setAnalysis) pass(now time.Time) (setStagePlan, bool) {
	f.t.Helper()
	if n := len(f.w.Updates); n > 0 {
		f.set = f.w.Updates[n-1]
	}
	f.c.now = func() time.Time { return now }
	stage := planStaging(f.set, f.pods, f.revs, now)
	if stage.write != nil {
		f.t.Fatalf("held at the analyze step, yet the staging plan writes %v", stage.write.Annotations)
	}
	acted, err := f.c.analyzeStep(context.Background(), f.set, f.pods, f.revs, &stage)
	if err != nil {
		f.t.Fatal(err)
	}
	return stage, acted
}

func (f *setAnalysis) events() string { return strings.Join(controllertest.Drain(f.rec), "\n") }

func TestAnalyzeStatefulSet_goodMeasurementsMoveTheStepOn(t *testing.T) {
	prom := &analysistest.Prometheus{Answers: []analysistest.Answer{analysistest.Value(0), analysistest.Value(0.004)}}
	f, t0 := analyzingSet(t, nil, setErrorRatioCheck, prom)

	stage, acted := f.pass(t0)
	if !acted || len(f.w.Updates) != 1 || f.w.Updates[0].Annotations[analysis.StatusAnnotation] == "" {
		t.Fatalf("first measurement: acted %v, %d updates; want the analysis state written alone", acted, len(f.w.Updates))
	}
	if len(prom.Asked) != 1 || !strings.Contains(prom.Asked[0], `revision="web-2",controller_revision_hash="web-2"`) {
		t.Fatalf("asked %q: {{revision}} and {{pod-template-hash}} are the update revision's name", prom.Asked)
	}
	if got := f.w.Updates[0].Annotations[staging.StepAnnotation]; got != "1/3" || partitionOf(f.w.Updates[0]) != 3 {
		t.Errorf("step %s partition %d after one measurement, want held at 1/3, 3", got, partitionOf(f.w.Updates[0]))
	}
	if !strings.Contains(stage.decision.Message, `analysis running: check "error-ratio": 1 of 2 measurements taken`) {
		t.Errorf("Staged %q", stage.decision.Message)
	}

	if _, acted := f.pass(t0.Add(5 * time.Second)); acted || len(prom.Asked) != 1 {
		t.Errorf("before the interval: acted %v, asked %d times", acted, len(prom.Asked))
	}

	f.pass(t0.Add(10 * time.Second))
	moved := f.w.Updates[len(f.w.Updates)-1]
	if r := moved.Annotations[staging.StepAnnotation]; r != "2/3" || len(prom.Asked) != 2 {
		t.Fatalf("after the second good measurement: step %s, %d queries; want 2/3 after 2", r, len(prom.Asked))
	}
	if ev := f.events(); !strings.Contains(ev, `Normal AnalysisSucceeded step 1/3: check "error-ratio" succeeded: 0.004 is < 0.01 (2 of 2 measurements successful)`) {
		t.Errorf("events %q", ev)
	}
	// The next pass writes the next step's partition: every ordinal to the update.
	if next := planStaging(moved, f.pods, f.revs, t0.Add(10*time.Second)); next.write == nil || partitionOf(next.write) != 0 {
		t.Errorf("after the analysis the partition is not released: %+v", next.write)
	}
}

// TestAnalyzeStatefulSet_failed: a failed check takes on-failure's action as the
// set's self-healing does; without one the step holds and says why.
func TestAnalyzeStatefulSet_failed(t *testing.T) {
	for _, tt := range []struct {
		name        string
		annotations map[string]string
		// image, partition, rolledBackFrom, pausedOn: the set as the action wrote it.
		image          string
		partition      int32
		rolledBackFrom string
		pausedOn       string
		// failed is the RolloutFailed condition's message (empty: no action).
		failed, event, staged string
	}{
		{name: "ErrorRate(0.2) with Rollback: the current revision's template back, as the self-healing's",
			annotations: map[string]string{failure.OnFailureAnnotation: "Rollback"},
			image:       "app:1", partition: 3, rolledBackFrom: "2",
			failed: `check "error-ratio" failed: 0.2 is not < 0.01 (1 failed measurement, limit 0); rolled back from revision 2 to 1`,
			event:  `Warning RolledBack check "error-ratio" failed: 0.2 is not < 0.01`},
		{name: "ErrorRate(0.2) with Pause: held at the pause's partition, paused on revision 2",
			annotations: map[string]string{failure.OnFailureAnnotation: "Pause"},
			image:       "app:crash", partition: 3, pausedOn: "2",
			failed: `check "error-ratio" failed: 0.2 is not < 0.01 (1 failed measurement, limit 0); paused on revision 2`,
			event:  "Warning RolloutPaused"},
		{name: "ErrorRate(0.2) without on-failure: held, and says why",
			image: "app:crash", partition: 3,
			event:  `Warning AnalysisHeld check "error-ratio" failed: 0.2 is not < 0.01`,
			staged: `analysis failed, held (no kroll.dev/on-failure action): check "error-ratio" failed`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			prom := &analysistest.Prometheus{Answers: []analysistest.Answer{analysistest.Value(0.2)}}
			f, t0 := analyzingSet(t, tt.annotations, setErrorRatioCheck, prom)
			stage, _ := f.pass(t0)
			if len(f.w.Updates) == 0 {
				t.Fatalf("no write")
			}
			acted := f.w.Updates[0]
			if img := acted.Spec.Template.Spec.Containers[0].Image; img != tt.image || partitionOf(acted) != tt.partition ||
				acted.Annotations[failure.RolledBackFromAnnotation] != tt.rolledBackFrom || acted.Annotations[failure.PausedOnFailureAnnotation] != tt.pausedOn {
				t.Errorf("image %s partition %d rolled-back-from %q paused-on-failure %q, want %s %d %q %q", img, partitionOf(acted),
					acted.Annotations[failure.RolledBackFromAnnotation], acted.Annotations[failure.PausedOnFailureAnnotation], tt.image, tt.partition, tt.rolledBackFrom, tt.pausedOn)
			}
			switch {
			case tt.failed == "" && len(f.w.Statuses) > 0:
				t.Errorf("status written %+v, want none", f.w.Statuses[0].Status.Conditions)
			case tt.failed != "":
				if len(f.w.Statuses) != 1 {
					t.Fatalf("%d status writes, want the RolloutFailed condition's", len(f.w.Statuses))
				}
				c := controller.StatefulSetFailure.ConditionsOf(f.w.Statuses[0])
				if len(c) != 1 || c[0].Type != failure.ConditionRolloutFailed || c[0].Reason != analysis.ReasonFailed || c[0].Message != tt.failed {
					t.Errorf("conditions %+v, want RolloutFailed AnalysisFailed %q", c, tt.failed)
				}
			}
			if ev := f.events(); !strings.Contains(ev, tt.event) {
				t.Errorf("events %q, want %q", ev, tt.event)
			}
			if tt.staged != "" {
				if !strings.Contains(stage.decision.Message, tt.staged) {
					t.Errorf("Staged %q, want %q", stage.decision.Message, tt.staged)
				}
				stage, _ = f.pass(t0.Add(time.Minute))
				if len(prom.Asked) != 1 {
					t.Errorf("a decided analysis asked again: %q", prom.Asked)
				}
				if ev := f.events(); ev != "" {
					t.Errorf("announced again: %q", ev)
				}
				if !strings.Contains(stage.decision.Message, tt.staged) || f.set.Annotations[staging.StepAnnotation] != "1/3" {
					t.Errorf("second pass: step %s, Staged %q", f.set.Annotations[staging.StepAnnotation], stage.decision.Message)
				}
			}
		})
	}
}

// TestAnalyzeStatefulSet_problemHoldsAsABarePause: no ConfigMap (and no Prometheus
// at all) never promote: one InvalidAnalysis event, no write, the step held.
func TestAnalyzeStatefulSet_problemHoldsAsABarePause(t *testing.T) {
	prom := &analysistest.Prometheus{}
	f, t0 := analyzingSet(t, map[string]string{failure.OnFailureAnnotation: "Rollback"}, "", prom)
	for i := range 2 {
		stage, acted := f.pass(t0.Add(time.Duration(i) * time.Minute))
		// The problem is recorded once in kroll.dev/analysis-status, where the views
		// read it; Prometheus is never asked.
		if acted != (i == 0) || len(f.w.Updates) != 1 || len(prom.Asked) != 0 {
			t.Fatalf("pass %d: acted %v, %d updates, %d queries; want one write of the problem on the first pass, no query", i, acted, len(f.w.Updates), len(prom.Asked))
		}
		want := "paused until promoted; analysis not run: kroll.dev/analysis=web-checks: ConfigMap default/web-checks does not exist"
		if stage.decision.Phase != staging.StepPaused || !strings.Contains(stage.decision.Message, want) {
			t.Errorf("pass %d: %s %q, want StepPaused %q", i, stage.decision.Phase, stage.decision.Message, want)
		}
		wantEvents := ""
		if i == 0 {
			wantEvents = "Warning InvalidAnalysis kroll.dev/analysis=web-checks: ConfigMap default/web-checks does not exist"
		}
		if ev := f.events(); ev != wantEvents {
			t.Errorf("pass %d: events %q, want %q (once)", i, ev, wantEvents)
		}
	}

	f.c.analysis = nil // no Prometheus: a bare pause, said nothing of
	if stage, acted := f.pass(t0); acted || strings.Contains(stage.decision.Message, "analysis") || f.events() != "" {
		t.Errorf("without Prometheus: acted %v, Staged %q", acted, stage.decision.Message)
	}
}
