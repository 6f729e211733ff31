package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/kroll-dev/kroll/deploy/chart"
	"github.com/kroll-dev/kroll/pkg/cluster"
	"github.com/kroll-dev/kroll/pkg/cluster/clustertest"
	"github.com/kroll-dev/kroll/pkg/metrics"
)

// dashboardSelf is the chart's dashboard service account, as the API server names it.
const dashboardSelf = "system:serviceaccount:kroll-system:kroll-dashboard"

// Given a cluster with a Deployment whose pod logs, and the chart's dashboard RBAC
// (read-only, then with actions) applied for real, when `kroll dashboard --in-cluster`
// runs as the chart's service account — its requests passing through a recording
// proxy — and users open the list, the workload page, the pod page and the pod's log
// (and, with actions, pause and resume it: a service account's bearer token, and a
// user an authenticating proxy names), then the API server refused nothing the
// dashboard asked as itself, and every permission the role grants was used: the role
// is exactly what the dashboard needs, for removing any rule would refuse a request
// that was made.
func TestDashboardLeastPrivilege(t *testing.T) {
	c := clustertest.Start(t, clustertest.WithWorkloadControllers(cluster.WorkloadControllersNone), clustertest.WithNodes(1))
	stop := startKrollControllers(t, c)
	t.Cleanup(stop)
	s := newScene(t, c, "lp", cluster.WorkloadControllersKroll)
	s.apply(t, loggerDeployment)
	pod := ""
	eventually(t, 3*time.Minute, "the logger's pod running", func(ctx context.Context) (bool, string) {
		pods, err := c.Client.CoreV1().Pods("lp").List(ctx, metav1.ListOptions{LabelSelector: "app=logger"})
		if err != nil || len(pods.Items) != 1 {
			return false, fmt.Sprint(err, " pods: ", len(pods.Items))
		}
		pod = pods.Items[0].Name
		return pods.Items[0].Status.Phase == "Running", fmt.Sprintf("%s: %+v", pod, pods.Items[0].Status)
	})
	// dev: a service account with a bearer token; carol: a user the authenticating
	// proxy names. Both may edit in lp (and so read its logs).
	s.kubectl(t, "create", "serviceaccount", "dev")
	s.kubectl(t, "create", "rolebinding", "editors", "--clusterrole=edit", "--serviceaccount=lp:dev", "--user=carol")
	devToken := strings.TrimSpace(s.kubectl(t, "create", "token", "dev"))
	mustKubectl(t, c.KubeconfigPath, "create", "namespace", "kroll-system")

	for _, readOnly := range []bool{true, false} {
		name := map[bool]string{true: "read-only", false: "with actions"}[readOnly]
		t.Run(name, func(t *testing.T) {
			applyDashboardRBAC(t, c, readOnly)
			role := must(c.Client.RbacV1().ClusterRoles().Get(context.Background(), "kroll-dashboard", metav1.GetOptions{}))
			want := granted(t, role.Rules)
			rec := &dashboardRecorder{used: map[permission]bool{}}
			proxyURL, proxyCA := recordingProxy(t, c, rec)
			self := strings.TrimSpace(mustKubectl(t, c.KubeconfigPath, "create", "token", "kroll-dashboard", "-n", "kroll-system"))
			certFile, keyFile, pool := servingCert(t)
			proxyCAFile, proxyCert := proxyClientCert(t)
			args := []string{"--in-cluster", "--address", "127.0.0.1", "--tls-cert-file", certFile, "--tls-private-key-file", keyFile,
				"--requestheader-client-ca-file", proxyCAFile, "--kubeconfig", tokenKubeconfig(t, proxyURL, proxyCA, self)}
			if readOnly {
				args = append(args, "--read-only")
			}
			dash := startDashboard(t, krollBinary(t), args...)
			asDev := &dashboardUser{t: t, base: dash.base(), bearer: devToken,
				client: &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}}
			asCarol := &dashboardUser{t: t, base: dash.base(), headers: map[string]string{"X-Remote-User": "carol", "X-Remote-Group": "devs", "X-Remote-Extra-Team": "web"},
				client: &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{proxyCert}}}}}
			for _, u := range []*dashboardUser{asDev, asCarol} {
				u.page("/", `data-workload="lp/deployment/logger"`)
				u.page("/w/lp/deployment/logger", pod)
				u.page("/w/lp/deployment/logger/pod/"+pod, "/live/logs/lp/"+pod)
				if line := u.firstLogLine("/live/logs/lp/" + pod + "?container=app"); !strings.Contains(line, `class="log-line">started serving<`) {
					t.Errorf("the log stream starts %q, want the pod's first line", line)
				}
			}
			if !readOnly {
				asDev.act("/w/lp/deployment/logger", "pause")
				eventually(t, 30*time.Second, "dev's pause", func(context.Context) (bool, string) {
					return s.deployment(t, "logger").Spec.Paused, "not paused"
				})
				asCarol.act("/w/lp/deployment/logger", "resume")
				eventually(t, 30*time.Second, "carol's resume", func(context.Context) (bool, string) {
					return !s.deployment(t, "logger").Spec.Paused, "paused"
				})
			}
			checkDashboardRole(t, rec, want, dash)
		})
	}
}

// checkDashboardRole fails on any refusal of the dashboard's own identity and on any
// permission want grants that the recorded requests did not use.
func checkDashboardRole(t *testing.T, rec *dashboardRecorder, want map[permission]bool, dash *dashboardProcess) {
	t.Helper()
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.refused) > 0 {
		t.Errorf("the API server refused the dashboard's own identity %d times:\n%s", len(rec.refused), strings.Join(rec.refused, "\n"))
	}
	if log := dash.log(); strings.Contains(log, "forbidden") {
		t.Errorf("the dashboard's log names a refusal:\n%s", log)
	}
	var unused []string
	for p := range want {
		// Informers stream their first list over a watch where the API server can;
		// list is their fallback, needed on clusters that cannot.
		if !rec.used[p] && !(p.verb == "list" && rec.used[permission{"watch", p.group, p.resource}]) {
			unused = append(unused, p.String())
		}
	}
	sort.Strings(unused)
	if len(unused) > 0 {
		t.Errorf("the chart's dashboard role grants what the dashboard never used (not minimal):\n  %s", strings.Join(unused, "\n  "))
	}
}

// applyDashboardRBAC applies, for real, the chart's dashboard ServiceAccount,
// ClusterRole and binding (dashboard.enabled=true, dashboard.readOnly as given).
func applyDashboardRBAC(t *testing.T, c *cluster.Cluster, readOnly bool) {
	t.Helper()
	manifests := must(chart.Render("kroll-system", map[string]any{"dashboard": map[string]any{"enabled": true, "readOnly": readOnly}}))
	var rbac strings.Builder
	for _, o := range must(chart.Objects(manifests)) {
		if strings.HasPrefix(o.GetName(), "kroll-dashboard") && o.GetKind() != "Deployment" && o.GetKind() != "Service" {
			rbac.WriteString("---\n" + string(must(o.MarshalJSON())) + "\n")
		}
	}
	path := filepath.Join(t.TempDir(), "dashboard-rbac.yaml")
	if err := os.WriteFile(path, []byte(rbac.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	mustKubectl(t, c.KubeconfigPath, "apply", "--server-side", "--force-conflicts", "-f", path)
}

// dashboardRecorder records, between the dashboard and the API server, the
// permissions the dashboard's own identity used and the refusals it met. A request
// made impersonating a user uses the permission to impersonate (that user's kind, its
// groups, UID and extra fields); what the request does is the user's to be allowed.
type dashboardRecorder struct {
	mu      sync.Mutex
	used    map[permission]bool
	refused []string
}

func (r *dashboardRecorder) wrap(next http.RoundTripper) http.RoundTripper {
	return roundTrip(func(req *http.Request) (*http.Response, error) {
		resp, err := next.RoundTrip(req)
		if err != nil {
			return resp, err
		}
		info := metrics.RequestOf(req.Method, req.URL)
		p := permission{info.Verb, info.Group, info.Resource}
		if info.Subresource != "" {
			p.resource += "/" + info.Subresource
		}
		var body []byte
		if resp.StatusCode == http.StatusForbidden || resp.StatusCode == http.StatusUnauthorized {
			body, _ = io.ReadAll(resp.Body)
			resp.Body = io.NopCloser(bytes.NewReader(body))
		}
		impersonating := req.Header.Get("Impersonate-User")
		// Refused as itself: any refusal of its own request, or of the impersonation.
		own := resp.StatusCode == http.StatusUnauthorized ||
			resp.StatusCode == http.StatusForbidden && (impersonating == "" || strings.Contains(string(body), `User "`+dashboardSelf+`"`))
		r.mu.Lock()
		defer r.mu.Unlock()
		switch {
		case own:
			r.refused = append(r.refused, fmt.Sprintf("%s (as %q): %d %s", p, impersonating, resp.StatusCode, body))
		case impersonating != "":
			kind := "users"
			if strings.HasPrefix(impersonating, "system:serviceaccount:") {
				kind = "serviceaccounts"
			}
			r.used[permission{"impersonate", "", kind}] = true
			for key := range req.Header {
				switch {
				case key == "Impersonate-Group":
					r.used[permission{"impersonate", "", "groups"}] = true
				case key == "Impersonate-Uid":
					r.used[permission{"impersonate", "authentication.k8s.io", "uids"}] = true
				case strings.HasPrefix(key, "Impersonate-Extra-"):
					extra := strings.ToLower(strings.TrimPrefix(key, "Impersonate-Extra-"))
					r.used[permission{"impersonate", "authentication.k8s.io", "userextras/" + extra}] = true
				}
			}
		case resp.StatusCode/100 == 2:
			r.used[p] = true
		}
		return resp, nil
	})
}

// recordingProxy serves c's API server on a local HTTPS address through rec, passing
// each request's own credentials on; it returns its URL and CA (PEM).
func recordingProxy(t *testing.T, c *cluster.Cluster, rec *dashboardRecorder) (string, []byte) {
	t.Helper()
	target := must(url.Parse(c.RESTConfig.Host))
	upstream := must(rest.TransportFor(rest.AnonymousClientConfig(c.RESTConfig)))
	proxy := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) { r.SetURL(target) },
		Transport: rec.wrap(upstream), FlushInterval: -1}
	srv := httptest.NewTLSServer(proxy)
	t.Cleanup(srv.Close)
	return srv.URL, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
}

// dashboardUser requests an in-cluster dashboard's pages as one user: a bearer token,
// or an authenticating proxy's client certificate and headers.
type dashboardUser struct {
	t       *testing.T
	base    string
	bearer  string
	headers map[string]string
	client  *http.Client
}

func (u *dashboardUser) do(ctx context.Context, method, path string, body io.Reader) *http.Response {
	u.t.Helper()
	req, err := http.NewRequestWithContext(ctx, method, u.base+path, body)
	if err != nil {
		u.t.Fatal(err)
	}
	if u.bearer != "" {
		req.Header.Set("Authorization", "Bearer "+u.bearer)
	}
	for k, v := range u.headers {
		req.Header.Set(k, v)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	resp, err := u.client.Do(req)
	if err != nil {
		u.t.Fatalf("%s %s: %v", method, path, err)
	}
	return resp
}

// page GETs path and fails unless it is 200 and holds want.
func (u *dashboardUser) page(path, want string) {
	u.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp := u.do(ctx, http.MethodGet, path, nil)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), want) {
		u.t.Errorf("GET %s = %d, want 200 with %q:\n%s", path, resp.StatusCode, want, b)
	}
}

// firstLogLine is the first line a log stream sends (a log line, or its refusal).
func (u *dashboardUser) firstLogLine(path string) string {
	u.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp := u.do(ctx, http.MethodGet, path, nil)
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if line, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			return line
		}
	}
	return ""
}

// act confirms and posts an action (verb) on workload (its page's path), with the
// confirmation page's CSRF token, and fails unless it was made.
func (u *dashboardUser) act(workload, verb string) {
	u.t.Helper()
	u.client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	confirm := u.do(ctx, http.MethodGet, workload+"/confirm?verb="+verb, nil)
	page, _ := io.ReadAll(confirm.Body)
	confirm.Body.Close()
	m := regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`).FindSubmatch(page)
	if m == nil {
		u.t.Fatalf("the confirmation of %s on %s carries no CSRF token:\n%s", verb, workload, page)
	}
	path := workload + "/action"
	resp := u.do(ctx, http.MethodPost, path, strings.NewReader(url.Values{"verb": {verb}, "csrf": {string(m[1])}}.Encode()))
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusSeeOther && resp.StatusCode != http.StatusOK {
		u.t.Errorf("POST %s verb=%s = %d, want it made:\n%s", path, verb, resp.StatusCode, b)
	}
}

// proxyClientCert is an authenticating proxy's identity: the path of a CA certificate
// (for --requestheader-client-ca-file) and a client certificate it signed.
func proxyClientCert(t *testing.T) (caFile string, cert tls.Certificate) {
	t.Helper()
	caKey := must(ecdsa.GenerateKey(elliptic.P256(), rand.Reader))
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "front-proxy-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	caDER := must(x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey))
	key := must(ecdsa.GenerateKey(elliptic.P256(), rand.Reader))
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "front-proxy"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der := must(x509.CreateCertificate(rand.Reader, tmpl, must(x509.ParseCertificate(caDER)), &key.PublicKey, caKey))
	caFile = filepath.Join(t.TempDir(), "front-proxy-ca.crt")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	return caFile, tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}
