package cluster

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kroll-dev/kroll/pkg/kubelet"
)

// egress is kube-apiserver's "cluster" egress selection: an HTTP CONNECT proxy on a
// unix socket through which the API server reaches nodes and pods. A connection to a
// pod's IP is answered by the simulated kubelet that runs the pod (from the container
// model, as port-forward is); any other address (the nodes' kubelet API) is dialled
// as it is. The pod proxy (`kubectl get --raw .../pods/x:80/proxy/`) thus reaches
// simulated pods, which have no address that accepts a connection.
type egress struct {
	listener net.Listener
	dir      string
	mu       sync.Mutex
	kubelets []*kubelet.Kubelet
}

// egressConfig is kube-apiserver's EgressSelectorConfiguration for socket.
const egressConfig = `apiVersion: apiserver.k8s.io/v1beta1
kind: EgressSelectorConfiguration
egressSelections:
- name: cluster
  connection:
    proxyProtocol: HTTPConnect
    transport:
      uds:
        udsName: %s
`

// listenEgress opens the proxy's socket (in a directory of its own: a socket's path is
// limited to about 100 bytes) and writes the configuration; args are the API server's flags.
func listenEgress() (e *egress, args []string, err error) {
	dir, err := os.MkdirTemp("", "kroll-egress-")
	if err != nil {
		return nil, nil, err
	}
	socket, config := filepath.Join(dir, "cluster.sock"), filepath.Join(dir, "egress.yaml")
	if err := os.WriteFile(config, []byte(fmt.Sprintf(egressConfig, socket)), 0o600); err != nil {
		_ = os.RemoveAll(dir)
		return nil, nil, err
	}
	l, err := net.Listen("unix", socket)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, nil, err
	}
	return &egress{listener: l, dir: dir}, []string{"--egress-selector-config-file=" + config}, nil
}

// add makes k's pods reachable.
func (e *egress) add(k *kubelet.Kubelet) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.kubelets = append(e.kubelets, k)
}

// run serves connections until ctx ends, then removes the socket's directory.
func (e *egress) run(ctx context.Context) error {
	defer os.RemoveAll(e.dir)
	go func() { <-ctx.Done(); _ = e.listener.Close() }()
	for {
		conn, err := e.listener.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		go e.serve(ctx, conn)
	}
}

// bufferedConn reads what the CONNECT request's reader holds before the connection.
type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c bufferedConn) Read(p []byte) (int, error) { return c.r.Read(p) }

func (e *egress) serve(ctx context.Context, conn net.Conn) {
	defer conn.Close()
	br := bufio.NewReader(conn)
	req, err := http.ReadRequest(br)
	if err != nil {
		return
	}
	reply := func(code int) { fmt.Fprintf(conn, "HTTP/1.1 %d %s\r\n\r\n", code, http.StatusText(code)) }
	host, portText, err := net.SplitHostPort(req.Host)
	port, perr := strconv.Atoi(portText)
	if req.Method != http.MethodConnect || err != nil || perr != nil {
		reply(http.StatusBadRequest)
		return
	}
	if forward, ok, err := e.podConnection(host, port); ok {
		if err != nil {
			reply(http.StatusServiceUnavailable)
			return
		}
		reply(http.StatusOK)
		_ = forward(ctx, bufferedConn{conn, br})
		return
	}
	upstream, err := (&net.Dialer{Timeout: 10 * time.Second}).DialContext(ctx, "tcp", req.Host)
	if err != nil {
		reply(http.StatusBadGateway)
		return
	}
	defer upstream.Close()
	reply(http.StatusOK)
	go func() { _, _ = io.Copy(upstream, br); _ = upstream.(*net.TCPConn).CloseWrite() }()
	_, _ = io.Copy(conn, upstream)
}

// podConnection finds the kubelet that runs the pod at ip (ok), and its connection
// to the pod's port.
func (e *egress) podConnection(ip string, port int) (forward func(context.Context, io.ReadWriteCloser) error, ok bool, err error) {
	e.mu.Lock()
	kubelets := append([]*kubelet.Kubelet(nil), e.kubelets...)
	e.mu.Unlock()
	for _, k := range kubelets {
		if forward, ok, err := k.PodConnection(ip, int32(port)); ok {
			return forward, true, err
		}
	}
	return nil, false, nil
}

// dial connects to addr as the API server's egress does: a simulated pod's address is
// answered by the kubelet that runs the pod, over an in-memory pipe; any other is
// dialled as it is.
func (e *egress) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	host, portText, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	port, err := strconv.Atoi(portText)
	if err != nil {
		return nil, fmt.Errorf("dial %s: bad port", addr)
	}
	if forward, ok, err := e.podConnection(host, port); ok {
		if err != nil {
			return nil, fmt.Errorf("dial %s: %w", addr, err)
		}
		client, server := net.Pipe()
		// The connection outlives the dial's context (an HTTP client's keeps it for
		// the next request): it ends when the client closes it.
		go func() { defer server.Close(); _ = forward(context.WithoutCancel(ctx), server) }()
		return client, nil
	}
	return (&net.Dialer{Timeout: 10 * time.Second}).DialContext(ctx, network, addr)
}

// newKubelet builds the node simulator on two clients: pod work on one, heartbeats on
// another with a connection of its own, so heartbeats never queue behind pod writes.
func (c *Cluster) newKubelet(cfg kubelet.Config) (*kubelet.Kubelet, error) {
	podConfig, err := c.pki.restConfigFor(c.Server, identityKubelet)
	if err != nil {
		return nil, err
	}
	heartbeatConfig := rest.CopyConfig(podConfig)
	// A custom dialer keeps client-go from sharing the cached transport (and its HTTP/2 connection).
	heartbeatConfig.Dial = (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	podClient, err := kubernetes.NewForConfig(rest.AddUserAgent(podConfig, "kroll-kubelet"))
	if err != nil {
		return nil, err
	}
	heartbeatClient, err := kubernetes.NewForConfig(rest.AddUserAgent(heartbeatConfig, "kroll-kubelet-heartbeat"))
	if err != nil {
		return nil, err
	}
	cfg.KubeletVersion = KubernetesVersion
	ca, caKey, err := loadPair(c.pki.caCert(), c.pki.caKey())
	if err != nil {
		return nil, err
	}
	cfg.API = &kubelet.APIConfig{CA: ca, CAKey: caKey}
	kl, err := kubelet.New(cfg, podClient, heartbeatClient)
	if err != nil {
		return nil, err
	}
	// Each node writes as itself, over the shared clients' connections.
	podWriters, err := nodeClients(rest.AddUserAgent(podConfig, "kroll-kubelet"))
	if err != nil {
		return nil, err
	}
	heartbeatWriters, err := nodeClients(rest.AddUserAgent(heartbeatConfig, "kroll-kubelet-heartbeat"))
	if err != nil {
		return nil, err
	}
	kl.SetNodeClients(podWriters, heartbeatWriters)
	c.egress.add(kl)
	return kl, nil
}
