package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/kroll-dev/kroll/pkg/analysis/promclient"
	"github.com/kroll-dev/kroll/pkg/manager"
)

// controllerManagerOptions are the flags of `kroll controller-manager`; names and
// defaults are kube-controller-manager's where it has the flag.
type controllerManagerOptions struct {
	kubeconfig string
	manager    manager.Options
	verbosity  int
	takeover   takeoverOptions
	cpuProfile string
	// featureGates is --feature-gates as given; setFeatureGates reads it into
	// manager.FeatureGates.
	featureGates string
	// prometheus is --prometheus-url and the flags beside it; setPrometheus gives it
	// to the manager when the URL is set.
	prometheus promclient.Options
}

// setPrometheus gives the controllers --prometheus-url's Prometheus for analyze
// steps; the flags that say how to reach it are refused without it.
func (o *controllerManagerOptions) setPrometheus() error {
	p := o.prometheus
	if p.URL == "" {
		for _, f := range []struct{ flag, v string }{{"--prometheus-bearer-token-file", p.BearerTokenFile}, {"--prometheus-ca-file", p.CAFile},
			{"--prometheus-cert-file", p.CertFile}, {"--prometheus-key-file", p.KeyFile}} {
			if f.v != "" {
				return fmt.Errorf("%s needs --prometheus-url: it says how to reach that Prometheus", f.flag)
			}
		}
		o.manager.Prometheus = nil
		return nil
	}
	o.manager.Prometheus = &p
	return nil
}

// setFeatureGates reads --feature-gates (as kroll up reads it: parseFeatureGates)
// into the gates the controllers run with, over gates.Defaults().
func (o *controllerManagerOptions) setFeatureGates() error {
	set, err := parseFeatureGates(o.featureGates)
	if err != nil {
		return err
	}
	o.manager.FeatureGates = set
	return nil
}

// takeoverOptions are the flags for switching a cluster over to kroll: check first,
// refuse while upstream's controllers still run.
type takeoverOptions struct {
	// dryRun runs the controllers with every write refused and reports them.
	dryRun bool
	// dryRunTimeout bounds a dry run; it ends earlier once the controllers are idle.
	dryRunTimeout time.Duration
	// force starts although kube-controller-manager still runs workload controllers.
	force bool
}

func newControllerManagerCommand(stdout, stderr io.Writer) *cobra.Command {
	o := &controllerManagerOptions{manager: manager.Options{
		Controllers: []string{"*"}, QPS: 20, Burst: 30,
		DeploymentWorkers: 5, ReplicaSetWorkers: 5, ReplicationControllerWorkers: 5, StatefulSetWorkers: 5, DaemonSetWorkers: 2,
		LeaderElection: manager.LeaderElection{Enabled: true, LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second,
			RetryPeriod: 2 * time.Second, Namespace: "kube-system", Name: "kroll-controller-manager"},
		Serving: manager.NewServing(),
	}}
	cmd := &cobra.Command{
		Use:   "controller-manager",
		Short: "Run kroll's workload controllers against an existing cluster, in place of kube-controller-manager's",
		Long: `Run kroll's Deployment, ReplicaSet, ReplicationController, StatefulSet and DaemonSet
controllers against the cluster of --kubeconfig (or, in a pod, the cluster it runs in).
kube-controller-manager must not run its own controllers for these kinds: start it with
--controllers=*,-deployment-controller,-replicaset-controller,-replicationcontroller-controller,-statefulset-controller,-daemonset-controller
(see deploy/README.md).

--dry-run runs the controllers with every write refused and recorded, prints per
workload the writes kroll would make now, and exits 1 when there are any beyond
in-flight rollouts' next steps. kroll refuses to start while kube-controller-manager
leads and runs its workload controllers, unless --force.

Several replicas may run: one leads (a coordination.k8s.io Lease), the others stand by.
/healthz, /readyz, Prometheus /metrics and (--profiling) /debug/pprof/ are served over
HTTPS on --bind-address:--secure-port (0.0.0.0:10270; --secure-port=0 serves nothing),
as kube-controller-manager serves its own: a self-signed certificate unless
--tls-cert-file/--tls-private-key-file are given; clients authenticated by the API
server (TokenReview, or a client certificate of the cluster's CA) and authorized by it
(SubjectAccessReview: get on the path). /healthz, /readyz and /livez are open to all
(--authorization-always-allow-paths); elsewhere a request without credentials gets 401.
The reviews go through --authentication-kubeconfig and --authorization-kubeconfig,
by default the controllers' own connection. SIGTERM stops the controllers, then hands
the lease over.

Once a burst of work is over (a rollout, the initial list), the memory its garbage
held is returned to the operating system, so that at rest the process holds about its
informers' cache and no more.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// In the options 0 means "the default"; as a flag it is a mistake, as upstream says.
			for _, name := range []string{"concurrent-deployment-syncs", "concurrent-replicaset-syncs", "concurrent-rc-syncs",
				"concurrent-statefulset-syncs", "concurrent-daemonset-syncs",
				"leader-elect-lease-duration", "leader-elect-renew-deadline", "leader-elect-retry-period"} {
				if v := cmd.Flags().Lookup(name).Value.String(); v == "0" || v == "0s" {
					return fmt.Errorf("--%s must be greater than 0, got %s", name, v)
				}
			}
			if o.takeover.dryRunTimeout <= 0 {
				return fmt.Errorf("--dry-run-timeout must be greater than 0, got %v", o.takeover.dryRunTimeout)
			}
			if err := o.setFeatureGates(); err != nil {
				return err
			}
			if err := o.setPrometheus(); err != nil {
				return err
			}
			return runControllerManager(cmd.Context(), o, stdout, stderr)
		},
	}
	f := cmd.Flags()
	// kube-controller-manager spells one of these with underscores (--concurrent_rc_syncs).
	f.SetNormalizeFunc(func(_ *pflag.FlagSet, name string) pflag.NormalizedName {
		return pflag.NormalizedName(strings.ReplaceAll(name, "_", "-"))
	})
	m := &o.manager
	f.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig of the cluster; default $KUBECONFIG, then the in-cluster configuration, then ~/.kube/config")
	f.StringSliceVar(&m.Controllers, "controllers", m.Controllers,
		"controllers to run: '*' is all, 'name' adds one, '-name' removes one; names: "+strings.Join(manager.ControllerNames, ", "))
	f.IntVar(&m.DeploymentWorkers, "concurrent-deployment-syncs", m.DeploymentWorkers, "Deployments synced concurrently")
	f.IntVar(&m.ReplicaSetWorkers, "concurrent-replicaset-syncs", m.ReplicaSetWorkers, "ReplicaSets synced concurrently")
	f.IntVar(&m.ReplicationControllerWorkers, "concurrent-rc-syncs", m.ReplicationControllerWorkers, "ReplicationControllers synced concurrently")
	f.IntVar(&m.StatefulSetWorkers, "concurrent-statefulset-syncs", m.StatefulSetWorkers, "StatefulSets synced concurrently")
	f.IntVar(&m.DaemonSetWorkers, "concurrent-daemonset-syncs", m.DaemonSetWorkers, "DaemonSets synced concurrently")
	f.StringVar(&m.DefaultDisruptionBudget, "default-disruption-budget", "Ignore",
		"whether rollouts of workloads without kroll.dev/disruption-budget draw on their PodDisruptionBudgets: Respect (old pods are evicted, so a budget holds a rollout as it holds kubectl drain) or Ignore (deleted, as upstream's controllers do)")
	f.StringVar(&o.featureGates, "feature-gates", "",
		"Kubernetes feature gates kroll's controllers read, as the cluster's components are given them: Name=true|false,... (MaxUnavailableStatefulSet, DeploymentReplicaSetTerminatingReplicas; other names of Kubernetes' list are accepted and left to other components); set them as your API server has them. Default: MaxUnavailableStatefulSet and DeploymentReplicaSetTerminatingReplicas on, as kroll up")
	f.Float32Var(&m.QPS, "kube-api-qps", m.QPS, "each controller's API requests per second")
	f.IntVar(&m.Burst, "kube-api-burst", m.Burst, "each controller's API request burst")
	le := &m.LeaderElection
	f.BoolVar(&le.Enabled, "leader-elect", le.Enabled, "run the controllers only while holding the leader Lease, so that several replicas can run")
	f.DurationVar(&le.LeaseDuration, "leader-elect-lease-duration", le.LeaseDuration, "how long standbys wait after the leader's last renewal before taking over")
	f.DurationVar(&le.RenewDeadline, "leader-elect-renew-deadline", le.RenewDeadline, "how long the leader retries renewing before it stops leading")
	f.DurationVar(&le.RetryPeriod, "leader-elect-retry-period", le.RetryPeriod, "wait between attempts to acquire or renew the lease")
	f.StringVar(&le.Name, "leader-elect-resource-name", le.Name, "name of the Lease")
	f.StringVar(&le.Namespace, "leader-elect-resource-namespace", le.Namespace, "namespace of the Lease")
	pr := &o.prometheus
	f.StringVar(&pr.URL, "prometheus-url", "", "the Prometheus whose HTTP API judges the `analyze` steps of kroll.dev/rollout-steps (the checks of kroll.dev/analysis), like http://prometheus.monitoring:9090; without it an analyze step holds until `kroll rollout promote`")
	f.StringVar(&pr.BearerTokenFile, "prometheus-bearer-token-file", "", "file holding a bearer token sent to --prometheus-url, read before each query (a rotated token is picked up)")
	f.StringVar(&pr.CAFile, "prometheus-ca-file", "", "PEM CA bundle that verifies --prometheus-url's certificate; default the system's roots")
	f.StringVar(&pr.CertFile, "prometheus-cert-file", "", "PEM client certificate presented to --prometheus-url (with --prometheus-key-file)")
	f.StringVar(&pr.KeyFile, "prometheus-key-file", "", "PEM key of --prometheus-cert-file")
	f.DurationVar(&pr.Timeout, "prometheus-timeout", promclient.DefaultTimeout, "bound on one query to --prometheus-url; a query that takes longer counts as an error towards the check's consecutiveErrorLimit")
	f.IntVarP(&o.verbosity, "v", "v", 0, "log verbosity (klog -v); logs go to stderr")

	// Secure serving of /healthz, /readyz, /metrics and /debug/pprof/: k8s.io/apiserver's
	// flags, as kube-controller-manager has them (--secure-port, --bind-address,
	// --tls-*, --authentication-*, --authorization-*, ...), and --profiling.
	m.Serving.AddFlags(f)
	addTakeoverFlags(f, &o.takeover)
	addCPUProfileFlag(f, &o.cpuProfile)
	return cmd
}

// addTakeoverFlags adds the flags of takeoverOptions.
func addTakeoverFlags(f *pflag.FlagSet, t *takeoverOptions) {
	f.BoolVar(&t.dryRun, "dry-run", false, "run the controllers with every write refused (never sent) and print, per workload, "+
		"the writes kroll would make now; exit 1 when there are writes beyond in-flight rollouts' next steps (no Lease is taken, no endpoint served)")
	// One full resync: each controller syncs every workload once when its informers
	// list them. A minute covers thousands of workloads at the default QPS; the dry
	// run ends as soon as every queue is idle.
	f.DurationVar(&t.dryRunTimeout, "dry-run-timeout", time.Minute, "longest a --dry-run runs; it ends earlier once every workload was synced and the controllers are idle")
	f.BoolVar(&t.force, "force", false, "start even though kube-controller-manager still runs its workload controllers (two controllers would then fight over every workload)")
}

func runControllerManager(ctx context.Context, o *controllerManagerOptions, stdout, stderr io.Writer) error {
	if err := o.manager.Validate(); err != nil {
		return err
	}
	stopProfile, err := startCPUProfile(o.cpuProfile)
	if err != nil {
		return err
	}
	defer stopProfile()
	var klogFlags flag.FlagSet
	klog.InitFlags(&klogFlags)
	_ = klogFlags.Set("v", strconv.Itoa(o.verbosity))
	klog.SetOutput(stderr)
	klog.LogToStderr(true)
	if o.takeover.dryRun && o.verbosity == 0 {
		// Every refused write is logged as a failed sync: noise around the report.
		// (klog writes to stderr itself, past SetOutput, at or above its threshold.)
		_ = klogFlags.Set("stderrthreshold", "FATAL")
		klog.LogToStderr(false)
		klog.SetOutput(io.Discard)
	}

	cfg, source, err := controllerManagerConfig(o.kubeconfig)
	if err != nil {
		return err
	}
	// A dry run serves no endpoints: it runs once and reports.
	if !o.takeover.dryRun {
		if err := defaultDelegationKubeconfigs(o.manager.Serving, o.kubeconfig, source == inClusterSource); err != nil {
			return err
		}
	}
	if err := checkReachable(cfg, source); err != nil {
		return err
	}
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	note, err := manager.Preflight(ctx, cfg, o.manager, o.takeover.dryRun, o.takeover.force)
	if err != nil {
		return err
	}
	if o.takeover.dryRun {
		if note != "" {
			fmt.Fprintf(stdout, "dry run: %s\n", note)
		}
		return dryRun(ctx, cfg, o, stdout)
	}
	go manager.ReleaseMemoryWhenIdle(ctx)
	return manager.Run(ctx, cfg, o.manager)
}

// dryRun runs the controllers with every write refused, without leader election
// (taking the Lease is a write), prints the report and fails with its summary line
// when kroll would write beyond in-flight rollouts' next steps.
func dryRun(ctx context.Context, cfg *rest.Config, o *controllerManagerOptions, stdout io.Writer) error {
	opts := o.manager
	opts.LeaderElection.Enabled = false
	result, err := manager.DryRun(ctx, cfg, opts, o.takeover.dryRunTimeout)
	if err != nil {
		return err
	}
	summary := result.Print(stdout)
	if result.Unexpected() > 0 {
		return errors.New(summary)
	}
	fmt.Fprintln(stdout, summary)
	return nil
}

// controllerManagerConfig finds the cluster: --kubeconfig, $KUBECONFIG, the pod's
// service account, ~/.kube/config, in that order. source names the one used, for errors.
func controllerManagerConfig(kubeconfig string) (cfg *rest.Config, source string, err error) {
	if kubeconfig == "" && os.Getenv("KUBECONFIG") == "" {
		if cfg, err := rest.InClusterConfig(); err == nil {
			return cfg, inClusterSource, nil
		}
	}
	// Without --kubeconfig the default rules read $KUBECONFIG (a list of files, merged)
	// or ~/.kube/config.
	if err := kubeconfigMissing(kubeconfig); err != nil {
		return nil, "", err
	}
	if env := os.Getenv("KUBECONFIG"); kubeconfig == "" && env != "" && !anyExists(filepath.SplitList(env)) {
		// client-go skips the missing files of $KUBECONFIG and, with none left, reports
		// "no configuration has been provided, try setting KUBERNETES_MASTER".
		return nil, "", fmt.Errorf("$KUBECONFIG (%s) names no file that exists; set it to a kubeconfig file or pass --kubeconfig", env)
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	switch {
	case kubeconfig != "":
		source = kubeconfig
	case os.Getenv("KUBECONFIG") != "":
		source = "$KUBECONFIG (" + os.Getenv("KUBECONFIG") + ")"
	default:
		source = "~/.kube/config"
	}
	cfg, err = clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, "", fmt.Errorf("no cluster to manage: %s: %v; pass --kubeconfig or run in a pod", source, oneLine(err.Error()))
	}
	return cfg, source, nil
}

// inClusterSource is the source controllerManagerConfig names for a pod's service account.
const inClusterSource = "the in-cluster configuration"

// defaultDelegationKubeconfigs points --authentication-kubeconfig and
// --authorization-kubeconfig, where not given, at the controllers' own kubeconfig file,
// so that the endpoints' TokenReviews and SubjectAccessReviews go where the controllers
// go. In a pod they stay empty: k8s.io/apiserver then uses the in-cluster configuration
// itself. The options read one file, so a $KUBECONFIG that merges several is refused.
func defaultDelegationKubeconfigs(s *manager.Serving, kubeconfig string, inCluster bool) error {
	if s == nil || s.SecureServing.BindPort == 0 || inCluster ||
		(s.Authentication.RemoteKubeConfigFile != "" && s.Authorization.RemoteKubeConfigFile != "") {
		return nil
	}
	file := kubeconfig
	if file == "" {
		if env := os.Getenv("KUBECONFIG"); env != "" {
			var existing []string
			for _, p := range filepath.SplitList(env) {
				if anyExists([]string{p}) {
					existing = append(existing, p)
				}
			}
			if len(existing) != 1 {
				return fmt.Errorf("$KUBECONFIG merges %d files; pass --authentication-kubeconfig and --authorization-kubeconfig for the endpoints' reviews, or --secure-port=0", len(existing))
			}
			file = existing[0]
		} else {
			file = clientcmd.RecommendedHomeFile
		}
	}
	for _, f := range []*string{&s.Authentication.RemoteKubeConfigFile, &s.Authorization.RemoteKubeConfigFile} {
		if *f == "" {
			*f = file
		}
	}
	return nil
}

// anyExists tells whether any of paths names an existing file.
func anyExists(paths []string) bool {
	for _, p := range paths {
		if _, err := os.Stat(p); err == nil {
			return true
		}
	}
	return false
}

// checkReachable fails fast, in one line, when the API server does not answer: a
// manager that starts against a wrong address would otherwise retry quietly forever.
func checkReachable(cfg *rest.Config, source string) error {
	c := rest.CopyConfig(cfg)
	c.Timeout = 10 * time.Second
	client, err := kubernetes.NewForConfig(c)
	if err != nil {
		return fmt.Errorf("%s: %w", source, err)
	}
	if _, err := client.Discovery().ServerVersion(); err != nil {
		return fmt.Errorf("cannot reach the API server %s (from %s): %v", cfg.Host, source, oneLine(err.Error()))
	}
	return nil
}
