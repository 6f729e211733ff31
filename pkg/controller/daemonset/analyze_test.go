package daemonset

import (
	"context"
	"fmt"
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
	"github.com/kroll-dev/kroll/pkg/placement"
	"github.com/kroll-dev/kroll/pkg/staging"
)

// dsErrorRatioCheck is "5xx ratio < 1 %" of the new revision's pods, measured once.
const dsErrorRatioCheck = `checks:
- name: error-ratio
  query: sum(rate(http_requests_total{revision="{{revision}}",controller_revision_hash="{{pod-template-hash}}",code=~"5.."}[30s]))
  successCondition: "< 0.01"
  interval: 10s
  count: 1
`

// TestAnalyzeDaemonSet: logs over n0..n4 with "40%, analyze, 100%", past its first
// step (n3 and n4 on revision 2, logs-new): a good measurement moves the step on, a
// failed one takes on-failure's action as the DaemonSet's self-healing does, and a
// missing ConfigMap holds the step with one InvalidAnalysis event.
func TestAnalyzeDaemonSet(t *testing.T) {
	t0 := time.Date(2026, 12, 7, 16, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		name, onFailure, checks string
		answers                 []analysistest.Answer
		// want: the write ("-": none) as "step S image I rolled-back-from R paused P";
		// the events, and the RolloutFailed condition ("" none).
		want, event, failed string
	}{
		{name: "a good measurement: the step moves on", checks: dsErrorRatioCheck, answers: []analysistest.Answer{analysistest.Value(0)},
			want:  "step 2/3 image fluentd:v2 rolled-back-from  paused ",
			event: `Normal AnalysisSucceeded step 1/3: check "error-ratio" succeeded`},
		{name: "ErrorRate(0.2) with Rollback: revision 1's template back, as the self-healing's", onFailure: "Rollback", checks: dsErrorRatioCheck,
			answers: []analysistest.Answer{analysistest.Value(0.2)},
			want:    "step 1/3 image fluentd:v1 rolled-back-from 2 paused ",
			event:   `Warning RolledBack check "error-ratio" failed: 0.2 is not < 0.01`,
			failed:  `AnalysisFailed check "error-ratio" failed: 0.2 is not < 0.01 (1 failed measurement, limit 0); rolled back from revision 2 to 1`},
		{name: "ErrorRate(0.2) with Pause: kroll.dev/paused", onFailure: "Pause", checks: dsErrorRatioCheck,
			answers: []analysistest.Answer{analysistest.Value(0.2)},
			want:    "step 1/3 image fluentd:v2 rolled-back-from  paused true",
			event:   "Warning RolloutPaused",
			failed:  `AnalysisFailed check "error-ratio" failed: 0.2 is not < 0.01 (1 failed measurement, limit 0); paused on revision 2`},
		{name: "no ConfigMap: held as a bare pause, the problem recorded where the views read it", onFailure: "Rollback",
			want:  "step 1/3 image fluentd:v2 rolled-back-from  paused  analysis Invalid",
			event: "Warning InvalidAnalysis kroll.dev/analysis=web-checks: ConfigMap default/web-checks does not exist"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ds := newDaemonSet("1", "0")
			ds.Annotations[staging.StepsAnnotation] = "40%, analyze, 100%"
			ds.Annotations[analysis.Annotation] = "web-checks"
			if tt.onFailure != "" {
				ds.Annotations[failure.OnFailureAnnotation] = tt.onFailure
			}
			staging.Record{Done: 1, Total: 3, Revision: "logs-new", Since: t0}.Set(ds.Annotations)
			oldRev, newRev := dsRevision(t, ds, "old", 1, "fluentd:v1"), dsRevision(t, ds, "new", 2, "fluentd:v2")
			oldRev.CreationTimestamp, newRev.CreationTimestamp = metav1.NewTime(t0.Add(-time.Hour)), metav1.NewTime(t0.Add(-time.Minute))
			owned := []*appsv1.ControllerRevision{oldRev, newRev}
			var nodes []*corev1.Node
			fits := map[string]placement.Fit{}
			byNode := map[string][]*corev1.Pod{}
			for i, hash := range []string{"old", "old", "old", "new", "new"} {
				name := fmt.Sprintf("n%d", i)
				nodes = append(nodes, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}})
				fits[name] = placement.Fit{ShouldRun: true, ShouldContinue: true}
				byNode[name] = []*corev1.Pod{daemonPod(name, hash, true)}
			}
			stage := planStaging(ds, nodes, fits, byNode, "new", newRev, owned, t0)
			if stage.write != nil || stage.decision.Phase != staging.StepPaused {
				t.Fatalf("the fixture is not held at the analyze step: %s, write %v", stage.decision.Phase, stage.write != nil)
			}

			cms := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
			if tt.checks != "" {
				if err := cms.Add(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "web-checks", Namespace: "default"}, Data: map[string]string{analysis.ConfigMapKey: tt.checks}}); err != nil {
					t.Fatal(err)
				}
			}
			w := &controllertest.SetWriter[*appsv1.DaemonSet]{}
			rec := record.NewFakeRecorder(10)
			c := &Controller{dsWriter: w, recorder: rec, queue: controller.NewQueue("daemonset-test"), now: func() time.Time { return t0 }}
			prom := &analysistest.Prometheus{Answers: tt.answers}
			c.SetAnalysis(corelisters.NewConfigMapLister(cms), prom)
			if _, err := c.analyzeStep(context.Background(), ds, rollbackRevisions(ds, owned, "new"), "new", &stage); err != nil {
				t.Fatal(err)
			}

			if len(tt.answers) > 0 && (len(prom.Asked) != 1 || !strings.Contains(prom.Asked[0], `revision="logs-new",controller_revision_hash="new"`)) {
				t.Errorf("asked %q: {{revision}} is the revision's name, {{pod-template-hash}} its pods' controller-revision-hash", prom.Asked)
			}
			got := "-"
			if len(w.Updates) > 0 {
				d := w.Updates[0]
				got = fmt.Sprintf("step %s image %s rolled-back-from %s paused %s", d.Annotations[staging.StepAnnotation], d.Spec.Template.Spec.Containers[0].Image,
					d.Annotations[failure.RolledBackFromAnnotation], d.Annotations[failure.PausedAnnotation])
				if st, _ := analysis.ParseState(d.Annotations[analysis.StatusAnnotation]); st.Problem != "" {
					got += " analysis Invalid"
				}
			}
			if got != tt.want {
				t.Errorf("wrote %q, want %q", got, tt.want)
			}
			if ev := strings.Join(controllertest.Drain(rec), "\n"); !strings.Contains(ev, tt.event) {
				t.Errorf("events %q, want %q", ev, tt.event)
			}
			failed := ""
			if len(w.Statuses) > 0 {
				for _, c := range controller.DaemonSetFailure.ConditionsOf(w.Statuses[0]) {
					if c.Type == failure.ConditionRolloutFailed {
						failed = c.Reason + " " + c.Message
					}
				}
			}
			if failed != tt.failed {
				t.Errorf("RolloutFailed %q, want %q", failed, tt.failed)
			}
			if tt.checks == "" && !strings.Contains(stage.decision.Message, "paused until promoted; analysis not run") {
				t.Errorf("Staged %q, want the bare pause and why", stage.decision.Message)
			}
		})
	}
}
