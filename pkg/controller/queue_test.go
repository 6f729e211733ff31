package controller

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/kroll-dev/kroll/pkg/metrics"
)

// A sync that panics is a failed sync: the worker survives, the panic is counted, and the
// key comes back with the queue's back-off (5ms, then 10ms) until a sync succeeds.
func TestQueueRecoversAPanickingSyncAndRetriesWithBackoff(t *testing.T) {
	const name = "test-panics"
	q := NewQueue(name)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	var mu sync.Mutex
	var calls []time.Time
	succeeded := make(chan struct{})
	sync := func(_ context.Context, key string) error {
		mu.Lock()
		defer mu.Unlock()
		calls = append(calls, time.Now())
		if len(calls) <= 2 {
			var m map[string]int
			m[key]++ // a nil-map write: a real panic from a bug, not a panic(…) of the test's
		}
		if len(calls) == 3 {
			close(succeeded)
		}
		return nil
	}
	done := make(chan struct{})
	go func() { defer close(done); q.Run(ctx, name, 1, nil, sync) }()
	q.Add("ns/broken")

	select {
	case <-succeeded:
	case <-ctx.Done():
		t.Fatal("the key was not synced a third time after two panics")
	}
	cancel()
	<-done

	if got := testutil.ToFloat64(metrics.SyncPanics.WithLabelValues(name)); got != 2 {
		t.Errorf("kroll_sync_panics_total{controller=%q} = %v, want 2", name, got)
	}
	for i, min := range []time.Duration{5 * time.Millisecond, 10 * time.Millisecond} {
		if gap := calls[i+1].Sub(calls[i]); gap < min {
			t.Errorf("retry %d came %v after the panic, want the back-off of at least %v", i+1, gap, min)
		}
	}
	if n := q.NumRequeues("ns/broken"); n != 0 {
		t.Errorf("after the successful sync the key still has %d requeues; want them forgotten", n)
	}
}

// A panic in a goroutine a sync fans out to (a create batch) comes back to the sync's
// goroutine with the stack where it happened, and so to the queue's recovery: counted,
// retried, the process alive.
func TestQueueRecoversAPanicInASyncsBatch(t *testing.T) {
	const name = "test-batch-panics"
	q := NewQueue(name)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var calls atomic.Int32
	succeeded := make(chan struct{})
	sync := func(context.Context, string) error {
		if calls.Add(1) == 2 {
			close(succeeded)
			return nil
		}
		_, err := SlowStartBatch(4, 1, func() error {
			var p *Panic
			_ = p.Value // a nil dereference in each create of the batch
			return nil
		})
		return err
	}
	done := make(chan struct{})
	go func() { defer close(done); q.Run(ctx, name, 1, nil, sync) }()
	q.Add("ns/fans-out")
	select {
	case <-succeeded:
	case <-ctx.Done():
		t.Fatal("the key was not synced again after the panic in its batch")
	}
	cancel()
	<-done
	if got := testutil.ToFloat64(metrics.SyncPanics.WithLabelValues(name)); got != 1 {
		t.Errorf("kroll_sync_panics_total{controller=%q} = %v, want 1", name, got)
	}
}

func TestPanicsRaiseKeepsTheOriginalStack(t *testing.T) {
	var ps Panics
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); defer ps.Catch(); panic("in a goroutine") }()
	wg.Wait()
	defer func() {
		p, ok := recover().(*Panic)
		if !ok || p.Value != "in a goroutine" || !strings.Contains(p.String(), "TestPanicsRaiseKeepsTheOriginalStack.func") {
			t.Errorf("recovered %v, want the goroutine's panic with its stack", p)
		}
	}()
	ps.Raise()
	t.Error("Raise did not panic")
}
