package manager

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/pflag"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/authorization/path"
	"k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/server/mux"
	apiserveroptions "k8s.io/apiserver/pkg/server/options"
	"k8s.io/apiserver/pkg/server/routes"
	controllermanagerapp "k8s.io/controller-manager/app"
	"k8s.io/klog/v2"
	netutils "k8s.io/utils/net"

	"github.com/kroll-dev/kroll/pkg/metrics"
)

// DefaultSecurePort is where `kroll controller-manager` serves unless told otherwise:
// kube-controller-manager's 10257 is taken where both run on one host.
const DefaultSecurePort = 10270

// Serving configures the endpoints `kroll controller-manager` serves — /healthz, /readyz,
// Prometheus /metrics and, with Profiling, /debug/pprof/ — the way kube-controller-manager
// serves its own: HTTPS on a secure port, clients authenticated by the API server
// (TokenReview, or a client certificate signed by the cluster's client CA) and authorized
// by it (SubjectAccessReview on the non-resource URL: "get /metrics"). The options are
// k8s.io/apiserver's, so are the flags and their meanings.
type Serving struct {
	// SecureServing: --bind-address (an IP), --secure-port (0 serves nothing),
	// --tls-cert-file/--tls-private-key-file (a self-signed certificate, in memory or
	// under --cert-dir, when none is given).
	SecureServing *apiserveroptions.SecureServingOptions
	// Authentication: --authentication-kubeconfig (empty: the in-cluster configuration),
	// --authentication-skip-lookup, --client-ca-file, ...
	Authentication *apiserveroptions.DelegatingAuthenticationOptions
	// Authorization: --authorization-kubeconfig (empty: the in-cluster configuration),
	// --authorization-always-allow-paths (/healthz, /readyz, /livez), ...
	Authorization *apiserveroptions.DelegatingAuthorizationOptions
	// Profiling adds Go's profiles (/debug/pprof/), authorized like /metrics.
	Profiling bool
}

// NewServing returns kube-controller-manager's serving defaults on DefaultSecurePort,
// with a self-signed certificate generated in memory.
func NewServing() *Serving {
	s := &Serving{
		SecureServing:  apiserveroptions.NewSecureServingOptions(),
		Authentication: apiserveroptions.NewDelegatingAuthenticationOptions(),
		Authorization:  apiserveroptions.NewDelegatingAuthorizationOptions(),
	}
	s.SecureServing.BindPort = DefaultSecurePort
	s.SecureServing.ServerCert.CertDirectory = ""
	s.SecureServing.ServerCert.PairName = "kroll-controller-manager"
	return s
}

// enabled tells whether anything is to be served.
func (s *Serving) enabled() bool {
	return s != nil && s.SecureServing != nil && (s.SecureServing.BindPort != 0 || s.SecureServing.Listener != nil)
}

// AddFlags adds k8s.io/apiserver's secure serving, authentication and authorization
// flags (kube-controller-manager's) and --profiling. --bind-address is an IP, as there;
// before it moved to HTTPS it was host:port, and that form is refused with the flags
// to use now.
func (s *Serving) AddFlags(fs *pflag.FlagSet) {
	var upstream pflag.FlagSet
	s.SecureServing.AddFlags(&upstream)
	s.Authentication.AddFlags(&upstream)
	s.Authorization.AddFlags(&upstream)
	upstream.VisitAll(func(f *pflag.Flag) {
		switch f.Name {
		case "bind-address":
			f.Value = bindAddress{&s.SecureServing.BindAddress}
		case "authentication-kubeconfig", "authorization-kubeconfig":
			f.Usage += " Default: the controllers' own kubeconfig (--kubeconfig, $KUBECONFIG, ~/.kube/config, or in a pod the in-cluster configuration)."
		}
		fs.AddFlag(f)
	})
	fs.BoolVar(&s.Profiling, "profiling", s.Profiling,
		"also serve Go's profiles (/debug/pprof/) on --secure-port, to clients allowed to get /debug/pprof/*")
}

// bindAddress is --bind-address: an IP, and a clear refusal of the old host:port.
type bindAddress struct{ ip *net.IP }

func (b bindAddress) String() string { return b.ip.String() }
func (b bindAddress) Type() string   { return "ip" }

func (b bindAddress) Set(v string) error {
	if host, port, err := net.SplitHostPort(v); err == nil {
		return fmt.Errorf("takes an IP address since the endpoints are served over HTTPS; use --bind-address=%s --secure-port=%s", host, port)
	}
	if v == "" {
		return errors.New("takes an IP address (0.0.0.0 for every interface); to serve nothing use --secure-port=0")
	}
	ip := netutils.ParseIPSloppy(v)
	if ip == nil {
		return errors.New("not an IP address; use one like 0.0.0.0 or 127.0.0.1 (the port is --secure-port)")
	}
	*b.ip = ip
	return nil
}

// Validate reports, in one line, what a user must change.
func (s *Serving) Validate() error {
	if s == nil {
		return nil
	}
	if port := s.SecureServing.BindPort; port < 0 || port > 65535 {
		// Upstream's message for this case adds "It cannot be turned off with 0", which
		// is not so here.
		return fmt.Errorf("--secure-port %d: want a port from 1 to 65535, or 0 to serve nothing", port)
	}
	var errs []error
	errs = append(errs, s.SecureServing.Validate()...)
	if s.enabled() {
		cert, key := s.SecureServing.ServerCert.CertKey.CertFile, s.SecureServing.ServerCert.CertKey.KeyFile
		if (cert == "") != (key == "") {
			errs = append(errs, errors.New("--tls-cert-file and --tls-private-key-file go together: pass both, or neither for a self-signed certificate"))
		}
		for _, f := range []struct{ flag, path string }{{"tls-cert-file", cert}, {"tls-private-key-file", key}} {
			if _, err := os.Stat(f.path); f.path != "" && err != nil {
				errs = append(errs, fmt.Errorf("--%s %s: %v", f.flag, f.path, errors.Unwrap(err)))
			}
		}
		errs = append(errs, s.Authentication.Validate()...)
		errs = append(errs, s.Authorization.Validate()...)
		if _, err := path.NewAuthorizer(s.Authorization.AlwaysAllowPaths); err != nil {
			errs = append(errs, fmt.Errorf("--authorization-always-allow-paths: %w", err))
		}
	}
	if len(errs) > 0 {
		return errs[0]
	}
	return nil
}

// secureEndpoints is what Serving resolves to: a listener with its certificates, an
// authenticator and an authorizer.
type secureEndpoints struct {
	serving *server.SecureServingInfo
	authn   server.AuthenticationInfo
	authz   server.AuthorizationInfo
}

// apply binds the port, loads or generates the certificate and builds the delegating
// authenticator and authorizer, as kube-controller-manager's Config does. Errors name
// the flag to change.
func (s *Serving) apply() (*secureEndpoints, error) {
	// kube-controller-manager's certificate: for localhost and 127.0.0.1, and the bind
	// address when it is one.
	if err := s.SecureServing.MaybeDefaultWithSelfSignedCerts("localhost", nil, []net.IP{netutils.ParseIPSloppy("127.0.0.1")}); err != nil {
		return nil, fmt.Errorf("--cert-dir %s: cannot write a self-signed certificate: %v", s.SecureServing.ServerCert.CertDirectory, oneLine(err))
	}
	e := &secureEndpoints{}
	if err := s.SecureServing.ApplyTo(&e.serving); err != nil {
		return nil, fmt.Errorf("--bind-address %s --secure-port %d (or --tls-cert-file, --tls-private-key-file): %v",
			s.SecureServing.BindAddress, s.SecureServing.BindPort, oneLine(err))
	}
	if err := s.Authentication.ApplyTo(&e.authn, e.serving, nil); err != nil {
		e.close()
		return nil, fmt.Errorf("delegated authentication (--authentication-kubeconfig %q): %v", s.Authentication.RemoteKubeConfigFile, oneLine(err))
	}
	if err := s.Authorization.ApplyTo(&e.authz); err != nil {
		e.close()
		return nil, fmt.Errorf("delegated authorization (--authorization-kubeconfig %q): %v", s.Authorization.RemoteKubeConfigFile, oneLine(err))
	}
	allowed, _ := path.NewAuthorizer(s.Authorization.AlwaysAllowPaths) // checked by Validate
	e.authn.Authenticator = anonymousOnlyOn(e.authn.Authenticator, allowed)
	return e, nil
}

func (e *secureEndpoints) close() { _ = e.serving.Listener.Close() }

// anonymousOnlyOn accepts an anonymous request only on the paths allowed authorizes
// (the always-allow paths: /healthz and /readyz for the kubelet's probes); anywhere
// else a request without credentials is unauthenticated: 401, at once.
// kube-controller-manager authenticates it as system:anonymous and answers 403 after a
// SubjectAccessReview that RBAC refuses; kroll answers what is missing (credentials)
// and spares the API server a review per stray scrape. The delegating options always
// add anonymous authentication for every path; k8s.io/apiserver's AnonymousAuthConfig
// conditions (anonymous only on listed paths), which they do not expose, are what this
// applies.
func anonymousOnlyOn(inner authenticator.Request, allowed authorizer.Authorizer) authenticator.Request {
	return authenticator.RequestFunc(func(req *http.Request) (*authenticator.Response, bool, error) {
		resp, ok, err := inner.AuthenticateRequest(req)
		if !ok || err != nil || resp.User.GetName() != user.Anonymous {
			return resp, ok, err
		}
		decision, _, _ := allowed.Authorize(req.Context(), authorizer.AttributesRecord{Path: req.URL.Path, Verb: "get"})
		if decision != authorizer.DecisionAllow {
			return nil, false, nil
		}
		return resp, ok, err
	})
}

// serve serves h's probes, /metrics and, with profiling, /debug/pprof/ through
// kube-controller-manager's handler chain (authentication, then authorization, then
// the endpoint) until the returned stop is called.
func (s *Serving) serve(ctx context.Context, h *health) (stop func(), err error) {
	e, err := s.apply()
	if err != nil {
		return nil, err
	}
	check := func(probe func(*http.Request) error) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			if err := probe(r); err != nil {
				w.WriteHeader(http.StatusServiceUnavailable)
				fmt.Fprintf(w, "%v\n", err)
				return
			}
			fmt.Fprintln(w, "ok")
		}
	}
	m := mux.NewPathRecorderMux("kroll-controller-manager")
	m.Handle("/healthz", check(h.healthy))
	m.Handle("/readyz", check(func(*http.Request) error { return h.ready() }))
	m.Handle("/metrics", promhttp.HandlerFor(metrics.Registry, promhttp.HandlerOpts{}))
	if s.Profiling {
		routes.Profiling{}.Install(m)
	}
	handler := controllermanagerapp.BuildHandlerChain(m, &e.authz, &e.authn)
	stopCh := make(chan struct{})
	stopped, _, err := e.serving.Serve(handler, 5*time.Second, stopCh)
	if err != nil {
		e.close()
		return nil, fmt.Errorf("serving on --secure-port %d: %v", s.SecureServing.BindPort, oneLine(err))
	}
	klog.FromContext(ctx).Info("Serving /healthz, /readyz and /metrics", "address", e.serving.Listener.Addr().String())
	return func() { close(stopCh); <-stopped }, nil
}

func oneLine(err error) string { return strings.Join(strings.Fields(err.Error()), " ") }
