package e2e

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kroll-dev/kroll/internal/cli/asbinary"
	"github.com/kroll-dev/kroll/pkg/cluster/clustertest"
)

// defaultParallel is how many of the package's tests run at once unless -parallel says
// otherwise. Each scenario spends most of its time waiting on simulated pods, grace
// periods and controllers' back-offs (one at a time, the package kept a quarter of two
// cores busy), so several clusters share the machine without slowing one another much.
const defaultParallel = 4

func TestMain(m *testing.M) {
	asbinary.RunIfAsked()
	flag.Parse()
	parallelSet := false
	flag.Visit(func(f *flag.Flag) { parallelSet = parallelSet || f.Name == "test.parallel" })
	if !parallelSet {
		_ = flag.Set("test.parallel", strconv.Itoa(defaultParallel))
	}
	var err error
	if kubectlPath, err = resolveKubectl(); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: %v\n", err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// krollBinary is the kroll command the tests run: this test binary, which is kroll
// when started with the environment TestMain left (asbinary), running cmd/kroll's
// cli.Main.
func krollBinary(t *testing.T) string {
	t.Helper()
	path, err := asbinary.Path()
	if err != nil {
		t.Fatalf("the kroll command (this test binary): %v", err)
	}
	return path
}

// upProcess is a running `kroll up`.
type upProcess struct {
	cmd    *exec.Cmd
	mu     sync.Mutex
	stdout bytes.Buffer
	stderr bytes.Buffer
	ready  chan struct{}
	exited chan struct{}
	err    error
}

// startUp runs `kroll up args...` and waits until it prints "ready".
func startUp(t *testing.T, bin string, args ...string) *upProcess {
	t.Helper()
	p := &upProcess{cmd: exec.Command(bin, append([]string{"up"}, args...)...), ready: make(chan struct{}), exited: make(chan struct{})}
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p.cmd.Stderr = &lockedWriter{mu: &p.mu, w: &p.stderr}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		s := bufio.NewScanner(stdout)
		readyOnce := sync.Once{}
		for s.Scan() {
			p.mu.Lock()
			p.stdout.WriteString(s.Text() + "\n")
			p.mu.Unlock()
			if s.Text() == "ready" {
				readyOnce.Do(func() { close(p.ready) })
			}
		}
		p.err = p.cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.exited
		for i, a := range args {
			if a == "--data-dir" && i+1 < len(args) {
				clustertest.CheckNoRefusals(t, args[i+1])
			}
		}
	})
	select {
	case <-p.ready:
	case <-p.exited:
		t.Fatalf("kroll up exited before ready: %v\nstdout:\n%s\nstderr:\n%s", p.err, p.out(), p.errOut())
	case <-time.After(2 * time.Minute):
		t.Fatalf("kroll up not ready within 2m\nstdout:\n%s\nstderr:\n%s", p.out(), p.errOut())
	}
	return p
}

func (p *upProcess) out() string    { p.mu.Lock(); defer p.mu.Unlock(); return p.stdout.String() }
func (p *upProcess) errOut() string { p.mu.Lock(); defer p.mu.Unlock(); return p.stderr.String() }

// stop sends sig and waits for a clean exit.
func (p *upProcess) stop(t *testing.T, sig os.Signal) {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.exited:
	case <-time.After(time.Minute):
		t.Fatalf("kroll up did not stop within 1m of %v", sig)
	}
	if p.err != nil {
		t.Errorf("kroll up exited with %v after %v; stderr:\n%s", p.err, sig, p.errOut())
	}
	if !strings.Contains(p.errOut(), "kroll: stopped") {
		t.Errorf("kroll up did not report a clean stop; stderr:\n%s", p.errOut())
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

// runKroll runs kroll to completion and returns its exit code and stderr.
func runKroll(t *testing.T, bin string, args ...string) (int, string) {
	t.Helper()
	return runKrollIn(t, "", bin, args...)
}

// runKrollIn is runKroll in working directory dir ("" for the test's).
func runKrollIn(t *testing.T, dir, bin string, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	if exit, ok := err.(*exec.ExitError); ok {
		return exit.ExitCode(), stderr.String()
	}
	if err != nil {
		t.Fatal(err)
	}
	return 0, stderr.String()
}

// Given a fresh machine, when a user runs `kroll up`, then it prints ready with a working
// kubeconfig and three Ready nodes; a second `kroll up` on the same data dir and one on
// a busy port are refused with one clear line; SIGTERM stops it cleanly; and run again
// on the same data dir it resumes the same cluster.
func TestKrollUp(t *testing.T) {
	t.Parallel()
	bin := krollBinary(t)
	dataDir := filepath.Join(t.TempDir(), "state")
	args := []string{"--data-dir", dataDir, "--port", "0", "--pod-startup-delay", "100ms", "--etcd-unsafe-no-fsync"}

	began := time.Now()
	up := startUp(t, bin, args...)
	t.Logf("kroll up: start to ready in %s", time.Since(began).Round(time.Millisecond))
	kubeconfig := filepath.Join(dataDir, "kubeconfig")
	if info, err := os.Stat(kubeconfig); err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("kubeconfig %s: %v, mode %v; want mode 0600", kubeconfig, err, info.Mode())
	}
	if !strings.Contains(up.out(), "export KUBECONFIG="+kubeconfig) {
		t.Errorf("kroll up did not say how to use the kubeconfig:\n%s", up.out())
	}

	out := mustKubectl(t, kubeconfig, "get", "nodes", "--no-headers")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 {
		t.Fatalf("kubectl get nodes listed %d nodes, want 3:\n%s", len(lines), out)
	}
	for _, l := range lines {
		if f := strings.Fields(l); len(f) < 2 || f[1] != "Ready" {
			t.Errorf("node not Ready: %q", l)
		}
	}
	if out := mustKubectl(t, kubeconfig, "version"); !strings.Contains(out, "Server Version: v1.36") {
		t.Errorf("server version: %s", out)
	}
	mustKubectl(t, kubeconfig, "create", "configmap", "survivor", "--from-literal=k=v")

	port := strings.TrimPrefix(strings.Fields(strings.SplitN(up.out(), "\n", 2)[0])[2], "https://127.0.0.1:")
	t.Run("a second kroll up on the same data dir is refused in one line, before the port", func(t *testing.T) {
		// The same port too, as two `kroll up` with the default --port would ask for:
		// the data dir in use is what the user needs to hear about.
		code, stderr := runKroll(t, bin, append(append([]string{"up"}, args...), "--port", port)...)
		if code != 1 || !strings.HasPrefix(stderr, "kroll: data dir "+dataDir+" is in use") || strings.Count(stderr, "\n") != 1 {
			t.Errorf("exit %d, stderr %q; want exit 1 and one line naming the data dir in use", code, stderr)
		}
	})

	t.Run("a busy port is refused, naming the port, leaving nothing behind", func(t *testing.T) {
		other := filepath.Join(t.TempDir(), "other")
		code, stderr := runKroll(t, bin, "up", "--data-dir", other, "--port", port)
		if code != 1 || !strings.Contains(stderr, "port "+port) || !strings.Contains(stderr, "already in use") {
			t.Errorf("exit %d, stderr %q; want 1 and a message naming port %s", code, stderr, port)
		}
		if _, err := os.Stat(other); !os.IsNotExist(err) {
			t.Errorf("the refused kroll up created %s", other)
		}
	})

	t.Run("an empty --data-dir is refused, writing nothing in the working directory", func(t *testing.T) {
		wd := t.TempDir()
		code, stderr := runKrollIn(t, wd, bin, "up", "--data-dir", "", "--port", "0")
		if code != 1 || stderr != "kroll: --data-dir must not be empty; pass a directory for the cluster's state, such as .kroll\n" {
			t.Errorf("exit %d, stderr %q; want exit 1 and one line", code, stderr)
		}
		if entries, _ := os.ReadDir(wd); len(entries) != 0 {
			t.Errorf("kroll up --data-dir \"\" wrote %d entries into the working directory, first %s", len(entries), entries[0].Name())
		}
	})

	t.Run("bad flags are one clear line and exit 1", func(t *testing.T) {
		badCatalog := writeFile(t, "catalog.yaml", "repositories:\n- name: Team/App\n  tags: [v1]\n")
		for _, bad := range [][]string{{"--nodes", "-1"}, {"--workload-controllers", "mine"}, {"--node-memory", "lots"}, {"--fault", "*:x=Melt"}, {"--nope"},
			{"--unknown-images", "maybe"}, {"--image-catalog", badCatalog}, {"--image-catalog", filepath.Join(t.TempDir(), "missing.yaml")}} {
			code, stderr := runKroll(t, bin, append([]string{"up", "--data-dir", filepath.Join(t.TempDir(), "x")}, bad...)...)
			if code != 1 || strings.Count(strings.TrimSpace(stderr), "\n") != 0 || !strings.HasPrefix(stderr, "kroll: ") {
				t.Errorf("kroll up %v: exit %d, stderr %q; want exit 1 and one line", bad, code, stderr)
			}
		}
	})

	up.stop(t, syscall.SIGTERM)

	up = startUp(t, bin, args...)
	out = mustKubectl(t, kubeconfig, "get", "configmap", "survivor", "-o", "jsonpath={.data.k}")
	if out != "v" {
		t.Errorf("after a restart the configmap holds %q, want v", out)
	}
	up.stop(t, os.Interrupt)
}
