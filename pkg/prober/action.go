// Package prober decides what a kubelet's probes report for a container, as pure
// functions of the probe's spec, the container model (pkg/container) and the time.
//
// action.go runs one probe action once (httpGet, tcpSocket, exec, grpc) and words its
// result as the kubelet does; probe.go is the state machine of one probe (initial delay,
// period, thresholds, hold after a liveness failure); set.go runs a container's
// startup, liveness and readiness probes together, the startup probe gating the others.
// Nothing here opens a socket or starts a goroutine: the caller asks "what now?" and is
// told when to ask again.
package prober

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kroll-dev/kroll/pkg/container"
)

// Result is a probe's result.
type Result int

const (
	// Unknown: not yet decided (a startup probe before its first success or failure).
	Unknown Result = iota
	// Success: the probe passed.
	Success
	// Failure: the probe failed.
	Failure
)

func (r Result) String() string {
	switch r {
	case Success:
		return "success"
	case Failure:
		return "failure"
	}
	return "unknown"
}

// Target is what a probe runs against: one running container instance.
type Target interface {
	HTTPGet(now time.Time, scheme string, port int32, path string, headers []container.Header) (int, string, error)
	Dial(now time.Time, port int32) error
	GRPCHealth(now time.Time, port int32, service string) (bool, error)
	Exec(now time.Time, argv []string, env map[string]string) container.ExecResult
}

var _ Target = &container.Instance{}

// Outcome is one run of a probe action.
type Outcome struct {
	Result Result
	// Output is what the kubelet puts after "<Kind> probe failed: " in its Unhealthy
	// event ("HTTP probe failed with statuscode: 404").
	Output string
	// Errored: the probe could not run (a port name the container does not declare);
	// the kubelet words that event "<Kind> probe errored and resulted in unknown state: …".
	Errored bool
}

// Run runs p's action once at now against t, for container c of a pod at podIP.
func Run(p *corev1.Probe, c *corev1.Container, podIP string, t Target, now time.Time) Outcome {
	timeout := time.Duration(max(p.TimeoutSeconds, 1)) * time.Second
	switch {
	case p.Exec != nil:
		return runExec(p.Exec.Command, c, t, now, timeout)
	case p.HTTPGet != nil:
		return runHTTP(p.HTTPGet, c, podIP, t, now)
	case p.TCPSocket != nil:
		port, err := resolvePort(p.TCPSocket.Port, c)
		if err != nil {
			return Outcome{Result: Failure, Output: err.Error(), Errored: true}
		}
		host := p.TCPSocket.Host
		if host == "" {
			host = podIP
		}
		if !isPod(host, podIP) || t.Dial(now, port) != nil {
			addr := net.JoinHostPort(host, strconv.Itoa(int(port)))
			return Outcome{Result: Failure, Output: "dial tcp " + addr + ": " + container.ErrRefused.Error()}
		}
		return Outcome{Result: Success}
	case p.GRPC != nil:
		service := ""
		if p.GRPC.Service != nil {
			service = *p.GRPC.Service
		}
		addr := net.JoinHostPort(podIP, strconv.Itoa(int(p.GRPC.Port)))
		ok, err := t.GRPCHealth(now, p.GRPC.Port, service)
		switch {
		case errors.Is(err, container.ErrRefused):
			return Outcome{Result: Failure, Output: fmt.Sprintf("timeout: failed to connect service %q within %v: context deadline exceeded", addr, timeout)}
		case err != nil:
			return Outcome{Result: Failure, Output: "error: " + err.Error()}
		case !ok:
			return Outcome{Result: Failure, Output: `service unhealthy (responded with "NOT_SERVING")`}
		}
		return Outcome{Result: Success}
	}
	return Outcome{Result: Failure, Output: "missing probe handler for " + c.Name, Errored: true}
}

func runExec(argv []string, c *corev1.Container, t Target, now time.Time, timeout time.Duration) Outcome {
	env := map[string]string{}
	for _, e := range c.Env {
		if e.ValueFrom == nil {
			env[e.Name] = e.Value
		}
	}
	r := t.Exec(now, expandStatic(argv, env), env)
	switch {
	case r.Took > timeout:
		return Outcome{Result: Failure, Output: fmt.Sprintf("command timed out: %q timed out after %s", strings.Join(argv, " "), timeout)}
	case r.ExitCode != 0:
		return Outcome{Result: Failure, Output: r.Output}
	}
	return Outcome{Result: Success}
}

// expandStatic replaces $(VAR) in argv with the container's literal env values, as
// the kubelet does for exec probes; an unknown reference stays as written.
func expandStatic(argv []string, env map[string]string) []string {
	out := make([]string, len(argv))
	for i, a := range argv {
		for {
			start := strings.Index(a, "$(")
			if start < 0 {
				break
			}
			end := strings.IndexByte(a[start:], ')')
			if end < 0 {
				break
			}
			v, ok := env[a[start+2:start+end]]
			if !ok {
				break
			}
			a = a[:start] + v + a[start+end+1:]
		}
		out[i] = a
	}
	return out
}

func runHTTP(g *corev1.HTTPGetAction, c *corev1.Container, podIP string, t Target, now time.Time) Outcome {
	port, err := resolvePort(g.Port, c)
	if err != nil {
		return Outcome{Result: Failure, Output: err.Error(), Errored: true}
	}
	host := g.Host
	if host == "" {
		host = podIP
	}
	scheme := strings.ToLower(string(g.Scheme))
	if scheme == "" {
		scheme = "http"
	}
	path := g.Path
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	// The address and URL are for failure messages only: a probe that passes, as
	// almost every run does, builds neither.
	addr := func() string { return net.JoinHostPort(host, strconv.Itoa(int(port))) }
	url := func() string { return scheme + "://" + addr() + path }
	if !isPod(host, podIP) {
		return Outcome{Result: Failure, Output: fmt.Sprintf("Get %q: dial tcp %s: %v", url(), addr(), container.ErrRefused)}
	}
	var headers []container.Header
	if len(g.HTTPHeaders) > 0 {
		headers = make([]container.Header, len(g.HTTPHeaders))
		for i, h := range g.HTTPHeaders {
			headers[i] = container.Header{Name: h.Name, Value: h.Value}
		}
	}
	code, _, err := t.HTTPGet(now, scheme, port, path, headers)
	switch {
	case errors.Is(err, container.ErrRefused):
		return Outcome{Result: Failure, Output: fmt.Sprintf("Get %q: dial tcp %s: %v", url(), addr(), err)}
	case err != nil:
		return Outcome{Result: Failure, Output: fmt.Sprintf("Get %q: %v", url(), err)}
	case code >= 200 && code < 400:
		return Outcome{Result: Success}
	}
	return Outcome{Result: Failure, Output: fmt.Sprintf("HTTP probe failed with statuscode: %d", code)}
}

// isPod tells a probe host that is the pod itself (empty, its IP, or loopback).
func isPod(host, podIP string) bool {
	return host == "" || host == podIP || host == "localhost" || host == "127.0.0.1" || host == "::1"
}

// resolvePort is a probe's port: a number, or the name of one of the container's ports.
func resolvePort(p intstr.IntOrString, c *corev1.Container) (int32, error) {
	if p.Type == intstr.Int {
		if p.IntVal <= 0 || p.IntVal > 65535 {
			return 0, fmt.Errorf("invalid port number: %d", p.IntVal)
		}
		return p.IntVal, nil
	}
	// A name never starts with a digit: only then is it worth parsing ("8080"), and
	// a name is not parsed (the parse error is garbage every probe by name would make).
	if s := p.StrVal; s != "" && s[0] >= '0' && s[0] <= '9' {
		if n, err := strconv.Atoi(s); err == nil {
			return int32(n), nil
		}
	}
	for _, cp := range c.Ports {
		if cp.Name == p.StrVal {
			return cp.ContainerPort, nil
		}
	}
	return 0, fmt.Errorf("couldn't find port: %v in %v", p.StrVal, c.Name)
}
