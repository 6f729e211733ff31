package manager

import (
	"context"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/util/flowcontrol"
)

// A paced client's requests never exceed what its token bucket allows over any
// interval (burst, plus qps a second), and those held back go on the clock's ticks.
func TestPacedLimiterKeepsToItsBucket(t *testing.T) {
	const qps, burst, tick, n = 20, 30, 100 * time.Millisecond, 50
	l := newClientLimiter(qps, burst, tick)
	if _, ok := l.(*pacedLimiter); !ok {
		t.Fatalf("limiter for QPS %d, burst %d is %T, want paced", qps, burst, l)
	}
	start := time.Now()
	var mu sync.Mutex
	var at []time.Duration
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			if err := l.Wait(context.Background()); err != nil {
				t.Error(err)
			}
			mu.Lock()
			at = append(at, time.Since(start))
			mu.Unlock()
		})
	}
	wg.Wait()
	held := 0
	for _, a := range at {
		if a < tick/2 {
			continue // let go at once
		}
		held++
		// A held request goes on a tick (the timer fires a little after it).
		if off := start.Add(a).Sub(start.Add(a).Truncate(tick)); off > tick*6/10 {
			t.Errorf("a held request went %v after a tick", off)
		}
	}
	if held == 0 || held == n {
		t.Fatalf("%d of %d requests held back; want some at once, the rest paced", held, n)
	}
	for _, from := range at {
		for _, w := range []time.Duration{0, tick, 5 * tick} {
			in := 0
			for _, a := range at {
				if a >= from && a <= from+w {
					in++
				}
			}
			if limit := burst + int(qps*w.Seconds()); in > limit {
				t.Errorf("%d requests within %v of %v, more than the bucket's %d", in, w, from, limit)
			}
		}
	}
}

// Without room for a tick's gathering, or without a limit, a client keeps client-go's
// own limiter, or none.
func TestClientLimiterFallsBack(t *testing.T) {
	if l := newClientLimiter(-1, 10, paceTick); l != nil {
		t.Errorf("no limit gave %T", l)
	}
	if l := newClientLimiter(100, 20, paceTick); l == nil {
		t.Error("QPS 100, burst 20: no limiter")
	} else if _, paced := l.(*pacedLimiter); paced {
		t.Error("QPS 100, burst 20 is paced; a tick gathers 25, more than the burst")
	}
	var _ flowcontrol.RateLimiter = &pacedLimiter{}
}

// A wait given up frees its token for the next.
func TestPacedLimiterWaitCancelled(t *testing.T) {
	l := newClientLimiter(1, 2, time.Second).(*pacedLimiter)
	l.bucket.Allow() // the bucket holds 1 (2 less the tick's 1); take it
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := l.Wait(ctx); err == nil {
		t.Fatal("a wait past its context's end returned no error")
	}
	if got := l.bucket.Tokens(); got < -0.1 {
		t.Errorf("after a cancelled wait the bucket holds %.2f tokens, want its reservation back", got)
	}
}
