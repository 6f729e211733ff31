package manager

import (
	"net/http"

	"github.com/kroll-dev/kroll/pkg/metrics"
)

// maxInFlight bounds the requests the controllers of one process have in flight at once.
//
// Their clients share one HTTP/2 connection to the API server (client-go caches one
// transport per TLS configuration), and kube-apiserver lets a connection carry 100
// streams by default. A burst beyond that (a ReplicaSet deleting 250 pods at once,
// unthrottled) made net/http dial a new connection for each request it could not place,
// with a TLS handshake on both sides for each: kube-controller-manager's workload
// controllers held up to 159 sockets in a rollout of 1,000 unthrottled pods, where
// kroll's hold 2 (see bench/profiles/rolling-1000-controllers.md). The API server works
// through a burst at its own pace whichever connection it comes on, so holding the
// excess back until a stream is free loses no time, and makes no handshake. 64 leaves
// room on the connection for the informers' watches (a stream each, for as long as
// they run).
const maxInFlight = 64

// inFlightLimit holds a request back while maxInFlight others are in flight. Watches
// pass: they hold their stream for as long as they run, and are few.
type inFlightLimit struct {
	slots chan struct{}
}

func newInFlightLimit(n int) *inFlightLimit {
	return &inFlightLimit{slots: make(chan struct{}, n)}
}

// wrap puts the limit in front of rt.
func (l *inFlightLimit) wrap(rt http.RoundTripper) http.RoundTripper {
	return limitedTransport{limit: l, next: rt}
}

type limitedTransport struct {
	limit *inFlightLimit
	next  http.RoundTripper
}

func (t limitedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if metrics.RequestOf(req.Method, req.URL).Verb == "watch" {
		return t.next.RoundTrip(req)
	}
	select {
	case t.limit.slots <- struct{}{}:
	case <-req.Context().Done():
		return nil, req.Context().Err()
	}
	// The slot is free once the response's headers are in: the API server has answered,
	// and the body follows at once. A list's body can take longer; lists are few (an
	// informer's first list, a relist), and a slot freed early lets one request more
	// onto the connection meanwhile, where one held until a body is closed would be lost
	// for good by any reader that never closes it.
	defer func() { <-t.limit.slots }()
	return t.next.RoundTrip(req)
}

// WrappedRoundTripper lets client-go's transport utilities see through the limit.
func (t limitedTransport) WrappedRoundTripper() http.RoundTripper { return t.next }
