package timeline

import (
	"testing"
	"time"
)

func TestRecord(t *testing.T) {
	t0 := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	c := func(old, new, avail, unavail int32) Counts { return Counts{old, new, avail, unavail} }
	tests := []struct {
		name         string
		existing     string
		revision     string
		counts       Counts
		at           time.Time
		wantChange   bool
		wantStart    time.Time
		wantSamples  []Sample
		wantRollback *Rollback
	}{
		{
			name: "first status write starts the record at now", revision: "2", counts: c(10, 0, 10, 0), at: t0,
			wantChange: true, wantStart: t0, wantSamples: []Sample{{0, c(10, 0, 10, 0)}},
		},
		{
			name:     "rollout step 2: 3 new pods 1.5 s in are appended",
			existing: Timeline{Revision: "2", Start: t0, Desired: 10, Samples: []Sample{{0, c(10, 0, 10, 0)}}}.String(),
			revision: "2", counts: c(10, 3, 10, 0), at: t0.Add(1500 * time.Millisecond),
			wantChange: true, wantStart: t0, wantSamples: []Sample{{0, c(10, 0, 10, 0)}, {1500 * time.Millisecond, c(10, 3, 10, 0)}},
		},
		{
			name:     "the same counts again change nothing",
			existing: Timeline{Revision: "2", Start: t0, Desired: 10, Samples: []Sample{{0, c(10, 3, 10, 0)}}}.String(),
			revision: "2", counts: c(10, 3, 10, 0), at: t0.Add(time.Second),
		},
		{
			name:     "a new revision starts a new record",
			existing: Timeline{Revision: "2", Start: t0, Desired: 10, Samples: []Sample{{0, c(0, 10, 10, 0)}}}.String(),
			revision: "3", counts: c(10, 0, 10, 0), at: t0.Add(time.Minute),
			wantChange: true, wantStart: t0.Add(time.Minute), wantSamples: []Sample{{0, c(10, 0, 10, 0)}},
		},
		{
			name: "the revision kroll rolled back to goes on in the failed one's record, rollback kept",
			existing: Timeline{Revision: "5", Start: t0, Desired: 10, Samples: []Sample{{0, c(10, 0, 10, 0)}, {20 * time.Second, c(10, 2, 10, 0)}},
				Rollback: &Rollback{At: 30 * time.Second, From: "5", Failed: "5"}}.String(),
			revision: "6", counts: c(2, 10, 10, 0), at: t0.Add(31 * time.Second),
			wantChange: true, wantStart: t0, wantRollback: &Rollback{At: 30 * time.Second, From: "5", Failed: "5"},
			wantSamples: []Sample{{0, c(10, 0, 10, 0)}, {20 * time.Second, c(10, 2, 10, 0)}, {31 * time.Second, c(2, 10, 10, 0)}},
		},
		{
			name: "the user's next change after a rollback starts a new record",
			existing: Timeline{Revision: "6", Start: t0, Desired: 10, Samples: []Sample{{0, c(0, 10, 10, 0)}},
				Rollback: &Rollback{At: 30 * time.Second, From: "5", Failed: "5"}}.String(),
			revision: "7", counts: c(10, 0, 10, 0), at: t0.Add(time.Hour),
			wantChange: true, wantStart: t0.Add(time.Hour), wantSamples: []Sample{{0, c(10, 0, 10, 0)}},
		},
		{
			name: "a set's record follows its ControllerRevision names across the rollback",
			existing: Timeline{Revision: "web-7c9d", Start: t0, Desired: 10, Samples: []Sample{{0, c(10, 0, 10, 0)}},
				Rollback: &Rollback{At: 5 * time.Second, From: "web-7c9d", Failed: "3"}}.String(),
			revision: "web-5f8b", counts: c(1, 9, 9, 1), at: t0.Add(6 * time.Second),
			wantChange: true, wantStart: t0, wantRollback: &Rollback{At: 5 * time.Second, From: "web-7c9d", Failed: "3"},
			wantSamples: []Sample{{0, c(10, 0, 10, 0)}, {6 * time.Second, c(1, 9, 9, 1)}},
		},
		{
			name: "an unreadable record is started again", existing: "{not json", revision: "2", counts: c(1, 0, 1, 0), at: t0,
			wantChange: true, wantStart: t0, wantSamples: []Sample{{0, c(1, 0, 1, 0)}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Record(map[string]string{Annotation: tt.existing}, tt.revision, 10, tt.counts, tt.at)
			if (got != "") != tt.wantChange {
				t.Fatalf("changed = %v, want %v (%q)", got != "", tt.wantChange, got)
			}
			if got == "" {
				return
			}
			tl, err := Parse(got)
			if err != nil {
				t.Fatal(err)
			}
			if !tl.Start.Equal(tt.wantStart) || tl.Revision != tt.revision || tl.Desired != 10 {
				t.Errorf("record %+v, want revision %s from %v, desired 10", tl, tt.revision, tt.wantStart)
			}
			if (tl.Rollback == nil) != (tt.wantRollback == nil) || (tl.Rollback != nil && *tl.Rollback != *tt.wantRollback) {
				t.Errorf("rollback %+v, want %+v", tl.Rollback, tt.wantRollback)
			}
			if len(tl.Samples) != len(tt.wantSamples) {
				t.Fatalf("samples %v, want %v", tl.Samples, tt.wantSamples)
			}
			for i := range tl.Samples {
				if tl.Samples[i] != tt.wantSamples[i] {
					t.Errorf("sample %d = %v, want %v", i, tl.Samples[i], tt.wantSamples[i])
				}
			}
		})
	}
}

func TestRecordStaysBounded(t *testing.T) {
	t0 := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	annotations := map[string]string{}
	for i := 0; i < 1000; i++ {
		v := Record(annotations, "2", 1000, Counts{Old: int32(1000 - i), New: int32(i)}, t0.Add(time.Duration(i)*time.Second))
		if v == "" {
			t.Fatalf("sample %d not recorded", i)
		}
		annotations[Annotation] = v
	}
	tl, err := Parse(annotations[Annotation])
	if err != nil {
		t.Fatal(err)
	}
	if n := len(tl.Samples); n > MaxSamples || n < MaxSamples/2 {
		t.Errorf("%d samples after 1000 records, want between %d and %d", n, MaxSamples/2, MaxSamples)
	}
	first, last := tl.Samples[0], tl.Samples[len(tl.Samples)-1]
	if first.At != 0 || last.At != 999*time.Second || last.New != 999 {
		t.Errorf("thinning lost the ends: first %v, last %v", first, last)
	}
	if len(annotations[Annotation]) > 16*1024 {
		t.Errorf("annotation is %d bytes", len(annotations[Annotation]))
	}
}

func TestMarkRollback(t *testing.T) {
	t0 := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	rolling := Timeline{Revision: "5", Start: t0, Desired: 4, Samples: []Sample{{0, Counts{Old: 4, Available: 4}}}}
	marked := rolling
	marked.Rollback = &Rollback{At: time.Second, From: "5", Failed: "5"}
	tests := []struct {
		name     string
		existing string
		at       time.Time
		want     *Rollback // nil: no change
	}{
		{"revision 5 failing 42 s in is marked rolled back from 5 at 42 s", rolling.String(), t0.Add(42 * time.Second), &Rollback{At: 42 * time.Second, From: "5", Failed: "5"}},
		{"a clock behind the record's start marks 0 s", rolling.String(), t0.Add(-time.Second), &Rollback{At: 0, From: "5", Failed: "5"}},
		{"no record: nothing to mark", "", t0, nil},
		{"an unreadable record is not marked", "{", t0, nil},
		{"a record holds one rollback", marked.String(), t0.Add(time.Minute), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := MarkRollback(map[string]string{Annotation: tt.existing}, "5", tt.at)
			if tt.want == nil {
				if got != "" {
					t.Fatalf("marked: %s", got)
				}
				return
			}
			tl, err := Parse(got)
			if err != nil {
				t.Fatal(err)
			}
			if tl.Rollback == nil || *tl.Rollback != *tt.want || len(tl.Samples) != 1 || tl.Revision != "5" {
				t.Errorf("got %+v (rollback %+v), want rollback %+v and the record as it was", tl, tl.Rollback, tt.want)
			}
		})
	}
}
