package cluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kroll-dev/kroll/pkg/kubelet"
)

// startPlainEtcd runs etcd in dir as kroll did before etcd spoke TLS: plain HTTP on a
// free port, no client authentication. It returns its client URL.
func startPlainEtcd(t *testing.T, dir string) (*embed.Etcd, string) {
	t.Helper()
	for range etcdPortAttempts {
		e, url, err := startPlainEtcdOnFreePorts(dir)
		if errors.Is(err, syscall.EADDRINUSE) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		select {
		case <-e.Server.ReadyNotify():
		case <-time.After(time.Minute):
			e.Close()
			t.Fatal("the plain etcd was not ready within a minute")
		}
		return e, url
	}
	t.Fatalf("no free ports for etcd in %d attempts", etcdPortAttempts)
	return nil, ""
}

func startPlainEtcdOnFreePorts(dir string) (*embed.Etcd, string, error) {
	clientPort, _ := FreePort()
	peerPort, _ := FreePort()
	cfg := embed.NewConfig()
	cfg.Name, cfg.Dir = "kroll", filepath.Join(dir, "etcd")
	client := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", clientPort)}
	peer := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", peerPort)}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{client}, []url.URL{client}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{peer}, []url.URL{peer}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.Logger, cfg.LogLevel, cfg.LogOutputs = "zap", "error", []string{filepath.Join(dir, "old-etcd.log")}
	cfg.UnsafeNoFsync = true
	e, err := embed.StartEtcd(cfg)
	return e, client.String(), err
}

// etcdGet reads key from the etcd at endpoint with tlsConfig (nil: plain HTTP), in a
// few seconds at most.
func etcdGet(endpoint string, tlsConfig *tls.Config, key string) (string, error) {
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, TLS: tlsConfig, DialTimeout: 3 * time.Second})
	if err != nil {
		return "", err
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	resp, err := c.Get(ctx, key)
	if err != nil {
		return "", err
	}
	if len(resp.Kvs) == 0 {
		return "", nil
	}
	return string(resp.Kvs[0].Value), nil
}

// etcdClientTLS is a TLS client configuration trusting etcd's CA and presenting
// certFile/keyFile (none when empty).
func etcdClientTLS(t *testing.T, p pki, certFile, keyFile string) *tls.Config {
	t.Helper()
	info := transport.TLSInfo{TrustedCAFile: p.etcdCACert(), CertFile: certFile, KeyFile: keyFile}
	cfg, err := info.ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// Given a data dir whose etcd ran on plain HTTP (as before), holding a key of its own,
// when etcd starts on it as kroll starts it now (with the PKI pki.ensure makes, which
// the old data dir lacked), then it serves TLS only and refuses a plain-HTTP client, a
// client without a certificate, one with a foreign certificate and one with the
// cluster admin's (signed by the cluster CA, not etcd's); the API server's certificate
// reads the old key.
func TestEtcd_onlyTheAPIServersCertificateGetsIn(t *testing.T) {
	dir := t.TempDir()
	old, oldURL := startPlainEtcd(t, dir)
	func() {
		c, err := clientv3.New(clientv3.Config{Endpoints: []string{oldURL}, DialTimeout: 3 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, err := c.Put(ctx, "/kroll-test/old", "kept"); err != nil {
			t.Fatal(err)
		}
	}()
	old.Close()

	_, endpoint, p := startEtcdAsKroll(t, dir)
	if !strings.HasPrefix(endpoint, "https://127.0.0.1:") {
		t.Fatalf("etcd serves at %s, want https on 127.0.0.1", endpoint)
	}
	hostPort := strings.TrimPrefix(endpoint, "https://")
	if v, err := etcdGet("http://"+hostPort, nil, "/kroll-test/old"); err == nil {
		t.Errorf("a plain-HTTP client read etcd (%q)", v)
	}
	if v, err := etcdGet(endpoint, etcdClientTLS(t, p, "", ""), "/kroll-test/old"); err == nil {
		t.Errorf("a TLS client without a certificate read etcd (%q)", v)
	}
	foreign := foreignClientCert(t)
	if v, err := etcdGet(endpoint, etcdClientTLS(t, p, foreign[0], foreign[1]), "/kroll-test/old"); err == nil {
		t.Errorf("a client with a foreign certificate read etcd (%q)", v)
	}
	if v, err := etcdGet(endpoint, etcdClientTLS(t, p, p.clientCert(identityAdmin), p.clientKey(identityAdmin)), "/kroll-test/old"); err == nil {
		t.Errorf("a client with the cluster admin's certificate read etcd (%q)", v)
	}
	v, err := etcdGet(endpoint, etcdClientTLS(t, p, p.apiServerEtcdClientCert(), p.apiServerEtcdClientKey()), "/kroll-test/old")
	if err != nil || v != "kept" {
		t.Fatalf("the API server's certificate read %q, %v; want the key the plain etcd held, \"kept\"", v, err)
	}
}

// Given a cluster, when an object is created, the cluster stops, its etcd PKI is
// removed (as a data dir from before etcd spoke TLS lacks it) and it starts again,
// then the PKI is made anew and the object is still there.
func TestEtcd_aRestartedDataDirKeepsItsObjects(t *testing.T) {
	c, cfg := startTestCluster(t, 1)
	ctx := context.Background()
	if _, err := c.Client.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kept"}, Data: map[string]string{"a": "1"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.Stop()
	p := c.pki
	for _, f := range []string{p.etcdCACert(), p.etcdCAKey(), p.etcdServerCert(), p.etcdServerKey(), p.apiServerEtcdClientCert(), p.apiServerEtcdClientKey()} {
		if err := os.Remove(f); err != nil {
			t.Fatal(err)
		}
	}
	c2, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatalf("restart on %s: %v", cfg.DataDir, err)
	}
	t.Cleanup(c2.Stop)
	cm, err := c2.Client.CoreV1().ConfigMaps("default").Get(ctx, "kept", metav1.GetOptions{})
	if err != nil || cm.Data["a"] != "1" {
		t.Errorf("after a restart the ConfigMap is %v, %v", cm, err)
	}
}

// startEtcdAsKroll starts etcd in dir as kroll starts it, with the PKI pki.ensure
// makes, stopped when t ends; it returns etcd, its client URL and the PKI.
func startEtcdAsKroll(t *testing.T, dir string) (*embed.Etcd, string, pki) {
	t.Helper()
	p := pki{dir: filepath.Join(dir, "pki")}
	if err := p.ensure(kubernetesServiceIP); err != nil {
		t.Fatal(err)
	}
	e, endpoint, err := startEtcd(context.Background(), dir, filepath.Join(dir, "etcd.log"), p, true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	return e, endpoint, p
}

// foreignClientCert writes a client certificate of a CA of its own, as any local user
// could make one, and returns its certificate and key files.
func foreignClientCert(t *testing.T) [2]string {
	t.Helper()
	foreign := pki{dir: t.TempDir()}
	ca, caKey, err := foreign.loadOrCreateCA(foreign.caCert(), foreign.caKey(), "foreign-ca")
	if err != nil {
		t.Fatal(err)
	}
	cert, key := foreign.path("c.crt"), foreign.path("c.key")
	tmpl := &x509.Certificate{Subject: pkix.Name{CommonName: "kube-apiserver-etcd-client"}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	if err := foreign.ensureSigned(cert, key, tmpl, ca, caKey); err != nil {
		t.Fatal(err)
	}
	return [2]string{cert, key}
}

// startTestCluster starts a cluster of nodes simulated nodes without workload
// controllers, stopped when t ends.
func startTestCluster(t *testing.T, nodes int) (*Cluster, Config) {
	t.Helper()
	cfg := Config{DataDir: t.TempDir(), WorkloadControllers: WorkloadControllersNone, Kubelet: kubelet.DefaultConfig(), EtcdUnsafeNoFsync: true}
	cfg.Kubelet.Nodes = nodes
	c, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	return c, cfg
}

// Given etcd started as kroll starts it, then its peer listener is no TCP port but a
// Unix socket in a directory only this user may enter (made so again though an old data
// directory left it open): another local user cannot connect to it. (etcd serves the
// socket without TLS: this user reaches its peer API, as it may read etcd's files.)
func TestEtcd_peerListenerIsAPrivateSocket(t *testing.T) {
	// A data directory others may enter, as an old one may be (t.TempDir's is not).
	dir, err := os.MkdirTemp("", "kroll-peer-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "etcd-peer"), 0o755); err != nil {
		t.Fatal(err)
	}
	e, _, _ := startEtcdAsKroll(t, dir)
	if len(e.Peers) != 1 {
		t.Fatalf("etcd has %d peer listeners, want 1", len(e.Peers))
	}
	addr := e.Peers[0].Addr()
	if addr.Network() != "unix" {
		t.Fatalf("etcd's peer listener is %s %s, want a Unix socket", addr.Network(), addr)
	}
	socket := addr.String()
	info, err := os.Stat(filepath.Dir(socket))
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o700 {
		t.Errorf("the peer socket's directory %s has mode %v, want 0700", filepath.Dir(socket), info.Mode().Perm())
	}
	plain := &http.Client{Timeout: 3 * time.Second, Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", socket)
	}}}
	resp, err := plain.Get("http://etcd/members")
	if err != nil {
		t.Fatalf("this user's request on the peer socket %s: %v", socket, err)
	}
	resp.Body.Close()
	if os.Geteuid() == 0 {
		out, err := dialAsNobody(t, socket)
		if err == nil || !strings.Contains(out, "permission denied") {
			t.Errorf("another user connecting to the peer socket: %v %s, want permission denied", err, out)
		}
	}
}

// dialAsNobody runs this test binary as the user nobody, connecting to socket
// (TestDialHelper), and returns what it printed. The binary is linked (or copied) into
// a directory nobody may enter: go test's own is private.
func dialAsNobody(t *testing.T, socket string) (string, error) {
	t.Helper()
	binDir, err := os.MkdirTemp("", "kroll-dial-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(binDir)
	bin := filepath.Join(binDir, "dial.test")
	if err := os.Chmod(binDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(os.Args[0], bin); err != nil {
		data, err := os.ReadFile(os.Args[0])
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(bin, data, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(bin, "-test.run=^TestDialHelper$")
	cmd.Env = append(os.Environ(), "KROLL_TEST_DIAL="+socket)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestDialHelper connects to the Unix socket $KROLL_TEST_DIAL, as dialAsNobody asks;
// without it, it does nothing.
func TestDialHelper(t *testing.T) {
	socket := os.Getenv("KROLL_TEST_DIAL")
	if socket == "" {
		return
	}
	c, err := net.Dial("unix", socket)
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	c.Close()
	fmt.Println("connected")
}

// Given a data directory whose path would make the peer socket's longer than Linux
// allows, then the socket's directory is a private one (0700) of the temporary
// directory, removed by its remove; a short one's is in the data directory.
func TestPeerSocketDir_aLongDataDirsSocketLivesInAPrivateTempDir(t *testing.T) {
	short := t.TempDir()
	got, remove, err := peerSocketDir(short)
	if err != nil || got != filepath.Join(short, "etcd-peer") {
		t.Fatalf("peer socket directory of %s: %s, %v", short, got, err)
	}
	remove()
	long := filepath.Join(short, strings.Repeat("d", 100))
	got, remove, err = peerSocketDir(long)
	if err != nil {
		t.Fatal(err)
	}
	if strings.HasPrefix(got, long) || len(filepath.Join(got, peerSocket)) > maxSocketPath {
		t.Errorf("peer socket directory of a long data directory: %s", got)
	}
	if info, err := os.Stat(got); err != nil || info.Mode().Perm() != 0o700 {
		t.Errorf("peer socket directory %s: %v, %v; want mode 0700", got, info, err)
	}
	remove()
	if _, err := os.Stat(got); !os.IsNotExist(err) {
		t.Errorf("%s after remove: %v", got, err)
	}
}
