package e2e

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/kroll-dev/kroll/pkg/cluster"
)

// dashboardProcess is a running `kroll dashboard`.
type dashboardProcess struct {
	url    string
	cmd    *exec.Cmd
	mu     sync.Mutex
	stderr strings.Builder
}

// startDashboard runs `kroll dashboard args...` and waits for the URL it prints.
func startDashboard(t *testing.T, bin string, args ...string) *dashboardProcess {
	t.Helper()
	p := &dashboardProcess{cmd: exec.Command(bin, append([]string{"dashboard"}, args...)...)}
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p.cmd.Stderr = &lockedWriter{mu: &p.mu, w: &p.stderr}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		_ = p.cmd.Wait()
	})
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	select {
	case line, ok := <-lines:
		url, found := strings.CutPrefix(line, "kroll dashboard: ")
		if !ok || !found {
			t.Fatalf("kroll dashboard printed %q, want its URL; stderr:\n%s", line, p.log())
		}
		p.url = url
	case <-time.After(2 * time.Minute):
		t.Fatalf("kroll dashboard printed no URL within 2 minutes; stderr:\n%s", p.log())
	}
	return p
}

func (p *dashboardProcess) log() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stderr.String()
}

// base is the dashboard's address without the token.
func (p *dashboardProcess) base() string {
	u, _, _ := strings.Cut(p.url, "?")
	return strings.TrimSuffix(u, "/")
}

// newBrowser starts headless Chromium (Debian's chromium, which .ci/run installs) and
// returns a context that drives it. A machine without it fails the test: the browser
// checks are part of the acceptance, not optional.
func newBrowser(t *testing.T) context.Context {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatalf("no chromium on PATH (%v): install it with `apt-get install -y chromium`, as .ci/run does", err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox,
		chromedp.WindowSize(1360, 1000), chromedp.Flag("hide-scrollbars", true), chromedp.Flag("force-device-scale-factor", "1"))
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(alloc)
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
	})
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	return ctx
}

// run runs browser actions with a timeout, failing the test on error.
func run(t *testing.T, ctx context.Context, timeout time.Duration, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// eval is the value of a JavaScript expression on the page.
func eval[T any](t *testing.T, ctx context.Context, what, expression string) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expression))
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return v
}

// textOf is the text of the element selector matches now ("" when none does).
func textOf(t *testing.T, ctx context.Context, selector string) string {
	t.Helper()
	return eval[string](t, ctx, "reading "+selector,
		`(function(){const e=document.querySelector(`+jsString(selector)+`);return e?e.innerText:""})()`)
}

func jsString(s string) string { return "'" + strings.ReplaceAll(s, "'", `\'`) + "'" }

// browserEventually polls the page until cond holds.
func browserEventually(t *testing.T, ctx context.Context, timeout time.Duration, what, selector string, cond func(string) bool) string {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		got := textOf(t, ctx, selector)
		if cond(got) {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s; %s reads:\n%s", what, timeout, selector, got)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// screenshot saves what the browser's window shows (1360×1000) as docs/NAME (PNG), for
// the README.
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	shot, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	png, err := chromedp.Run(shot, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.WriteFile(filepath.Join("..", "docs", name), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// viewerKubeconfig writes a kubeconfig for c's API server that authenticates with token.
func viewerKubeconfig(t *testing.T, c *cluster.Cluster, token string) string {
	t.Helper()
	ca := c.RESTConfig.TLSClientConfig.CAData
	if len(ca) == 0 {
		var err error
		if ca, err = os.ReadFile(c.RESTConfig.TLSClientConfig.CAFile); err != nil {
			t.Fatal(err)
		}
	}
	return tokenKubeconfig(t, c.RESTConfig.Host, ca, token)
}

// servingCert writes a self-signed certificate for 127.0.0.1 and its key, and returns
// their paths and a pool that trusts it.
func servingCert(t *testing.T) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "kroll-dashboard"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}

// statusJSON is a running `kroll rollout status -o json`, its lines as states with the
// moment each arrived.
type statusJSON struct {
	mu     sync.Mutex
	lines  []pageState
	exited chan struct{}
}

func startStatusJSON(t *testing.T, bin, kubeconfig, ns, ref string) *statusJSON {
	t.Helper()
	cmd := exec.Command(bin, "rollout", "status", ref, "-n", ns, "-o", "json", "--timeout=4m", "--kubeconfig", kubeconfig)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &statusJSON{exited: make(chan struct{})}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-s.exited
	})
	go func() {
		defer close(s.exited)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			var p struct{ Updated, Target, Available, Desired int32 }
			if json.Unmarshal(sc.Bytes(), &p) != nil {
				continue
			}
			s.mu.Lock()
			s.lines = append(s.lines, pageState{time.Now(), fmt.Sprintf("%d/%d %d/%d", p.Updated, p.Target, p.Available, p.Desired)})
			s.mu.Unlock()
		}
		_ = cmd.Wait()
	}()
	return s
}

func (s *statusJSON) done() bool {
	select {
	case <-s.exited:
		return true
	default:
		return false
	}
}

func (s *statusJSON) states() []pageState {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]pageState(nil), s.lines...)
}
