package bench

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/kroll-dev/kroll/pkg/cluster"
)

// Controllers names who runs the workload controllers of a run.
type Controllers string

const (
	// Kroll is `kroll controller-manager --leader-elect=false`.
	Kroll Controllers = "kroll"
	// Upstream is kube-controller-manager v1.36.3 with only its workload controllers
	// (`kroll upstream-controller-manager`, hidden).
	Upstream Controllers = "upstream"
	// NoControllers runs none: the raw-ceiling scenarios write pods themselves.
	NoControllers Controllers = "none"
)

// Limits are each controller's client-side API limits. QPS below zero means none.
type Limits struct {
	QPS   float32 `json:"qps"`
	Burst int     `json:"burst"`
}

var (
	// DefaultLimits are kube-controller-manager's defaults, per controller client.
	DefaultLimits = Limits{QPS: 20, Burst: 30}
	// Unthrottled lifts the client-side limits: the API server is the limit.
	Unthrottled = Limits{QPS: -1, Burst: 1}
)

func (l Limits) String() string {
	if l.QPS < 0 {
		return "unthrottled"
	}
	return fmt.Sprintf("QPS %g, burst %d", l.QPS, l.Burst)
}

// controllerProcess is a workload-controller process started from the kroll binary,
// so that its CPU and memory are its own, apart from the cluster's.
type controllerProcess struct {
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// startControllers starts who's controllers against kubeconfig with limits, logging to
// logFile. Each kind's controller has its own client, as in kube-controller-manager.
// With profileAddr (host:port), kroll's serve their Go profiles there (HTTPS with the
// serving certificate serving, to kubeconfig's identity, which the bench's cluster
// makes an admin). With cpuProfile (a file), the process writes a CPU profile of itself
// there, from start until it stops.
func startControllers(binary string, who Controllers, kubeconfig string, limits Limits, logFile, profileAddr string, serving cluster.ServingCertificate, cpuProfile string) (*controllerProcess, error) {
	qps, burst := strconv.FormatFloat(float64(limits.QPS), 'g', -1, 32), strconv.Itoa(limits.Burst)
	var args []string
	switch who {
	case Kroll:
		args = []string{"controller-manager", "--leader-elect=false"}
		if profileAddr == "" {
			args = append(args, "--secure-port=0")
		} else {
			host, port, err := net.SplitHostPort(profileAddr)
			if err != nil {
				return nil, fmt.Errorf("profile address %q: %w", profileAddr, err)
			}
			args = append(args, "--bind-address="+host, "--secure-port="+port, "--profiling",
				"--tls-cert-file="+serving.CertFile, "--tls-private-key-file="+serving.KeyFile)
		}
	case Upstream:
		args = []string{"upstream-controller-manager", "--log-file=" + logFile + ".klog"}
	default:
		return nil, fmt.Errorf("no controller process for %q", who)
	}
	args = append(args, "--kubeconfig="+kubeconfig, "--kube-api-qps="+qps, "--kube-api-burst="+burst)
	if cpuProfile != "" {
		args = append(args, "--cpuprofile="+cpuProfile)
	}
	log, err := os.OpenFile(logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(binary, args...)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		log.Close()
		return nil, fmt.Errorf("start %s controllers: %w", who, err)
	}
	p := &controllerProcess{cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		log.Close()
		close(p.done)
	}()
	return p, nil
}

// exited reports whether the process has ended, and how.
func (p *controllerProcess) exited() (bool, error) {
	select {
	case <-p.done:
		return true, p.err
	default:
		return false, nil
	}
}

// stop ends the process with SIGTERM, and SIGKILL after 20 s.
func (p *controllerProcess) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(20 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// usage is what a process has used so far: CPU seconds (user + system), and its
// memory now.
type usage struct {
	cpuSeconds float64
	// anonMiB is the process's resident anonymous memory (RssAnon: heap and stacks).
	// The pages of the binary it has touched (RssFile, some 130 MiB of the kroll binary,
	// which both controller sets run from) are shared and evictable, and left out.
	anonMiB float64
}

// usageOf reads pid's CPU time and memory from /proc.
func usageOf(pid int) (usage, error) {
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return usage{}, err
	}
	// The command name (field 2) may hold spaces; the fields after its ')' start at 3.
	// utime and stime are fields 14 and 15, in clock ticks of 1/100 s on Linux.
	rest := string(stat[strings.LastIndexByte(string(stat), ')')+1:])
	fields := strings.Fields(rest)
	if len(fields) < 13 {
		return usage{}, errors.New("short /proc stat")
	}
	utime, _ := strconv.ParseFloat(fields[11], 64)
	stime, _ := strconv.ParseFloat(fields[12], 64)
	u := usage{cpuSeconds: (utime + stime) / 100}
	status, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		return usage{}, err
	}
	for _, line := range strings.Split(string(status), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		if f[0] == "RssAnon:" {
			kb, _ := strconv.ParseFloat(f[1], 64)
			u.anonMiB = kb / 1024
		}
	}
	return u, nil
}

// ownCPUSeconds is this process's CPU time so far (user + system).
func ownCPUSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

// lastLines is the end of a log file, folded onto one line, for an error.
func lastLines(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return "no log"
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], " | ")
}
