package promclient

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// Bodies as Prometheus' HTTP API answers them (docs: querying/api, "Expression
// queries" and "Format overview").
const (
	oneSeries   = `{"status":"success","data":{"resultType":"vector","result":[{"metric":{"namespace":"default"},"value":[1765100000.123,"0.002"]}]}}`
	twoSeries   = `{"status":"success","data":{"resultType":"vector","result":[{"metric":{"pod":"web-1","code":"500"},"value":[1765100000,"0.2"]},{"metric":{"pod":"web-2"},"value":[1765100000,"0"]}]}}`
	emptyVector = `{"status":"success","data":{"resultType":"vector","result":[]}}`
	scalar      = `{"status":"success","data":{"resultType":"scalar","result":[1765100000,"1"]}}`
	nanVector   = `{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1765100000,"NaN"]}]},"warnings":["PromQL info: metric might not be a counter"]}`
	infScalar   = `{"status":"success","data":{"resultType":"scalar","result":[1765100000,"+Inf"]}}`
	matrix      = `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"__name__":"up"},"values":[[1765100000,"1"],[1765100015,"1"]]}]}}`
	str         = `{"status":"success","data":{"resultType":"string","result":[1765100000,"hello"]}}`
	histogram   = `{"status":"success","data":{"resultType":"vector","result":[{"metric":{"__name__":"http_request_duration_seconds"},"histogram":[1765100000,{"count":"10","sum":"1.5","buckets":[]}]}]}}`
	badData     = `{"status":"error","errorType":"bad_data","error":"invalid parameter \"query\": 1:16: parse error: unexpected identifier \"rate\""}`
	execution   = `{"status":"error","errorType":"execution","error":"found duplicate series for the match group"}`
	timeout     = `{"status":"error","errorType":"timeout","error":"query timed out in expression evaluation"}`
	badValue    = `{"status":"success","data":{"resultType":"vector","result":[{"metric":{"pod":"web-1"},"value":[1765100000,"lots"]}]}}`
)

func TestQuery(t *testing.T) {
	nan := math.NaN()
	cases := []struct {
		name   string
		status int
		body   string
		want   Result
		// wantErr is part of the error; queryErr says it is a *QueryError (the
		// check's configuration) rather than a measurement not taken.
		wantErr  string
		queryErr bool
	}{
		{name: "a vector of one series is its value", status: 200, body: oneSeries,
			want: Result{Type: "vector", Values: []float64{0.002}, Series: []string{`{namespace="default"}`}}},
		{name: "a vector of two series gives both, labels sorted", status: 200, body: twoSeries,
			want: Result{Type: "vector", Values: []float64{0.2, 0}, Series: []string{`{code="500",pod="web-1"}`, `{pod="web-2"}`}}},
		{name: "an empty vector is no values, not an error", status: 200, body: emptyVector,
			want: Result{Type: "vector"}},
		{name: "a scalar is its value", status: 200, body: scalar,
			want: Result{Type: "scalar", Values: []float64{1}}},
		{name: "NaN is kept for the check's nan rule; warnings are passed on", status: 200, body: nanVector,
			want: Result{Type: "vector", Values: []float64{nan}, Series: []string{"{}"}, Warnings: []string{"PromQL info: metric might not be a counter"}}},
		{name: "+Inf reads", status: 200, body: infScalar,
			want: Result{Type: "scalar", Values: []float64{math.Inf(1)}}},
		{name: "a query that does not parse is the check's fault", status: 400, body: badData,
			wantErr: `refused the query "q": invalid parameter "query": 1:16: parse error: unexpected identifier "rate"`, queryErr: true},
		{name: "a range vector is the check's fault", status: 200, body: matrix,
			wantErr: "the result is a range vector", queryErr: true},
		{name: "a string is the check's fault", status: 200, body: str,
			wantErr: "the result is a string", queryErr: true},
		{name: "a native histogram is the check's fault", status: 200, body: histogram,
			wantErr: `series {__name__="http_request_duration_seconds"} is a native histogram`, queryErr: true},
		{name: "an execution error is a measurement not taken", status: 422, body: execution,
			wantErr: "could not answer (HTTP 422, execution): found duplicate series for the match group"},
		{name: "a server timeout is a measurement not taken", status: 503, body: timeout,
			wantErr: "could not answer (HTTP 503, timeout): query timed out"},
		{name: "a proxy's page is not the API", status: 502, body: "<html><body>Bad Gateway</body></html>",
			wantErr: `answered HTTP 502 Bad Gateway, not the query API's JSON ("<html><body>Bad Gateway</body></html>")`},
		{name: "a proxy's 401 with no body", status: 401, body: "",
			wantErr: "answered HTTP 401 Unauthorized, not the query API's JSON: is the URL Prometheus'?"},
		{name: "a value that is not a number", status: 200, body: badValue,
			wantErr: `a sample of {pod="web-1"} that does not read: value "lots" is not a number`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(tc.status)
				_, _ = w.Write([]byte(tc.body))
			}))
			defer srv.Close()
			c, err := New(Options{URL: srv.URL})
			if err != nil {
				t.Fatal(err)
			}
			got, err := c.Query(context.Background(), "q", time.Time{})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want it to contain %q", err, tc.wantErr)
				}
				if !strings.Contains(err.Error(), srv.URL+"/api/v1/query") {
					t.Errorf("error %q does not name the URL", err)
				}
				if IsQueryError(err) != tc.queryErr {
					t.Errorf("IsQueryError = %v, want %v", !tc.queryErr, tc.queryErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !sameResult(got, tc.want) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// sameResult compares results with NaN equal to NaN.
func sameResult(a, b Result) bool {
	if len(a.Values) != len(b.Values) {
		return false
	}
	for i := range a.Values {
		if a.Values[i] != b.Values[i] && !(math.IsNaN(a.Values[i]) && math.IsNaN(b.Values[i])) {
			return false
		}
	}
	a.Values, b.Values = nil, nil
	return reflect.DeepEqual(a, b)
}

// TestQueryRequest: the form a server sees (POST, query, time), the bearer token
// read from its file at each query, the GET a POST-refusing server gets, and the
// base URL's path prefix kept.
func TestQueryRequest(t *testing.T) {
	type seen struct{ method, path, query, time, auth string }
	var got []seen
	refusePost := false
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if refusePost && r.Method == http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		if err := r.ParseForm(); err != nil {
			t.Error(err)
		}
		got = append(got, seen{r.Method, r.URL.Path, r.Form.Get("query"), r.Form.Get("time"), r.Header.Get("Authorization")})
		_, _ = w.Write([]byte(oneSeries))
	}))
	defer srv.Close()
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte("first\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := New(Options{URL: srv.URL + "/prometheus/", BearerTokenFile: tokenFile, BearerToken: "ignored"})
	if err != nil {
		t.Fatal(err)
	}
	q := `sum(rate(http_requests_total{code=~"5.."}[30s]))`
	at := time.Date(2026, 12, 7, 16, 0, 0, 250e6, time.UTC)
	if _, err := c.Query(context.Background(), q, at); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(tokenFile, []byte("rotated"), 0o600); err != nil {
		t.Fatal(err)
	}
	refusePost = true
	if _, err := c.Query(context.Background(), q, time.Time{}); err != nil {
		t.Fatal(err)
	}
	want := []seen{
		{"POST", "/prometheus/api/v1/query", q, "1796659200.250", "Bearer first"},
		{"GET", "/prometheus/api/v1/query", q, "", "Bearer rotated"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("requests:\n got %+v\nwant %+v", got, want)
	}
}

func TestQueryUnreachable(t *testing.T) {
	// A server that answers too late: the client's timeout ends the query.
	release := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-time.After(5 * time.Second):
		}
	}))
	defer slow.Close()
	defer close(release)
	c, err := New(Options{URL: slow.URL, Timeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = c.Query(context.Background(), "up", time.Time{})
	if err == nil || !strings.Contains(err.Error(), "Prometheus at "+slow.URL+"/api/v1/query unreachable: no answer in time") || IsQueryError(err) {
		t.Errorf("slow server: error = %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("the query took %v with a 100ms timeout", d)
	}

	// A server that is gone: the port refuses.
	gone := httptest.NewServer(http.NotFoundHandler())
	url := gone.URL
	gone.Close()
	c, err = New(Options{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Query(context.Background(), "up", time.Time{})
	if err == nil || !strings.Contains(err.Error(), "Prometheus at "+url+"/api/v1/query unreachable: ") || !strings.Contains(err.Error(), "refused") {
		t.Errorf("closed server: error = %v", err)
	}
}

func TestNewProblems(t *testing.T) {
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(notPEM, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		o    Options
		want string
	}{
		{"no scheme", Options{URL: "prometheus:9090"}, `Prometheus URL "prometheus:9090": want http:// or https:// and a host`},
		{"empty", Options{}, `Prometheus URL "": want http:// or https://`},
		{"a certificate without its key", Options{URL: "https://p:9090", CertFile: "c.pem"}, "give both the certificate and its key file"},
		{"a CA file that is not PEM", Options{URL: "https://p:9090", CAFile: notPEM}, "holds no PEM certificate"},
		{"a token file that is missing", Options{URL: "http://p:9090", BearerTokenFile: filepath.Join(dir, "none")}, "Prometheus bearer token file: open "},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.o)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

// TestTLS: a server that verifies client certificates answers the client given
// the CA and a certificate, and refuses one without the certificate.
func TestTLS(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile, clientCert := writeClientCert(t, dir)
	pool := x509.NewCertPool()
	pool.AddCert(clientCert)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(scalar))
	}))
	srv.TLS = &tls.Config{ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool}
	srv.StartTLS()
	defer srv.Close()
	caFile := filepath.Join(dir, "ca.pem")
	writePEM(t, caFile, "CERTIFICATE", srv.Certificate().Raw)

	c, err := New(Options{URL: srv.URL, CAFile: caFile, CertFile: certFile, KeyFile: keyFile})
	if err != nil {
		t.Fatal(err)
	}
	r, err := c.Query(context.Background(), "vector(1)", time.Time{})
	if err != nil || len(r.Values) != 1 || r.Values[0] != 1 {
		t.Fatalf("with the certificate: %+v, %v", r, err)
	}

	c, err = New(Options{URL: srv.URL, CAFile: caFile})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Query(context.Background(), "vector(1)", time.Time{}); err == nil || !strings.Contains(err.Error(), "unreachable") {
		t.Errorf("without the certificate: error = %v, want unreachable", err)
	}

	// Without the CA the server's certificate is not trusted.
	c, err = New(Options{URL: srv.URL, CertFile: certFile, KeyFile: keyFile})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Query(context.Background(), "vector(1)", time.Time{}); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("without the CA: error = %v, want a certificate error", err)
	}
}

func writeClientCert(t *testing.T, dir string) (certFile, keyFile string, cert *x509.Certificate) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "kroll-analysis"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	if cert, err = x509.ParseCertificate(der); err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "client.pem"), filepath.Join(dir, "client-key.pem")
	writePEM(t, certFile, "CERTIFICATE", der)
	writePEM(t, keyFile, "EC PRIVATE KEY", keyDER)
	return certFile, keyFile, cert
}

func writePEM(t *testing.T, path, kind string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}
