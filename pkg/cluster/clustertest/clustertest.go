// Package clustertest starts the embedded cluster for tests: free ports, a temporary
// data dir, fast simulated pods, and teardown when the test ends.
package clustertest

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/kroll-dev/kroll/pkg/analysis/promclient"
	"github.com/kroll-dev/kroll/pkg/cluster"
	"github.com/kroll-dev/kroll/pkg/kubelet"
	"github.com/kroll-dev/kroll/pkg/manager"
)

// Option adjusts the cluster a test gets.
type Option func(*cluster.Config)

// WithWorkloadControllers picks kroll's, upstream's or no workload controllers.
func WithWorkloadControllers(w cluster.WorkloadControllers) Option {
	return func(c *cluster.Config) { c.WorkloadControllers = w }
}

// WithNodes sets the number of simulated nodes.
func WithNodes(n int) Option { return func(c *cluster.Config) { c.Kubelet.Nodes = n } }

// WithKubelet edits the simulated nodes' configuration.
func WithKubelet(edit func(*kubelet.Config)) Option {
	return func(c *cluster.Config) { edit(&c.Kubelet) }
}

// WithImageRegistry makes the simulated nodes pull from r (a catalogue of their own,
// or unknown repositories failing) instead of the built-in catalogue.
func WithImageRegistry(r *kubelet.Registry) Option {
	return func(c *cluster.Config) { c.Kubelet.Registry = r }
}

// WithAPIServerArgs adds kube-apiserver flags.
func WithAPIServerArgs(args ...string) Option {
	return func(c *cluster.Config) { c.APIServerArgs = append(c.APIServerArgs, args...) }
}

// WithDataDir runs on dir instead of a fresh temporary one (to test resuming a cluster).
func WithDataDir(dir string) Option { return func(c *cluster.Config) { c.DataDir = dir } }

// WithPrometheus runs the cluster's Prometheus (as `kroll up --prometheus`) and gives
// kroll's controllers its URL, so that analyze steps are judged by it. The port is
// chosen now, as kroll up chooses it: the controllers start before Prometheus does.
func WithPrometheus(t testing.TB) Option {
	port, err := cluster.FreePort()
	if err != nil {
		t.Fatalf("a port for Prometheus: %v", err)
	}
	return func(c *cluster.Config) {
		c.Prometheus, c.PrometheusPort = true, port
		opts := manager.Options{Prometheus: &promclient.Options{URL: fmt.Sprintf("http://127.0.0.1:%d", port)}}
		c.KrollControllers = func(ctx context.Context, cfg *rest.Config) error { return manager.Run(ctx, cfg, opts) }
	}
}

// Config is the configuration Start uses for t: three nodes, pods that start in 100ms
// and terminate within 200ms, kroll's workload controllers, etcd without fsync.
func Config(t testing.TB, opts ...Option) cluster.Config {
	k := kubelet.DefaultConfig()
	k.PodStartupDelay = 100 * time.Millisecond
	k.MaxGracePeriod = 200 * time.Millisecond
	cfg := cluster.Config{
		DataDir:             t.TempDir(),
		Port:                0,
		WorkloadControllers: cluster.WorkloadControllersKroll,
		KrollControllers:    func(ctx context.Context, cfg *rest.Config) error { return manager.Run(ctx, cfg, manager.Options{}) },
		Kubelet:             k,
		EtcdUnsafeNoFsync:   true,
		ReadyTimeout:        time.Minute,
	}
	for _, o := range opts {
		o(&cfg)
	}
	return cfg
}

// Start starts a cluster for t and stops it when t ends; it fails t if the cluster does
// not come up, or if a component stops on its own before the end.
func Start(t testing.TB, opts ...Option) *cluster.Cluster {
	t.Helper()
	cfg := Config(t, opts...)
	began := time.Now()
	c, err := cluster.Start(context.Background(), cfg)
	if err != nil {
		logTail(t, cfg)
		t.Fatalf("start embedded cluster: %v", err)
	}
	t.Logf("embedded cluster ready in %s at %s", time.Since(began).Round(time.Millisecond), c.Server)
	if c.PrometheusURL != "" {
		t.Logf("its Prometheus at %s", c.PrometheusURL)
	}
	t.Cleanup(func() {
		failed := c.Err()
		c.Stop()
		if failed != nil {
			logTail(t, cfg)
			t.Errorf("embedded cluster failed during the test: %v", failed)
		}
		if cfg.LogFile == "" {
			CheckNoRefusals(t, cfg.DataDir)
		}
	})
	return c
}

// logTail logs the warnings and errors at the end of the cluster's log, to explain a failure.
func logTail(t testing.TB, cfg cluster.Config) {
	path := cfg.LogFile
	if path == "" {
		path = filepath.Join(cfg.DataDir, "kroll.log")
	}
	f, err := os.Open(path)
	if err != nil {
		return
	}
	defer f.Close()
	var lines []string
	s := bufio.NewScanner(f)
	s.Buffer(make([]byte, 1<<20), 1<<20)
	for s.Scan() {
		if l := s.Text(); strings.HasPrefix(l, "E") || strings.HasPrefix(l, "W") || strings.HasPrefix(l, "F") {
			lines = append(lines, l)
		}
	}
	if len(lines) > 40 {
		lines = lines[len(lines)-40:]
	}
	t.Logf("last warnings and errors of %s:\n%s", path, strings.Join(lines, "\n"))
}
