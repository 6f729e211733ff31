package timeline

import (
	"testing"
	"time"
)

func TestRecord(t *testing.T) {
	t0 := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	c := func(old, new, avail, unavail int32) Counts { return Counts{old, new, avail, unavail} }
	tests := []struct {
		name        string
		existing    string
		revision    string
		counts      Counts
		at          time.Time
		wantChange  bool
		wantStart   time.Time
		wantSamples []Sample
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
