// Package timeline is the record of a workload's latest rollout over time: how many old,
// new, available and unavailable pods it had at each status change.
//
// kroll's controllers keep it in the annotation kroll.dev/rollout-timeline on the
// Deployment, StatefulSet or DaemonSet itself, written with the status write they make
// anyway (the status subresources of all three take annotations), so recording costs no
// extra API request. Events were the other candidate; they are deduplicated, expire after
// an hour, and say nothing about availability. A new rollout (a new revision) starts a
// new record; a record holds at most MaxSamples: when full, every other sample is
// dropped, so older stretches end up coarser than newer ones.
//
// One revision change does not start a new record: kroll's own automatic rollback
// (kroll.dev/on-failure: Rollback, or `kroll rollout abort`). The controller marks the
// record in the Update that rolls back (MarkRollback), and the record then follows the
// restored revision on from the failed one's samples, so that the chart shows what the
// rollback reacted to, and when.
//
// A record also keeps the stretches a PodDisruptionBudget held the rollout (Waits):
// the controller passes, with each stamp, the budget its DisruptionBudget condition
// names (False, BudgetExhausted; see pkg/disruption), and the record opens a wait when
// one appears and closes it when it is gone. At most MaxWaits are kept.
package timeline

import (
	"encoding/json"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Annotation holds a workload's timeline as compact JSON.
const Annotation = "kroll.dev/rollout-timeline"

// MaxSamples bounds a record (about 20 bytes a sample, so a few KiB of annotation).
const MaxSamples = 240

// MaxWaits bounds the budget waits a record keeps: a wait is about 45 bytes and its
// budget's name, so 16 waits of a 20-character name are about 1 KiB (16 × 65), and of
// the longest name Kubernetes allows (253) under 5 KiB (16 × 298): no more than a full
// record's samples.
// A rollout held at every step (minAvailable 8 of 10, one disruption at a time) waits
// once a pod; past MaxWaits the record closes the shortest pause between two waits of
// one budget (they then read as one wait, through the pause): the chart keeps where
// the rollout waited, losing the briefest gaps first.
const MaxWaits = 16

// Counts are a workload's pods at one moment, as its status reports them.
type Counts struct {
	// Old are pods not of the latest revision; New those that are.
	Old, New int32
	// Available and Unavailable split all desired pods: Unavailable is desired minus
	// available, never negative.
	Available, Unavailable int32
}

// Sample is Counts at At, measured from the start of the rollout.
type Sample struct {
	At time.Duration
	Counts
}

// Timeline is the record of one rollout: to Revision, from Start.
type Timeline struct {
	Revision string
	Start    time.Time
	// Desired is the replica count (for a DaemonSet, the nodes that should run a pod)
	// at the latest sample.
	Desired int32
	Samples []Sample
	// Rollback is kroll's automatic rollback during this record; nil when there was none.
	// Samples before Rollback.At count the failed revision's pods as New, those after
	// it the restored revision's (Revision).
	Rollback *Rollback
	// Waits are the stretches a PodDisruptionBudget held the rollout, oldest first,
	// at most MaxWaits; only the last may be Open.
	Waits []Wait
}

// Wait is a stretch of the rollout a PodDisruptionBudget held: the workload's
// DisruptionBudget condition was False (BudgetExhausted) and named PDB.
type Wait struct {
	// From is the first stamp that saw the wait, since Start. To is the first that
	// saw it over (another budget, or none), or while it is Open the latest stamp that
	// recorded a change (stamps that change nothing are not written, so an open wait
	// lasts at least to To, and for the chart to now).
	From, To time.Duration
	PDB      string
	// Open: the latest stamp still saw the rollout held by PDB.
	Open bool
}

// holding is the budget the record's open wait names; "" when none is open.
func (t Timeline) holding() string {
	if n := len(t.Waits); n > 0 && t.Waits[n-1].Open {
		return t.Waits[n-1].PDB
	}
	return ""
}

// waitsAfter is waits after a stamp at at that saw the rollout held by pdb ("" for none):
// the open wait goes on to at, and is closed there when pdb is another budget or
// none; a wait on pdb opens at at unless it is the one open. Past MaxWaits two waits
// are merged (see MaxWaits). waits is not modified.
//
//	open web-pdb from 2s, at 5s web-pdb  → web-pdb 2s..5s, open
//	open web-pdb from 2s, at 5s none     → web-pdb 2s..5s
//	open web-pdb from 2s, at 5s db-pdb   → web-pdb 2s..5s, db-pdb 5s..5s open
func waitsAfter(waits []Wait, pdb string, at time.Duration) []Wait {
	out := append([]Wait(nil), waits...)
	n := len(out)
	if n > 0 && out[n-1].Open {
		last := &out[n-1]
		last.To = max(at, last.From)
		if last.PDB == pdb {
			return out
		}
		last.Open = false
	}
	if pdb == "" {
		return out
	}
	out = append(out, Wait{From: at, To: at, PDB: pdb, Open: true})
	if len(out) > MaxWaits {
		out = merge(out)
	}
	return out
}

// merge is waits one shorter: the two neighbours of one budget with the shortest pause
// between them become one wait (the earliest such pair on a tie: older stretches grow
// coarse first); without such a pair, the oldest wait is dropped. Pauses of 1 s, 4 s
// and 2 s between four waits on web-pdb: the first two merge.
func merge(waits []Wait) []Wait {
	best := -1
	for i := 0; i+1 < len(waits); i++ {
		if waits[i].PDB != waits[i+1].PDB {
			continue
		}
		if best < 0 || waits[i+1].From-waits[i].To < waits[best+1].From-waits[best].To {
			best = i
		}
	}
	if best < 0 {
		return append([]Wait(nil), waits[1:]...)
	}
	out := append([]Wait(nil), waits[:best+1]...)
	out[best].To, out[best].Open = waits[best+1].To, waits[best+1].Open
	return append(out, waits[best+2:]...)
}

// Rollback is an automatic rollback within a record.
type Rollback struct {
	// At is when kroll rolled back, since Start.
	At time.Duration
	// From is the record's Revision when it rolled back: the failed revision in the
	// form the controller records (a Deployment's number, a StatefulSet's
	// ControllerRevision name, a DaemonSet's hash). The record follows the first
	// revision after it; the one after that starts a new record.
	From string
	// Failed names the failed revision for people: its number ("5").
	Failed string
}

// MarkRollback marks the record held in annotations (nil or absent: none) as rolled
// back at now from its revision, whose number is failed, and returns the new
// annotation value; "" when there is no record to mark, or it is marked already (a
// record holds one rollback: a rollback is never rolled back). Call it on the object
// of the Update that rolls back.
func MarkRollback(annotations map[string]string, failed string, now time.Time) string {
	t, err := Parse(annotations[Annotation])
	if err != nil || t.Revision == "" || t.Rollback != nil {
		return ""
	}
	t.Rollback = &Rollback{At: max(now.Sub(t.Start), 0), From: t.Revision, Failed: failed}
	return t.String()
}

// continues tells whether a record of t's revision goes on under revision: t was
// rolled back from its revision, and revision is the one it went back to.
func (t Timeline) continues(revision string) bool {
	return t.Rollback != nil && t.Rollback.From == t.Revision && revision != t.Revision
}

// Record appends counts at now to the timeline held in annotations (nil or absent: none)
// and returns the new annotation value, or "" when nothing changed: the same revision,
// counts and holding budget as the last sample. heldBy is the PodDisruptionBudget
// holding the rollout now ("" for none): the record's waits follow it (waitsAfter), and a
// change of it alone is a sample too, so that the chart's time axis reaches the end
// of every closed wait. A different revision starts a new record at now, but
// for the revision a marked record was rolled back to, which goes on in it (see
// MarkRollback).
func Record(annotations map[string]string, revision string, desired int32, c Counts, heldBy string, now time.Time) string {
	t, err := Parse(annotations[Annotation])
	switch {
	case err == nil && t.continues(revision):
		t.Revision = revision
	case err != nil || t.Revision != revision:
		t = Timeline{Revision: revision, Start: now}
	}
	if n := len(t.Samples); n > 0 && t.Samples[n-1].Counts == c && t.Desired == desired && t.holding() == heldBy {
		return ""
	}
	at := now.Sub(t.Start)
	if at < 0 {
		at = 0
	}
	if heldBy != "" || t.holding() != "" {
		t.Waits = waitsAfter(t.Waits, heldBy, at)
	}
	t.Desired = desired
	t.Samples = append(t.Samples, Sample{At: at, Counts: c})
	if len(t.Samples) > MaxSamples {
		t.Samples = thin(t.Samples)
	}
	return t.String()
}

// thin halves samples, keeping the first and the last: the shape of the chart survives,
// its resolution halves.
func thin(s []Sample) []Sample {
	out := make([]Sample, 0, len(s)/2+2)
	for i := 0; i < len(s)-1; i += 2 {
		out = append(out, s[i])
	}
	return append(out, s[len(s)-1])
}

// wire is the annotation's JSON: samples as [milliseconds, old, new, available, unavailable].
type wire struct {
	Revision string        `json:"revision"`
	Start    time.Time     `json:"start"`
	Desired  int32         `json:"desired"`
	Samples  [][5]int64    `json:"samples"`
	Rollback *wireRollback `json:"rollback,omitempty"`
	// Waits were added after the others: records without them read as no wait,
	// and readers without them skip them.
	Waits []wireWait `json:"waits,omitempty"`
}

// wireWait is a Wait with From and To in milliseconds, in short keys (a record may
// hold MaxWaits of them).
type wireWait struct {
	From int64  `json:"f"`
	To   int64  `json:"t"`
	PDB  string `json:"pdb"`
	Open bool   `json:"open,omitempty"`
}

// wireRollback is a Rollback with At in milliseconds.
type wireRollback struct {
	At     int64  `json:"at"`
	From   string `json:"from"`
	Failed string `json:"failed"`
}

// String is the annotation value of t.
func (t Timeline) String() string {
	w := wire{Revision: t.Revision, Start: t.Start.UTC().Truncate(time.Millisecond), Desired: t.Desired, Samples: make([][5]int64, len(t.Samples))}
	for i, s := range t.Samples {
		w.Samples[i] = [5]int64{s.At.Milliseconds(), int64(s.Old), int64(s.New), int64(s.Available), int64(s.Unavailable)}
	}
	if r := t.Rollback; r != nil {
		w.Rollback = &wireRollback{At: r.At.Milliseconds(), From: r.From, Failed: r.Failed}
	}
	for _, x := range t.Waits {
		w.Waits = append(w.Waits, wireWait{From: x.From.Milliseconds(), To: x.To.Milliseconds(), PDB: x.PDB, Open: x.Open})
	}
	b, _ := json.Marshal(w)
	return string(b)
}

// Parse reads an annotation value; "" is an empty timeline.
func Parse(v string) (Timeline, error) {
	if v == "" {
		return Timeline{}, nil
	}
	var w wire
	if err := json.Unmarshal([]byte(v), &w); err != nil {
		return Timeline{}, fmt.Errorf("annotation %s: %w", Annotation, err)
	}
	t := Timeline{Revision: w.Revision, Start: w.Start, Desired: w.Desired, Samples: make([]Sample, len(w.Samples))}
	for i, s := range w.Samples {
		t.Samples[i] = Sample{At: time.Duration(s[0]) * time.Millisecond, Counts: Counts{Old: int32(s[1]), New: int32(s[2]), Available: int32(s[3]), Unavailable: int32(s[4])}}
	}
	if r := w.Rollback; r != nil {
		t.Rollback = &Rollback{At: time.Duration(r.At) * time.Millisecond, From: r.From, Failed: r.Failed}
	}
	for _, x := range w.Waits {
		t.Waits = append(t.Waits, Wait{From: time.Duration(x.From) * time.Millisecond, To: time.Duration(x.To) * time.Millisecond, PDB: x.PDB, Open: x.Open})
	}
	return t, nil
}

// Unavailable is desired − available, never negative.
func Unavailable(desired, available int32) int32 {
	return max(desired-available, 0)
}

// Stamp records counts, and the budget holding the rollout (heldBy, "" for none), on
// obj's annotations (obj about to be written with its new status) and reports whether
// the record changed.
func Stamp(obj metav1.Object, revision string, desired int32, c Counts, heldBy string, now time.Time) bool {
	v := Record(obj.GetAnnotations(), revision, desired, c, heldBy, now)
	if v == "" {
		return false
	}
	a := obj.GetAnnotations()
	if a == nil {
		a = map[string]string{}
	}
	a[Annotation] = v
	obj.SetAnnotations(a)
	return true
}

// StampRollback marks the record on obj's annotations (obj about to be written with
// the rollback) with MarkRollback.
func StampRollback(obj metav1.Object, failed string, now time.Time) {
	if v := MarkRollback(obj.GetAnnotations(), failed, now); v != "" {
		obj.GetAnnotations()[Annotation] = v
	}
}
