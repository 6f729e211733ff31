package controller

import (
	"context"
	"sync"
	"time"

	"k8s.io/klog/v2"

	"github.com/kroll-dev/kroll/pkg/staging"
)

// Wait is why a workload's rollout is not moving on after a sync: what it waits on,
// computed by a pure function of its kind from what the sync already read. The zero
// Wait means it waits on nothing: at rest, or moving on by itself.
type Wait struct {
	// Reason names the kind of wait in one CamelCase word ("NewPodsUnavailable",
	// "ExpectationsPending"). Counts never go into it: the same wait with other
	// counts is the same wait (one line, not a line per pod). Empty: no wait.
	Reason string
	// Message says it in a sentence, with the numbers that matter.
	Message string
	// Details are more key/value pairs for the log line (counts, budgets, ages).
	Details []any
}

// WaitRepeat is how often a wait that has not changed is logged again while its
// workload keeps being synced: a stalled rollout shows in the log within this time
// of any sync, and a slow one costs a line a minute.
const WaitRepeat = time.Minute

// WaitLog logs, at the default verbosity, why rollouts in progress are not moving,
// as klog key/value pairs: one line when a workload's wait begins or changes reason,
// one more at most every WaitRepeat while the same wait is seen again, and one when
// it ends (the workload moved on or came to rest) — the last one only for waits that
// were logged. Workloads at rest log nothing, and neither does the same wait seen on
// every pod's event. Safe for concurrent use.
type WaitLog struct {
	kind   string // the log key naming the workload: "deployment", "replicaSet", ...
	now    func() time.Time
	repeat time.Duration

	mu sync.Mutex
	m  map[string]*waitEntry // by workload key
}

type waitEntry struct {
	reason string
	since  time.Time // when this reason was first seen
	logged time.Time // when it was last logged
}

// NewWaitLog returns an empty WaitLog naming workloads under kind (klog's key, e.g.
// "deployment"), on the clock now.
func NewWaitLog(kind string, now func() time.Time) *WaitLog {
	return &WaitLog{kind: kind, now: now, repeat: WaitRepeat, m: map[string]*waitEntry{}}
}

// Observe records what obj's rollout waits on after a sync and logs it as the type
// says, with the logger of ctx.
func (w *WaitLog) Observe(ctx context.Context, obj klog.KMetadata, wait Wait) {
	if w == nil {
		return
	}
	key := obj.GetNamespace() + "/" + obj.GetName()
	now := w.now()
	w.mu.Lock()
	e := w.m[key]
	var line waitLine
	switch {
	case wait.Reason == "" && e == nil:
		w.mu.Unlock()
		return
	case wait.Reason == "":
		delete(w.m, key)
		line = waitLine{msg: "Rollout no longer waiting", reason: e.reason, waited: now.Sub(e.since)}
	case e == nil || e.reason != wait.Reason:
		line = waitLine{msg: "Rollout waiting", reason: wait.Reason}
		w.m[key] = &waitEntry{reason: wait.Reason, since: now, logged: now}
	case now.Sub(e.logged) >= w.repeat:
		line = waitLine{msg: "Rollout still waiting", reason: wait.Reason, waited: now.Sub(e.since)}
		e.logged = now
	default:
		w.mu.Unlock()
		return
	}
	w.mu.Unlock()
	kv := []any{w.kind, klog.KObj(obj), "reason", line.reason}
	if line.msg != "Rollout waiting" {
		kv = append(kv, "waited", line.waited.Round(time.Millisecond))
	}
	if wait.Reason != "" {
		kv = append(kv, "message", wait.Message)
		kv = append(kv, wait.Details...)
	}
	klog.FromContext(ctx).Info(line.msg, kv...)
}

type waitLine struct {
	msg    string
	reason string
	waited time.Duration
}

// Forget drops what is remembered of a workload that is gone.
func (w *WaitLog) Forget(key string) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.m, key)
}

// Pending is what key's expectations still wait for: creates issued and not observed,
// deletions not observed, and since when. ok is false when nothing is pending (or
// what was has expired, and the owner is resized again regardless).
func (e *Expectations) Pending(key string) (creates, deletes int, since time.Time, ok bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	x, found := e.m[key]
	if !found || (x.creates <= 0 && len(x.deletes) == 0) || e.now().Sub(x.since) > expectationsTTL {
		return 0, 0, time.Time{}, false
	}
	return max(x.creates, 0), len(x.deletes), x.since, true
}

// ExpectationsWait is the wait of an owner whose pod creates or deletes (creates,
// deletes, issued at since) are not yet observed, once they have been pending for
// longer than grace: until they are, the owner's pods are not resized again. Briefer
// waits are every resize's ordinary course and are not reported.
func ExpectationsWait(creates, deletes int, since, now time.Time, grace time.Duration) Wait {
	age := now.Sub(since)
	if creates+deletes == 0 || age < grace {
		return Wait{}
	}
	return Wait{
		Reason:  "ExpectationsPending",
		Message: "pod creates or deletes issued but not yet seen in the cache; not resizing until they are",
		Details: []any{"createsUnobserved", creates, "deletesUnobserved", deletes, "pendingSince", since.UTC().Format(time.RFC3339), "pendingFor", age.Round(time.Millisecond)},
	}
}

// StagedWait is the wait of a staged rollout held at its partition or a step's pause
// (StagedHolds), with details (the counts of the workload's kind) appended; the zero
// Wait when d does not hold.
func StagedWait(d staging.Decision, details ...any) Wait {
	if !StagedHolds(d) {
		return Wait{}
	}
	details = append(details, "phase", string(d.Phase), "partition", d.Partition)
	if !d.Until.IsZero() {
		details = append(details, "until", d.Until.UTC().Format(time.RFC3339))
	}
	return Wait{Reason: "StagedStepHeld", Message: "staged rollout held: " + d.Message, Details: details}
}
