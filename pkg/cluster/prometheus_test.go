package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kroll-dev/kroll/pkg/kubelet"
)

// Given `kroll up --prometheus`, when pods run, then Prometheus finds them through
// Kubernetes service discovery, scrapes those annotated prometheus.io/scrape (their
// synthetic request counts, through the simulated kubelets) and not the others, and
// scrapes the API server under its own identity.
func TestPrometheus_scrapesAnnotatedPodsAndTheAPIServer(t *testing.T) {
	cfg := Config{DataDir: t.TempDir(), WorkloadControllers: WorkloadControllersNone, Kubelet: kubelet.DefaultConfig(), EtcdUnsafeNoFsync: true, Prometheus: true}
	cfg.Kubelet.Nodes = 1
	c, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	if !strings.HasPrefix(c.PrometheusURL, "http://127.0.0.1:") {
		t.Fatalf("PrometheusURL = %q, want one on 127.0.0.1", c.PrometheusURL)
	}
	ctx := context.Background()
	for _, name := range []string{"scraped", "unannotated"} {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app:1", Ports: []corev1.ContainerPort{{ContainerPort: 8080}}}}}}
		if name == "scraped" {
			pod.Annotations = map[string]string{"prometheus.io/scrape": "true", "prometheus.io/port": "8080"}
		}
		if _, err := c.Client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	query := func(q string) ([]string, error) {
		resp, err := http.Get(c.PrometheusURL + "/api/v1/query?query=" + url.QueryEscape(q))
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		var body struct {
			Status, Error string
			Data          struct {
				Result []struct {
					Metric map[string]string
					Value  [2]any
				}
			}
		}
		if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
			return nil, err
		}
		if body.Status != "success" {
			return nil, fmt.Errorf("%s: %s", body.Status, body.Error)
		}
		var out []string
		for _, r := range body.Data.Result {
			out = append(out, fmt.Sprintf("%s=%v", r.Metric["pod"]+r.Metric["job"], r.Value[1]))
		}
		slices.Sort(out)
		return out, nil
	}
	// Discovery, its 5 s reload and a first scrape within the 15 s interval.
	deadline := time.Now().Add(90 * time.Second)
	var pods, apiServer []string
	for time.Now().Before(deadline) {
		pods, err = query(`count by (pod) (http_requests_total{namespace="default"})`)
		if err == nil {
			apiServer, err = query(`up{job="kube-apiserver"}`)
		}
		if err == nil && len(pods) > 0 && len(apiServer) > 0 && apiServer[0] == "kube-apiserver=1" {
			break
		}
		time.Sleep(time.Second)
	}
	if err != nil {
		t.Fatalf("querying Prometheus: %v", err)
	}
	// One series (code 200: a healthy server has no 500s to count) of the annotated pod only.
	if want := []string{"scraped=1"}; !slices.Equal(pods, want) {
		t.Errorf("pods scraped: %q, want %q", pods, want)
	}
	if want := []string{"kube-apiserver=1"}; !slices.Equal(apiServer, want) {
		t.Errorf("the API server's scrape: %q, want %q", apiServer, want)
	}
}

// The switch behind StopPrometheus and StartPrometheus: a stop ends the server and
// returns once it has returned, a start serves again on the same address, a stop
// or start out of turn is refused, the cluster's end ends it stopped or not, and a
// server that fails on its own is the cluster's failure as before.
func TestPrometheusSwitch_stopsAndStartsOnTheSameAddress(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	served := make(chan string, 4)
	serve := func(ctx context.Context, l net.Listener) error { // as prometheus.Run: closes l as it returns
		served <- l.Addr().String()
		<-ctx.Done()
		time.Sleep(100 * time.Millisecond) // shutting down takes a moment
		return l.Close()
	}
	var s prometheusSwitch
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.run(ctx, l, serve) }()
	<-served

	if err := s.start(); err == nil {
		t.Error("start while it runs was accepted")
	}
	if err := s.stop(5 * time.Second); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if c, err := net.Dial("tcp", addr); err == nil {
		c.Close()
		t.Error("stopped, and something still listens on its address")
	}
	if err := s.stop(time.Second); err == nil {
		t.Error("stop of a stopped server was accepted")
	}
	if err := s.start(); err != nil {
		t.Fatalf("start: %v", err)
	}
	select {
	case got := <-served:
		if got != addr {
			t.Errorf("served again on %s, want %s", got, addr)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("not served again after start")
	}
	if c, err := net.Dial("tcp", addr); err != nil {
		t.Errorf("started again, and nothing listens on its address: %v", err)
	} else {
		c.Close()
	}
	if err := s.stop(5 * time.Second); err != nil {
		t.Fatalf("the second stop: %v", err)
	}
	cancel() // the cluster ends while it is stopped
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("run: %v, want nil at the cluster's end", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("run did not return at the cluster's end")
	}

	l, err = net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	broke := errors.New("TSDB corrupt")
	if err := new(prometheusSwitch).run(context.Background(), l, func(context.Context, net.Listener) error { return broke }); err != broke {
		t.Errorf("a server failing on its own: run returned %v, want its error", err)
	}
}
