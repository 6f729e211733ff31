package manager

import (
	"bytes"
	"io"
	"net/http"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
)

// The controllers' events go as protobuf, as kube-controller-manager's do: the event
// sink builds its requests by hand, and without a content type on the config client-go
// sends those as JSON.
func TestEventsArePostedAsProtobuf(t *testing.T) {
	// The server answers with the request's own body, in the content type it came in.
	var sent []http.Header
	server := roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		body, err := io.ReadAll(req.Body)
		if err != nil {
			return nil, err
		}
		sent = append(sent, req.Header.Clone())
		return &http.Response{StatusCode: http.StatusCreated, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Request: req,
			Header: http.Header{"Content-Type": {req.Header.Get("Content-Type")}}, Body: io.NopCloser(bytes.NewReader(body))}, nil
	})
	cfg := withProtobuf(&rest.Config{Host: "https://127.0.0.1:1"})
	cfg.Wrap(func(http.RoundTripper) http.RoundTripper { return server })
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	sink := &typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")}
	event := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "web.1", Namespace: "default"}, Reason: "ScalingReplicaSet"}
	posted, err := sink.Create(event)
	if err != nil {
		t.Fatalf("posting the event: %v", err)
	}
	if posted.Reason != event.Reason {
		t.Errorf("the answer decoded to reason %q, want %q", posted.Reason, event.Reason)
	}
	if len(sent) != 1 {
		t.Fatalf("%d requests, want 1", len(sent))
	}
	h := sent[0]
	if got := h.Get("Content-Type"); got != runtime.ContentTypeProtobuf {
		t.Errorf("event posted as %q, want %q", got, runtime.ContentTypeProtobuf)
	}
	if got, want := h.Get("Accept"), runtime.ContentTypeProtobuf+","+runtime.ContentTypeJSON; got != want {
		t.Errorf("Accept %q, want %q", got, want)
	}
}
