package dashboard

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// User is who makes a request. In local mode it is the zero User: actions are made
// as the kubeconfig's user. In-cluster it is the user a TokenReview or the
// authenticating proxy named, whom every action impersonates.
type User struct {
	Name   string
	Groups []string
	Extra  map[string][]string
	// UID is the user's UID as TokenReview gives it; "" from a proxy.
	UID string
}

// cookieName holds a browser's session once it showed the token (local) or logged in
// with a bearer token (in-cluster). Cookies are not kept apart by port: two
// dashboards on 127.0.0.1 (two clusters) would overwrite each other's session, so the
// name carries the port the browser addressed.
func cookieName(r *http.Request) string {
	name := "kroll-dashboard"
	if _, port, err := net.SplitHostPort(r.Host); err == nil && port != "" {
		name += "-" + port
	}
	return name
}

// sessions are the browsers that authenticated, by session id (the cookie's value).
type sessions struct {
	mu   sync.Mutex
	byID map[string]session
}

// session is one browser's user, until expires (zero: for as long as the dashboard
// runs, as local mode's sessions are).
type session struct {
	user    User
	expires time.Time
}

// inClusterSession is how long a browser that signed in with a bearer token stays
// signed in: a token revoked since is then no longer honoured by an old session.
const inClusterSession = time.Hour

func (s *sessions) add(u User, expires time.Time) string {
	id := randomToken()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byID == nil {
		s.byID = map[string]session{}
	}
	s.byID[id] = session{user: u, expires: expires}
	return id
}

func (s *sessions) get(id string, now time.Time) (User, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	se, ok := s.byID[id]
	if ok && !se.expires.IsZero() && now.After(se.expires) {
		delete(s.byID, id)
		return User{}, false
	}
	return se.user, ok
}

// randomToken is 32 random bytes in hex: the URL token, session ids, the CSRF key.
func randomToken() string {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return hex.EncodeToString(b)
}

// csrfToken is the token a form must carry for a request authenticated by key (a
// session id, or a proxy's user): an HMAC under the server's secret, so it cannot be
// made without reading a page the server rendered for that session.
func csrfToken(secret []byte, key string) string {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(key))
	return hex.EncodeToString(m.Sum(nil))
}

func equalTokens(a, b string) bool {
	return len(a) > 0 && subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

// RequestHeader is an authenticating proxy's configuration, named as kube-apiserver
// names its --requestheader-* flags: the proxy shows a client certificate signed by
// ClientCA (with a common name among AllowedNames, any when empty) and names the user
// in the first of UsernameHeaders that is set, its groups in GroupHeaders and extra
// fields in headers prefixed with ExtraHeaderPrefixes.
type RequestHeader struct {
	ClientCA            *x509.CertPool
	AllowedNames        []string
	UsernameHeaders     []string
	GroupHeaders        []string
	ExtraHeaderPrefixes []string
}

// fromProxy is the user an authenticating proxy names, when the request comes from
// one: a verified client certificate of an allowed name, and a user header.
func (h *RequestHeader) fromProxy(r *http.Request) (User, bool) {
	if h == nil || r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
		return User{}, false
	}
	cert := r.TLS.PeerCertificates[0]
	inter := x509.NewCertPool()
	for _, c := range r.TLS.PeerCertificates[1:] {
		inter.AddCert(c)
	}
	if _, err := cert.Verify(x509.VerifyOptions{Roots: h.ClientCA, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		return User{}, false
	}
	if len(h.AllowedNames) > 0 && !slices.Contains(h.AllowedNames, cert.Subject.CommonName) {
		return User{}, false
	}
	var u User
	for _, name := range h.UsernameHeaders {
		if v := r.Header.Get(name); v != "" {
			u.Name = v
			break
		}
	}
	if u.Name == "" {
		return User{}, false
	}
	for _, name := range h.GroupHeaders {
		u.Groups = append(u.Groups, r.Header.Values(name)...)
	}
	for key, values := range r.Header {
		for _, prefix := range h.ExtraHeaderPrefixes {
			if strings.HasPrefix(strings.ToLower(key), strings.ToLower(prefix)) {
				if u.Extra == nil {
					u.Extra = map[string][]string{}
				}
				field := strings.ToLower(key[len(prefix):])
				u.Extra[field] = append(u.Extra[field], values...)
			}
		}
	}
	return u, true
}

// tokenReviewer checks bearer tokens with the API server's TokenReview, remembering
// each answer for a short while: a page's event stream and its fragments would
// otherwise review the same token many times a second.
type tokenReviewer struct {
	client kubernetes.Interface
	mu     sync.Mutex
	seen   map[string]reviewed
}

type reviewed struct {
	user User
	ok   bool
	at   time.Time
}

// reviewTTL is how long an answer is trusted.
const reviewTTL = 10 * time.Second

func (t *tokenReviewer) review(ctx context.Context, token string) (User, bool, error) {
	t.mu.Lock()
	if r, ok := t.seen[token]; ok && time.Since(r.at) < reviewTTL {
		t.mu.Unlock()
		return r.user, r.ok, nil
	}
	t.mu.Unlock()
	res, err := t.client.AuthenticationV1().TokenReviews().Create(ctx, &authnv1.TokenReview{Spec: authnv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
	if err != nil {
		return User{}, false, err
	}
	if res.Status.Error != "" && !res.Status.Authenticated {
		return User{}, false, errors.New(res.Status.Error)
	}
	u := User{Name: res.Status.User.Username, Groups: res.Status.User.Groups, UID: res.Status.User.UID}
	for k, v := range res.Status.User.Extra {
		if u.Extra == nil {
			u.Extra = map[string][]string{}
		}
		u.Extra[k] = v
	}
	t.mu.Lock()
	if t.seen == nil || len(t.seen) > 10000 {
		t.seen = map[string]reviewed{}
	}
	t.seen[token] = reviewed{user: u, ok: res.Status.Authenticated, at: time.Now()}
	t.mu.Unlock()
	return u, res.Status.Authenticated, nil
}

// bearer is the request's bearer token, if any.
func bearer(r *http.Request) string {
	h := r.Header.Get("Authorization")
	if len(h) > 7 && strings.EqualFold(h[:7], "bearer ") {
		return strings.TrimSpace(h[7:])
	}
	return ""
}

// identity is who made a request and how: the user, the key its CSRF token derives
// from (empty for a request with a bearer token, which a browser never adds by itself
// and which needs none), and whether the request carried the URL token that starts a
// local session.
type identity struct {
	user    User
	csrfKey string
}

// authenticate names the request's user, or says why not (then 401). Local mode: the
// session cookie, or the URL token (which starts a session). In-cluster: a bearer
// token (TokenReview), an authenticating proxy's headers, or the session of a browser
// that logged in with a token.
func (s *Server) authenticate(r *http.Request) (identity, bool, error) {
	if c, err := r.Cookie(cookieName(r)); err == nil {
		if u, ok := s.sessions.get(c.Value, s.opts.Now()); ok {
			return identity{user: u, csrfKey: c.Value}, true, nil
		}
	}
	if !s.opts.InCluster {
		return identity{}, false, nil
	}
	if u, ok := s.opts.RequestHeader.fromProxy(r); ok {
		return identity{user: u, csrfKey: "proxy:" + u.Name}, true, nil
	}
	if tok := bearer(r); tok != "" {
		u, ok, err := s.reviewer.review(r.Context(), tok)
		return identity{user: u}, ok, err
	}
	return identity{}, false, nil
}

// NewToken is a fresh random token for local mode's URL.
func NewToken() string { return randomToken() }
