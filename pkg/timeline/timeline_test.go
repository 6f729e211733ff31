package timeline

import (
	"fmt"
	"strings"
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
			got := Record(map[string]string{Annotation: tt.existing}, tt.revision, 10, tt.counts, "", tt.at)
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
		v := Record(annotations, "2", 1000, Counts{Old: int32(1000 - i), New: int32(i)}, "", t0.Add(time.Duration(i)*time.Second))
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

func TestWaitsAfter(t *testing.T) {
	s := time.Second
	open := func(pdb string, from, to time.Duration) Wait { return Wait{From: from, To: to, PDB: pdb, Open: true} }
	closed := func(pdb string, from, to time.Duration) Wait { return Wait{From: from, To: to, PDB: pdb} }
	tests := []struct {
		name  string
		waits []Wait
		pdb   string
		at    time.Duration
		want  []Wait
	}{
		{"not held, no wait: none", nil, "", 3 * s, nil},
		{"held by web-pdb at 2 s: a wait opens there", nil, "web-pdb", 2 * s, []Wait{open("web-pdb", 2*s, 2*s)}},
		{"still held at 5 s: the wait goes on to 5 s", []Wait{open("web-pdb", 2*s, 2*s)}, "web-pdb", 5 * s, []Wait{open("web-pdb", 2*s, 5*s)}},
		{"free at 7 s: the wait ends there", []Wait{open("web-pdb", 2*s, 5*s)}, "", 7 * s, []Wait{closed("web-pdb", 2*s, 7*s)}},
		{"held again at 9 s: a second wait", []Wait{closed("web-pdb", 2*s, 7*s)}, "web-pdb", 9 * s, []Wait{closed("web-pdb", 2*s, 7*s), open("web-pdb", 9*s, 9*s)}},
		{"another budget at 6 s: one wait ends and the other opens there",
			[]Wait{open("web-pdb", 2*s, 5*s)}, "zone-pdb", 6 * s, []Wait{closed("web-pdb", 2*s, 6*s), open("zone-pdb", 6*s, 6*s)}},
		{"a stamp before the wait's start (a clock behind) ends it where it began",
			[]Wait{open("web-pdb", 2*s, 2*s)}, "", s, []Wait{closed("web-pdb", 2*s, 2*s)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := fmt.Sprint(tt.waits)
			got := waitsAfter(tt.waits, tt.pdb, tt.at)
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("waits = %v, want %v", got, tt.want)
			}
			if fmt.Sprint(tt.waits) != before {
				t.Errorf("the waits given changed: %v, were %s", tt.waits, before)
			}
		})
	}
}

func TestWaitsStayBounded(t *testing.T) {
	s := time.Second
	// MaxWaits waits on web-pdb, 10 s apart, each 5 s long: pauses of 5 s, but the
	// one after the third wait (index 2), which is 1 s.
	var full []Wait
	for i := range MaxWaits {
		from := time.Duration(i) * 10 * s
		full = append(full, Wait{From: from, To: from + 5*s, PDB: "web-pdb"})
	}
	full[2].To = full[3].From - s
	tests := []struct {
		name     string
		waits    []Wait
		pdb      string
		at       time.Duration
		wantLen  int
		wantAt   int // index of the merged wait, -1: none merged
		wantWait Wait
	}{
		{"the shortest pause (1 s, after the third wait) is closed", full, "web-pdb", 500 * s, MaxWaits, 2, Wait{From: 20 * s, To: 35 * s, PDB: "web-pdb"}},
		{"a pause of the same length further on loses to the first", append(append([]Wait(nil), full[:MaxWaits-1]...), Wait{From: 150 * s, To: 155 * s, PDB: "web-pdb"}), "web-pdb", 156 * s,
			MaxWaits, 2, Wait{From: 20 * s, To: 35 * s, PDB: "web-pdb"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := waitsAfter(tt.waits, tt.pdb, tt.at)
			if len(got) != tt.wantLen {
				t.Fatalf("%d waits, want %d: %v", len(got), tt.wantLen, got)
			}
			if got[tt.wantAt] != tt.wantWait {
				t.Errorf("wait %d = %v, want %v", tt.wantAt, got[tt.wantAt], tt.wantWait)
			}
			if last := got[len(got)-1]; !last.Open || last.From != tt.at || last.PDB != tt.pdb {
				t.Errorf("the newest wait is %v, want it open at %v", last, tt.at)
			}
		})
	}

	// Every wait on a budget of its own: nothing to merge, the oldest goes.
	var distinct []Wait
	for i := range MaxWaits {
		distinct = append(distinct, Wait{From: time.Duration(i) * s, To: time.Duration(i)*s + s/2, PDB: fmt.Sprintf("pdb-%d", i)})
	}
	got := waitsAfter(distinct, "last-pdb", 100*s)
	if len(got) != MaxWaits || got[0].PDB != "pdb-1" || got[MaxWaits-1].PDB != "last-pdb" {
		t.Errorf("distinct budgets: %v, want pdb-1 … last-pdb", got)
	}
}

// A rollout held before each of its 100 pods: the record keeps MaxWaits waits, the
// first from the first hold and the last open, and stays a few KiB.
func TestRecordWaits(t *testing.T) {
	t0 := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	annotations := map[string]string{}
	stamp := func(i int, pdb string, at time.Duration) {
		t.Helper()
		v := Record(annotations, "2", 100, Counts{Old: int32(100 - i), New: int32(i), Available: 100}, pdb, t0.Add(at))
		if v == "" {
			t.Fatalf("stamp %d (%q at %v) not recorded", i, pdb, at)
		}
		annotations[Annotation] = v
	}
	for i := range 100 {
		at := time.Duration(i) * 10 * time.Second
		stamp(i, "", at)                                                        // a pod replaced
		stamp(i, "a-pod-disruption-budget-of-forty-characters", at+time.Second) // then held, counts unchanged
	}
	if v := Record(annotations, "2", 100, Counts{Old: 1, New: 99, Available: 100}, "a-pod-disruption-budget-of-forty-characters", t0.Add(time.Hour)); v != "" {
		t.Errorf("the same counts, still held: recorded %s", v)
	}
	tl, err := Parse(annotations[Annotation])
	if err != nil {
		t.Fatal(err)
	}
	if len(tl.Waits) != MaxWaits {
		t.Fatalf("%d waits, want %d", len(tl.Waits), MaxWaits)
	}
	first, last := tl.Waits[0], tl.Waits[len(tl.Waits)-1]
	if first.From != time.Second || first.Open || !last.Open || last.From != 991*time.Second {
		t.Errorf("waits from %v to %v, want the first from 1s and the last open from 991s", first, last)
	}
	if n := len(annotations[Annotation]); n > 8*1024 {
		t.Errorf("annotation is %d bytes", n)
	}
}

// Records written before waits were kept still read, as records without waits; a
// record's waits survive the annotation's round trip.
func TestWaitsWire(t *testing.T) {
	old := `{"revision":"2","start":"2026-11-21T10:00:00Z","desired":3,"samples":[[0,3,0,3,0],[1500,3,1,3,0]]}`
	tl, err := Parse(old)
	if err != nil || len(tl.Samples) != 2 || tl.Waits != nil {
		t.Fatalf("record without waits: %+v, %v", tl, err)
	}
	tl.Waits = []Wait{{From: 1500 * time.Millisecond, To: 4 * time.Second, PDB: "web-pdb"}, {From: 5 * time.Second, To: 6 * time.Second, PDB: "web-pdb", Open: true}}
	back, err := Parse(tl.String())
	if err != nil || fmt.Sprint(back.Waits) != fmt.Sprint(tl.Waits) {
		t.Errorf("round trip: %v (%v), want %v", back.Waits, err, tl.Waits)
	}
	if !strings.Contains(tl.String(), `"waits":[{"f":1500,"t":4000,"pdb":"web-pdb"},{"f":5000,"t":6000,"pdb":"web-pdb","open":true}]`) {
		t.Errorf("wire form: %s", tl.String())
	}
}
