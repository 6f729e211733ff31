package cli

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"runtime/debug"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kroll-dev/kroll/internal/residency"
	"github.com/kroll-dev/kroll/pkg/dashboard"
)

// dashboardOptions are `kroll dashboard`'s flags.
type dashboardOptions struct {
	address, certFile, keyFile string
	port                       int
	readOnly, inCluster        bool
	namespaces                 []string
	// --requestheader-*, named as kube-apiserver names them.
	clientCAFile                                    string
	allowedNames, userHeaders, groupHeaders, extras []string
}

func (k *kubectlVerbs) newDashboardCommand() *cobra.Command {
	o := dashboardOptions{}
	cmd := &cobra.Command{
		Use:   "dashboard",
		Short: "Serve a web UI of every rollout, live, with its actions under the cluster's RBAC",
		Long: `Serve a web UI of every Deployment, StatefulSet and DaemonSet (and ReplicationControllers
and ReplicaSets with a rolling-update in flight): the list with each one's phase as
'kroll status' computes it, failing ones first; each workload's revisions as bars,
staged steps, failure and healing, pods by revision with their events and logs, the
timeline chart and the diff of two revisions; live, from one set of informers.

Local mode (the default) uses your kubeconfig and listens on 127.0.0.1: it prints one
URL carrying a random token, which the browser exchanges for a session cookie; a
request without it gets 401. Actions (promote, abort, pause, resume, undo, restart, set
image) are confirmed on a page naming what they write, and carry a CSRF token;
--read-only shows and accepts none.

In-cluster mode (--in-cluster) serves HTTPS (--tls-cert-file and --tls-private-key-file
are required) to users who bring a bearer token (checked with TokenReview) or come
through an authenticating proxy (--requestheader-*); every action impersonates them, so
the cluster's RBAC decides, and a refusal shows the API server's message. The
dashboard's own identity needs only to read, review tokens and access, and impersonate.`,
		Example: `  kroll dashboard
  kroll dashboard --read-only --namespaces=web,db --port=8080
  kroll dashboard --in-cluster --tls-cert-file=tls.crt --tls-private-key-file=tls.key`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := interruptible(cmd.Context())
			defer cancel()
			return k.serveDashboard(ctx, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.address, "address", "", "Address to listen on (default 127.0.0.1; in-cluster 0.0.0.0).")
	f.IntVar(&o.port, "port", 0, "Port to listen on; 0 picks a free one.")
	f.BoolVar(&o.readOnly, "read-only", false, "Show no actions, and refuse them.")
	f.StringSliceVar(&o.namespaces, "namespaces", nil, "Namespaces to show, comma-separated (default every namespace).")
	f.BoolVar(&o.inCluster, "in-cluster", false, "Authenticate users (bearer tokens, proxy headers) and act as them by impersonation.")
	f.StringVar(&o.certFile, "tls-cert-file", "", "Serve HTTPS with this certificate (required with --in-cluster).")
	f.StringVar(&o.keyFile, "tls-private-key-file", "", "The private key of --tls-cert-file.")
	f.StringVar(&o.clientCAFile, "requestheader-client-ca-file", "", "CA that signs the authenticating proxy's client certificate; enables proxy headers.")
	f.StringSliceVar(&o.allowedNames, "requestheader-allowed-names", nil, "Common names the proxy's certificate may have (default any).")
	f.StringSliceVar(&o.userHeaders, "requestheader-username-headers", []string{"X-Remote-User"}, "Headers naming the user.")
	f.StringSliceVar(&o.groupHeaders, "requestheader-group-headers", []string{"X-Remote-Group"}, "Headers naming the user's groups.")
	f.StringSliceVar(&o.extras, "requestheader-extra-headers-prefix", []string{"X-Remote-Extra-"}, "Prefixes of headers with the user's extra fields.")
	return cmd
}

func (k *kubectlVerbs) serveDashboard(ctx context.Context, o dashboardOptions) error {
	if (o.certFile == "") != (o.keyFile == "") {
		return errors.New("--tls-cert-file and --tls-private-key-file go together")
	}
	if o.inCluster && o.certFile == "" {
		return errors.New("--in-cluster serves bearer tokens: give --tls-cert-file and --tls-private-key-file")
	}
	cfg, err := k.dashboardConfig(o.inCluster)
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	cache := dashboard.NewCache(client, o.namespaces)
	if err := cache.Start(ctx, time.Minute); err != nil {
		if ctx.Err() != nil {
			return nil // interrupted while listing
		}
		return explainUnreachable(err, cfg.Host)
	}
	opts := dashboard.Options{Cache: cache, Client: client, Actions: dashboardActions{}, ReadOnly: o.readOnly,
		InCluster: o.inCluster, Log: k.streams.ErrOut}
	tlsConfig := &tls.Config{MinVersion: tls.VersionTLS12}
	if o.inCluster {
		opts.ClientFor = impersonating(cfg)
		if o.clientCAFile != "" {
			pool, err := certPool(o.clientCAFile)
			if err != nil {
				return err
			}
			opts.RequestHeader = &dashboard.RequestHeader{ClientCA: pool, AllowedNames: o.allowedNames,
				UsernameHeaders: o.userHeaders, GroupHeaders: o.groupHeaders, ExtraHeaderPrefixes: o.extras}
			tlsConfig.ClientAuth, tlsConfig.ClientCAs = tls.VerifyClientCertIfGiven, pool
		}
	} else {
		opts.Token = dashboard.NewToken()
	}
	server, err := dashboard.New(opts)
	if err != nil {
		return err
	}
	// Started and listed, the pages rendered once: from here on the dashboard runs a
	// small part of the binary.
	server.Warm()
	if _, err := residency.Release(); err != nil {
		fmt.Fprintf(k.streams.ErrOut, "kroll dashboard: keeping the executable's start-up pages: %v\n", err)
	}
	dashboardHeap()
	address := o.address
	if address == "" {
		address = "127.0.0.1"
		if o.inCluster {
			address = "0.0.0.0"
		}
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(address, strconv.Itoa(o.port)))
	if err != nil {
		return err
	}
	scheme := "http"
	if o.certFile != "" {
		scheme = "https"
	}
	url := fmt.Sprintf("%s://%s/", scheme, ln.Addr())
	if !o.inCluster {
		url += "?token=" + opts.Token
	}
	fmt.Fprintf(k.streams.Out, "kroll dashboard: %s\n", url)
	srv := &http.Server{Handler: server, TLSConfig: tlsConfig, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
		_ = srv.Close()
	}()
	if o.certFile != "" {
		err = srv.ServeTLS(ln, o.certFile, o.keyFile)
	} else {
		err = srv.Serve(ln)
	}
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// dashboardHeap tunes the garbage collector for a long-running dashboard, unless
// GOGC says otherwise. Its heap is mostly the informers' caches, which change slowly:
// at GOGC 50 the heap grows to 1.5 times what is live before a collection instead of
// twice (at 1,000 Deployments, some 35 MB live: 17 MB less), for collections of some
// 15 ms a little more often. The garbage of the first lists (every object decoded,
// then trimmed) is given back to the system at once rather than over minutes.
func dashboardHeap() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(50)
	}
	debug.FreeOSMemory()
}

// dashboardConfig is the dashboard's own client config: the kubeconfig, or in-cluster
// the pod's service account when no kubeconfig is given.
func (k *kubectlVerbs) dashboardConfig(inCluster bool) (*rest.Config, error) {
	var cfg *rest.Config
	var err error
	inPod := inCluster && *k.config.KubeConfig == "" && os.Getenv("KUBECONFIG") == "" && os.Getenv("KUBERNETES_SERVICE_HOST") != ""
	if inPod {
		cfg, err = rest.InClusterConfig()
	} else {
		if err := k.kubeconfig.resolve(k.config, k.streams.ErrOut); err != nil {
			return nil, err
		}
		if err := kubeconfigMissing(*k.config.KubeConfig); err != nil {
			return nil, err
		}
		cfg, err = k.factory.ToRESTConfig()
	}
	if err != nil {
		return nil, err
	}
	cfg = rest.CopyConfig(cfg)
	// The initial lists of a large cluster, then one watch per kind.
	cfg.QPS, cfg.Burst = 50, 100
	return cfg, nil
}

// impersonating gives each user a client that impersonates them, so the cluster's RBAC
// decides what they may do.
func impersonating(cfg *rest.Config) func(dashboard.User) (kubernetes.Interface, error) {
	return func(u dashboard.User) (kubernetes.Interface, error) {
		if u.Name == "" {
			return nil, errors.New("no user to act as")
		}
		c := rest.CopyConfig(cfg)
		// Not the user's extra fields: RBAC reads none, and impersonating each would need
		// a rule naming it (userextras/<key>: RBAC has no wildcard for them), for keys
		// as varied as a token's credential-id and a proxy's X-Remote-Extra- headers.
		c.Impersonate = rest.ImpersonationConfig{UserName: u.Name, UID: u.UID, Groups: u.Groups}
		return kubernetes.NewForConfig(c)
	}
}

func certPool(path string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%s holds no PEM certificate", path)
	}
	return pool, nil
}
