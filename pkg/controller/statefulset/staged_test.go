package statefulset

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"

	"github.com/kroll-dev/kroll/pkg/controller"
	"github.com/kroll-dev/kroll/pkg/controller/controllertest"
	"github.com/kroll-dev/kroll/pkg/failure"
	"github.com/kroll-dev/kroll/pkg/staging"
)

func TestPlanStagingStatefulSet(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	steps := map[string]string{staging.StepsAnnotation: "25%, pause, 100%"}
	record := func(done int, rev string) map[string]string {
		a := map[string]string{staging.StepsAnnotation: "25%, pause, 100%"}
		staging.Record{Done: done, Total: 3, Revision: rev, Since: now.Add(-time.Minute)}.Set(a)
		return a
	}
	for _, tc := range []struct {
		name        string
		annotations map[string]string
		partition   int32
		// revisions per ordinal: "1" current, "2" update (4 replicas).
		revisions []string
		rollback  bool
		// want: the write ("none", or "partition P step S"), and the condition.
		want, wantCondition string
	}{
		{name: "a new template with steps: the record 0/3 and partition 3 in one write",
			annotations: steps, revisions: []string{"1", "1", "1", "1"},
			want: "partition 3 step 0/3", wantCondition: "True Progressing step 0/3: rolling out to 25% (0 of 4 updated)"},
		{name: "recorded 0/3, web-3 updated and available: the step is done, 1/3 written (partition stays 3)",
			annotations: record(0, "web-2"), partition: 3, revisions: []string{"1", "1", "1", "2"},
			want: "partition 3 step 1/3", wantCondition: "True StepPaused step 1/3: 25% (1 of 4 updated), paused until promoted"},
		{name: "promoted to 2/3: partition 0 written alone (the record is as it should be)",
			annotations: record(2, "web-2"), partition: 3, revisions: []string{"1", "1", "1", "2"},
			want: "partition 0 step 2/3", wantCondition: "True Progressing step 2/3: rolling out to 100% (1 of 4 updated)"},
		{name: "held at the pause: nothing to write",
			annotations: record(1, "web-2"), partition: 3, revisions: []string{"1", "1", "1", "2"},
			want: "none", wantCondition: "True StepPaused step 1/3: 25% (1 of 4 updated), paused until promoted"},
		{name: "a rollback (update is the current revision): the record removed, partition 0",
			annotations: record(1, "web-2"), partition: 3, revisions: []string{"1", "1", "1", "1"}, rollback: true,
			want: "partition 0 step ", wantCondition: "none"},
		{name: "paused on failure: the record is kept, the partition is the pause's",
			annotations: func() map[string]string {
				a := record(1, "web-2")
				a[failure.PartitionBeforePauseAnnotation] = "0"
				return a
			}(), partition: 3, revisions: []string{"1", "1", "1", "2"},
			want: "none", wantCondition: "True StepPaused step 1/3: 25% (1 of 4 updated), paused until promoted"},
		{name: "without steps the partition is the user's",
			partition: 2, revisions: []string{"1", "1", "2", "2"}, want: "none", wantCondition: "none"},
		{name: "kroll.dev/partition on a StatefulSet: invalid, pointing at the field",
			annotations: map[string]string{staging.PartitionAnnotation: "2"}, revisions: []string{"1", "1", "1", "1"}, want: "none",
			wantCondition: `False InvalidAnnotation kroll.dev/partition="2" is for Deployments and DaemonSets: a StatefulSet keeps pods on its current revision with spec.updateStrategy.rollingUpdate.partition; set that field and remove the annotation; the rollout is not staged`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set, revs := healSet(tc.partition, tc.annotations)
			if tc.rollback {
				revs.update = revs.current
			}
			var pods []*corev1.Pod
			for i, r := range tc.revisions {
				pods = append(pods, setPod(set, i, "web-"+r, true))
			}
			plan := planStaging(set, pods, revs, now)
			got := "none"
			if w := plan.write; w != nil {
				got = fmt.Sprintf("partition %d step %s", partitionOf(w), w.Annotations[staging.StepAnnotation])
			}
			if got != tc.want {
				t.Errorf("write %q, want %q", got, tc.want)
			}
			cond := "none"
			if c := stagedNews(set, plan, now).Condition; c != nil {
				cond = fmt.Sprintf("%s %s %s", c.Status, c.Reason, c.Message)
			}
			if cond != tc.wantCondition {
				t.Errorf("condition %q, want %q", cond, tc.wantCondition)
			}
		})
	}
}

func TestAbortStatefulSet(t *testing.T) {
	now := time.Now()
	for _, tc := range []struct {
		name, abort            string
		wantImage, wantEvent   string
		wantRolledBackFrom     string
		wantStatuses           int
		wantConditionOrNothing string
	}{
		{name: "the update revision named: rolled back in one Update that removes the request",
			abort: "web-2", wantImage: "app:1", wantRolledBackFrom: "2", wantStatuses: 1,
			wantEvent:              "Warning RolledBack aborted by request; rolled back from revision 2 to 1",
			wantConditionOrNothing: "Aborted aborted by request; rolled back from revision 2 to 1"},
		{name: "another revision named: the request removed, a Warning AbortIgnored",
			abort: "web-7", wantImage: "app:crash",
			wantEvent: `Warning AbortIgnored kroll.dev/abort names revision "web-7", but revision "web-2" is rolling out; the request is removed`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set, revs := healSet(3, map[string]string{staging.AbortAnnotation: tc.abort})
			pods := []*corev1.Pod{setPod(set, 0, "web-1", true), setPod(set, 1, "web-1", true), setPod(set, 2, "web-1", true), setPod(set, 3, "web-2", true)}
			w := &controllertest.SetWriter[*appsv1.StatefulSet]{}
			rec := record.NewFakeRecorder(10)
			c := &Controller{setWriter: w, recorder: rec}
			handled, err := c.abort(context.Background(), set, pods, revs, now)
			if err != nil || !handled {
				t.Fatalf("handled %v, err %v", handled, err)
			}
			if len(w.Updates) != 1+tc.wantStatuses || len(w.Statuses) != tc.wantStatuses { // a rollback's report's record removed after it
				t.Fatalf("%d updates and %d status writes, want %d and %d", len(w.Updates), len(w.Statuses), 1+tc.wantStatuses, tc.wantStatuses)
			}
			got := w.Updates[0]
			if _, ok := got.Annotations[staging.AbortAnnotation]; ok {
				t.Errorf("the request is still there")
			}
			if img := got.Spec.Template.Spec.Containers[0].Image; img != tc.wantImage || got.Annotations[failure.RolledBackFromAnnotation] != tc.wantRolledBackFrom {
				t.Errorf("image %s rolled-back-from %q, want %s %q", img, got.Annotations[failure.RolledBackFromAnnotation], tc.wantImage, tc.wantRolledBackFrom)
			}
			if ev := <-rec.Events; ev != tc.wantEvent {
				t.Errorf("event %q, want %q", ev, tc.wantEvent)
			}
			if tc.wantStatuses > 0 {
				c := w.Statuses[0].Status.Conditions
				if len(c) != 1 || c[0].Reason+" "+c[0].Message != tc.wantConditionOrNothing {
					t.Errorf("conditions %+v, want %s", c, tc.wantConditionOrNothing)
				}
			}
		})
	}
	set, revs := healSet(0, nil)
	if handled, _ := (&Controller{}).abort(context.Background(), set, nil, revs, now); handled {
		t.Errorf("without a request the abort acted")
	}
}

func TestDeletedForgetsTheStagedEventsReported(t *testing.T) {
	set, _ := healSet(0, nil)
	rec := record.NewFakeRecorder(10)
	c := &Controller{recorder: rec, queue: controller.NewQueue("statefulset-test")}
	news := controller.PlanStaged("", staging.Decision{Phase: staging.Progressing, Message: "step 0/2: rolling out to 50% (0 of 4 updated)"}, nil, time.Now())
	c.stagedReports.Report(rec, set, set.UID, news)
	c.stagedReports.Report(rec, set, set.UID, news) // remembered: not again
	c.deleted(set)
	c.stagedReports.Report(rec, set, set.UID, news) // nothing remembered of it
	if n := len(controllertest.Drain(rec)); n != 2 {
		t.Errorf("%d RolloutStep events, want 2: the deletion must forget the first", n)
	}
}
