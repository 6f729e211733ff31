package conformance

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/kroll-dev/kroll/internal/cli/asbinary"
)

// readyWithin bounds kroll up's start: a cold etcd and API server on two busy cores
// take some tens of seconds.
const readyWithin = 3 * time.Minute

// krollUp is a running `kroll up` with kroll's controllers.
type krollUp struct {
	kubeconfig string
	logPath    string
}

// startUp runs `kroll up` (this test binary, as kroll) with its data directory in dir,
// its output in dir/kroll-up.log, and stops it when the test ends.
func startUp(t *testing.T, dir string) krollUp {
	t.Helper()
	bin, err := asbinary.Path()
	if err != nil {
		t.Fatalf("the kroll command (this test binary): %v", err)
	}
	data := filepath.Join(dir, "kroll")
	up := krollUp{kubeconfig: filepath.Join(data, "kubeconfig"), logPath: filepath.Join(dir, "kroll-up.log")}
	log, err := os.Create(up.logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "up", "--data-dir", data, "--port", "0", "--etcd-unsafe-no-fsync")
	cmd.Stderr = log
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready, exited := make(chan struct{}), make(chan error, 1)
	go func() {
		lines := bufio.NewScanner(io.TeeReader(stdout, log))
		for lines.Scan() {
			if lines.Text() == "ready" {
				close(ready)
				break
			}
		}
		_, _ = io.Copy(log, stdout)
		exited <- cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(time.Minute):
			_ = cmd.Process.Kill()
			<-exited
		}
		_ = log.Close()
	})
	select {
	case <-ready:
	case err := <-exited:
		exited <- err
		t.Fatalf("kroll up exited before it was ready (%v); its log: %s", err, up.logPath)
	case <-time.After(readyWithin):
		t.Fatalf("kroll up was not ready within %v; its log: %s", readyWithin, up.logPath)
	}
	return up
}
