package manager

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/klog/v2"

	"github.com/kroll-dev/kroll/pkg/metrics"
)

// health is what /healthz and /readyz report.
type health struct {
	mu sync.Mutex
	// synced is true while the controllers run on synced caches.
	synced bool
	// standby is true while leader election runs and this process does not lead: it is
	// ready to take over, so it is ready (a Deployment of managers must not stall on it).
	standby bool
	// lease fails /healthz when this process leads but has not renewed its lease in time:
	// it may be cut off from the API and should be restarted.
	lease *leaderelection.HealthzAdaptor
}

// markSynced marks the caches synced unless ctx has ended: the controllers' stop
// (markStopped, after ctx ends) must not be undone by a late report.
func (h *health) markSynced(ctx context.Context) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if ctx.Err() == nil {
		h.synced = true
	}
}

// markStopped: the controllers no longer run.
func (h *health) markStopped() { h.mu.Lock(); h.synced = false; h.mu.Unlock() }

// markLeading: this process leads; it is ready once its caches have synced.
func (h *health) markLeading() { h.mu.Lock(); h.standby = false; h.mu.Unlock() }

func (h *health) ready() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.synced || h.standby {
		return nil
	}
	return errors.New("informer caches not synced yet")
}

func (h *health) healthy(r *http.Request) error {
	if h.lease != nil {
		return h.lease.Check(r)
	}
	return nil
}

// serve serves /healthz, /readyz and /metrics (and, with profiling, /debug/pprof/) on
// addr until the returned stop is called, and logs the address it listens on (port 0
// picks one).
func serve(ctx context.Context, addr string, h *health, profiling bool) (stop func(), err error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--bind-address %s: %w", addr, err)
	}
	check := func(probe func(*http.Request) error) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			if err := probe(r); err != nil {
				w.WriteHeader(http.StatusServiceUnavailable)
				fmt.Fprintf(w, "%v\n", err)
				return
			}
			fmt.Fprintln(w, "ok")
		}
	}
	mux := http.NewServeMux()
	mux.Handle("/healthz", check(h.healthy))
	mux.Handle("/readyz", check(func(*http.Request) error { return h.ready() }))
	mux.Handle("/metrics", promhttp.HandlerFor(metrics.Registry, promhttp.HandlerOpts{}))
	if profiling {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			klog.FromContext(ctx).Error(err, "Serving /healthz, /readyz and /metrics failed")
		}
	}()
	klog.FromContext(ctx).Info("Serving /healthz, /readyz and /metrics", "address", l.Addr().String())
	return func() {
		shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdownCtx)
	}, nil
}
