package manager

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// heldTransport answers each request once release is closed (or its context ends),
// counting how many it holds at once.
type heldTransport struct {
	release       chan struct{}
	now, most, in atomic.Int32
}

func (h *heldTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	h.in.Add(1)
	n := h.now.Add(1)
	for {
		m := h.most.Load()
		if n <= m || h.most.CompareAndSwap(m, n) {
			break
		}
	}
	defer h.now.Add(-1)
	select {
	case <-h.release:
		return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody, Request: req}, nil
	case <-req.Context().Done():
		return nil, req.Context().Err()
	}
}

func TestInFlightLimit(t *testing.T) {
	held := &heldTransport{release: make(chan struct{})}
	rt := newInFlightLimit(3).wrap(held)
	get := func(ctx context.Context, url string) error {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		_, err := rt.RoundTrip(req)
		return err
	}

	// Ten requests and two watches at once: three requests reach the server, and the
	// watches, which are not counted.
	var wg sync.WaitGroup
	errs := make(chan error, 12)
	for range 10 {
		wg.Go(func() { errs <- get(context.Background(), "https://127.0.0.1/api/v1/pods/p") })
	}
	for range 2 {
		wg.Go(func() { errs <- get(context.Background(), "https://127.0.0.1/api/v1/pods?watch=true") })
	}
	deadline := time.Now().Add(5 * time.Second)
	for held.in.Load() < 5 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond) // a fourth request would have arrived by now
	if got := held.in.Load(); got != 5 {
		t.Errorf("requests at the server while held: %d, want 3 and 2 watches", got)
	}

	// One waiting for a slot gives up with its context.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if err := get(ctx, "https://127.0.0.1/api/v1/pods/q"); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a request held past its deadline: %v, want the deadline", err)
	}

	// Once answered, the rest go through, never more than three at once.
	close(held.release)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if got := held.in.Load(); got != 12 {
		t.Errorf("requests that reached the server: %d, want 12", got)
	}
	if most := held.most.Load(); most > 5 {
		t.Errorf("at most %d at the server at once, want 3 requests and 2 watches", most)
	}
}
