package kubelet

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/kroll-dev/kroll/pkg/container"
)

// A scrape of a pod's IP reaches its server's /metrics, as a Prometheus would, and
// the node's fault rules (per image, or the pod's annotation) set the error ratio
// and latency of its synthetic load.
func TestPodConnectionServesMetrics(t *testing.T) {
	rules, err := NewFaultRules(FaultRule{Image: "nginx:1.26", Fault: "ErrorRate(0.2)+Latency(300ms)"})
	if err != nil {
		t.Fatal(err)
	}
	started := time.Now().Add(-30 * time.Second)
	pod := func(name, ip, image string, annotations map[string]string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name, UID: types.UID("uid-" + name), Annotations: annotations},
			Spec:       corev1.PodSpec{NodeName: "n0", Containers: []corev1.Container{{Name: "web", Image: image}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip, ContainerStatuses: []corev1.ContainerStatus{{
				Name: "web", ContainerID: "containerd://" + name, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(started)}}}}},
		}
	}
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	for _, p := range []*corev1.Pod{
		pod("v1", "10.244.0.1", "nginx:1.25", nil),
		pod("v2", "10.244.0.2", "nginx:1.26", nil),
		pod("slow", "10.244.0.3", "nginx:1.25", map[string]string{AnnotationFault: "Latency(2s)"}),
	} {
		_ = indexer.Add(p)
	}
	k := &Kubelet{podLister: corelisters.NewPodLister(indexer), nodeIndex: map[string]int{"n0": 0}, sim: simulator{faults: rules}}

	scrape := func(ip string) (string, string) {
		serve, ok, err := k.PodConnection(ip, 80)
		if !ok || err != nil {
			t.Fatalf("PodConnection(%s, 80) = %v, %v", ip, ok, err)
		}
		client, server := net.Pipe()
		defer client.Close()
		go func() { _ = serve(context.Background(), server) }()
		req, _ := http.NewRequest(http.MethodGet, "http://"+ip+"/metrics", nil)
		req.Close = true
		if err := req.Write(client); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(bufio.NewReader(client), req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b strings.Builder
		_, _ = bufio.NewReader(resp.Body).WriteTo(&b)
		return resp.Header.Get("Content-Type"), b.String()
	}
	cases := []struct {
		name, ip string
		has      []string
		hasNot   []string
	}{
		{"v1 is healthy: no 500 series, requests in the 5ms bucket", "10.244.0.1",
			[]string{`http_request_duration_seconds_bucket{le="0.005"} 3`}, []string{`code="500"`}},
		{"v2's rule: a fifth of requests fail, each takes 300ms", "10.244.0.2",
			[]string{`http_requests_total{code="500",method="get"} 6`, `http_request_duration_seconds_bucket{le="0.25"} 0`}, nil},
		{"the pod's annotation: 2s each", "10.244.0.3",
			[]string{`http_request_duration_seconds_bucket{le="1"} 0`, `http_request_duration_seconds_bucket{le="2.5"} 3`}, []string{`code="500"`}},
	}
	for _, tc := range cases {
		ctype, body := scrape(tc.ip)
		if ctype != container.MetricsContentType {
			t.Errorf("%s: Content-Type %q", tc.name, ctype)
		}
		for _, s := range tc.has {
			// 30s at 10/s is 300 requests; the test's own time may add a few, so the
			// line is matched on its prefix up to the count's first digit.
			if !strings.Contains(body, s) {
				t.Errorf("%s: no %q in\n%s", tc.name, s, body)
			}
		}
		for _, s := range tc.hasNot {
			if strings.Contains(body, s) {
				t.Errorf("%s: %q in\n%s", tc.name, s, body)
			}
		}
	}
}

// Given a client that keeps its connection to a pod's address alive, as Prometheus'
// scrapes do, when the pod is deleted and a pod of another image is given its
// address, then the next scrape reaches the new pod's server: the old connection is
// closed, not answered from the deleted pod's model (whose 500s were scraped as the
// new pod's).
func TestPodConnectionEndsWithItsPod(t *testing.T) {
	rules, err := NewFaultRules(FaultRule{Image: "nginx:1.26", Fault: "ErrorRate(0.2)"})
	if err != nil {
		t.Fatal(err)
	}
	started := time.Now().Add(-30 * time.Second)
	pod := func(name, image string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name, UID: types.UID("uid-" + name)},
			Spec:       corev1.PodSpec{NodeName: "n0", Containers: []corev1.Container{{Name: "web", Image: image}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.244.0.2", ContainerStatuses: []corev1.ContainerStatus{{
				Name: "web", ContainerID: "containerd://" + name, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(started)}}}}},
		}
	}
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	failing := pod("web-v2", "nginx:1.26")
	_ = indexer.Add(failing)
	k := &Kubelet{podLister: corelisters.NewPodLister(indexer), nodeIndex: map[string]int{"n0": 0}, sim: simulator{faults: rules}}

	var dials atomic.Int32
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) {
		dials.Add(1)
		host, _, _ := net.SplitHostPort(addr)
		serve, ok, err := k.PodConnection(host, 80)
		if !ok || err != nil {
			t.Fatalf("PodConnection(%s, 80) = %v, %v", host, ok, err)
		}
		c, server := net.Pipe()
		go func() { defer server.Close(); _ = serve(context.WithoutCancel(ctx), server) }()
		return c, nil
	}}}
	defer client.CloseIdleConnections()
	scrape := func() string {
		resp, err := client.Get("http://10.244.0.2:80/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b strings.Builder
		_, _ = bufio.NewReader(resp.Body).WriteTo(&b)
		return b.String()
	}
	if body := scrape(); !strings.Contains(body, `code="500"`) {
		t.Fatalf("the failing pod's scrape has no 500s:\n%s", body)
	}
	if body := scrape(); !strings.Contains(body, `code="500"`) || dials.Load() != 1 {
		t.Fatalf("the second scrape of the same pod: %d dials (want 1: the connection is kept), body:\n%s", dials.Load(), body)
	}
	_ = indexer.Delete(failing)
	_ = indexer.Add(pod("web-v3", "nginx:1.25"))
	if body := scrape(); strings.Contains(body, `code="500"`) {
		t.Errorf("the new pod at the address was answered by the deleted one's model:\n%s", body)
	}
	if n := dials.Load(); n != 2 {
		t.Errorf("%d dials, want 2: the kept connection ends with its pod, the next reaches the new one", n)
	}
}
