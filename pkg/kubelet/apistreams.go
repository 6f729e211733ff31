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
	// As the runtime's streaming server does, the pod is named by its sandbox and no uid.
	portforward.ServePortForward(w, r, &streamTarget{k: k, pod: pod}, sandboxID(pod), "", opts, streamIdleTimeout, streamCreationTimeout, portforward.SupportedProtocols)
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

// AttachContainer streams what the instance's main process writes from now on until
// it ends (the stream then ends, without an exit code, as a runtime's does), the
// container restarts, or the client goes. With stdin, a main process that reads its
// input (a shell with stdin: true) is given the lines typed; their end closes its
// input when the container has stdinOnce, as a runtime closes it after the first attach.
func (t *streamTarget) AttachContainer(ctx context.Context, _, _, _ string, in io.Reader, out, _ io.WriteCloser, tty bool, resize <-chan remotecommand.TerminalSize) error {
	go drainResize(ctx, resize)
	poke := make(chan struct{}, 1)
	if in != nil {
		go t.feedMain(in, tty, poke)
	}
	t.run.mu.Lock()
	t.run.inst.AdvanceTo(time.Now())
	_, next := t.run.inst.LogFrom(0)
	t.run.mu.Unlock()
	tick := time.NewTicker(followPoll)
	defer tick.Stop()
	w := newExecWriters(out, nil, tty)
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		case <-poke:
		}
		t.run.mu.Lock()
		t.run.inst.AdvanceTo(time.Now())
		var lines []container.LogLine
		lines, next = t.run.inst.LogFrom(next)
		_, _, exited := t.run.inst.Exited()
		t.run.mu.Unlock()
		for _, l := range lines {
			w.stdout(l.Text + "\n")
		}
		if exited || t.k.restarted(t.pod, t.run.spec.Name, t.run.id) {
			return nil // as a runtime's attach stream: it ends with the process
		}
	}
}

// feedMain gives the main process the lines read from in (or drops them when it
// reads no input), and brings the pod to its sync after each: a line may end it.
func (t *streamTarget) feedMain(in io.Reader, tty bool, poke chan<- struct{}) {
	t.run.mu.Lock()
	reads := t.run.inst.ReadsInput()
	t.run.mu.Unlock()
	if !reads {
		_, _ = io.Copy(io.Discard, in)
		return
	}
	lines := newLineReader(in, nil, tty)
	for {
		line, err := lines.next()
		if errors.Is(err, errInterrupt) {
			continue
		}
		t.run.mu.Lock()
		if err == nil {
			t.run.inst.Input(time.Now(), line)
		} else if t.run.spec.StdinOnce {
			t.run.inst.CloseStdin(time.Now())
		}
		t.run.mu.Unlock()
		t.k.queue.Add(t.run.key)
		select {
		case poke <- struct{}{}:
		default:
		}
		if err != nil {
			return
		}
	}
}

// PortForward connects stream to what the pod's containers serve on port: an HTTP
// server answers each request from the container model, a TCP server (redis,
// postgres, mysql) talks its protocol as far as the model knows it. A port no
// container listens on is refused with the runtime's words.
func (t *streamTarget) PortForward(_ context.Context, _, _ string, port int32, stream io.ReadWriteCloser) error {
	defer stream.Close()
	target, l, err := t.listenerOn(port)
	if err != nil {
		return err
	}
	if l.Protocol == container.HTTP {
		return t.forwardHTTP(target, port, stream)
	}
	forwardTCP(stream, l.Talk)
	return nil
}

// maxTalkBuffer bounds what a TCP connection may send that its server has not used.
const maxTalkBuffer = 1 << 20

// forwardTCP is a connection to a TCP server of the model: what the client sends is
// answered by talk (nil: read and not answered) until either side closes.
func forwardTCP(conn io.ReadWriter, talk container.Talk) {
	var pending []byte
	buf := make([]byte, 32<<10)
	for {
		n, err := conn.Read(buf)
		if n > 0 && talk != nil {
			pending = append(pending, buf[:n]...)
			reply, used, closing := talk(pending)
			pending = pending[used:]
			if len(reply) > 0 {
				if _, werr := conn.Write(reply); werr != nil {
					return
				}
			}
			if closing || len(pending) > maxTalkBuffer {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// forwardHTTP answers the HTTP requests arriving on stream from target's server, as
// long as that instance runs: once the pod is gone or the container has ended or
// restarted, the next request closes the connection unanswered, as a connection into
// a torn-down pod network breaks. A client that keeps connections alive (Prometheus
// scrapes every target of a job through one pool of them, keyed by address) then
// dials again, and reaches whatever holds the address now: without this, a
// connection kept to a deleted pod's address went on answering with the deleted
// pod's model for the pod that was given the address next (a new revision's pod
// scraped as the failing one it replaced, 0.2 of 500s where there were none).
func (t *streamTarget) forwardHTTP(target *run, port int32, stream io.ReadWriter) error {
	br := bufio.NewReader(stream)
	for {
		req, err := http.ReadRequest(br)
		if err != nil {
			return nil // the client closed the connection, or spoke something else
		}
		if t.k.restarted(t.pod, target.spec.Name, target.id) {
			return nil
		}
		_, _ = io.Copy(io.Discard, req.Body)
		_ = req.Body.Close()
		target.mu.Lock()
		// A forwarded connection reaches the server from localhost inside the pod.
		code, body, err := target.inst.Request(time.Now(), "http", port, req.URL.Path, container.Client{Addr: "127.0.0.1", Agent: req.UserAgent()})
		target.mu.Unlock()
		if err != nil {
			return t.refused(port, err)
		}
		resp := &http.Response{
			StatusCode: code, ProtoMajor: 1, ProtoMinor: 1, Request: req,
			Header:        http.Header{"Content-Type": {container.ContentType(req.URL.Path)}},
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

// listenerOn is the run of the pod's container that listens on port, and its listener.
func (t *streamTarget) listenerOn(port int32) (*run, container.Listener, error) {
	for _, c := range t.pod.Spec.Containers {
		if !running(t.pod, c.Name) {
			continue
		}
		r, err := t.k.instanceOf(t.pod, c.Name, false)
		if err != nil {
			continue
		}
		r.mu.Lock()
		l, ok := r.inst.Listening(time.Now(), port)
		r.mu.Unlock()
		if ok {
			return r, l, nil
		}
	}
	return nil, container.Listener{}, t.refused(port, container.ErrRefused)
}

// refused is a connection to port that nothing accepted, as containerd words it (the
// streaming library puts "error forwarding port N to pod SANDBOX, uid :" before it,
// as the runtime's streaming server does).
func (t *streamTarget) refused(port int32, err error) error {
	return fmt.Errorf("failed to execute portforward in network namespace %q: failed to connect to localhost:%d inside namespace %q, IPv4: dial tcp4 127.0.0.1:%d: %v IPv6 dial tcp6 [::1]:%d: %v ",
		"/var/run/netns/cni-"+string(t.pod.UID), port, sandboxID(t.pod), port, err, port, err)
}

// sandboxID is the pod's sandbox as a runtime names it (what a port-forward error
// shows in place of the pod).
func sandboxID(pod *corev1.Pod) string {
	return strings.TrimPrefix(containerID(string(pod.UID), "POD", 0), "containerd://")
}
