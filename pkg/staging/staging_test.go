package staging

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestSettingsOf(t *testing.T) {
	cases := []struct {
		name        string
		annotations map[string]string
		partition   string // "" for none
		steps       string // the steps as parsed, joined by ", "
		problem     string // a substring of the problem; "" for none
	}{
		{name: "no annotations: not staged"},
		{name: "a count", annotations: map[string]string{PartitionAnnotation: "7"}, partition: "7"},
		{name: "a percentage", annotations: map[string]string{PartitionAnnotation: "50%"}, partition: "50%"},
		{name: "zero is a partition that holds nothing", annotations: map[string]string{PartitionAnnotation: "0"}, partition: "0"},
		{name: "a negative partition", annotations: map[string]string{PartitionAnnotation: "-1"},
			problem: `kroll.dev/partition="-1" is not valid: want a whole number of pods of at least 0 (10) or a percentage of at most 100% (50%)`},
		{name: "above 100%", annotations: map[string]string{PartitionAnnotation: "150%"}, problem: `kroll.dev/partition="150%" is not valid`},
		{name: "steps", annotations: map[string]string{StepsAnnotation: "10%, pause: 2m, 50%, pause, 100%"},
			steps: "10%, pause: 2m0s, 50%, pause, 100%"},
		{name: "steps without spaces, and counts", annotations: map[string]string{StepsAnnotation: "1,pause:5s,3"},
			steps: "1, pause: 5s, 3"},
		{name: "steps govern over a partition", annotations: map[string]string{StepsAnnotation: "50%", PartitionAnnotation: "3"},
			steps: "50%"},
		{name: "analysis steps", annotations: map[string]string{StepsAnnotation: "10%, analyze, 50%,analyze, 100%"},
			steps: "10%, analyze, 50%, analyze, 100%"},
		{name: "an analysis first, then a pause", annotations: map[string]string{StepsAnnotation: "analyze, 20%, pause: 1m, analyze, 100%"},
			steps: "analyze, 20%, pause: 1m0s, analyze, 100%"},
		{name: "analyze takes no argument (yet)", annotations: map[string]string{StepsAnnotation: "10%, analyze: error-ratio, 100%"},
			problem: `step 2 "analyze: error-ratio" is neither a share of pods (10%, 3) nor a pause nor "analyze"`},
		{name: "a misspelt analysis", annotations: map[string]string{StepsAnnotation: "10%, analyse, 100%"},
			problem: `"10%, analyse, 100%" is not valid (step 2 "analyse" is neither`},
		{name: "a step that is neither", annotations: map[string]string{StepsAnnotation: "10%, wait, 100%"},
			problem: `step 2 "wait" is neither a share of pods (10%, 3) nor a pause`},
		{name: "a pause without a duration after the colon", annotations: map[string]string{StepsAnnotation: "10%, pause:, 100%"},
			problem: "the pause needs a positive duration"},
		{name: "shares that decrease", annotations: map[string]string{StepsAnnotation: "50%, 10%"},
			problem: "shares must not decrease"},
		{name: "empty steps", annotations: map[string]string{StepsAnnotation: " "}, problem: "no steps"},
		{name: "a bad partition turns valid steps off too", annotations: map[string]string{StepsAnnotation: "50%", PartitionAnnotation: "x"},
			problem: "the rollout is not staged"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := SettingsOf(tc.annotations)
			if tc.problem != "" {
				if !strings.Contains(s.Problem(), tc.problem) || s.Staged() {
					t.Fatalf("problem %q, staged %v; want a problem with %q and no staging", s.Problem(), s.Staged(), tc.problem)
				}
				return
			}
			if s.Problem() != "" {
				t.Fatalf("unexpected problem %q", s.Problem())
			}
			got := ""
			if s.Partition != nil {
				got = s.Partition.String()
			}
			if got != tc.partition {
				t.Errorf("partition %q, want %q", got, tc.partition)
			}
			var steps []string
			for _, st := range s.Steps {
				steps = append(steps, st.String())
			}
			if strings.Join(steps, ", ") != tc.steps {
				t.Errorf("steps %q, want %q", strings.Join(steps, ", "), tc.steps)
			}
		})
	}
}

func TestResolve(t *testing.T) {
	cases := []struct {
		name      string
		partition intstr.IntOrString
		total     int32
		want      int32
	}{
		{"a count", intstr.FromInt32(7), 10, 7},
		{"a count above the total keeps every pod", intstr.FromInt32(25), 20, 20},
		{"a percentage rounds up: 50% of 5 keeps 3", intstr.FromString("50%"), 5, 3},
		{"a percentage is re-resolved on a scale change: 50% of 40", intstr.FromString("50%"), 40, 20},
		{"100%", intstr.FromString("100%"), 20, 20},
	}
	for _, tc := range cases {
		if got := ResolvePartition(tc.partition, tc.total); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
	if got := (Step{Share: intstr.FromString("10%")}).Updated(5); got != 1 {
		t.Errorf("10%% of 5 updates %d pods, want 1 (rounded up)", got)
	}
	if got := (Step{Share: intstr.FromInt32(30)}).Updated(20); got != 20 {
		t.Errorf("30 of 20 updates %d pods, want 20", got)
	}
}

func TestDecide(t *testing.T) {
	t0 := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	steps := map[string]string{StepsAnnotation: "10%, pause, 50%, pause: 5s, 100%"}
	rec := func(done int, since time.Time) *Record {
		return &Record{Done: done, Total: 5, Revision: "r2", Since: since}
	}
	progress := func(updated, available, old int32) Progress {
		return Progress{Revision: "r2", Desired: 20, Updated: updated, UpdatedAvailable: available, Old: old}
	}
	cases := []struct {
		name      string
		settings  map[string]string
		recorded  *Record
		progress  Progress
		now       time.Time
		phase     Phase
		partition int32
		record    string // the record after the decision; "" for none
		write     bool
		until     time.Time
		message   string
	}{
		{name: "no settings: not staged", settings: nil, progress: progress(0, 0, 20), now: t0},
		{name: "no settings, a record left: removed", recorded: rec(2, t0), progress: progress(0, 0, 20), now: t0, write: true},
		{name: "a new template starts at step 0/5: partition 18", settings: steps, progress: progress(0, 0, 20), now: t0,
			phase: Progressing, partition: 18, record: "0/5", write: true,
			message: "step 0/5: rolling out to 10% (0 of 20 updated)"},
		{name: "2 updated, one not available yet: still step 0/5", settings: steps, recorded: rec(0, t0), progress: progress(2, 1, 18), now: t0,
			phase: Progressing, partition: 18, record: "0/5"},
		{name: "2 updated and available: step 1/5 done, paused until promoted", settings: steps, recorded: rec(0, t0),
			progress: progress(2, 2, 18), now: t0.Add(time.Second),
			phase: StepPaused, partition: 18, record: "1/5", write: true,
			message: "step 1/5: 10% (2 of 20 updated), paused until promoted"},
		{name: "an analyze step holds as a bare pause until the controllers run analyses", settings: map[string]string{StepsAnnotation: "10%, analyze, 50%, analyze, 100%"},
			recorded: rec(0, t0), progress: progress(2, 2, 18), now: t0.Add(time.Hour),
			phase: StepPaused, partition: 18, record: "1/5", write: true,
			message: "step 1/5: 10% (2 of 20 updated), paused until promoted"},
		{name: "a failed pod holds the step", settings: steps, recorded: rec(0, t0),
			progress: Progress{Revision: "r2", Desired: 20, Updated: 2, UpdatedAvailable: 2, Failed: 1, Old: 18}, now: t0,
			phase: Progressing, partition: 18, record: "0/5"},
		{name: "a paused Deployment does no step", settings: steps, recorded: rec(0, t0),
			progress: Progress{Revision: "r2", Desired: 20, Updated: 2, UpdatedAvailable: 2, Old: 18, Paused: true}, now: t0,
			phase: Progressing, partition: 18, record: "0/5"},
		{name: "promoted to 2/5: partition 10", settings: steps, recorded: rec(2, t0), progress: progress(2, 2, 18), now: t0,
			phase: Progressing, partition: 10, record: "2/5",
			message: "step 2/5: rolling out to 50% (2 of 20 updated)"},
		{name: "10 updated: 3/5, a timed pause of 5s", settings: steps, recorded: rec(2, t0), progress: progress(10, 10, 10), now: t0.Add(time.Minute),
			phase: StepWaiting, partition: 10, record: "3/5", write: true, until: t0.Add(time.Minute + 5*time.Second),
			message: "step 3/5: 50% (10 of 20 updated), paused for 5s until 2026-11-24T10:01:05Z"},
		{name: "the pause has not passed", settings: steps, recorded: rec(3, t0), progress: progress(10, 10, 10), now: t0.Add(4 * time.Second),
			phase: StepWaiting, partition: 10, record: "3/5", until: t0.Add(5 * time.Second)},
		{name: "the pause passed while paused: still waiting, no timer in the past", settings: steps, recorded: rec(3, t0),
			progress: Progress{Revision: "r2", Desired: 20, Updated: 10, UpdatedAvailable: 10, Old: 10, Paused: true}, now: t0.Add(time.Minute),
			phase: StepWaiting, partition: 10, record: "3/5"},
		{name: "the pause passed: 4/5, partition 0", settings: steps, recorded: rec(3, t0), progress: progress(10, 10, 10), now: t0.Add(5 * time.Second),
			phase: Progressing, partition: 0, record: "4/5", write: true,
			message: "step 4/5: rolling out to 100% (10 of 20 updated)"},
		{name: "every pod updated: 5/5", settings: steps, recorded: rec(4, t0), progress: progress(20, 20, 0), now: t0,
			phase: StepsDone, record: "5/5", write: true, message: "step 5/5: all steps done (20 of 20 updated)"},
		{name: "a record of another revision: a new template starts again", settings: steps,
			recorded: &Record{Done: 5, Total: 5, Revision: "r1", Since: t0}, progress: progress(0, 0, 20), now: t0,
			phase: Progressing, partition: 18, record: "0/5", write: true},
		{name: "a rollback is never staged: the record goes", settings: steps, recorded: rec(2, t0),
			progress: Progress{Revision: "r2", Rollback: true, Desired: 20, Updated: 18, UpdatedAvailable: 18, Old: 2}, now: t0, write: true},
		{name: "a first revision, no old pod: done at once", settings: steps, progress: progress(0, 0, 0), now: t0,
			phase: StepsDone, record: "5/5", write: true},
		{name: "steps edited to fewer than done: capped", settings: map[string]string{StepsAnnotation: "10%, 100%"}, recorded: rec(3, t0),
			progress: progress(10, 10, 10), now: t0, phase: StepsDone, record: "2/2", write: true},
		{name: "partition 10 of 20, 4 updated: rolling", settings: map[string]string{PartitionAnnotation: "10"}, progress: progress(4, 4, 16), now: t0,
			phase: Progressing, partition: 10, message: "partition 10: rolling out to 10 of 20 (4 updated)"},
		{name: "partition 10 of 20 reached", settings: map[string]string{PartitionAnnotation: "10"}, progress: progress(10, 10, 10), now: t0,
			phase: PartitionReached, partition: 10, message: "partition 10 reached: 10 of 20 updated, 10 kept on the old revisions"},
		{name: "scaled to 40 at partition 10: 30 to update", settings: map[string]string{PartitionAnnotation: "10"},
			progress: Progress{Revision: "r2", Desired: 40, Updated: 10, UpdatedAvailable: 10, Old: 10}, now: t0,
			phase: Progressing, partition: 10},
		{name: "partition 0 finishes", settings: map[string]string{PartitionAnnotation: "0"}, progress: progress(10, 10, 10), now: t0},
		{name: "a partition on a first revision holds nothing", settings: map[string]string{PartitionAnnotation: "10"}, progress: progress(0, 0, 0), now: t0},
		{name: "a bad partition: not staged", settings: map[string]string{PartitionAnnotation: "-1"}, progress: progress(0, 0, 20), now: t0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := Decide(SettingsOf(tc.settings), tc.recorded, tc.progress, tc.now)
			record := ""
			if d.Record != nil {
				record = d.Record.String()
			}
			if d.Phase != tc.phase || d.Partition != tc.partition || record != tc.record || d.Write != tc.write || !d.Until.Equal(tc.until) {
				t.Fatalf("phase %q partition %d record %q write %v until %v; want %q %d %q %v %v",
					d.Phase, d.Partition, record, d.Write, d.Until, tc.phase, tc.partition, tc.record, tc.write, tc.until)
			}
			if tc.message != "" && d.Message != tc.message {
				t.Errorf("message %q, want %q", d.Message, tc.message)
			}
		})
	}
}

func TestRecordAndPromote(t *testing.T) {
	t0 := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	ann := map[string]string{StepsAnnotation: "10%, pause, 50%, pause: 5s, 100%"}
	if _, err := Promote(ann, false, t0); err == nil || !strings.Contains(err.Error(), "no staged rollout has started") {
		t.Fatalf("promote without a record: %v", err)
	}
	Record{Done: 1, Total: 5, Revision: "abc", Since: t0}.Set(ann)
	got, ok := RecordOf(ann)
	if !ok || got.String() != "1/5" || got.Revision != "abc" || !got.Since.Equal(t0) {
		t.Fatalf("record read back as %+v, %v", got, ok)
	}
	next, err := Promote(ann, false, t0.Add(time.Minute))
	if err != nil || next.String() != "2/5" || !next.Since.Equal(t0.Add(time.Minute)) || next.Revision != "abc" {
		t.Fatalf("promote: %+v, %v", next, err)
	}
	full, err := Promote(ann, true, t0)
	if err != nil || full.String() != "5/5" {
		t.Fatalf("promote --full: %+v, %v", full, err)
	}
	full.Set(ann)
	if _, err := Promote(ann, false, t0); err == nil || !strings.Contains(err.Error(), "all 5 steps are done") {
		t.Fatalf("promote when done: %v", err)
	}
	if !Clear(ann) || Clear(ann) {
		t.Fatal("Clear must remove the record once")
	}
	for _, bad := range []string{"x", "3/2", "-1/2", "1/0"} {
		if _, ok := RecordOf(map[string]string{StepAnnotation: bad}); ok {
			t.Errorf("record %q read as valid", bad)
		}
	}
}

func TestStatefulSetSettingsOf(t *testing.T) {
	for _, tc := range []struct {
		name        string
		annotations map[string]string
		want        string // steps, or the problem
	}{
		{name: "kroll.dev/partition alone names the field to use", annotations: map[string]string{PartitionAnnotation: "2"},
			want: `kroll.dev/partition="2" is for Deployments and DaemonSets: a StatefulSet keeps pods on its current revision with spec.updateStrategy.rollingUpdate.partition; set that field and remove the annotation; the rollout is not staged`},
		{name: "with steps, the steps govern", annotations: map[string]string{PartitionAnnotation: "2", StepsAnnotation: "50%"}, want: "[50%]"},
		{name: "steps alone", annotations: map[string]string{StepsAnnotation: "1, pause"}, want: "[1 pause]"},
	} {
		s := StatefulSetSettingsOf(tc.annotations)
		got := s.Problem()
		if got == "" {
			got = fmt.Sprint(s.Steps)
		}
		if s.Partition != nil || got != tc.want {
			t.Errorf("%s: %q (partition %v), want %q", tc.name, got, s.Partition, tc.want)
		}
	}
}
