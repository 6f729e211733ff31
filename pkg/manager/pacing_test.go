package manager

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/util/flowcontrol"
)

// waitAll has n requests wait on l at once and returns when each went, from start.
func waitAll(t *testing.T, l flowcontrol.RateLimiter, n int) []time.Duration {
	t.Helper()
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
	slices.Sort(at)
	return at
}

// A paced client's requests never exceed what its token bucket allows over any
// interval (burst, plus qps a second), and those held back go in groups.
func TestPacedLimiterKeepsToItsBucket(t *testing.T) {
	const qps, burst, tick, n = 20, 30, 250 * time.Millisecond, 50
	l := newClientLimiter(qps, burst, tick)
	if _, ok := l.(*pacedLimiter); !ok {
		t.Fatalf("limiter for QPS %d, burst %d is %T, want paced", qps, burst, l)
	}
	at := waitAll(t, l, n)
	held, groups := 0, 0
	for i, a := range at {
		if a < 25*time.Millisecond {
			continue // let go at once
		}
		held++
		if at[i-1] < a-5*time.Millisecond {
			groups++ // a request not let go with the one before it
		}
	}
	if held == 0 || held == n {
		t.Fatalf("%d of %d requests held back; want some at once, the rest paced", held, n)
	}
	if groups > held/3 {
		t.Errorf("%d held requests went in %d groups; want five a group (a tick's tokens)", held, groups)
	}
	for _, from := range at {
		for _, w := range []time.Duration{0, tick / 2, tick, 3 * tick} {
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

// A held request alone goes when its token comes, not at its tick's end.
func TestPacedLimiterLoneRequest(t *testing.T) {
	l := newClientLimiter(20, 50, 2*time.Second).(*pacedLimiter)
	for l.bucket.Allow() {
	}
	start := time.Now()
	if err := l.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	// Its token comes 50 ms on; the tick's end is up to two seconds away.
	if took := time.Since(start); took > time.Second {
		t.Errorf("a lone held request waited %v for the end of its tick", took)
	}
}

// Without room for a tick's gathering, or without a limit, a client keeps client-go's
// own limiter, or none.
func TestClientLimiterFallsBack(t *testing.T) {
	if l := newClientLimiter(-1, 10, paceTick); l != nil {
		t.Errorf("no limit gave %T", l)
	}
	if l := newClientLimiter(100, 25, paceTick); l == nil {
		t.Error("QPS 100, burst 25: no limiter")
	} else if _, paced := l.(*pacedLimiter); paced {
		t.Error("QPS 100, burst 25 is paced; a tick gathers 25, as many as the burst")
	}
	var _ flowcontrol.RateLimiter = &pacedLimiter{}
}

// A wait given up frees its token for the next.
func TestPacedLimiterWaitCancelled(t *testing.T) {
	l := newClientLimiter(1, 2, time.Second).(*pacedLimiter)
	for l.bucket.Allow() {
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := l.Wait(ctx); err == nil {
		t.Fatal("a wait past its context's end returned no error")
	}
	if got := l.bucket.Tokens(); got < -0.1 {
		t.Errorf("after a cancelled wait the bucket holds %.2f tokens, want its reservation back", got)
	}
}
