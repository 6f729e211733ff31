package manager

import (
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
)

// stallingSink is an event sink whose posts from component stall until release is
// closed; every other post is passed on to posted at once.
type stallingSink struct {
	component string
	release   chan struct{}
	posted    chan *corev1.Event
}

func (s *stallingSink) post(e *corev1.Event) (*corev1.Event, error) {
	if e.Source.Component == s.component {
		<-s.release
	}
	s.posted <- e
	return e, nil
}

func (s *stallingSink) Create(e *corev1.Event) (*corev1.Event, error) { return s.post(e) }
func (s *stallingSink) Update(e *corev1.Event) (*corev1.Event, error) { return s.post(e) }
func (s *stallingSink) Patch(e *corev1.Event, _ []byte) (*corev1.Event, error) {
	return s.post(e)
}

// One controller's events do not wait behind another's: while the Deployment
// controller's post hangs, the ReplicaSet controller's still arrives.
func TestEachControllerPostsItsEventsOnItsOwn(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sink := &stallingSink{component: "deployment-controller", release: make(chan struct{}), posted: make(chan *corev1.Event, 4)}
	m := &controllers{}
	defer m.stopEvents()
	defer close(sink.release) // before stopEvents: a broadcaster stops once its post returns
	deployments := m.newRecorder(ctx, sink, "deployment-controller")
	replicaSets := m.newRecorder(ctx, sink, "replicaset-controller")
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "default", UID: "1"}}

	deployments.Event(pod, corev1.EventTypeNormal, "ScalingReplicaSet", "stalls")
	replicaSets.Event(pod, corev1.EventTypeNormal, "SuccessfulCreate", "Created pod: web-1")
	select {
	case e := <-sink.posted:
		if e.Source.Component != "replicaset-controller" || e.Reason != "SuccessfulCreate" {
			t.Errorf("posted %s/%s first, want the ReplicaSet controller's SuccessfulCreate", e.Source.Component, e.Reason)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the ReplicaSet controller's event was not posted while the Deployment controller's post hung")
	}
	if len(m.events) != 2 {
		t.Errorf("%d broadcasters for two controllers, want one each", len(m.events))
	}
}

// slowSink posts after a delay, as a busy API server answers.
type slowSink struct {
	delay  time.Duration
	posted chan *corev1.Event
}

func (s *slowSink) post(e *corev1.Event) (*corev1.Event, error) {
	time.Sleep(s.delay)
	s.posted <- e
	return e, nil
}

func (s *slowSink) Create(e *corev1.Event) (*corev1.Event, error)          { return s.post(e) }
func (s *slowSink) Update(e *corev1.Event) (*corev1.Event, error)          { return s.post(e) }
func (s *slowSink) Patch(e *corev1.Event, _ []byte) (*corev1.Event, error) { return s.post(e) }

// Given events recorded a moment before the manager stops, when it stops (its context
// ends, then stopEvents), then each is posted before stopEvents returns: none is lost
// in the broadcaster's queue.
func TestStoppingPostsTheEventsRecorded(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	sink := &slowSink{delay: 100 * time.Millisecond, posted: make(chan *corev1.Event, 3)}
	m := &controllers{}
	recorder := m.newRecorder(ctx, sink, "deployment-controller")
	d := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "1"}}
	for _, step := range []string{"step 2/5: rolling out to 50%", "step 3/5: 50% (10 of 20 updated), paused for 5s", "step 4/5: rolling out to 100%"} {
		recorder.Event(d, corev1.EventTypeNormal, "RolloutStep", step)
	}
	cancel()
	began := time.Now()
	m.stopEvents()
	if len(sink.posted) != 3 {
		t.Fatalf("%d of 3 events posted when stopEvents returned after %s", len(sink.posted), time.Since(began))
	}
	if took := time.Since(began); took >= eventFlushTimeout {
		t.Errorf("stopEvents took %s: the whole flush timeout for events that were all posted", took)
	}
}

// The wait for the events to be posted ends at once when all are, after a quiet
// spell when some will never be (dropped on purpose by the broadcaster), and at the
// timeout when a post hangs.
func TestEventLedgerWait(t *testing.T) {
	const quiet, timeout = 50 * time.Millisecond, 300 * time.Millisecond
	for _, tc := range []struct {
		name     string
		ledger   func() *eventLedger
		atLeast  time.Duration
		lessThan time.Duration
	}{
		{"every event recorded is posted: no wait", func() *eventLedger {
			l := &eventLedger{}
			l.record()
			l.begin()
			l.end(true)
			return l
		}, 0, quiet},
		{"one recorded event never reaches the sink: the quiet spell", func() *eventLedger {
			l := &eventLedger{}
			l.record()
			l.record()
			l.begin()
			l.end(true)
			return l
		}, quiet - 10*time.Millisecond, timeout},
		{"a post hangs: the timeout", func() *eventLedger {
			l := &eventLedger{}
			l.record()
			l.begin()
			return l
		}, timeout, timeout + time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := tc.ledger()
			began := time.Now()
			l.wait(timeout, quiet)
			if took := time.Since(began); took < tc.atLeast || took >= tc.lessThan {
				t.Errorf("wait took %s, want at least %s and less than %s", took, tc.atLeast, tc.lessThan)
			}
		})
	}
}

// A post settles an event unless the broadcaster tries again: after a failure to
// reach the API server (it sleeps and retries), and after a patch of an aggregated
// event the server no longer has (it creates the event instead).
func TestSettles(t *testing.T) {
	notFound := apierrors.NewNotFound(schema.GroupResource{Resource: "events"}, "web.1")
	for _, tc := range []struct {
		name  string
		err   error
		patch bool
		want  bool
	}{
		{"posted", nil, false, true},
		{"patched", nil, true, true},
		{"refused by the API server", apierrors.NewForbidden(schema.GroupResource{Resource: "events"}, "web.1", errors.New("no")), false, true},
		{"created twice", apierrors.NewAlreadyExists(schema.GroupResource{Resource: "events"}, "web.1"), false, true},
		{"a patch of an event gone: a create follows", notFound, true, false},
		{"the API server not reached: retried", errors.New("dial tcp 127.0.0.1:6443: connect: connection refused"), false, false},
		{"a request that cannot be built: not retried", &rest.RequestConstructionError{Err: errors.New("bad")}, false, true},
	} {
		if got := settles(tc.err, tc.patch); got != tc.want {
			t.Errorf("%s: settles = %v, want %v", tc.name, got, tc.want)
		}
	}
}
