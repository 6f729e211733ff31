package clustertest

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
)

// observer is what the invariant watchers share: informers that run a check at every
// event once their caches hold the full state (events before that would be judged on
// half a picture), and the violations the checks record.
type observer struct {
	what   string // what is watched, for messages: "deployment web"
	synced atomic.Bool

	mu         sync.Mutex
	observed   int
	violations []string
}

// start runs check at every event of infs (informers of factory) until t ends, waits
// for their caches, and checks once. Informer handlers run one at a time per informer,
// and the listers see every event applied in order.
func (o *observer) start(t testing.TB, factory informers.SharedInformerFactory, check func(), infs ...cache.SharedIndexInformer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	handler := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { check() },
		UpdateFunc: func(any, any) { check() },
		DeleteFunc: func(any) { check() },
	}
	for _, inf := range infs {
		if _, err := inf.AddEventHandler(handler); err != nil {
			t.Fatal(err)
		}
	}
	factory.Start(ctx.Done())
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			t.Fatalf("invariant watcher: the %v cache did not sync", typ)
		}
	}
	o.synced.Store(true)
	check()
}

// observation counts one observed state and returns how to record a violation in it;
// the caller holds o.mu until done.
func (o *observer) observation(state func() string) func(format string, args ...any) {
	o.observed++
	n := o.observed
	return func(format string, args ...any) {
		o.violations = append(o.violations, fmt.Sprintf("observation %d: %s [%s]", n, fmt.Sprintf(format, args...), state()))
	}
}

// Verify fails t if any observed state broke a bound, or if fewer than minObserved
// states were observed (a watcher that saw nothing proves nothing).
func (o *observer) Verify(t testing.TB, minObserved int) {
	t.Helper()
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, v := range o.violations {
		t.Errorf("%s: invariant broken: %s", o.what, v)
	}
	if o.observed < minObserved {
		t.Errorf("%s: only %d states observed, want at least %d", o.what, o.observed, minObserved)
	}
	t.Logf("%s: %d states observed, %d violations", o.what, o.observed, len(o.violations))
}

// Report logs what Verify would check, without failing t.
func (o *observer) Report(t testing.TB) {
	t.Helper()
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, v := range o.violations {
		t.Logf("%s: bound not kept: %s", o.what, v)
	}
	t.Logf("%s: %d states observed, %d bounds not kept", o.what, o.observed, len(o.violations))
}
