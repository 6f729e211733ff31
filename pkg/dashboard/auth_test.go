package dashboard

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// certificate makes a certificate for cn signed by parent (self-signed when nil).
func certificate(t *testing.T, cn string, ca bool, parent *x509.Certificate, parentKey *ecdsa.PrivateKey) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: ca, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert, key
}

func TestRequestHeaderTrustsOnlyTheProxysCertificate(t *testing.T) {
	ca, caKey := certificate(t, "proxy-ca", true, nil, nil)
	proxy, _ := certificate(t, "front-proxy", false, ca, caKey)
	other, _ := certificate(t, "someone-else", false, ca, caKey)
	rogueCA, rogueKey := certificate(t, "rogue-ca", true, nil, nil)
	rogue, _ := certificate(t, "front-proxy", false, rogueCA, rogueKey)
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	h := &RequestHeader{ClientCA: pool, AllowedNames: []string{"front-proxy"}, UsernameHeaders: []string{"X-Remote-User"},
		GroupHeaders: []string{"X-Remote-Group"}, ExtraHeaderPrefixes: []string{"X-Remote-Extra-"}}
	for _, tc := range []struct {
		name string
		cert *x509.Certificate
		user string
		want string
	}{
		{"the proxy names dev", proxy, "dev", "dev [devs ops] map[scopes:[view]]"},
		{"no certificate: headers are anyone's to set", nil, "dev", ""},
		{"a certificate of another name", other, "dev", ""},
		{"the proxy's name signed by another CA", rogue, "dev", ""},
		{"the proxy names nobody", proxy, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/", nil)
			if tc.user != "" {
				r.Header.Set("X-Remote-User", tc.user)
			}
			r.Header.Add("X-Remote-Group", "devs")
			r.Header.Add("X-Remote-Group", "ops")
			r.Header.Set("X-Remote-Extra-Scopes", "view")
			r.TLS = &tls.ConnectionState{}
			if tc.cert != nil {
				r.TLS.PeerCertificates = []*x509.Certificate{tc.cert}
			}
			u, ok := h.fromProxy(r)
			got := ""
			if ok {
				got = u.Name + " " + "[" + strings.Join(u.Groups, " ") + "] " + "map[scopes:[" + strings.Join(u.Extra["scopes"], " ") + "]]"
			}
			if got != tc.want {
				t.Errorf("fromProxy = %q (%v), want %q", got, ok, tc.want)
			}
		})
	}
}

func TestCSRFTokenIsBoundToTheSession(t *testing.T) {
	secret := []byte("server secret")
	a, b := csrfToken(secret, "session-a"), csrfToken(secret, "session-b")
	if a == b || !equalTokens(a, csrfToken(secret, "session-a")) || equalTokens("", "") {
		t.Errorf("CSRF tokens: a=%s b=%s; want each session its own, stable, and an empty one never equal", a, b)
	}
	if csrfToken([]byte("another server"), "session-a") == a {
		t.Errorf("the CSRF token does not depend on the server's secret")
	}
}

func TestInClusterSessionsExpire(t *testing.T) {
	var s sessions
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	local := s.add(User{}, time.Time{})
	signed := s.add(User{Name: "dev"}, now.Add(inClusterSession))
	if _, ok := s.get(signed, now.Add(59*time.Minute)); !ok {
		t.Errorf("a session signed in 59 minutes ago was refused")
	}
	if _, ok := s.get(signed, now.Add(61*time.Minute)); ok {
		t.Errorf("a session signed in 61 minutes ago was honoured")
	}
	if _, ok := s.get(local, now.Add(1000*time.Hour)); !ok {
		t.Errorf("a local session expired")
	}
	if _, ok := s.get("made-up", now); ok {
		t.Errorf("an unknown session id was honoured")
	}
}
