package cluster

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/klog/v2"

	"github.com/kroll-dev/kroll/pkg/prometheus"
)

// `kroll up --prometheus` runs a real Prometheus (package prometheus) beside the
// cluster: it finds the pods through Kubernetes service discovery (kubernetes_sd_configs,
// role pod), keeps those annotated prometheus.io/scrape: "true" (port and path from
// prometheus.io/port and prometheus.io/path, as the community's configurations read
// them), and scrapes them, and the API server's /metrics, every 15 s. It reaches the
// simulated pods as the API server does, through the simulated kubelets (egress.go).

// prometheusRole names the ClusterRole and binding of identityPrometheus.
const prometheusRole = "kroll:prometheus"

// prometheusRules are what Prometheus' pod discovery and the API server's scrape need.
var prometheusRules = []rbacv1.PolicyRule{
	{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "watch"}},
	{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}},
}

// PrometheusScrapeInterval is how often the embedded Prometheus scrapes.
const PrometheusScrapeInterval = "15s"

// prometheusConfig is the embedded Prometheus' configuration. kubeconfig is its pod
// discovery's client; apiServer the API server's host:port, scraped with the client
// certificate of identityPrometheus (pki files cert, key) against the cluster CA (ca).
func prometheusConfig(kubeconfig, apiServer, ca, cert, key string) string {
	return strings.NewReplacer("KUBECONFIG", kubeconfig, "APISERVER", apiServer, "CA", ca, "CERT", cert, "KEY", key, "INTERVAL", PrometheusScrapeInterval).Replace(`global:
  scrape_interval: INTERVAL
  evaluation_interval: INTERVAL
scrape_configs:
- job_name: kubernetes-pods
  kubernetes_sd_configs:
  - role: pod
    kubeconfig_file: KUBECONFIG
  relabel_configs:
  - source_labels: [__meta_kubernetes_pod_annotation_prometheus_io_scrape]
    action: keep
    regex: "true"
  - source_labels: [__meta_kubernetes_pod_phase]
    action: drop
    regex: Pending|Succeeded|Failed
  - source_labels: [__meta_kubernetes_pod_annotation_prometheus_io_path]
    action: replace
    regex: (.+)
    target_label: __metrics_path__
  - source_labels: [__address__, __meta_kubernetes_pod_annotation_prometheus_io_port]
    action: replace
    regex: ([^:]+)(?::\d+)?;(\d+)
    replacement: $1:$2
    target_label: __address__
  - action: labelmap
    regex: __meta_kubernetes_pod_label_(.+)
  - source_labels: [__meta_kubernetes_namespace]
    target_label: namespace
  - source_labels: [__meta_kubernetes_pod_name]
    target_label: pod
- job_name: kube-apiserver
  scheme: https
  tls_config:
    ca_file: CA
    cert_file: CERT
    key_file: KEY
  static_configs:
  - targets: [APISERVER]
`)
}

// startPrometheus starts the embedded Prometheus on listener, its TSDB under the data
// dir (so its samples outlive a restart, as the cluster's objects do).
func (c *Cluster) startPrometheus(ctx context.Context, listener net.Listener) error {
	if err := ensureClusterRole(ctx, c.Client, prometheusRole, prometheusRules); err != nil {
		listener.Close()
		return err
	}
	if err := ensureClusterRoleBinding(ctx, c.Client, prometheusRole, prometheusRole, identityPrometheus.cn); err != nil {
		listener.Close()
		return err
	}
	kubeconfig := c.pki.path("prometheus.kubeconfig")
	if err := c.pki.writeKubeconfig(kubeconfig, c.Server, identityPrometheus); err != nil {
		listener.Close()
		return err
	}
	dir := filepath.Join(c.cfg.DataDir, "prometheus")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		listener.Close()
		return err
	}
	cfg := prometheus.Config{
		DataDir:  dir,
		Listener: listener,
		YAML:     prometheusConfig(kubeconfig, strings.TrimPrefix(c.Server, "https://"), c.pki.caCert(), c.pki.clientCert(identityPrometheus), c.pki.clientKey(identityPrometheus)),
		Dial:     c.egress.dial,
		Logger:   slog.New(slog.NewTextHandler(klogWriter{}, &slog.HandlerOptions{Level: slog.LevelWarn})),
	}
	c.PrometheusURL = fmt.Sprintf("http://%s", listener.Addr())
	c.supervise("prometheus", func(ctx context.Context) error { return prometheus.Run(ctx, cfg) })
	return nil
}

// klogWriter sends Prometheus' log lines to klog, so they land in the cluster's log
// file with the other components'.
type klogWriter struct{}

func (klogWriter) Write(p []byte) (int, error) {
	klog.InfoDepth(1, strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}
