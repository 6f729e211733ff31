package manager

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
