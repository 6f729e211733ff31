// Package dashboard is `kroll dashboard`: a web UI of every rollout of a cluster,
// served from one set of shared informers (Cache) and rendered by the same views as
// `kroll status` and `kroll rollout status` (pkg/rolloutview). Pages are html/template
// on the server; the browser gets htmx (vendored, with its licence) and the pages'
// live regions are replaced by server-sent events fed by the informers.
//
// Security: every request is authenticated (local mode: a random token shown once in
// the URL, then an HttpOnly session cookie; in-cluster: a bearer token checked with
// TokenReview, or an authenticating proxy's headers); every action carries a CSRF
// token bound to the session; the Content-Security-Policy allows no inline script or
// style; the token never reaches a log (only methods and paths are logged).
package dashboard

import (
	"context"
	"embed"
	"fmt"
	"html/template"
	"io"
	"io/fs"
	"net/http"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Options configure a Server.
type Options struct {
	// Cache is the informers the pages read.
	Cache *Cache
	// Client is the dashboard's own client: in-cluster, TokenReviews, the
	// SubjectAccessReviews of log streams and the streams; in local mode the client of
	// every action and log (ClientFor may replace it).
	Client kubernetes.Interface
	// ClientFor is the client for an action of user (and locally of a log stream):
	// in-cluster, one impersonating user. Nil: Client.
	ClientFor func(User) (kubernetes.Interface, error)
	// Actions make the writes; nil, or ReadOnly, shows and accepts none.
	Actions  Actions
	ReadOnly bool
	// Token is local mode's URL token; InCluster switches to bearer tokens and
	// RequestHeader (an authenticating proxy, optional).
	Token         string
	InCluster     bool
	RequestHeader *RequestHeader
	// Log receives one line per request: method, path and status, never a query.
	Log io.Writer
	// Now is the clock (tests); nil: time.Now.
	Now func() time.Time
}

// Server serves the dashboard.
type Server struct {
	opts      Options
	sessions  sessions
	reviewer  *tokenReviewer
	csrf      []byte
	templates *template.Template
	mux       *http.ServeMux

	listMu sync.Mutex
	lists  map[Filter]renderedList

	rowsMu      sync.Mutex
	rows        []Row
	rowsVersion uint64
}

// New makes a Server from opts.
func New(opts Options) (*Server, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	t, err := template.New("").Funcs(funcs).ParseFS(templateFS, "templates/*.html")
	if err != nil {
		return nil, err
	}
	s := &Server{opts: opts, reviewer: &tokenReviewer{client: opts.Client}, csrf: []byte(randomToken()), templates: t, mux: http.NewServeMux()}
	static, _ := fs.Sub(staticFS, "static")
	files := http.StripPrefix("/static/", http.FileServerFS(static))
	s.mux.HandleFunc("GET /static/", func(w http.ResponseWriter, r *http.Request) {
		// Built into the binary: the same for as long as it runs.
		w.Header().Set("Cache-Control", "private, max-age=3600")
		files.ServeHTTP(w, r)
	})
	s.mux.HandleFunc("GET /{$}", s.authed(s.listPage))
	s.mux.HandleFunc("POST /login", s.login)
	s.mux.HandleFunc("GET /live/list", s.authed(s.listStream))
	s.mux.HandleFunc("GET /w/{ns}/{kind}/{name}", s.authed(s.workloadPage))
	s.mux.HandleFunc("GET /live/w/{ns}/{kind}/{name}", s.authed(s.workloadStream))
	s.mux.HandleFunc("GET /w/{ns}/{kind}/{name}/timeline.svg", s.authed(s.timeline))
	s.mux.HandleFunc("GET /w/{ns}/{kind}/{name}/diff", s.authed(s.diff))
	s.mux.HandleFunc("GET /w/{ns}/{kind}/{name}/pod/{pod}", s.authed(s.podPage))
	s.mux.HandleFunc("GET /live/logs/{ns}/{pod}", s.authed(s.logStream))
	s.mux.HandleFunc("GET /w/{ns}/{kind}/{name}/confirm", s.authed(s.confirm))
	s.mux.HandleFunc("POST /w/{ns}/{kind}/{name}/action", s.authed(s.action))
	return s, nil
}

// csp allows scripts, styles and images from the dashboard itself only: no inline
// script or style, no eval (htmx is configured without it), no framing.
const csp = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// ServeHTTP adds the security headers and the request log line.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", csp)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Cache-Control", "no-store")
	rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
	var out http.ResponseWriter = rec
	if !strings.HasPrefix(r.URL.Path, "/live/") {
		h.Add("Vary", "Accept-Encoding")
	}
	if compressible(r) {
		gz := &gzipWriter{ResponseWriter: rec}
		defer gz.close()
		out = gz
	}
	// The local token may come in the query; it is taken here, before anything that
	// could log or echo the URL, and the browser is sent to the same path without it.
	if tok := r.URL.Query().Get("token"); tok != "" && r.Method == http.MethodGet && !s.opts.InCluster {
		s.tokenLogin(out, r, tok)
	} else {
		s.mux.ServeHTTP(out, r)
	}
	// Path only: a query may carry the token.
	fmt.Fprintf(s.opts.Log, "%s %s %s %d\n", s.opts.Now().UTC().Format(time.RFC3339), r.Method, r.URL.Path, rec.status)
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(code int) {
	r.status = code
	r.ResponseWriter.WriteHeader(code)
}

// Flush lets event streams through the recorder.
func (r *statusRecorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// tokenLogin starts a session for a browser that shows the URL token and sends it to
// the page without the token in its address bar.
func (s *Server) tokenLogin(w http.ResponseWriter, r *http.Request, tok string) {
	if !equalTokens(tok, s.opts.Token) {
		http.Error(w, "401 Unauthorized: the token in this URL is not the one `kroll dashboard` printed", http.StatusUnauthorized)
		return
	}
	s.setSession(w, r, User{})
	q := r.URL.Query()
	q.Del("token")
	target := r.URL.Path
	if len(q) > 0 {
		target += "?" + q.Encode()
	}
	http.Redirect(w, r, target, http.StatusSeeOther)
}

func (s *Server) setSession(w http.ResponseWriter, r *http.Request, u User) {
	var expires time.Time
	if s.opts.InCluster {
		expires = s.opts.Now().Add(inClusterSession)
	}
	http.SetCookie(w, &http.Cookie{Name: cookieName(r), Value: s.sessions.add(u, expires), Path: "/", HttpOnly: true,
		Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode})
}

// login is in-cluster mode's form: a bearer token, checked with TokenReview, starts a
// session.
func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	if !s.opts.InCluster {
		http.Error(w, "404 page not found", http.StatusNotFound)
		return
	}
	u, ok, err := s.reviewer.review(r.Context(), r.PostFormValue("token"))
	if err != nil || !ok {
		http.Error(w, "401 Unauthorized: the API server did not accept this token", http.StatusUnauthorized)
		return
	}
	s.setSession(w, r, u)
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

type ctxKey struct{}

// authed refuses requests of no known user (401); in-cluster, a browser without a
// session gets the login form.
func (s *Server) authed(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id, ok, err := s.authenticate(r)
		if err != nil {
			http.Error(w, "could not check the token: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		if !ok {
			w.WriteHeader(http.StatusUnauthorized)
			s.render(w, "unauthorized", map[string]any{"InCluster": s.opts.InCluster})
			return
		}
		h(w, r.WithContext(context.WithValue(r.Context(), ctxKey{}, id)))
	}
}

func identityOf(r *http.Request) identity {
	id, _ := r.Context().Value(ctxKey{}).(identity)
	return id
}

// clientFor is the client r's user acts and reads logs with.
func (s *Server) clientFor(r *http.Request) (kubernetes.Interface, error) {
	if s.opts.ClientFor == nil {
		return s.opts.Client, nil
	}
	return s.opts.ClientFor(identityOf(r).user)
}

// canAct: actions are shown and accepted.
func (s *Server) canAct() bool { return !s.opts.ReadOnly && s.opts.Actions != nil }

func (s *Server) render(w io.Writer, name string, data any) {
	if err := s.templates.ExecuteTemplate(w, name, data); err != nil {
		fmt.Fprintf(w, "<p class=error>template %s: %s</p>", template.HTMLEscapeString(name), template.HTMLEscapeString(err.Error()))
	}
}
