package controller_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"

	"github.com/kroll-dev/kroll/pkg/controller"
	"github.com/kroll-dev/kroll/pkg/controller/controllertest"
	"github.com/kroll-dev/kroll/pkg/failure"
	"github.com/kroll-dev/kroll/pkg/history"
	"github.com/kroll-dev/kroll/pkg/metrics"
)

var rolledBack = failure.Report{Action: failure.Rollback, Reason: failure.ReasonPodsFailing,
	Message: "1 of 1 new pods failed, threshold 1 (logs-a: CrashLoopBackOff); rolled back from revision 2 to 1"}

// rolledBackDaemonSet is a DaemonSet as a rollback leaves it: revision 1's image, the
// record of the revision rolled back from.
func rolledBackDaemonSet() *appsv1.DaemonSet {
	ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "logs", Namespace: "default",
		Annotations: map[string]string{failure.OnFailureAnnotation: "Rollback", failure.RolledBackFromAnnotation: "2"}}}
	ds.Spec.Template.Labels = map[string]string{"app": "logs"}
	return ds
}

// TestSetFailureReportSurvivesAStop stops the controller at each write of a rollback's
// report and runs the next pass (Recover) on what the API server then holds: the
// RolloutFailed condition, the event and the metric come out once in all, and the
// record is gone at the end.
func TestSetFailureReportSurvivesAStop(t *testing.T) {
	now := time.Now()
	for _, tc := range []struct {
		name   string
		stopAt int    // the write the controller is stopped at (0: none)
		passes string // the writes of the acting pass, then of the next one
	}{
		{name: "not stopped: the action, its report, the record removed; the next pass has nothing to do", passes: "[update status update] []"},
		{name: "stopped before the status write: the next pass reports, then removes the record", stopAt: 2, passes: "[update] [status update]"},
		{name: "stopped before the record's removal: the next pass only removes it", stopAt: 3, passes: "[update status] [update]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &controllertest.SetWriter[*appsv1.DaemonSet]{FailAt: tc.stopAt}
			rec := record.NewFakeRecorder(10)
			before := testutil.ToFloat64(metrics.RolledBack.WithLabelValues("DaemonSet"))
			err := controller.DaemonSetFailure.Act(context.Background(), w, rec, rolledBackDaemonSet(), rolledBack, nil, now)
			if (err != nil) != (tc.stopAt > 0) {
				t.Fatalf("Act: %v", err)
			}
			acting := fmt.Sprint(w.Writes)
			stored := w.Updates[len(w.Updates)-1] // what the API server holds now
			if n := len(w.Statuses); n > 0 {
				stored = w.Statuses[n-1]
			}
			if n := len(w.Updates); n > 1 {
				stored = w.Updates[n-1]
			}
			next := &controllertest.SetWriter[*appsv1.DaemonSet]{}
			handled, err := controller.DaemonSetFailure.Recover(context.Background(), next, rec, stored.DeepCopy(), now)
			if err != nil || handled != (tc.stopAt > 0) {
				t.Fatalf("Recover: handled %v, err %v", handled, err)
			}
			if got := acting + " " + fmt.Sprint(next.Writes); got != tc.passes {
				t.Errorf("writes %s, want %s", got, tc.passes)
			}
			statuses := append(w.Statuses, next.Statuses...)
			if len(statuses) != 1 {
				t.Fatalf("%d status writes in all, want 1", len(statuses))
			}
			if c := statuses[0].Status.Conditions; len(c) != 1 || c[0].Type != failure.ConditionRolloutFailed || c[0].Reason != rolledBack.Reason || c[0].Message != rolledBack.Message {
				t.Errorf("conditions %+v, want RolloutFailed %s %q", c, rolledBack.Reason, rolledBack.Message)
			}
			want := "[Warning RolledBack " + rolledBack.Message + "]"
			if got := fmt.Sprint(controllertest.Drain(rec)); got != want {
				t.Errorf("events %s, want %s", got, want)
			}
			if n := testutil.ToFloat64(metrics.RolledBack.WithLabelValues("DaemonSet")) - before; n != 1 {
				t.Errorf("metric counted %v rollbacks, want 1", n)
			}
			final := append(w.Updates, next.Updates...)
			if _, ok := final[len(final)-1].Annotations[failure.RolloutFailedAnnotation]; ok {
				t.Errorf("%s is still there at the end", failure.RolloutFailedAnnotation)
			}
		})
	}
}

func TestSetFailureRecover(t *testing.T) {
	now := time.Now()
	paused := failure.Report{Action: failure.Pause, Reason: failure.ReasonPodsFailing, Message: "2 of 2 new pods failed, threshold 1; paused on revision 3"}
	for _, tc := range []struct {
		name       string
		record     string // the annotation's value; "-" for none
		writes     string
		wantEvents string
	}{
		{name: "no record: nothing to do, the pass goes on", record: "-", writes: "[]", wantEvents: "[]"},
		{name: "a pause's report lost: made now", record: recorded(paused), writes: "[status update]",
			wantEvents: "[Warning RolloutPaused " + paused.Message + "]"},
		{name: "an unreadable record: removed, nothing reported", record: "paused!", writes: "[update]", wantEvents: "[]"},
		{name: "a record of no action kroll takes: removed, nothing reported", record: `{"action":"None","reason":"x","message":"y"}`, writes: "[update]", wantEvents: "[]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", Annotations: map[string]string{}}}
			if tc.record != "-" {
				set.Annotations[failure.RolloutFailedAnnotation] = tc.record
			}
			w := &controllertest.SetWriter[*appsv1.StatefulSet]{}
			rec := record.NewFakeRecorder(10)
			handled, err := controller.StatefulSetFailure.Recover(context.Background(), w, rec, set, now)
			if err != nil || handled != (tc.record != "-") {
				t.Fatalf("handled %v, err %v", handled, err)
			}
			if got := fmt.Sprint(w.Writes); got != tc.writes {
				t.Errorf("writes %s, want %s", got, tc.writes)
			}
			if got := fmt.Sprint(controllertest.Drain(rec)); got != tc.wantEvents {
				t.Errorf("events %s, want %s", got, tc.wantEvents)
			}
			for _, s := range w.Statuses {
				if c := s.Status.Conditions; len(c) != 1 || c[0].Message != paused.Message {
					t.Errorf("conditions %+v, want RolloutFailed %q", c, paused.Message)
				}
			}
		})
	}
}

func recorded(r failure.Report) string {
	a := map[string]string{}
	r.Record(a)
	return a[failure.RolloutFailedAnnotation]
}

// revisionWriter records the revisions written.
type revisionWriter struct{ written []*appsv1.ControllerRevision }

func (w *revisionWriter) Update(_ context.Context, rev *appsv1.ControllerRevision, _ metav1.UpdateOptions) (*appsv1.ControllerRevision, error) {
	w.written = append(w.written, rev)
	return rev, nil
}

var _ controller.RevisionWriter = &revisionWriter{}

func TestMarkComplete(t *testing.T) {
	cached := &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: "logs-5d8f", Annotations: map[string]string{history.ControllerRevisionHistoryAnnotation: "1"}}, Revision: 3}
	w := &revisionWriter{}
	if err := controller.MarkComplete(context.Background(), w, cached); err != nil {
		t.Fatal(err)
	}
	if len(w.written) != 1 || !failure.IsComplete(w.written[0].Annotations) || w.written[0].Annotations[history.ControllerRevisionHistoryAnnotation] != "1" {
		t.Fatalf("written %+v: want one write, marked complete, its other annotations kept", w.written)
	}
	if failure.IsComplete(cached.Annotations) {
		t.Errorf("the cached revision was changed in place")
	}
}
