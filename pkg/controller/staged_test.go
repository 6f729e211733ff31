package controller

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"

	"github.com/kroll-dev/kroll/pkg/failure"
	"github.com/kroll-dev/kroll/pkg/staging"
)

func TestPlanStaged(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	cond := func(status corev1.ConditionStatus, reason, message string) *failure.Condition {
		return &failure.Condition{Type: staging.ConditionType, Status: status, Reason: reason, Message: message}
	}
	rolling := staging.Decision{Phase: staging.Progressing, Message: "step 0/3: rolling out to 25% (1 of 8 updated)"}
	paused := staging.Decision{Phase: staging.StepPaused, Message: "step 1/3: 25% (2 of 8 updated), paused until promoted"}
	for _, tc := range []struct {
		name    string
		problem string
		d       staging.Decision
		cur     *failure.Condition
		want    string
	}{
		{name: "unstaged: no condition, no event", want: "none  "},
		{name: "a first step: the condition and its event", d: rolling,
			want: "True/Progressing step 0/3: rolling out to 25% (1 of 8 updated) step 0/3: rolling out to 25% (1 of 8 updated) "},
		{name: "the same step with other counts: no event", d: rolling, cur: cond("True", "Progressing", "step 0/3: rolling out to 25% (0 of 8 updated)"),
			want: "True/Progressing step 0/3: rolling out to 25% (1 of 8 updated)  "},
		{name: "the step reached, paused: an event", d: paused, cur: cond("True", "Progressing", "step 0/3: rolling out to 25% (2 of 8 updated)"),
			want: "True/StepPaused step 1/3: 25% (2 of 8 updated), paused until promoted step 1/3: 25% (2 of 8 updated), paused until promoted "},
		{name: "invalid settings: False/InvalidAnnotation and a Warning once", problem: "kroll.dev/partition=\"-1\" is not valid",
			want: "False/InvalidAnnotation kroll.dev/partition=\"-1\" is not valid  kroll.dev/partition=\"-1\" is not valid"},
		{name: "invalid settings reported before: no second Warning", problem: "kroll.dev/partition=\"-1\" is not valid",
			cur:  cond("False", failure.ReasonInvalidAnnotation, "kroll.dev/partition=\"-1\" is not valid"),
			want: "False/InvalidAnnotation kroll.dev/partition=\"-1\" is not valid  "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			news := PlanStaged(tc.problem, tc.d, tc.cur, now)
			got := "none"
			if c := news.Condition; c != nil {
				got = fmt.Sprintf("%s/%s %s", c.Status, c.Reason, c.Message)
			}
			got += " " + news.Step + " " + news.Invalid
			if got != tc.want {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestAbortRequest(t *testing.T) {
	for _, tc := range []struct {
		name        string
		annotations map[string]string
		rolling     string
		want        string
	}{
		{name: "no request", rolling: "web-2", want: "false "},
		{name: "the revision rolling out: act", annotations: map[string]string{staging.AbortAnnotation: "web-2"}, rolling: "web-2", want: "true "},
		{name: "another revision: ignored", annotations: map[string]string{staging.AbortAnnotation: "web-1"}, rolling: "web-2",
			want: `false kroll.dev/abort names revision "web-1", but revision "web-2" is rolling out; the request is removed`},
		{name: "no rollout: ignored", annotations: map[string]string{staging.AbortAnnotation: "web-1"},
			want: `false kroll.dev/abort names revision "web-1", but no rollout is in progress; the request is removed`},
	} {
		act, ignored := AbortRequest(tc.annotations, tc.rolling)
		if got := fmt.Sprintf("%v %s", act, ignored); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestStagedReportsOnce(t *testing.T) {
	now := time.Now()
	rec := record.NewFakeRecorder(10)
	var r StagedReports
	pod := &corev1.Pod{}
	invalid := PlanStaged("kroll.dev/partition=\"-1\" is not valid", staging.Decision{}, nil, now)
	step := PlanStaged("", staging.Decision{Phase: staging.Progressing, Message: "step 0/2: rolling out to 50% (0 of 4 updated)"}, nil, now)
	// Two syncs on a cache that does not show the condition yet, each time.
	for _, news := range []StagedNews{invalid, invalid, step, step, invalid} {
		r.Report(rec, pod, "uid-1", news)
	}
	close(rec.Events)
	var got []string
	for e := range rec.Events {
		got = append(got, e)
	}
	want := []string{
		`Warning InvalidStaging kroll.dev/partition="-1" is not valid`,
		"Normal RolloutStep step 0/2: rolling out to 50% (0 of 4 updated)",
		`Warning InvalidStaging kroll.dev/partition="-1" is not valid`,
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("events\n%q\nwant\n%q", got, want)
	}
}
