package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	utilexec "k8s.io/client-go/util/exec"

	"github.com/kroll-dev/kroll/pkg/cluster"
	"github.com/kroll-dev/kroll/pkg/cluster/clustertest"
	"github.com/kroll-dev/kroll/pkg/kubelet"
)

// oneNodeFastRestarts is a cluster of one node whose crashed containers restart after
// a one-second back-off.
func oneNodeFastRestarts(t *testing.T) *cluster.Cluster {
	return clustertest.Start(t, clustertest.WithNodes(1), clustertest.WithKubelet(func(k *kubelet.Config) {
		k.CrashLoopBackOff = time.Second
	}))
}

// simplePod is a pod of one container (and optionally one init container) running
// image with command.
func simplePod(name, image string, command []string, restart corev1.RestartPolicy, init *corev1.Container) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{
			RestartPolicy: restart,
			Containers:    []corev1.Container{{Name: "main", Image: image, Command: command}},
		},
	}
	if init != nil {
		p.Spec.InitContainers = []corev1.Container{*init}
	}
	return p
}

func createRunning(t *testing.T, client kubernetes.Interface, ns string, p *corev1.Pod) *corev1.Pod {
	t.Helper()
	if _, err := client.CoreV1().Pods(ns).Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return waitPod(t, client, ns, p.Name, "Running", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning })
}

func podLogs(t *testing.T, client kubernetes.Interface, ns, name string, o *corev1.PodLogOptions) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// As kubectl logs reads them: a stream.
	stream, err := client.CoreV1().Pods(ns).GetLogs(name, o).Stream(ctx)
	if err != nil {
		return "", err
	}
	defer stream.Close()
	b, err := io.ReadAll(stream)
	return string(b), err
}

// execIn runs cmd in pod's container through the API server (pods/exec, SPDY) as cfg.
func execIn(cfg *rest.Config, client kubernetes.Interface, ns, pod, container string, cmd ...string) (string, string, error) {
	return execWith(cfg, client, ns, pod, container, nil, false, cmd...)
}

// The nodes serve the kubelet API: logs, exec and port-forward through the API server,
// under its authorization and the node's.
func TestKubeletAPI(t *testing.T) {
	t.Parallel()
	c := oneNodeFastRestarts(t)
	ns := "default"

	t.Run("logs with --tail, --timestamps, --since, -c and an init container", func(t *testing.T) {
		initC := &corev1.Container{Name: "setup", Image: "busybox", Command: []string{"sh", "-c", "echo init-done"}}
		createRunning(t, c.Client, ns, simplePod("talker", "busybox", []string{"sh", "-c", "echo one; echo two; echo three; sleep 3600"}, corev1.RestartPolicyAlways, initC))
		if got, err := podLogs(t, c.Client, ns, "talker", &corev1.PodLogOptions{Container: "main"}); err != nil || got != "one\ntwo\nthree\n" {
			t.Errorf("logs = %q (%v), want one, two, three", got, err)
		}
		tail := int64(2)
		if got, err := podLogs(t, c.Client, ns, "talker", &corev1.PodLogOptions{TailLines: &tail}); err != nil || got != "two\nthree\n" {
			t.Errorf("logs --tail=2 = %q (%v), want two, three", got, err)
		}
		got, err := podLogs(t, c.Client, ns, "talker", &corev1.PodLogOptions{Timestamps: true, TailLines: &tail})
		lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
		if err != nil || len(lines) != 2 || !strings.HasSuffix(lines[1], " three") {
			t.Fatalf("logs --timestamps = %q (%v)", got, err)
		}
		if _, perr := time.Parse(time.RFC3339Nano, strings.Fields(lines[1])[0]); perr != nil {
			t.Errorf("logs --timestamps: %q does not start with an RFC 3339 time: %v", lines[1], perr)
		}
		time.Sleep(2 * time.Second)
		since := int64(1)
		if got, err := podLogs(t, c.Client, ns, "talker", &corev1.PodLogOptions{SinceSeconds: &since}); err != nil || got != "" {
			t.Errorf("logs --since=1s, written earlier = %q (%v), want nothing", got, err)
		}
		if got, err := podLogs(t, c.Client, ns, "talker", &corev1.PodLogOptions{Container: "setup"}); err != nil || got != "init-done\n" {
			t.Errorf("logs -c setup (init container) = %q (%v), want init-done", got, err)
		}
		if _, err := podLogs(t, c.Client, ns, "talker", &corev1.PodLogOptions{Previous: true}); err == nil || !strings.Contains(err.Error(), "previous terminated container") {
			t.Errorf("logs --previous of a container never restarted: %v, want previous terminated container not found", err)
		}
	})

	t.Run("logs --previous after a crash, and -f following until the container ends", func(t *testing.T) {
		createRunning(t, c.Client, ns, simplePod("crasher", "busybox", []string{"sh", "-c", "echo started; sleep 3; echo failing; exit 1"}, corev1.RestartPolicyAlways, nil))
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		stream, err := c.Client.CoreV1().Pods(ns).GetLogs("crasher", &corev1.PodLogOptions{Follow: true}).Stream(ctx)
		if err != nil {
			t.Fatal(err)
		}
		followed, err := io.ReadAll(stream)
		_ = stream.Close()
		if err != nil || !strings.HasSuffix(string(followed), "started\nfailing\n") {
			t.Errorf("logs -f = %q (%v), want it to follow to failing and end", followed, err)
		}
		waitPod(t, c.Client, ns, "crasher", "restarted", func(p *corev1.Pod) bool {
			return len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].RestartCount >= 1
		})
		if got, err := podLogs(t, c.Client, ns, "crasher", &corev1.PodLogOptions{Previous: true}); err != nil || got != "started\nfailing\n" {
			t.Errorf("logs --previous = %q (%v), want the crashed instance's lines", got, err)
		}
	})

	createRunning(t, c.Client, ns, simplePod("web", "nginx:1.25", nil, corev1.RestartPolicyAlways, nil))

	t.Run("exec sh -c 'echo hi; exit 3' prints hi and exits 3; files it writes stay", func(t *testing.T) {
		out, _, err := execIn(c.RESTConfig, c.Client, ns, "web", "main", "sh", "-c", "echo hi; exit 3")
		var exit utilexec.CodeExitError
		if out != "hi\n" || !errors.As(err, &exit) || exit.Code != 3 {
			t.Errorf("exec = %q, %v; want hi and exit code 3", out, err)
		}
		if _, _, err := execIn(c.RESTConfig, c.Client, ns, "web", "main", "sh", "-c", "echo kept > /tmp/note"); err != nil {
			t.Fatal(err)
		}
		if out, _, err := execIn(c.RESTConfig, c.Client, ns, "web", "main", "cat", "/tmp/note"); err != nil || out != "kept\n" {
			t.Errorf("cat of a file an earlier exec wrote = %q (%v), want kept", out, err)
		}
	})

	t.Run("exec -i and -it: sh reads its commands from stdin, cat > file takes the input", func(t *testing.T) {
		testExecStdin(t, c, ns)
	})

	t.Run("kroll cp (kubectl's cp) into and out of a container through its tar", func(t *testing.T) {
		testCp(t, c, ns)
	})

	t.Run("logs -f ends when a liveness probe kills the instance; --previous shows it", func(t *testing.T) {
		testLogsFollowAcrossRestart(t, c, ns)
	})

	t.Run("port-forward to redis answers PING; an unserved port is refused", func(t *testing.T) {
		testPortForwardTCP(t, c, ns)
	})

	t.Run("attach -i feeds a busybox sh with stdin; exit 5 ends the container", func(t *testing.T) {
		testAttachStdin(t, c, ns)
	})

	t.Run("kroll exec and kroll logs (kubectl's own commands) through the nodes", func(t *testing.T) {
		bin := krollBinary(t)
		run := func(args ...string) (string, string, int) { return runKrollOut(t, bin, args...) }
		out, errOut, code := run("exec", "--kubeconfig", c.KubeconfigPath, "web", "-c", "main", "--", "sh", "-c", "echo hi; exit 3")
		if out != "hi\n" || code != 3 || errOut != "command terminated with exit code 3\n" {
			t.Errorf("kroll exec web -- sh -c 'echo hi; exit 3' = %q (stderr %q), exit %d; want hi, kubectl's line and exit 3", out, errOut, code)
		}
		if out, errOut, code := run("logs", "--kubeconfig", c.KubeconfigPath, "talker", "-c", "main", "--tail=1"); out != "three\n" || code != 0 {
			t.Errorf("kroll logs talker --tail=1 = %q (stderr %q), exit %d; want three", out, errOut, code)
		}
	})

	t.Run("port-forward 0:80 then GET / returns nginx's index page", func(t *testing.T) {
		local, pfErr := forwardPort(t, c, ns, "web", 80)
		hc := &http.Client{Timeout: 20 * time.Second}
		resp, err := hc.Get(fmt.Sprintf("http://127.0.0.1:%d/", local))
		if err != nil {
			t.Fatalf("GET through the port-forward: %v (%s)", err, pfErr.String())
		}
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(body), "<title>Welcome to nginx!</title>") {
			t.Errorf("GET / through the port-forward = %d %q, want nginx's index page", resp.StatusCode, body)
		}
		tail := int64(1)
		if got, err := podLogs(t, c.Client, ns, "web", &corev1.PodLogOptions{TailLines: &tail}); err != nil ||
			!strings.HasPrefix(got, "127.0.0.1 - - [") || !strings.Contains(got, `"GET / HTTP/1.1" 200 `) || !strings.Contains(got, "Go-http-client") {
			t.Errorf("nginx's last log line after the GET = %q (%v), want its access-log line", got, err)
		}
	})

	t.Run("attach streams what the main process writes until it ends", func(t *testing.T) {
		createRunning(t, c.Client, ns, simplePod("attachee", "busybox", []string{"sh", "-c", "sleep 2; echo from-main; exit 4"}, corev1.RestartPolicyNever, nil))
		out, err := attachTo(c, ns, "attachee", func(context.Context) io.Reader { return nil })
		if out != "from-main\n" || err != nil {
			t.Errorf("attach = %q, %v; want from-main, then the stream ends with the process", out, err)
		}
	})

	t.Run("a user without pods/exec is refused by the API server", func(t *testing.T) {
		cfg := rest.CopyConfig(c.RESTConfig)
		cfg.Impersonate = rest.ImpersonationConfig{UserName: "someone-without-rights"}
		_, _, err := execIn(cfg, c.Client, ns, "web", "main", "sh", "-c", "echo hi")
		if err == nil || !strings.Contains(err.Error(), `cannot create resource "pods/exec"`) {
			t.Errorf("exec as a user without pods/exec: %v, want forbidden", err)
		}
	})

	t.Run("a request to the node without the API server's client certificate is refused with 401", func(t *testing.T) {
		node, err := c.Client.CoreV1().Nodes().Get(context.Background(), kubelet.NodeName(0), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		caPEM, err := os.ReadFile(filepath.Join(filepath.Dir(c.KubeconfigPath), "pki", "ca.crt"))
		if err != nil {
			t.Fatal(err)
		}
		roots := x509.NewCertPool()
		roots.AppendCertsFromPEM(caPEM)
		// The node's serving certificate verifies against the cluster CA for its address.
		hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}
		addr := fmt.Sprintf("https://%s:%d", node.Status.Addresses[0].Address, node.Status.DaemonEndpoints.KubeletEndpoint.Port)
		resp, err := hc.Get(addr + "/containerLogs/default/web/main")
		if err != nil {
			t.Fatalf("GET %s: %v", addr, err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("GET %s/containerLogs without a client certificate = %d, want 401", addr, resp.StatusCode)
		}
	})
}
