package daemonset

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"

	"github.com/kroll-dev/kroll/pkg/controller"
	"github.com/kroll-dev/kroll/pkg/controller/controllertest"
	"github.com/kroll-dev/kroll/pkg/history"
	"github.com/kroll-dev/kroll/pkg/placement"
	"github.com/kroll-dev/kroll/pkg/staging"
)

func TestPlanStagingDaemonSet(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration) metav1.Time { return metav1.NewTime(now.Add(d)) }
	oldRev := &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: "logs-old", CreationTimestamp: at(-time.Hour), Labels: map[string]string{RevisionLabel: "old"}}}
	newRev := &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: "logs-new", CreationTimestamp: at(-time.Minute), Labels: map[string]string{RevisionLabel: "new"}}}
	for _, tc := range []struct {
		name        string
		annotations map[string]string
		// pods per node n0..n4: "old", "new".
		pods []string
		// restore: the template's revision is older than the one whose pods run (an undo).
		restore bool
		// sameSecond: the restored revision was made in the same second as the one it
		// replaces, so creation times do not tell; its record does.
		sameSecond bool
		// want: the held nodes, the write's step record ("-": no write) and the phase.
		want string
	}{
		{name: "partition 3 of 5 over a new template: n0..n2 held, nothing to write",
			annotations: map[string]string{staging.PartitionAnnotation: "3"}, pods: []string{"old", "old", "old", "old", "old"},
			want: "held [n0 n1 n2] write - phase Progressing"},
		{name: "partition 60%: 3 of 5 nodes, reached with n3 and n4 updated",
			annotations: map[string]string{staging.PartitionAnnotation: "60%"}, pods: []string{"old", "old", "old", "new", "new"},
			want: "held [n0 n1 n2] write - phase PartitionReached"},
		{name: "steps over a new template: the record 0/3 written first",
			annotations: map[string]string{staging.StepsAnnotation: "40%, pause, 100%"}, pods: []string{"old", "old", "old", "old", "old"},
			want: "held [n0 n1 n2] write 0/3 phase Progressing"},
		{name: "an undo to an older revision is not staged: nothing held",
			annotations: map[string]string{staging.PartitionAnnotation: "3"}, pods: []string{"new", "new", "new", "old", "old"}, restore: true,
			want: "held [] write - phase "},
		{name: "an undo within the second the bad revision was made: its revision-history tells it, nothing held",
			annotations: map[string]string{staging.PartitionAnnotation: "3"}, pods: []string{"new", "new", "new", "old", "old"}, restore: true, sameSecond: true,
			want: "held [] write - phase "},
		{name: "a bad partition: nothing held, staging off",
			annotations: map[string]string{staging.PartitionAnnotation: "-1"}, pods: []string{"old", "old", "old", "old", "old"},
			want: "held [] write - phase "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ds := newDaemonSet("1", "0")
			for k, v := range tc.annotations {
				ds.Annotations[k] = v
			}
			var nodes []*corev1.Node
			fits := map[string]placement.Fit{}
			byNode := map[string][]*corev1.Pod{}
			for i, hash := range tc.pods {
				name := fmt.Sprintf("n%d", i)
				nodes = append(nodes, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}})
				fits[name] = placement.Fit{ShouldRun: true, ShouldContinue: true}
				byNode[name] = []*corev1.Pod{daemonPod(name, hash, true)}
			}
			newest, owned := newRev, []*appsv1.ControllerRevision{oldRev, newRev}
			if tc.restore {
				newest = oldRev.DeepCopy()
				newest.Labels[RevisionLabel] = "new"
				owned = []*appsv1.ControllerRevision{newest, {ObjectMeta: metav1.ObjectMeta{Name: "logs-bad",
					CreationTimestamp: at(-time.Minute), Labels: map[string]string{RevisionLabel: "old"}}}}
			}
			if tc.sameSecond {
				newest.CreationTimestamp = at(-time.Minute)
				newest.Annotations = map[string]string{history.ControllerRevisionHistoryAnnotation: "1"}
			}
			plan := planStaging(ds, nodes, fits, byNode, "new", newest, owned, now)
			var held []string
			for n := range plan.held {
				held = append(held, n)
			}
			sort.Strings(held)
			write := "-"
			if plan.write != nil {
				write = plan.write.Annotations[staging.StepAnnotation]
			}
			got := fmt.Sprintf("held [%s] write %s phase %s", strings.Join(held, " "), write, plan.decision.Phase)
			if got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}

func TestAbortDaemonSet(t *testing.T) {
	now := time.Now()
	for _, tc := range []struct {
		name, abort string
		pods        []*corev1.Pod
		wantImage   string
		wantEvent   string
	}{
		{name: "the revision rolling out named: revision 1's template back in one Update, reason Aborted",
			abort: "logs-new", pods: []*corev1.Pod{daemonPod("a", "old", true), daemonPod("b", "new", true)}, wantImage: "img:old",
			wantEvent: "Warning RolledBack aborted by request; rolled back from revision 2 to 1"},
		{name: "another revision named: removed, AbortIgnored",
			abort: "logs-old", pods: []*corev1.Pod{daemonPod("a", "old", true), daemonPod("b", "new", true)}, wantImage: "fluentd:v2",
			wantEvent: `Warning AbortIgnored kroll.dev/abort names revision "logs-old", but revision "logs-new" is rolling out; the request is removed`},
		{name: "no rollout in progress: removed, AbortIgnored",
			abort: "logs-new", pods: []*corev1.Pod{daemonPod("a", "new", true), daemonPod("b", "new", true)}, wantImage: "fluentd:v2",
			wantEvent: `Warning AbortIgnored kroll.dev/abort names revision "logs-new", but no rollout is in progress; the request is removed`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ds := newDaemonSet("1", "0")
			ds.Annotations[staging.AbortAnnotation] = tc.abort
			revs := rollbackRevisions(ds, []*appsv1.ControllerRevision{dsRevision(t, ds, "old", 1, "img:old"), dsRevision(t, ds, "new", 2, "fluentd:v2")}, "new")
			w := &controllertest.SetWriter[*appsv1.DaemonSet]{}
			rec := record.NewFakeRecorder(10)
			c := &Controller{dsWriter: w, recorder: rec}
			if handled, err := c.abort(context.Background(), ds, tc.pods, revs, "new", now); !handled || err != nil {
				t.Fatalf("handled %v, err %v", handled, err)
			}
			if want := 1 + len(w.Statuses); len(w.Updates) != want { // a rollback's report's record removed after it
				t.Fatalf("%d updates, want %d", len(w.Updates), want)
			}
			got := w.Updates[0]
			if _, ok := got.Annotations[staging.AbortAnnotation]; ok || got.Spec.Template.Spec.Containers[0].Image != tc.wantImage {
				t.Errorf("image %s, annotations %v; want %s without the request", got.Spec.Template.Spec.Containers[0].Image, got.Annotations, tc.wantImage)
			}
			if ev := <-rec.Events; ev != tc.wantEvent {
				t.Errorf("event %q, want %q", ev, tc.wantEvent)
			}
			if tc.wantImage == "img:old" {
				if c := w.Statuses[0].Status.Conditions; len(c) != 1 || c[0].Reason != "Aborted" {
					t.Errorf("conditions %+v, want RolloutFailed Aborted", c)
				}
			}
		})
	}
}

func TestDeletedForgetsTheStagedEventsReported(t *testing.T) {
	ds := newDaemonSet("1", "0")
	rec := record.NewFakeRecorder(10)
	c := &Controller{recorder: rec, expectations: controller.NewExpectations(time.Now)}
	news := controller.PlanStaged("", staging.Decision{Phase: staging.Progressing, Message: "step 0/2: rolling out to 50% (0 of 4 updated)"}, nil, time.Now())
	c.stagedReports.Report(rec, ds, ds.UID, news)
	c.stagedReports.Report(rec, ds, ds.UID, news) // remembered: not again
	c.deleted(ds)
	c.stagedReports.Report(rec, ds, ds.UID, news) // a DaemonSet of that UID again: nothing remembered of it
	if n := len(controllertest.Drain(rec)); n != 2 {
		t.Errorf("%d RolloutStep events, want 2: the deletion must forget the first", n)
	}
}
