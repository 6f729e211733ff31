package cluster

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/cache"
	"k8s.io/component-base/configz"
)

func newTestCluster() *Cluster {
	c := &Cluster{failed: make(chan struct{})}
	c.server.ctx, c.server.cancel = context.WithCancel(context.Background())
	c.clients.ctx, c.clients.cancel = context.WithCancel(c.server.ctx)
	c.ctx = c.clients.ctx
	return c
}

func TestSupervise_aComponentThatStopsStopsTheCluster(t *testing.T) {
	c := newTestCluster()
	otherStopped := make(chan struct{})
	c.server.supervise(c, "kube-apiserver", func(ctx context.Context) error { <-ctx.Done(); close(otherStopped); return nil })
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
	c.clients.wg.Wait()
	c.server.wg.Wait()
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
	if !c.stopComponents(5 * time.Second) {
		t.Fatal("a component that stops on request was still running")
	}
	if err := c.Err(); err != nil {
		t.Errorf("a requested stop reported %v", err)
	}
}

// kube-controller-manager still building its controllers when its API server goes
// away ends the process: the clients stop, all of them, before the server does.
func TestStopComponents_theClientsBeforeTheServer(t *testing.T) {
	c := newTestCluster()
	serverUpAtClientsEnd := make(chan bool, 1)
	c.server.supervise(c, "kube-apiserver", func(ctx context.Context) error { <-ctx.Done(); return nil })
	c.supervise("kube-controller-manager", func(ctx context.Context) error {
		<-ctx.Done()
		time.Sleep(50 * time.Millisecond) // still winding down
		serverUpAtClientsEnd <- c.server.ctx.Err() == nil
		return nil
	})
	if !c.stopComponents(5 * time.Second) {
		t.Fatal("components still running after stop")
	}
	if up := <-serverUpAtClientsEnd; !up {
		t.Error("the API server stopped while a client was still winding down")
	}
	if err := c.Err(); err != nil {
		t.Errorf("a requested stop reported %v", err)
	}
}

func TestStopComponents_reportsAComponentThatDoesNotStop(t *testing.T) {
	c := newTestCluster()
	release := make(chan struct{})
	defer close(release)
	c.supervise("kube-scheduler", func(context.Context) error { <-release; return nil })
	if c.stopComponents(100 * time.Millisecond) {
		t.Error("stopComponents reported everything stopped while a component still ran")
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

func TestClaim(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	busyPort := busy.Addr().(*net.TCPAddr).Port

	t.Run("a data dir in use is reported before a busy port", func(t *testing.T) {
		dir := t.TempDir()
		held, err := lockDataDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		defer held.release()
		_, _, err = claim(dir, busyPort)
		if err == nil || !strings.Contains(err.Error(), dir+" is in use") || strings.Contains(err.Error(), "on 127.0.0.1") {
			t.Errorf("claim of a locked data dir on a busy port: %v; want the data dir named, not the port", err)
		}
	})

	t.Run("a busy port leaves a new data dir uncreated", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "new")
		_, _, err := claim(dir, busyPort)
		if err == nil || !strings.Contains(err.Error(), "port "+strconv.Itoa(busyPort)) {
			t.Errorf("claim on a busy port: %v; want the port named", err)
		}
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("the refused claim created %s (%v)", dir, err)
		}
	})

	t.Run("a busy port releases an existing data dir", func(t *testing.T) {
		dir := t.TempDir()
		if _, _, err := claim(dir, busyPort); err == nil {
			t.Fatal("claim on a busy port succeeded")
		}
		l, lock, err := claim(dir, 0)
		if err != nil {
			t.Fatalf("claim after a refused one: %v; the first left the data dir locked", err)
		}
		l.Close()
		lock.release()
	})

	t.Run("a new data dir is created and locked", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "a", "b")
		l, lock, err := claim(dir, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		defer lock.release()
		if _, err := lockDataDir(dir); err == nil || !strings.Contains(err.Error(), "is in use") {
			t.Errorf("a claimed data dir could be locked again: %v", err)
		}
	})

	t.Run("a file is not a data dir", func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "f")
		if err := os.WriteFile(file, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if _, _, err := claim(file, 0); err == nil || !strings.Contains(err.Error(), file+" is a file") {
			t.Errorf("claim of a file: %v", err)
		}
	})
}

func TestStart_refusesAnEmptyDataDir(t *testing.T) {
	_, err := Start(context.Background(), Config{DataDir: "", WorkloadControllers: WorkloadControllersNone})
	if err == nil || !strings.Contains(err.Error(), "--data-dir must not be empty") {
		t.Errorf("Start with an empty data dir: %v", err)
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

// goModKubernetesVersion is the version of k8s.io/kubernetes that go.mod requires, read
// from the file itself (a test binary's build information lists no dependencies).
func goModKubernetesVersion(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "k8s.io/kubernetes" && strings.HasPrefix(f[1], "v") {
			return f[1]
		}
	}
	t.Fatal("go.mod requires no k8s.io/kubernetes")
	return ""
}

// The fallback is what a build without module information reports; kept equal to the
// module kroll is built from, it is never a stale version.
func TestKubernetesVersion_fallbackIsGoModsVersion(t *testing.T) {
	if want := goModKubernetesVersion(t); fallbackKubernetesVersion != want {
		t.Errorf("fallbackKubernetesVersion = %q, go.mod requires k8s.io/kubernetes %s", fallbackKubernetesVersion, want)
	}
}

// The components' version variables carry KubernetesVersion, split as the Kubernetes
// build splits it ("v1.36.3": major "1", minor "36"), worked out here from go.mod's.
func TestKubernetesVersionIsStamped(t *testing.T) {
	want := goModKubernetesVersion(t)
	parts := strings.Split(strings.TrimPrefix(want, "v"), ".")
	if KubernetesVersion != want || gitVersion != want || gitMajor != parts[0] || gitMinor != parts[1] || gitTreeState != "clean" {
		t.Errorf("version %q, gitVersion %q, major %q, minor %q, tree %q; want %s, major %s, minor %s, clean",
			KubernetesVersion, gitVersion, gitMajor, gitMinor, gitTreeState, want, parts[0], parts[1])
	}
}

func TestKubernetesModuleVersion(t *testing.T) {
	deps := func(mods ...[2]string) *debug.BuildInfo {
		info := &debug.BuildInfo{}
		for _, m := range mods {
			info.Deps = append(info.Deps, &debug.Module{Path: m[0], Version: m[1]})
		}
		return info
	}
	tests := []struct {
		name string
		info *debug.BuildInfo
		ok   bool
		want string
	}{
		{"the module's release among the dependencies", deps([2]string{"k8s.io/api", "v0.36.3"}, [2]string{"k8s.io/kubernetes", "v1.37.0"}), true, "v1.37.0"},
		{"no module information: the fallback", nil, false, fallbackKubernetesVersion},
		{"a test binary lists no dependencies: the fallback", deps(), true, fallbackKubernetesVersion},
		{"a pseudo-version of another major is not a release: the fallback", deps([2]string{"k8s.io/kubernetes", "v0.0.0-20260101000000-abcdef123456"}), true, fallbackKubernetesVersion},
	}
	for _, tt := range tests {
		if got := kubernetesModuleVersion(tt.info, tt.ok); got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.name, got, tt.want)
		}
	}
}

// FreePort's ports lie below the ephemeral range, where no outgoing connection takes
// them between the check and the bind, and are free to bind.
func TestFreePort_belowTheEphemeralRange(t *testing.T) {
	low := ephemeralPortsFrom()
	if low <= minFreePort+1000 {
		t.Fatalf("ephemeral ports from %d: this test expects Linux's range, from 32768", low)
	}
	for range 20 {
		port, err := FreePort()
		if err != nil {
			t.Fatal(err)
		}
		if port < minFreePort || port >= low {
			t.Errorf("FreePort() = %d, want one in [%d, %d)", port, minFreePort, low)
		}
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err != nil {
			t.Errorf("FreePort() = %d, not free: %v", port, err)
			continue
		}
		l.Close()
	}
}

// Two components' claims of the same process-wide names, one after the other: the
// second releases the first's and holds them once it has registered its own.
func TestClaimNames_releasesTheHoldersAndWaitsForTheClaim(t *testing.T) {
	names := processNames{configz: "kroll-test-component", informer: "kroll-test-informer"}
	claim := func() error {
		return claimNames(context.Background(), names, func() <-chan struct{} {
			go func() {
				time.Sleep(50 * time.Millisecond) // a component registers a moment after it starts
				if _, err := configz.New(names.configz); err != nil {
					t.Error(err)
				}
				if _, err := cache.NewInformerName(names.informer); err != nil {
					t.Error(err)
				}
			}()
			return make(chan struct{})
		})
	}
	for i := range 2 {
		if err := claim(); err != nil {
			t.Fatalf("claim %d: %v", i+1, err)
		}
		if !names.held() {
			t.Fatalf("claim %d returned before the names were held", i+1)
		}
	}
	names.release()
	if names.held() {
		t.Error("names held after release")
	}

	stopped := make(chan struct{})
	close(stopped)
	if err := claimNames(context.Background(), names, func() <-chan struct{} { return stopped }); err == nil {
		t.Error("a component that stopped before claiming: no error")
	}
}
