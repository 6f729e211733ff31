package manager

import (
	"errors"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/tools/record/util"
)

// A broadcaster posts its events from a queue of its own, and one shut down drops what
// is queued: the events a controller recorded in its last moments before the manager
// stopped (a rollout's last step, a scaling) would never reach the API, and a
// controller started afterwards does not record them again, the state they announce
// being written already. So a stopping manager first lets its broadcasters post what
// they hold, for at most eventFlushTimeout, and only then shuts them down.
const (
	// eventFlushTimeout bounds the wait: an API server that does not answer, or a post
	// the broadcaster retries after a failure, holds a stop no longer than this.
	eventFlushTimeout = 5 * time.Second
	// eventFlushQuiet is how long the sink has had no post in flight and none begun
	// when the events still counted as queued are taken for events the broadcaster
	// drops on purpose (its spam filter, a full queue) and will never post.
	eventFlushQuiet = 200 * time.Millisecond
)

// eventLedger counts a manager's events from their recording to their post.
type eventLedger struct {
	mu sync.Mutex
	// recorded is the events handed to the broadcasters; posted the sink calls that
	// settled one (created, patched, or refused for good).
	recorded, posted int
	// inFlight is the sink calls under way; last when an event was last recorded, or a
	// sink call began or ended.
	inFlight int
	last     time.Time
}

// recorder counts the events recorded through r, before r queues them.
func (l *eventLedger) recorder(r record.EventRecorder) record.EventRecorder {
	return countingRecorder{EventRecorder: r, ledger: l}
}

// sink counts the posts through s.
func (l *eventLedger) sink(s record.EventSink) record.EventSink {
	return countingSink{EventSink: s, ledger: l}
}

// drained tells whether every event recorded has been posted, or nothing has been
// recorded, posted or begun for quiet while no post is under way.
func (l *eventLedger) drained(now time.Time, quiet time.Duration) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.inFlight == 0 && (l.posted >= l.recorded || now.Sub(l.last) >= quiet)
}

// wait returns once the ledger is drained, or after timeout.
func (l *eventLedger) wait(timeout, quiet time.Duration) {
	deadline := time.Now().Add(timeout)
	for now := time.Now(); now.Before(deadline) && !l.drained(now, quiet); now = time.Now() {
		time.Sleep(10 * time.Millisecond)
	}
}

func (l *eventLedger) record() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.recorded++
	l.last = time.Now()
}

func (l *eventLedger) begin() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.inFlight++
	l.last = time.Now()
}

// end closes a post; settled says it was the event's last (the broadcaster neither
// retries it nor follows a failed patch with a create).
func (l *eventLedger) end(settled bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.inFlight--
	l.last = time.Now()
	if settled {
		l.posted++
	}
}

// settles tells a sink call's result the broadcaster does not try again: success, or
// the API server's refusal, but a patch of an aggregated event it no longer has (a
// create follows) and a failure to reach it (retried after a sleep).
func settles(err error, patch bool) bool {
	var status *apierrors.StatusError
	var construction *rest.RequestConstructionError
	switch {
	case err == nil, errors.As(err, &construction):
		return true
	case patch && util.IsKeyNotFoundError(err):
		return false
	default:
		return errors.As(err, &status)
	}
}

type countingRecorder struct {
	record.EventRecorder
	ledger *eventLedger
}

func (r countingRecorder) Event(object runtime.Object, eventtype, reason, message string) {
	r.ledger.record()
	r.EventRecorder.Event(object, eventtype, reason, message)
}

func (r countingRecorder) Eventf(object runtime.Object, eventtype, reason, messageFmt string, args ...any) {
	r.ledger.record()
	r.EventRecorder.Eventf(object, eventtype, reason, messageFmt, args...)
}

func (r countingRecorder) AnnotatedEventf(object runtime.Object, annotations map[string]string, eventtype, reason, messageFmt string, args ...any) {
	r.ledger.record()
	r.EventRecorder.AnnotatedEventf(object, annotations, eventtype, reason, messageFmt, args...)
}

type countingSink struct {
	record.EventSink
	ledger *eventLedger
}

var _ record.EventSink = countingSink{}

func (s countingSink) Create(e *corev1.Event) (*corev1.Event, error) {
	s.ledger.begin()
	out, err := s.EventSink.Create(e)
	s.ledger.end(settles(err, false))
	return out, err
}

func (s countingSink) Update(e *corev1.Event) (*corev1.Event, error) {
	s.ledger.begin()
	out, err := s.EventSink.Update(e)
	s.ledger.end(settles(err, false))
	return out, err
}

func (s countingSink) Patch(e *corev1.Event, data []byte) (*corev1.Event, error) {
	s.ledger.begin()
	out, err := s.EventSink.Patch(e, data)
	s.ledger.end(settles(err, true))
	return out, err
}
