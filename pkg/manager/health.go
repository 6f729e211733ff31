package manager

import (
	"context"
	"errors"
	"net/http"
	"sync"

	"k8s.io/client-go/tools/leaderelection"
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
