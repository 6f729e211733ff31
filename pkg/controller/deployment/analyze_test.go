package deployment

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/kroll-dev/kroll/pkg/analysis"
	"github.com/kroll-dev/kroll/pkg/analysis/analysistest"
	"github.com/kroll-dev/kroll/pkg/controller"
	"github.com/kroll-dev/kroll/pkg/failure"
	"github.com/kroll-dev/kroll/pkg/history"
	"github.com/kroll-dev/kroll/pkg/rollout"
	"github.com/kroll-dev/kroll/pkg/staging"
)

// errorRatioCheck is "5xx ratio < 1 %", measured twice, 10 s apart, from the start.
const errorRatioCheck = `checks:
- name: error-ratio
  query: sum(rate(http_requests_total{namespace="{{namespace}}",pod=~"{{workload}}-{{pod-template-hash}}-.*",code=~"5.."}[30s]))
  successCondition: "< 0.01"
  interval: 10s
  count: 2
  consecutiveErrorLimit: 1
`

// delays records the delays a pass asks to be requeued after.
type delays struct {
	workqueue.TypedRateLimitingInterface[string]
	after []time.Duration
}

func (q *delays) AddAfter(_ string, d time.Duration) { q.after = append(q.after, d) }

func ratio(v float64) analysistest.Answer { return analysistest.Value(v) }

var unreachable = analysistest.Failing("Prometheus at http://127.0.0.1:9090/api/v1/query unreachable: connection refused")

// analyzing is a 20-replica Deployment rolling app:2 out with "10%, analyze, 100%",
// past its first step (2 new pods available, 18 old): held at the analyze step
// since t0, its checks in ConfigMap web-checks (checks; none when empty), asked of
// prom; the controller's clock at t0.
func analyzing(t *testing.T, annotations map[string]string, checks string, prom analysis.Querier) (*fixture, time.Time) {
	t.Helper()
	t0 := time.Date(2026, 12, 7, 16, 0, 0, 0, time.UTC)
	a := map[string]string{staging.StepsAnnotation: "10%, analyze, 100%", analysis.Annotation: "web-checks"}
	for k, v := range annotations {
		a[k] = v
	}
	d, old := staged(a)
	old.Spec.Replicas, old.Status.Replicas, old.Status.AvailableReplicas = ptr(int32(18)), 18, 18
	newRS := settled(d, replicaSetOf(d, "app:2", 2, 2, 2, time.Minute))
	staging.Record{Done: 1, Total: 3, Revision: history.TemplateHash(&d.Spec.Template, nil), Since: t0}.Set(d.Annotations)
	newRS = settled(d, newRS)
	f := newFixture(t, d, old, newRS)
	cms := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	if checks != "" {
		if err := cms.Add(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "web-checks", Namespace: "default"}, Data: map[string]string{analysis.ConfigMapKey: checks}}); err != nil {
			t.Fatal(err)
		}
	}
	f.c.SetAnalysis(corelisters.NewConfigMapLister(cms), prom)
	f.c.now = func() time.Time { return t0 }
	return f, t0
}

// resync shows the controller the Deployment as the API holds it now (its own
// writes), then runs a pass at now.
func (f *fixture) resync(now time.Time) *appsv1.Deployment {
	f.t.Helper()
	d, err := f.client.AppsV1().Deployments("default").Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	if err := f.factory.Apps().V1().Deployments().Informer().GetIndexer().Update(d); err != nil {
		f.t.Fatal(err)
	}
	f.c.now = func() time.Time { return now }
	f.client.ClearActions()
	f.sync()
	got, _ := f.client.AppsV1().Deployments("default").Get(context.Background(), "web", metav1.GetOptions{})
	return got
}

func stateOf(t *testing.T, d *appsv1.Deployment) analysis.State {
	t.Helper()
	st, err := analysis.ParseState(d.Annotations[analysis.StatusAnnotation])
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func stagedMessage(d *appsv1.Deployment) string {
	if c := rollout.Condition(&d.Status, staging.ConditionType); c != nil {
		return c.Reason + ": " + c.Message
	}
	return ""
}

// TestAnalyze_goodMeasurementsPromote: two good measurements 10 s apart move the
// step on by themselves; between them the step holds and says what was measured.
func TestAnalyze_goodMeasurementsPromote(t *testing.T) {
	prom := &analysistest.Prometheus{Answers: []analysistest.Answer{ratio(0), ratio(0.004)}}
	f, t0 := analyzing(t, nil, errorRatioCheck, prom)

	d := f.resync(t0)
	// (The status write before it is the Progressing condition's FoundNewReplicaSet:
	// the fixture's Deployment shows none yet.)
	if got := strings.Join(f.writes(), "; "); got != "update deployments/status web; update deployments web" {
		t.Fatalf("first pass writes %q, want the analysis state alone after the status", got)
	}
	if len(prom.Asked) != 1 || !strings.Contains(prom.Asked[0], `pod=~"web-`+d.Annotations[staging.StepRevisionAnnotation]+`-.*"`) {
		t.Fatalf("asked %q", prom.Asked)
	}
	st := stateOf(t, d)
	if len(st.Checks) != 1 || st.Checks[0].Taken != 1 || st.Step != 1 || len(st.Checks[0].Recent) != 1 || st.Checks[0].Recent[0].Value != "0" {
		t.Errorf("state %s", d.Annotations[analysis.StatusAnnotation])
	}

	q := &delays{TypedRateLimitingInterface: f.c.queue.TypedRateLimitingInterface}
	f.c.queue = controller.Queue{TypedRateLimitingInterface: q}
	d = f.resync(t0.Add(5 * time.Second))
	if !slices.Contains(q.after, 5*time.Second+100*time.Millisecond) {
		t.Errorf("requeued after %v, want 5.1s: the next measurement is due at 10s", q.after)
	}
	if len(prom.Asked) != 1 {
		t.Errorf("asked again before the interval: %q", prom.Asked)
	}
	if m := stagedMessage(d); !strings.Contains(m, `StepPaused: step 1/3: 10% (2 of 20 updated), paused until promoted; analysis running: check "error-ratio": 1 of 2 measurements taken`) {
		t.Errorf("Staged %q", m)
	}
	for _, w := range f.writes() {
		if strings.HasPrefix(w, "update replicasets") {
			t.Errorf("held at the analysis, yet %s", w)
		}
	}

	d = f.resync(t0.Add(10 * time.Second))
	if r := d.Annotations[staging.StepAnnotation]; r != "2/3" || len(prom.Asked) != 2 {
		t.Errorf("after the second good measurement: step %s, %d queries; want 2/3 after 2", r, len(prom.Asked))
	}
	if ev := f.events(); !strings.Contains(ev, `Normal AnalysisSucceeded step 1/3: check "error-ratio" succeeded: 0.004 is < 0.01 (2 of 2 measurements successful)`) {
		t.Errorf("events %q", ev)
	}
}

// TestAnalyze_verdicts: a failed check takes on-failure's action; without one, and
// for an inconclusive check or Prometheus unreachable, the step holds and says why;
// a broken analysis holds as a bare pause.
func TestAnalyze_verdicts(t *testing.T) {
	tests := []struct {
		name        string
		annotations map[string]string
		checks      string
		answers     []analysistest.Answer
		// image is the template after the pass; paused its spec.paused.
		image  string
		paused bool
		// failed is the RolloutFailed condition's message (empty: none).
		failed string
		event  string
		// staged is part of the Staged condition after a second pass (empty: not checked).
		staged string
		// problem is part of kroll.dev/analysis-status's problem (empty: none).
		problem string
	}{
		{name: "ErrorRate(0.2) with Rollback: back to revision 1", annotations: map[string]string{failure.OnFailureAnnotation: "Rollback"}, checks: errorRatioCheck,
			answers: []analysistest.Answer{ratio(0.2)}, image: "app:1",
			failed: `check "error-ratio" failed: 0.2 is not < 0.01 (1 failed measurement, limit 0); rolled back from revision 2 to 1`,
			event:  `Warning RolledBack check "error-ratio" failed: 0.2 is not < 0.01`},
		{name: "ErrorRate(0.2) with Pause: paused on revision 2", annotations: map[string]string{failure.OnFailureAnnotation: "Pause"}, checks: errorRatioCheck,
			answers: []analysistest.Answer{ratio(0.2)}, image: "app:2", paused: true,
			failed: `check "error-ratio" failed: 0.2 is not < 0.01 (1 failed measurement, limit 0); paused on revision 2`,
			event:  "Warning RolloutPaused"},
		{name: "ErrorRate(0.2) without on-failure: held", checks: errorRatioCheck,
			answers: []analysistest.Answer{ratio(0.2)}, image: "app:2",
			event:  `Warning AnalysisHeld check "error-ratio" failed: 0.2 is not < 0.01`,
			staged: `analysis failed, held (no kroll.dev/on-failure action): check "error-ratio" failed`},
		{name: "no ConfigMap: a bare pause", annotations: map[string]string{failure.OnFailureAnnotation: "Rollback"}, image: "app:2",
			event:   "Warning InvalidAnalysis kroll.dev/analysis=web-checks: ConfigMap default/web-checks does not exist",
			staged:  "paused until promoted; analysis not run: kroll.dev/analysis=web-checks: ConfigMap default/web-checks does not exist",
			problem: "ConfigMap default/web-checks does not exist"},
		{name: "a query Prometheus refuses: a bare pause", checks: errorRatioCheck, image: "app:2",
			answers: []analysistest.Answer{analysistest.Refused("parse error")},
			event:   `Warning InvalidAnalysis check "error-ratio": Prometheus at http://127.0.0.1:9090/api/v1/query refused the query "q": parse error`,
			staged:  `analysis not run: check "error-ratio": Prometheus at`, problem: `check "error-ratio": Prometheus at`},
		{name: "a query whose brackets do not close: a bare pause, Prometheus not asked", annotations: map[string]string{failure.OnFailureAnnotation: "Rollback"}, image: "app:2",
			checks: strings.Replace(errorRatioCheck, "[30s]))", "[30s])", 1),
			event:  `Warning InvalidAnalysis ConfigMap default/web-checks: check "error-ratio": the query does not parse: unclosed '('`,
			staged: `analysis not run: ConfigMap default/web-checks: check "error-ratio": the query does not parse`, problem: `check "error-ratio": the query does not parse`},
		{name: "a template argument without a value: a bare pause, Prometheus not asked", annotations: map[string]string{failure.OnFailureAnnotation: "Rollback"}, image: "app:2",
			checks: strings.Replace(errorRatioCheck, "[30s]", "[{{args.window}}]", 1),
			event:  `Warning InvalidAnalysis check "error-ratio": the query's {{args.window}} has no value`,
			staged: `analysis not run: check "error-ratio": the query's {{args.window}} has no value`, problem: `check "error-ratio": the query's {{args.window}} has no value`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prom := &analysistest.Prometheus{Answers: tt.answers}
			f, t0 := analyzing(t, tt.annotations, tt.checks, prom)
			var d *appsv1.Deployment
			for i := range max(1, len(tt.answers)) {
				d = f.resync(t0.Add(time.Duration(i) * 10 * time.Second))
			}
			if len(prom.Answers) != 0 {
				t.Errorf("%d answers not asked for", len(prom.Answers))
			}
			if img := d.Spec.Template.Spec.Containers[0].Image; img != tt.image || d.Spec.Paused != tt.paused {
				t.Errorf("image %s paused %v, want %s %v", img, d.Spec.Paused, tt.image, tt.paused)
			}
			c := rollout.Condition(&d.Status, failure.ConditionRolloutFailed)
			switch {
			case tt.failed == "" && c != nil:
				t.Errorf("RolloutFailed %+v, want none", c)
			case tt.failed != "" && (c == nil || c.Reason != analysis.ReasonFailed || c.Message != tt.failed):
				t.Errorf("RolloutFailed %+v, want AnalysisFailed %q", c, tt.failed)
			}
			if ev := f.events(); !strings.Contains(ev, tt.event) {
				t.Errorf("events %q, want %q", ev, tt.event)
			}
			if st := stateOf(t, d); !strings.Contains(st.Problem, tt.problem) || (tt.problem == "") != (st.Problem == "") {
				t.Errorf("%s problem %q, want %q", analysis.StatusAnnotation, st.Problem, tt.problem)
			}
			if tt.staged != "" {
				asked := len(prom.Asked)
				d = f.resync(t0.Add(time.Minute))
				if m := stagedMessage(d); !strings.Contains(m, tt.staged) {
					t.Errorf("Staged %q, want %q", m, tt.staged)
				}
				if len(prom.Asked) != asked {
					t.Errorf("a decided analysis asked again: %q", prom.Asked[asked:])
				}
				if ev := f.events(); strings.Contains(ev, "Warning") {
					t.Errorf("announced again: %q", ev)
				}
				if r := d.Annotations[staging.StepAnnotation]; r != "1/3" {
					t.Errorf("step %s, want held at 1/3", r)
				}
			}
		})
	}
}

// TestAnalyze_prometheusUnreachableHoldsThenResumes: past the error limit the step
// holds (one AnalysisHeld event, the Staged condition saying why) and is asked
// again at each interval; when Prometheus answers, the analysis goes on from where
// it stood and moves the step on.
func TestAnalyze_prometheusUnreachableHoldsThenResumes(t *testing.T) {
	prom := &analysistest.Prometheus{Answers: []analysistest.Answer{ratio(0), unreachable, unreachable, unreachable, ratio(0.001)}}
	f, t0 := analyzing(t, map[string]string{failure.OnFailureAnnotation: "Rollback"}, errorRatioCheck, prom)
	q := &delays{TypedRateLimitingInterface: f.c.queue.TypedRateLimitingInterface}
	f.c.queue = controller.Queue{TypedRateLimitingInterface: q}
	var d *appsv1.Deployment
	for _, s := range []int{0, 10, 20} { // a good one, then two errors: past the limit of 1
		d = f.resync(t0.Add(time.Duration(s) * time.Second))
	}
	held := `Warning AnalysisHeld check "error-ratio": Prometheus unreachable: Prometheus at http://127.0.0.1:9090/api/v1/query unreachable: connection refused (2 errors in a row, limit 1)`
	if ev := f.events(); !strings.Contains(ev, held) {
		t.Errorf("events %q, want %q", ev, held)
	}
	d = f.resync(t0.Add(25 * time.Second)) // nothing due: the condition says why
	if m := stagedMessage(d); !strings.Contains(m, `analysis held: check "error-ratio": Prometheus unreachable`) {
		t.Errorf("Staged %q", m)
	}
	if !slices.Contains(q.after, 5*time.Second+100*time.Millisecond) {
		t.Errorf("requeued after %v, want 5.1s: asked again 10s after the last error", q.after)
	}
	d = f.resync(t0.Add(30 * time.Second)) // still unreachable: held, not announced again
	if ev := f.events(); strings.Contains(ev, "Warning") {
		t.Errorf("announced again at each retry: %q", ev)
	}
	if r := d.Annotations[staging.StepAnnotation]; r != "1/3" || d.Spec.Template.Spec.Containers[0].Image != "app:2" {
		t.Errorf("step %s image %s: want held at 1/3 on app:2 (unreachable is no failure)", r, d.Spec.Template.Spec.Containers[0].Image)
	}
	d = f.resync(t0.Add(40 * time.Second)) // back: the second good measurement completes it
	if r := d.Annotations[staging.StepAnnotation]; r != "2/3" || len(prom.Answers) != 0 {
		t.Errorf("Prometheus back: step %s, %d answers left; want 2/3, none", r, len(prom.Answers))
	}
	if ev := f.events(); !strings.Contains(ev, `Normal AnalysisSucceeded step 1/3: check "error-ratio" succeeded: 0.001 is < 0.01 (2 of 2 measurements successful)`) {
		t.Errorf("events %q", ev)
	}
}
