package cluster

import (
	"context"
	"encoding/json"
	"fmt"
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
