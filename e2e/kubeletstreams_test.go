package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/client-go/transport/spdy"
	utilexec "k8s.io/client-go/util/exec"

	"github.com/kroll-dev/kroll/pkg/cluster"
)

// execWithInput runs cmd in pod's container through the API server with stdin as its
// input (kubectl exec -i, or -it with tty).
func execWithInput(cfg *rest.Config, client kubernetes.Interface, ns, pod, container, stdin string, tty bool, cmd ...string) (string, string, error) {
	return execWith(cfg, client, ns, pod, container, strings.NewReader(stdin), tty, cmd...)
}

// execWith runs cmd in pod's container through the API server (pods/exec, SPDY) as
// cfg: with stdin as its input unless nil, with a tty when asked (stderr then merged).
func execWith(cfg *rest.Config, client kubernetes.Interface, ns, pod, container string, stdin io.Reader, tty bool, cmd ...string) (string, string, error) {
	req := client.CoreV1().RESTClient().Post().Resource("pods").Namespace(ns).Name(pod).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: container, Command: cmd, Stdin: stdin != nil, Stdout: true, Stderr: !tty, TTY: tty}, scheme.ParameterCodec)
	ex, err := remotecommand.NewSPDYExecutor(cfg, "POST", req.URL())
	if err != nil {
		return "", "", err
	}
	var out, errOut bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	opts := remotecommand.StreamOptions{Stdin: stdin, Stdout: &out, Tty: tty}
	if !tty {
		opts.Stderr = &errOut
	}
	err = ex.StreamWithContext(ctx, opts)
	return out.String(), errOut.String(), err
}

func exitCode(err error) int {
	var exit utilexec.CodeExitError
	if errors.As(err, &exit) {
		return exit.Code
	}
	if err != nil {
		return -1
	}
	return 0
}

// runKrollOut runs the kroll binary: its stdout, stderr and exit code.
func runKrollOut(t *testing.T, bin string, args ...string) (string, string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := osexec.CommandContext(ctx, bin, args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *osexec.ExitError
	if errors.As(err, &exit) {
		return out.String(), errOut.String(), exit.ExitCode()
	}
	if err != nil {
		t.Fatal(err)
	}
	return out.String(), errOut.String(), 0
}

// testExecStdin: kubectl exec -i and -it feed the container's command.
func testExecStdin(t *testing.T, c *cluster.Cluster, ns string) {
	out, errOut, err := execWithInput(c.RESTConfig, c.Client, ns, "web", "main", "X=kept\necho $X\nexit 3\necho never\n", false, "sh")
	if out != "kept\n" || exitCode(err) != 3 {
		t.Errorf("exec -i web -- sh with 'X=kept; echo $X; exit 3' = %q (stderr %q), %v; want kept and exit 3", out, errOut, err)
	}
	out, _, err = execWithInput(c.RESTConfig, c.Client, ns, "web", "main", "echo hi\rexit 4\r", true, "sh")
	if want := "# echo hi\r\nhi\r\n# exit 4\r\n"; out != want || exitCode(err) != 4 {
		t.Errorf("exec -it web -- sh typing 'echo hi', 'exit 4' = %q, %v; want %q and exit 4", out, err, want)
	}
	if _, errOut, err := execWithInput(c.RESTConfig, c.Client, ns, "web", "main", "line one\nline two\n", false, "sh", "-c", "cat > /tmp/typed"); err != nil {
		t.Fatalf("exec -i web -- sh -c 'cat > /tmp/typed': %v %s", err, errOut)
	}
	if out, _, err := execIn(c.RESTConfig, c.Client, ns, "web", "main", "cat", "/tmp/typed"); out != "line one\nline two\n" || err != nil {
		t.Errorf("the file cat wrote from stdin = %q (%v)", out, err)
	}
	if out, _, err := execIn(c.RESTConfig, c.Client, ns, "web", "main", "sh"); out != "" || err != nil {
		t.Errorf("exec web -- sh without stdin = %q, %v; want it to end at once with 0, as sh at the end of its input", out, err)
	}
}

// testCp: kroll cp (kubectl's own cp) both ways, through tar in the container.
func testCp(t *testing.T, c *cluster.Cluster, ns string) {
	bin := krollBinary(t)
	dir := t.TempDir()
	local := filepath.Join(dir, "hello.txt")
	if err := os.WriteFile(local, []byte("from the laptop\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, errOut, code := runKrollOut(t, bin, "cp", "--kubeconfig", c.KubeconfigPath, local, ns+"/web:/tmp/hello.txt"); code != 0 {
		t.Fatalf("kroll cp hello.txt web:/tmp/hello.txt: exit %d %s %s", code, out, errOut)
	}
	if out, _, err := execIn(c.RESTConfig, c.Client, ns, "web", "main", "cat", "/tmp/hello.txt"); out != "from the laptop\n" || err != nil {
		t.Errorf("cat of the file kroll cp copied in = %q (%v)", out, err)
	}
	if _, errOut, err := execIn(c.RESTConfig, c.Client, ns, "web", "main", "sh", "-c", "mkdir -p /tmp/out/sub && echo A > /tmp/out/a.txt && echo B > /tmp/out/sub/b.txt"); err != nil {
		t.Fatal(err, errOut)
	}
	dest := filepath.Join(dir, "out")
	out, errOut, code := runKrollOut(t, bin, "cp", "--kubeconfig", c.KubeconfigPath, ns+"/web:/tmp/out", dest)
	if code != 0 || out != "tar: Removing leading `/' from member names\n" {
		t.Fatalf("kroll cp web:/tmp/out out: exit %d, stdout %q (want GNU tar's line, as kubectl shows it), stderr %q", code, out, errOut)
	}
	for name, want := range map[string]string{"a.txt": "A\n", "sub/b.txt": "B\n"} {
		if got, err := os.ReadFile(filepath.Join(dest, name)); err != nil || string(got) != want {
			t.Errorf("copied out %s = %q (%v), want %q", name, got, err, want)
		}
	}
	// kubectl cp copies tar's stderr to its stdout from the exec's goroutine, and races
	// that exec's exit status against the empty archive tar still writes
	// (kubernetes/kubectl#980): exit 2 when the status comes first (tar's lines all
	// printed before it), exit 0 when the archive's end ends the copy first, with as
	// much of tar's lines as had arrived by then (none, at times).
	out, errOut, code = runKrollOut(t, bin, "cp", "--kubeconfig", c.KubeconfigPath, ns+"/web:/nope", filepath.Join(dir, "nope"))
	want := "tar: Removing leading `/' from member names\ntar: /nope: Cannot stat: No such file or directory\ntar: Exiting with failure status due to previous errors\n"
	if !(code == 2 && out == want || code == 0 && strings.HasPrefix(want, out)) || strings.Contains(errOut, "panic") {
		t.Errorf("kroll cp of a missing file: exit %d, stdout %q, stderr %q; want exit 2 with tar's refusal %q, or exit 0 with a beginning of it", code, out, errOut, want)
	}
	if _, err := os.Stat(filepath.Join(dir, "nope")); err == nil {
		t.Error("kroll cp of a missing file made a local file")
	}
}

// testLogsFollowAcrossRestart: a followed log ends when its instance is killed by its
// liveness probe, as the kubelet's follow ends with the container; --previous then
// shows the killed instance, and a new follow the new one.
func testLogsFollowAcrossRestart(t *testing.T, c *cluster.Cluster, ns string) {
	p := simplePod("healer", "busybox", []string{"sh", "-c", "echo started; touch /tmp/healthy; sleep 3600"}, corev1.RestartPolicyAlways, nil)
	grace := int64(1)
	p.Spec.TerminationGracePeriodSeconds = &grace
	p.Spec.Containers[0].LivenessProbe = &corev1.Probe{
		ProbeHandler:  corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"cat", "/tmp/healthy"}}},
		PeriodSeconds: 1, FailureThreshold: 1,
	}
	createRunning(t, c.Client, ns, p)
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	stream, err := c.Client.CoreV1().Pods(ns).GetLogs("healer", &corev1.PodLogOptions{Follow: true, Timestamps: true}).Stream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	first := make([]byte, 256)
	n, err := stream.Read(first)
	if err != nil || !strings.HasSuffix(string(first[:n]), " started\n") {
		t.Fatalf("logs -f first read = %q (%v)", first[:n], err)
	}
	if _, errOut, err := execIn(c.RESTConfig, c.Client, ns, "healer", "main", "rm", "/tmp/healthy"); err != nil {
		t.Fatal(err, errOut)
	}
	rest, err := io.ReadAll(stream)
	if err != nil || ctx.Err() != nil || len(rest) != 0 {
		t.Errorf("logs -f after the liveness kill: %q, %v (ctx %v); want the stream to end with the instance, nothing more", rest, err, ctx.Err())
	}
	pod := waitPod(t, c.Client, ns, "healer", "restarted and running", func(p *corev1.Pod) bool {
		cs := p.Status.ContainerStatuses
		return len(cs) == 1 && cs[0].RestartCount >= 1 && cs[0].State.Running != nil
	})
	killedAt := pod.Status.ContainerStatuses[0].LastTerminationState.Terminated
	if killedAt == nil || killedAt.ExitCode != 137 {
		t.Fatalf("last state = %+v, want killed (137)", killedAt)
	}
	if got, err := podLogs(t, c.Client, ns, "healer", &corev1.PodLogOptions{Previous: true, Timestamps: true}); err != nil || got != string(first[:n]) {
		t.Errorf("logs --previous = %q (%v), want the killed instance's %q", got, err, first[:n])
	}
	got, err := podLogs(t, c.Client, ns, "healer", &corev1.PodLogOptions{Timestamps: true})
	if err != nil || !strings.HasSuffix(got, " started\n") || got == string(first[:n]) {
		t.Errorf("logs after the restart = %q (%v), want the new instance's own started line", got, err)
	}
}

// forwardPort forwards a free local port to pod's port remote (kubectl port-forward
// pod 0:remote) until the test ends: the local port, and what the forwarder reports.
func forwardPort(t *testing.T, c *cluster.Cluster, ns, pod string, remote int) (uint16, *bytes.Buffer) {
	t.Helper()
	rt, upgrader, err := spdy.RoundTripperFor(c.RESTConfig)
	if err != nil {
		t.Fatal(err)
	}
	url := c.Client.CoreV1().RESTClient().Post().Resource("pods").Namespace(ns).Name(pod).SubResource("portforward").URL()
	dialer := spdy.NewDialer(upgrader, &http.Client{Transport: rt}, "POST", url)
	stop, ready := make(chan struct{}), make(chan struct{})
	t.Cleanup(func() { close(stop) })
	var pfOut, pfErr bytes.Buffer
	fw, err := portforward.NewOnAddresses(dialer, []string{"127.0.0.1"}, []string{fmt.Sprintf("0:%d", remote)}, stop, ready, &pfOut, &pfErr)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- fw.ForwardPorts() }()
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("port-forward ended: %v %s", err, pfErr.String())
	case <-time.After(30 * time.Second):
		t.Fatal("port-forward not ready in 30s")
	}
	ports, err := fw.GetPorts()
	if err != nil || len(ports) != 1 {
		t.Fatal(ports, err)
	}
	return ports[0].Local, &pfErr
}

// testPortForwardTCP: port-forward to redis answers PING in RESP; a port nothing
// serves is refused with the runtime's words.
func testPortForwardTCP(t *testing.T, c *cluster.Cluster, ns string) {
	createRunning(t, c.Client, ns, simplePod("cache", "redis:7", nil, corev1.RestartPolicyAlways, nil))
	local, _ := forwardPort(t, c, ns, "cache", 6379)
	conn, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", local), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(20 * time.Second))
	if _, err := conn.Write([]byte("*1\r\n$4\r\nPING\r\n")); err != nil {
		t.Fatal(err)
	}
	reply := make([]byte, 7)
	if _, err := io.ReadFull(conn, reply); err != nil || string(reply) != "+PONG\r\n" {
		t.Errorf("redis PING through the port-forward = %q (%v), want +PONG", reply, err)
	}

	// A port nothing listens on: the error stream carries the refusal.
	rt, upgrader, err := spdy.RoundTripperFor(c.RESTConfig)
	if err != nil {
		t.Fatal(err)
	}
	url := c.Client.CoreV1().RESTClient().Post().Resource("pods").Namespace(ns).Name("cache").SubResource("portforward").URL()
	streamConn, _, err := spdy.NewDialer(upgrader, &http.Client{Transport: rt}, "POST", url).Dial(portforward.PortForwardProtocolV1Name)
	if err != nil {
		t.Fatal(err)
	}
	defer streamConn.Close()
	headers := http.Header{}
	headers.Set(corev1.StreamType, corev1.StreamTypeError)
	headers.Set(corev1.PortHeader, strconv.Itoa(6380))
	headers.Set(corev1.PortForwardRequestIDHeader, "0")
	errStream, err := streamConn.CreateStream(headers)
	if err != nil {
		t.Fatal(err)
	}
	_ = errStream.Close()
	headers.Set(corev1.StreamType, corev1.StreamTypeData)
	var data httpstream.Stream
	if data, err = streamConn.CreateStream(headers); err != nil {
		t.Fatal(err)
	}
	defer data.Reset()
	msg := make(chan string, 1)
	go func() { b, _ := io.ReadAll(errStream); msg <- string(b) }()
	select {
	case got := <-msg:
		if !strings.HasPrefix(got, "error forwarding port 6380 to pod ") || !strings.Contains(got, "uid : failed to execute portforward in network namespace") ||
			!strings.Contains(got, "dial tcp4 127.0.0.1:6380: connect: connection refused") {
			t.Errorf("port-forward to 6380 (not served) = %q, want the runtime's connection refused", got)
		}
	case <-time.After(20 * time.Second):
		t.Error("no error for a port nothing serves in 20s")
	}
}

// testAttachStdin: kubectl attach -i to a busybox sh with stdin: true runs the lines
// typed; `exit 5` ends the container with 5.
func testAttachStdin(t *testing.T, c *cluster.Cluster, ns string) {
	p := simplePod("shell", "busybox", nil, corev1.RestartPolicyNever, nil)
	p.Spec.Containers[0].Stdin, p.Spec.Containers[0].StdinOnce = true, true
	createRunning(t, c.Client, ns, p)
	// Give the attach time to start streaming before the lines arrive; keep stdin open.
	out, err := attachTo(c, ns, "shell", func(ctx context.Context) io.Reader {
		return io.MultiReader(delayed(time.Second), strings.NewReader("echo from-stdin\nexit 5\n"), blockUntil(ctx))
	})
	if out != "from-stdin\n" || err != nil {
		t.Errorf("attach -i = %q, %v; want from-stdin, then the stream ends with the shell", out, err)
	}
	pod := waitPod(t, c.Client, ns, "shell", "terminated", func(p *corev1.Pod) bool {
		return len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].State.Terminated != nil
	})
	if code := pod.Status.ContainerStatuses[0].State.Terminated.ExitCode; code != 5 || pod.Status.Phase != corev1.PodFailed {
		t.Errorf("after exit 5: exit code %d, phase %s; want 5 and Failed", code, pod.Status.Phase)
	}
}

// attachTo attaches to pod's container main (kubectl attach, -i when stdin gives a
// reader): what it printed until the stream ended, within 30s.
func attachTo(c *cluster.Cluster, ns, pod string, stdin func(context.Context) io.Reader) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	in := stdin(ctx)
	req := c.Client.CoreV1().RESTClient().Post().Resource("pods").Namespace(ns).Name(pod).SubResource("attach").
		VersionedParams(&corev1.PodAttachOptions{Container: "main", Stdin: in != nil, Stdout: true, Stderr: true}, scheme.ParameterCodec)
	ex, err := remotecommand.NewSPDYExecutor(c.RESTConfig, "POST", req.URL())
	if err != nil {
		return "", err
	}
	var out, errOut bytes.Buffer
	err = ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: in, Stdout: &out, Stderr: &errOut})
	if err == nil && ctx.Err() != nil {
		err = ctx.Err()
	}
	return out.String(), err
}

// delayed is a reader that gives nothing for d, then ends.
type delayed time.Duration

func (d delayed) Read([]byte) (int, error) { time.Sleep(time.Duration(d)); return 0, io.EOF }

// blockUntil is a reader that blocks until ctx ends: stdin kept open.
func blockUntil(ctx context.Context) io.Reader { return ctxReader{ctx} }

type ctxReader struct{ ctx context.Context }

func (r ctxReader) Read([]byte) (int, error) { <-r.ctx.Done(); return 0, io.EOF }
