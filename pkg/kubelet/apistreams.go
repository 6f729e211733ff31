package kubelet

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/cri-streaming/pkg/streaming/portforward"
	"k8s.io/cri-streaming/pkg/streaming/remotecommand"
	utilexec "k8s.io/utils/exec"

	"github.com/kroll-dev/kroll/pkg/container"
)

// Stream timeouts: the kubelet's default idle timeout is 4h; a simulated node's are
// shorter, as nothing it serves runs that long.
const (
	streamIdleTimeout     = 30 * time.Minute
	streamCreationTimeout = 30 * time.Second
	// maxExecWait bounds how long an exec whose command sleeps holds its stream.
	maxExecWait = time.Minute
)

// serveRemoteCommand answers /exec and /attach through the Kubernetes streaming
// library (SPDY; the API server translates a client's WebSocket to it).
func (k *Kubelet) serveRemoteCommand(w http.ResponseWriter, r *http.Request, pod *corev1.Pod, route apiRoute) {
	opts, err := remotecommand.NewOptions(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	run, err := k.instanceOf(pod, route.container, false)
	if err == nil && !running(pod, route.container) {
		err = &apiError{http.StatusBadRequest, fmt.Sprintf("container %s is not running", route.container)}
	}
	if err != nil {
		writeAPIError(w, err)
		return
	}
	target := &streamTarget{k: k, pod: pod, run: run}
	if route.kind == "attach" {
		remotecommand.ServeAttach(w, r, target, pod.Name, string(pod.UID), route.container, opts, streamIdleTimeout, streamCreationTimeout, remotecommand.SupportedStreamingProtocols)
		return
	}
	remotecommand.ServeExec(w, r, target, pod.Name, string(pod.UID), route.container, r.URL.Query()["command"], opts, streamIdleTimeout, streamCreationTimeout, remotecommand.SupportedStreamingProtocols)
}

func running(pod *corev1.Pod, name string) bool {
	_, cs, _ := containerSpec(pod, name)
	return cs != nil && cs.State.Running != nil
}

// servePortForward answers /portForward through the streaming library.
func (k *Kubelet) servePortForward(w http.ResponseWriter, r *http.Request, pod *corev1.Pod) {
	opts, err := portforward.NewV4Options(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	portforward.ServePortForward(w, r, &streamTarget{k: k, pod: pod}, pod.Name, string(pod.UID), opts, streamIdleTimeout, streamCreationTimeout, portforward.SupportedProtocols)
}

// streamTarget is one pod's container instance as the streaming library's Executor,
// Attacher and PortForwarder.
type streamTarget struct {
	k   *Kubelet
	pod *corev1.Pod
	run *run
}

var (
	_ remotecommand.Executor    = &streamTarget{}
	_ remotecommand.Attacher    = &streamTarget{}
	_ portforward.PortForwarder = &streamTarget{}
)

// ExecInContainer runs cmd in the instance with the shell subset; its output goes to
// out and its exit status is the error's. Input is not read by the model's commands.
func (t *streamTarget) ExecInContainer(ctx context.Context, _, _, _ string, cmd []string, in io.Reader, out, errOut io.WriteCloser, tty bool, _ <-chan remotecommand.TerminalSize, _ time.Duration) error {
	if msg, code, refused := refusedExec(cmd); refused {
		w := errOut
		if w == nil {
			w = out
		}
		if w != nil {
			_, _ = io.WriteString(w, msg)
		}
		return utilexec.CodeExitError{Err: errors.New(strings.TrimSpace(msg)), Code: code}
	}
	t.run.mu.Lock()
	res := t.run.inst.Exec(time.Now(), cmd, nil)
	t.run.mu.Unlock()
	if out != nil {
		text := res.Output
		if tty {
			text = strings.ReplaceAll(text, "\n", "\r\n")
		}
		_, _ = io.WriteString(out, text)
	}
	wait := res.Took
	if res.Took == container.Forever {
		wait = maxExecWait
	}
	if wait > 0 {
		select {
		case <-ctx.Done():
		case <-time.After(min(wait, maxExecWait)):
		}
	}
	if res.ExitCode != 0 {
		return utilexec.CodeExitError{Err: fmt.Errorf("command terminated with exit code %d", res.ExitCode), Code: res.ExitCode}
	}
	return nil
}

// refusedExec is the answer to a command the node cannot run at all: tar (which
// `kubectl cp` runs) is not in the shell subset, and an interactive shell reading its
// input is not modelled.
func refusedExec(cmd []string) (string, int, bool) {
	switch {
	case len(cmd) == 0:
		return "", 0, false
	case cmd[0] == "tar":
		return "kroll: the simulated container has no tar, so kubectl cp cannot copy files; use kubectl exec with cat or echo\n", 126, true
	case len(cmd) == 1 && (cmd[0] == "sh" || cmd[0] == "/bin/sh" || cmd[0] == "bash" || cmd[0] == "/bin/bash"):
		return "kroll: an interactive shell is not modelled on a simulated node; run a command: kubectl exec POD -- sh -c '...'\n", 126, true
	}
	return "", 0, false
}

// AttachContainer streams what the instance's main process writes from now on until
// it ends (the stream then ends, without an exit code, as a runtime's does) or the
// client goes.
func (t *streamTarget) AttachContainer(ctx context.Context, _, _, _ string, in io.Reader, out, _ io.WriteCloser, tty bool, _ <-chan remotecommand.TerminalSize) error {
	if in != nil {
		go func() { _, _ = io.Copy(io.Discard, in) }()
	}
	t.run.mu.Lock()
	t.run.inst.AdvanceTo(time.Now())
	_, next := t.run.inst.LogFrom(0)
	t.run.mu.Unlock()
	tick := time.NewTicker(followPoll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case now := <-tick.C:
			t.run.mu.Lock()
			t.run.inst.AdvanceTo(now)
			var lines []container.LogLine
			lines, next = t.run.inst.LogFrom(next)
			_, _, exited := t.run.inst.Exited()
			t.run.mu.Unlock()
			for _, l := range lines {
				text := l.Text + "\n"
				if tty {
					text = l.Text + "\r\n"
				}
				if out != nil {
					if _, err := io.WriteString(out, text); err != nil {
						return nil
					}
				}
			}
			if exited {
				return nil // as a runtime's attach stream: it ends with the process
			}
		}
	}
}

// PortForward serves HTTP requests arriving on stream from what the pod's containers
// serve on port: each request is answered from the container model. A port no
// container listens on is refused as on a real node.
func (t *streamTarget) PortForward(ctx context.Context, _, _ string, port int32, stream io.ReadWriteCloser) error {
	defer stream.Close()
	target, err := t.listenerOn(port)
	if err != nil {
		return err
	}
	br := bufio.NewReader(stream)
	for {
		req, err := http.ReadRequest(br)
		if err != nil {
			return nil // the client closed the connection, or spoke something else
		}
		_, _ = io.Copy(io.Discard, req.Body)
		_ = req.Body.Close()
		target.mu.Lock()
		// A forwarded connection reaches the server from localhost inside the pod.
		code, body, err := target.inst.Request(time.Now(), "http", port, req.URL.Path, container.Client{Addr: "127.0.0.1", Agent: req.UserAgent()})
		target.mu.Unlock()
		if err != nil {
			return fmt.Errorf("error forwarding port %d to pod %s: %v", port, t.pod.Name, err)
		}
		resp := &http.Response{
			StatusCode: code, ProtoMajor: 1, ProtoMinor: 1, Request: req,
			Header:        http.Header{"Content-Type": {"text/html"}},
			ContentLength: int64(len(body)), Body: io.NopCloser(strings.NewReader(body)),
		}
		if err := resp.Write(stream); err != nil {
			return nil
		}
		if req.Close {
			return nil
		}
	}
}

// listenerOn is the run of the pod's container that listens on port.
func (t *streamTarget) listenerOn(port int32) (*run, error) {
	for _, c := range t.pod.Spec.Containers {
		if !running(t.pod, c.Name) {
			continue
		}
		r, err := t.k.instanceOf(t.pod, c.Name, false)
		if err != nil {
			continue
		}
		r.mu.Lock()
		err = r.inst.Dial(time.Now(), port)
		r.mu.Unlock()
		if err == nil {
			return r, nil
		}
	}
	return nil, fmt.Errorf("failed to connect to localhost:%d inside namespace of pod %s: %w", port, t.pod.Name, container.ErrRefused)
}
