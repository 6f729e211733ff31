package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kroll-dev/kroll/pkg/analysis"
	"github.com/kroll-dev/kroll/pkg/failure"
	"github.com/kroll-dev/kroll/pkg/rolloutview"
	"github.com/kroll-dev/kroll/pkg/staging"
)

// A rollout past its progress deadline: kubectl prints `error: deployment "web"
// exceeded its progress deadline` once, on stderr. kroll's status prints nothing of
// it on stdout, in any form but JSON (data), and returns it for Main to print once.
func TestRolloutStatus_aFailureIsReportedOnce(t *testing.T) {
	replicas := int32(2)
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", Generation: 2, Annotations: map[string]string{"deployment.kubernetes.io/revision": "2"}},
		Spec:       appsv1.DeploymentSpec{Replicas: &replicas},
		Status: appsv1.DeploymentStatus{ObservedGeneration: 2, Replicas: 3, UpdatedReplicas: 1, ReadyReplicas: 2, AvailableReplicas: 2,
			Conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse, Reason: "ProgressDeadlineExceeded"}}},
	}
	for _, form := range []string{"plain", "terminal"} {
		var out bytes.Buffer
		p := statusPrinter{out: &out, terminal: form == "terminal"}
		done, err := p.print(rolloutview.Snapshot{Object: d, Now: time.Now()})
		if !done || err == nil || errorLine(err) != `error: deployment "web" exceeded its progress deadline` {
			t.Errorf("%s: done %v, err %v; want done and kubectl's error line", form, done, err)
		}
		if strings.Contains(out.String(), "exceeded") {
			t.Errorf("%s: the error is on stdout too:\n%s", form, out.String())
		}
	}
}

// A rollout kroll's controller rolled back: the RolloutFailed condition's line, as one
// kubectl-style error line, exit 1; -o json says RolledBack with the condition; an
// invalid failure policy is one Warning line on stderr, however often the view changes.
func TestRolloutStatus_rolledBackAndWarnings(t *testing.T) {
	msg := "2 of 2 new pods failed, threshold 1 (web-7d9f-abcde: CrashLoopBackOff); rolled back from revision 2 to 1"
	d := rolledBackWeb(failure.ReasonPodsFailing, msg)
	var out bytes.Buffer
	p := statusPrinter{out: &out, json: true}
	done, err := p.print(rolloutview.Snapshot{Object: d, Now: time.Now()})
	if want := `error: deployment "web" rollout failed: ` + msg; !done || err == nil || errorLine(err) != want {
		t.Errorf("done %v, err %v; want done and %q", done, err, want)
	}
	var got struct {
		Phase   string `json:"phase"`
		Failure struct{ Reason, Message string }
	}
	if err := json.Unmarshal(out.Bytes(), &got); err != nil || got.Phase != "RolledBack" || got.Failure.Message != msg || got.Failure.Reason != failure.ReasonPodsFailing {
		t.Errorf("-o json: %v, %+v; want phase RolledBack and the condition\n%s", err, got, out.String())
	}

	d = d.DeepCopy()
	d.Annotations = map[string]string{"deployment.kubernetes.io/revision": "3", failure.ThresholdAnnotation: "abc"}
	problem := failure.PolicyOf(d.Annotations).Problem()
	d.Status.Conditions = []appsv1.DeploymentCondition{{Type: failure.ConditionFailurePolicy, Status: corev1.ConditionFalse, Reason: failure.ReasonInvalidAnnotation, Message: problem}}
	var plain, stderr bytes.Buffer
	p = statusPrinter{out: &plain, errOut: &stderr}
	for range 2 {
		d.Status.ReadyReplicas-- // a change: the line is printed again, the warning not
		if _, err := p.print(rolloutview.Snapshot{Object: d, Now: time.Now()}); err != nil {
			t.Fatalf("an invalid policy failed the rollout: %v", err)
		}
	}
	if want := "Warning: deployment/web: " + problem + "\n"; stderr.String() != want {
		t.Errorf("stderr %q, want once %q", stderr.String(), want)
	}
}

// rolledBackWeb is Deployment web (2 replicas) rolled back by kroll's controller
// from revision 2 to 1, restored as revision 3, with RolloutFailed (reason, msg).
func rolledBackWeb(reason, msg string) *appsv1.Deployment {
	replicas := int32(2)
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", Generation: 3, Annotations: map[string]string{
			"deployment.kubernetes.io/revision": "3", failure.OnFailureAnnotation: "Rollback", failure.RolledBackFromAnnotation: "2"}},
		Spec: appsv1.DeploymentSpec{Replicas: &replicas},
		Status: appsv1.DeploymentStatus{ObservedGeneration: 3, Replicas: 2, UpdatedReplicas: 2, ReadyReplicas: 2, AvailableReplicas: 2,
			Conditions: []appsv1.DeploymentCondition{
				{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable"},
				{Type: failure.ConditionRolloutFailed, Status: corev1.ConditionTrue, Reason: reason, Message: msg}}},
	}
}

// A rollout an analysis rolled back: outside a terminal, the check's line on stdout
// (its value, its condition, the decision and the rollback), then the RolloutFailed
// line as the error, once.
func TestRolloutStatus_analysisRolledBack(t *testing.T) {
	msg := `check "error-ratio" failed: 0.2 is not < 0.01 (1 failed measurement, limit 0); rolled back from revision 2 to 1`
	decided := time.Date(2026, 12, 7, 16, 0, 45, 0, time.UTC)
	st := analysis.State{Revision: "6f9c7d", Step: 1, Started: decided.Add(-45 * time.Second), Checks: []analysis.CheckState{{
		Name: "error-ratio", Query: `sum(rate(http_requests_total{code=~"5.."}[30s]))`, SuccessCondition: "< 0.01", Count: 2,
		Tally:  analysis.Tally{Failed: 1, Taken: 1, Last: decided, Outcome: analysis.Failed, Message: `check "error-ratio" failed: 0.2 is not < 0.01 (1 failed measurement, limit 0)`},
		Recent: []analysis.Sample{{At: decided, Value: "0.2", Outcome: analysis.Failed}}}}}
	d := rolledBackWeb(analysis.ReasonFailed, msg)
	d.Annotations[analysis.StatusAnnotation] = st.Encode()
	var out bytes.Buffer
	p := statusPrinter{out: &out}
	for range 2 {
		done, err := p.print(rolloutview.Snapshot{Object: d, Now: time.Now()})
		if want := `error: deployment "web" rollout failed: ` + msg; !done || err == nil || errorLine(err) != want {
			t.Errorf("done %v, err %v; want done and %q", done, err, want)
		}
	}
	if want := `analysis "error-ratio": Failed at 16:00:45Z: 0.2 (want < 0.01); rolled back` + "\n"; out.String() != want {
		t.Errorf("stdout %q, want once %q", out.String(), want)
	}
}

// snapshotOfObjects is the rollout view's snapshot of the first object among objs,
// which are a workload and what it owns, at stepsNow.
func snapshotOfObjects(objs []runtime.Object) rolloutview.Snapshot {
	var o owned
	for _, x := range objs[1:] {
		switch v := x.(type) {
		case *appsv1.ReplicaSet:
			o.ReplicaSets = append(o.ReplicaSets, v)
		case *appsv1.ControllerRevision:
			o.Revisions = append(o.Revisions, v)
		case *corev1.Pod:
			o.Pods = append(o.Pods, v)
		}
	}
	return o.SnapshotOf(objs[0], stepsNow)
}

// Held at a step's pause: status keeps waiting (as on a paused Deployment) and says
// what continues; --until-paused stops there with no error; -o json has "staged".
func TestRolloutStatus_heldAtAStep(t *testing.T) {
	snap := snapshotOfObjects(stagedWeb(map[string]string{staging.StepsAnnotation: "25%, pause, 100%"}, 3, 1, "1/3"))
	wantLine := `deployment "web": step 1/3: 25% (1 of 4 updated), paused until promoted; to continue: kroll rollout promote deployment/web` + "\n"
	for _, untilPaused := range []bool{false, true} {
		var out bytes.Buffer
		p := statusPrinter{out: &out, untilPaused: untilPaused}
		done, err := p.print(snap)
		if done != untilPaused || err != nil {
			t.Errorf("--until-paused=%v: done %v, err %v; want done only with the flag, no error", untilPaused, done, err)
		}
		if out.String() != wantLine {
			t.Errorf("--until-paused=%v: printed %q, want %q", untilPaused, out.String(), wantLine)
		}
	}
	var out bytes.Buffer
	p := statusPrinter{out: &out, json: true}
	if _, err := p.print(snap); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Phase  string
		Staged map[string]any
	}
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"phase": "StepPaused", "step": 1.0, "total": 3.0, "partition": 3.0, "revision": "new",
		"message": "step 1/3: 25% (1 of 4 updated), paused until promoted", "continue": "kroll rollout promote deployment/web"}
	if got.Phase != "Paused" || fmt.Sprint(got.Staged) != fmt.Sprint(want) {
		t.Errorf("json phase %s staged %v, want Paused %v", got.Phase, got.Staged, want)
	}
}

// A rollout moving toward its step's share is not paused: --until-paused waits on.
func TestRolloutStatus_untilPausedWaitsWhileAStepRollsOut(t *testing.T) {
	snap := snapshotOfObjects(stagedWeb(map[string]string{staging.StepsAnnotation: "25%, pause, 100%"}, 2, 2, "2/3"))
	var out bytes.Buffer
	p := statusPrinter{out: &out, untilPaused: true}
	done, err := p.print(snap)
	want := `Waiting for deployment "web" rollout to finish: step 2/3: rolling out to 100% (2 of 4 updated)...` + "\n"
	if done || err != nil || out.String() != want {
		t.Errorf("done %v err %v, printed %q; want waiting, %q", done, err, out.String(), want)
	}
}

// Watching a staged rollout through a promote: the step boundary is one line that
// stays above the redrawn tree, in a terminal too; no line for a change within a step.
func TestRolloutWatch_marksStepBoundaries(t *testing.T) {
	steps := map[string]string{staging.StepsAnnotation: "25%, pause, 100%"}
	views := []rolloutview.Snapshot{
		snapshotOfObjects(stagedWeb(steps, 3, 1, "1/3")),
		snapshotOfObjects(stagedWeb(steps, 3, 1, "2/3")),
		snapshotOfObjects(stagedWeb(steps, 2, 2, "2/3")),
	}
	for _, terminal := range []bool{false, true} {
		var out bytes.Buffer
		w := treeWatcher{out: &out, terminal: terminal}
		for _, v := range views {
			if stop, err := w.show(v); stop || err != nil {
				t.Fatalf("stop %v err %v", stop, err)
			}
		}
		// A terminal's redraw escapes may come before the mark on its line.
		mark := "--- 12:00:00 step 2/3: rolling out to 100% (1 of 4 updated)\n"
		if n := strings.Count(out.String(), "--- "); n != 1 || !strings.Contains(out.String(), mark) {
			t.Errorf("terminal=%v: %d marks, want 1: %q:\n%s", terminal, n, mark, out.String())
		}
		if terminal && !strings.Contains(out.String(), "--- 12:00:00 step 2/3: rolling out to 100% (1 of 4 updated)\ndeployment/web  Progressing") {
			t.Errorf("terminal: the mark is not right above the redrawn tree:\n%q", out.String())
		}
	}
}

// kroll rollout plan --feature-gates reads as kroll up's: a bad value is one line
// before any request (the factory here has no cluster).
func TestRolloutPlan_featureGates(t *testing.T) {
	streams, _, _, _ := genericiooptions.NewTestIOStreams()
	k := &kubectlVerbs{streams: streams}
	cmd := k.newRolloutPlanCommand()
	cmd.SetArgs([]string{"statefulset/web", "--feature-gates", "MaxUnavailableStatefulSet=off"})
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	want := "--feature-gates: MaxUnavailableStatefulSet=off: the value must be true or false"
	if err := cmd.Execute(); err == nil || err.Error() != want {
		t.Errorf("plan --feature-gates MaxUnavailableStatefulSet=off: %v; want %q", err, want)
	}
}
