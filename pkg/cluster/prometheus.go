package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

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
	c.supervise("prometheus", func(ctx context.Context) error {
		return c.prometheus.run(ctx, listener, func(ctx context.Context, l net.Listener) error {
			cfg.Listener = l
			return prometheus.Run(ctx, cfg)
		})
	})
	return nil
}

// prometheusSwitch stops the embedded Prometheus and starts it again on the same
// address and TSDB, as an operator's restart would: what analyses do while their
// Prometheus is away is a behaviour to test (StopPrometheus).
type prometheusSwitch struct {
	mu sync.Mutex
	// cancel ends the running server; nil while it is stopped, or before it runs.
	cancel context.CancelFunc
	// down is closed once a server stopped by stop has returned.
	down chan struct{}
	// resume, closed by start, runs a stopped server again; nil once closed, until
	// the server runs again.
	resume chan struct{}
}

// run runs serve on l until ctx ends, or until serve fails on its own (its error);
// a stop ends that serve and waits for a start, which runs serve again on a new
// listener on l's address.
func (s *prometheusSwitch) run(ctx context.Context, l net.Listener, serve func(context.Context, net.Listener) error) error {
	addr := l.Addr().String()
	for {
		running, cancel := context.WithCancel(ctx)
		s.mu.Lock()
		s.cancel, s.resume = cancel, make(chan struct{})
		resume := s.resume
		s.mu.Unlock()
		err := serve(running, l)
		stopped := running.Err() != nil && ctx.Err() == nil
		cancel()
		if !stopped {
			return err
		}
		s.mu.Lock()
		close(s.down)
		s.mu.Unlock()
		select {
		case <-ctx.Done():
			return nil
		case <-resume:
		}
		if l, err = net.Listen("tcp", addr); err != nil {
			return fmt.Errorf("listen again on %s: %w", addr, err)
		}
	}
}

// stop ends the running server and returns once it has returned (a server closes
// its listener as it returns), within timeout.
func (s *prometheusSwitch) stop(timeout time.Duration) error {
	s.mu.Lock()
	cancel := s.cancel
	if cancel == nil {
		s.mu.Unlock()
		return errors.New("no Prometheus is running: start the cluster with Prometheus, or start it again first")
	}
	s.cancel, s.down = nil, make(chan struct{})
	down := s.down
	s.mu.Unlock()
	cancel()
	select {
	case <-down:
		return nil
	case <-time.After(timeout):
		return fmt.Errorf("prometheus did not stop within %s", timeout)
	}
}

// start runs the server stop stopped again; it returns at once (see StartPrometheus).
func (s *prometheusSwitch) start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cancel != nil || s.resume == nil {
		return errors.New("no stopped Prometheus to start: stop it first")
	}
	close(s.resume)
	s.resume = nil
	return nil
}

// StopPrometheus stops the embedded Prometheus and returns once it no longer listens
// (its API refuses connections); the cluster carries on without it. For tests of
// what analyses do while their Prometheus is away.
func (c *Cluster) StopPrometheus() error { return c.prometheus.stop(30 * time.Second) }

// StartPrometheus starts the Prometheus StopPrometheus stopped again, on the same
// address and with the samples it had; it returns once it listens.
func (c *Cluster) StartPrometheus() error {
	if err := c.prometheus.start(); err != nil {
		return err
	}
	addr := strings.TrimPrefix(c.PrometheusURL, "http://")
	deadline := time.Now().Add(30 * time.Second)
	for {
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			conn.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("prometheus did not listen again on %s within 30s: %w", addr, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// klogWriter sends Prometheus' log lines to klog, so they land in the cluster's log
// file with the other components'.
type klogWriter struct{}

func (klogWriter) Write(p []byte) (int, error) {
	klog.InfoDepth(1, strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}
