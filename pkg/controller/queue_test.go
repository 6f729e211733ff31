package controller

import (
	"context"
	"sync"
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
