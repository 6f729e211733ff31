package cluster

import (
	"context"
	"errors"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"
)

func newTestCluster() *Cluster {
	ctx, cancel := context.WithCancel(context.Background())
	return &Cluster{ctx: ctx, cancel: cancel, failed: make(chan struct{})}
}

func TestSupervise_aComponentThatStopsStopsTheCluster(t *testing.T) {
	c := newTestCluster()
	otherStopped := make(chan struct{})
	c.supervise("kube-apiserver", func(ctx context.Context) error { <-ctx.Done(); close(otherStopped); return nil })
	c.supervise("kube-scheduler", func(context.Context) error { return errors.New("boom") })
	select {
	case <-c.Failed():
	case <-time.After(5 * time.Second):
		t.Fatal("the cluster did not notice a component stopping")
	}
	if err := c.Err(); err == nil || err.Error() != "kube-scheduler stopped: boom" {
		t.Errorf("Err() = %v, want the component named", err)
	}
	select {
	case <-otherStopped:
	case <-time.After(5 * time.Second):
		t.Fatal("the other components were left running")
	}
	c.wg.Wait()
}

func TestSupervise_aComponentReturningNilCountsAsStopped(t *testing.T) {
	c := newTestCluster()
	c.supervise("simulated kubelet", func(context.Context) error { return nil })
	<-c.Failed()
	if err := c.Err(); err == nil || err.Error() != "simulated kubelet stopped: exited" {
		t.Errorf("Err() = %v", err)
	}
}

func TestSupervise_stoppingOnRequestIsNotAFailure(t *testing.T) {
	c := newTestCluster()
	c.supervise("kube-controller-manager", func(ctx context.Context) error { <-ctx.Done(); return errors.New("context canceled") })
	c.cancel()
	c.wg.Wait()
	if err := c.Err(); err != nil {
		t.Errorf("a requested stop reported %v", err)
	}
}

func TestLockDataDir(t *testing.T) {
	dir := t.TempDir()
	first, err := lockDataDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	_, err = lockDataDir(dir)
	if err == nil || !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), "is in use") {
		t.Fatalf("second lock: %v, want an in-use error naming the dir", err)
	}
	first.release()
	again, err := lockDataDir(dir)
	if err != nil {
		t.Fatalf("lock after release: %v", err)
	}
	again.release()
}

func TestListenAPI_busyPortIsNamed(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	_, err = listenAPI(port)
	if err == nil || !strings.Contains(err.Error(), "port "+strconv.Itoa(port)) || !strings.Contains(err.Error(), "--port 0") {
		t.Errorf("listenAPI on a busy port: %v", err)
	}
}

func TestParseWorkloadControllers(t *testing.T) {
	for _, ok := range []string{"kroll", "upstream", "none"} {
		if _, err := ParseWorkloadControllers(ok); err != nil {
			t.Errorf("%q rejected: %v", ok, err)
		}
	}
	if _, err := ParseWorkloadControllers("both"); err == nil {
		t.Error(`"both" accepted`)
	}
}

func TestKubernetesVersionIsStamped(t *testing.T) {
	if !strings.HasPrefix(KubernetesVersion, "v1.36.") || gitVersion != KubernetesVersion || gitMajor != "1" || gitMinor != "36" {
		t.Errorf("version %q, gitVersion %q, major %q, minor %q", KubernetesVersion, gitVersion, gitMajor, gitMinor)
	}
}
