package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/rest"

	"github.com/kroll-dev/kroll/pkg/analysis/promclient"
	"github.com/kroll-dev/kroll/pkg/cluster"
	"github.com/kroll-dev/kroll/pkg/disruption"
	"github.com/kroll-dev/kroll/pkg/kubelet"
	"github.com/kroll-dev/kroll/pkg/manager"
)

// upOptions are the flags of `kroll up`.
type upOptions struct {
	dataDir             string
	port                int
	workloadControllers string
	nodes               int
	nodeCPU             string
	nodeMemory          string
	nodePods            int
	kubelet             kubelet.Config
	faults              []string
	faultRulesFile      string
	imageCatalog        string
	unknownImages       string
	etcdNoFsync         bool
	admissionPolicy     bool
	verbosity           int
	disruptionBudget    string
	featureGates        string
	prometheus          bool
	prometheusPort      int
}

func newUpCommand(stdout, stderr io.Writer) *cobra.Command {
	defaults := kubelet.DefaultConfig()
	o := &upOptions{kubelet: defaults}
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Run a whole Kubernetes cluster on this machine: real API server, etcd, scheduler and controller manager, simulated nodes",
		Long: `Run a whole Kubernetes cluster in this process: etcd, the real kube-apiserver,
kube-scheduler and kube-controller-manager, workload controllers, and simulated nodes
whose kubelet moves pods through their lifecycle without running containers.

The admin kubeconfig is written to <data-dir>/kubeconfig; "ready" is printed once the
API is ready and every node is Ready. Stop with Ctrl-C; run again with the same
--data-dir to resume the same cluster.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runUp(cmd.Context(), o, stdout, stderr)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.dataDir, "data-dir", ".kroll", "directory for the cluster's state (etcd data, certificates, kubeconfig, logs)")
	f.IntVar(&o.port, "port", 6443, "API server port on 127.0.0.1; 0 picks a free port")
	f.StringVar(&o.workloadControllers, "workload-controllers", string(cluster.WorkloadControllersKroll),
		"who runs the Deployment/ReplicaSet/ReplicationController/StatefulSet/DaemonSet controllers: kroll, upstream (kube-controller-manager's own) or none")
	f.IntVar(&o.nodes, "nodes", defaults.Nodes, "number of simulated nodes")
	f.StringVar(&o.nodeCPU, "node-cpu", defaults.CPU.String(), "CPU capacity of each node")
	f.StringVar(&o.nodeMemory, "node-memory", defaults.Memory.String(), "memory capacity of each node")
	f.IntVar(&o.nodePods, "node-pods", defaults.Pods, "pod capacity of each node")
	f.DurationVar(&o.kubelet.PodStartupDelay, "pod-startup-delay", defaults.PodStartupDelay,
		"how long a container takes to start (per pod: annotation "+kubelet.AnnotationStartupDelay+")")
	f.DurationVar(&o.kubelet.MaxGracePeriod, "pod-max-grace-period", defaults.MaxGracePeriod,
		"cap on a deleted pod's termination grace period")
	f.DurationVar(&o.kubelet.CrashLoopBackOff, "crash-loop-back-off", defaults.CrashLoopBackOff,
		"restart back-off of a crashing container: the first restart is at once, the second after this, doubling per restart, at most 5m")
	f.StringArrayVar(&o.faults, "fault", nil,
		"IMAGE-GLOB=FAULT: containers of matching images misbehave; FAULT is ImagePullBackOff, CrashLoopBackOff, NeverReady, ReadyAfter(30s) or None, and/or ErrorRate(0.2) and Latency(300ms), joined with + (repeatable; per pod: annotation "+kubelet.AnnotationFault+")")
	f.StringVar(&o.faultRulesFile, "fault-rules", "", "YAML file of fault rules: {rules: [{image: GLOB, fault: FAULT}]}, applied after --fault")
	f.StringVar(&o.imageCatalog, "image-catalog", "",
		"YAML file of repositories and the tags they have, added to the built-in catalogue: {repositories: [{name: REPOSITORY, tags: [TAG, ...]}]}; a tag of a catalogued repository that is not listed fails to pull")
	f.StringVar(&o.unknownImages, "unknown-images", string(kubelet.UnknownImagesPull),
		"images of repositories no catalogue lists: pull (any tag exists) or fail (as a registry without the repository)")
	f.BoolVar(&o.admissionPolicy, "admission-policy", true,
		"install kroll's ValidatingAdmissionPolicy, which refuses bad kroll.dev/ settings on Deployments, StatefulSets and DaemonSets (deploy/admission-policy.yaml); false removes it")
	f.BoolVar(&o.etcdNoFsync, "etcd-unsafe-no-fsync", false, "skip etcd's fsyncs: faster, but a machine crash can lose the cluster")
	f.IntVarP(&o.verbosity, "v", "v", 0, "log verbosity of the components (logs go to <data-dir>/kroll.log)")
	f.StringVar(&o.disruptionBudget, "default-disruption-budget", "Ignore",
		"kroll's controllers: whether rollouts of workloads without kroll.dev/disruption-budget draw on their PodDisruptionBudgets: Respect or Ignore (as upstream)")
	f.StringVar(&o.featureGates, "feature-gates", "",
		"Kubernetes feature gates for every component (API server, controller manager, scheduler, kroll's controllers), as kind's featureGates: Name=true|false,...; kroll up turns MaxUnavailableStatefulSet on unless this says otherwise")
	f.BoolVar(&o.prometheus, "prometheus", false,
		"run a Prometheus beside the cluster (the github.com/prometheus/prometheus module's discovery, scrape manager, TSDB, PromQL engine and HTTP API): it scrapes pods annotated prometheus.io/scrape=\"true\" and the API server every "+cluster.PrometheusScrapeInterval+", and judges kroll's analyze steps; its URL is printed with the API server's")
	f.IntVar(&o.prometheusPort, "prometheus-port", 0, "with --prometheus: the port of its HTTP API on 127.0.0.1; 0 picks a free one")
	return cmd
}

// clusterConfig turns the flags into a cluster configuration, rejecting bad values.
func (o *upOptions) clusterConfig() (cluster.Config, error) {
	wc, err := cluster.ParseWorkloadControllers(o.workloadControllers)
	if err != nil {
		return cluster.Config{}, err
	}
	switch {
	case o.dataDir == "":
		// Not the working directory: etcd/, pki/ and a kubeconfig would land among the
		// user's files.
		return cluster.Config{}, errors.New("--data-dir must not be empty; pass a directory for the cluster's state, such as .kroll")
	case o.nodes < 0:
		return cluster.Config{}, fmt.Errorf("--nodes must be 0 or more, got %d", o.nodes)
	case o.nodePods < 1:
		return cluster.Config{}, fmt.Errorf("--node-pods must be at least 1, got %d", o.nodePods)
	case o.kubelet.PodStartupDelay < 0:
		return cluster.Config{}, fmt.Errorf("--pod-startup-delay must not be negative, got %s", o.kubelet.PodStartupDelay)
	case o.kubelet.MaxGracePeriod < 0:
		return cluster.Config{}, fmt.Errorf("--pod-max-grace-period must not be negative, got %s", o.kubelet.MaxGracePeriod)
	case o.kubelet.CrashLoopBackOff <= 0:
		return cluster.Config{}, fmt.Errorf("--crash-loop-back-off must be positive, got %s", o.kubelet.CrashLoopBackOff)
	case o.port < 0 || o.port > 65535:
		return cluster.Config{}, fmt.Errorf("--port must be between 0 and 65535, got %d", o.port)
	}
	k := o.kubelet
	k.Nodes, k.Pods = o.nodes, o.nodePods
	if k.CPU, err = resource.ParseQuantity(o.nodeCPU); err != nil || k.CPU.Sign() <= 0 {
		return cluster.Config{}, fmt.Errorf("--node-cpu must be a positive quantity like 32 or 500m, got %q", o.nodeCPU)
	}
	if k.Memory, err = resource.ParseQuantity(o.nodeMemory); err != nil || k.Memory.Sign() <= 0 {
		return cluster.Config{}, fmt.Errorf("--node-memory must be a positive quantity like 256Gi, got %q", o.nodeMemory)
	}
	var rules []kubelet.FaultRule
	for _, s := range o.faults {
		r, err := kubelet.ParseFaultRule(s)
		if err != nil {
			return cluster.Config{}, fmt.Errorf("--fault: %w", err)
		}
		rules = append(rules, r)
	}
	if o.faultRulesFile != "" {
		more, err := kubelet.LoadFaultRulesFile(o.faultRulesFile)
		if err != nil {
			return cluster.Config{}, err
		}
		rules = append(rules, more...)
	}
	if k.Faults, err = kubelet.NewFaultRules(rules...); err != nil {
		return cluster.Config{}, err
	}
	unknown, err := kubelet.ParseUnknownImages(o.unknownImages)
	if err != nil {
		return cluster.Config{}, fmt.Errorf("--unknown-images must be pull or fail, got %q", o.unknownImages)
	}
	var catalog []kubelet.CatalogRepository
	if o.imageCatalog != "" {
		if catalog, err = kubelet.LoadImageCatalogFile(o.imageCatalog); err != nil {
			return cluster.Config{}, err
		}
	}
	if k.Registry, err = kubelet.NewRegistry(unknown, catalog...); err != nil {
		return cluster.Config{}, err
	}
	if _, err := disruption.ParseMode(o.disruptionBudget); err != nil && o.disruptionBudget != "" { // "" is Ignore
		return cluster.Config{}, fmt.Errorf("--default-disruption-budget: %w", err)
	}
	if err := k.Validate(); err != nil {
		return cluster.Config{}, err
	}
	featureGates, err := parseFeatureGates(o.featureGates)
	if err != nil {
		return cluster.Config{}, err
	}
	switch {
	case o.prometheusPort < 0 || o.prometheusPort > 65535:
		return cluster.Config{}, fmt.Errorf("--prometheus-port must be between 0 and 65535, got %d", o.prometheusPort)
	case o.prometheusPort != 0 && !o.prometheus:
		return cluster.Config{}, errors.New("--prometheus-port needs --prometheus")
	}
	// kroll's controllers ask the cluster's Prometheus for analyze steps: its port is
	// chosen now, as the controllers start before it does.
	opts := manager.Options{DefaultDisruptionBudget: o.disruptionBudget, FeatureGates: cluster.EffectiveFeatureGates(featureGates)}
	promPort := o.prometheusPort
	if o.prometheus {
		if promPort == 0 {
			if promPort, err = cluster.FreePort(); err != nil {
				return cluster.Config{}, err
			}
		}
		opts.Prometheus = &promclient.Options{URL: fmt.Sprintf("http://127.0.0.1:%d", promPort)}
	}
	return cluster.Config{
		DataDir:             o.dataDir,
		Port:                o.port,
		WorkloadControllers: wc,
		KrollControllers:    krollControllers(opts),
		Kubelet:             k,
		EtcdUnsafeNoFsync:   o.etcdNoFsync,
		LogVerbosity:        o.verbosity,
		NoAdmissionPolicy:   !o.admissionPolicy,
		FeatureGates:        featureGates,
		Prometheus:          o.prometheus,
		PrometheusPort:      promPort,
	}, nil
}

// krollControllers runs kroll's workload controllers in the embedded cluster with opts.
func krollControllers(opts manager.Options) func(ctx context.Context, cfg *rest.Config) error {
	return func(ctx context.Context, cfg *rest.Config) error { return manager.Run(ctx, cfg, opts) }
}

func runUp(ctx context.Context, o *upOptions, stdout, stderr io.Writer) error {
	cfg, err := o.clusterConfig()
	if err != nil {
		return err
	}
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()

	// Printed once the data dir and the port are ours: a refused start is one line.
	cfg.Starting = func() {
		fmt.Fprintf(stderr, "kroll: starting Kubernetes %s in %s (%d nodes, workload controllers: %s; logs: %s/kroll.log)\n",
			cluster.KubernetesVersion, cfg.DataDir, cfg.Kubelet.Nodes, cfg.WorkloadControllers, cfg.DataDir)
	}
	cfg.Warn = func(msg string) { fmt.Fprintln(stderr, "kroll: warning: "+msg) }
	c, err := cluster.Start(ctx, cfg)
	if err != nil {
		if ctx.Err() != nil {
			return errors.New("interrupted while starting; nothing is left running")
		}
		return err
	}
	defer c.Stop()
	fmt.Fprintf(stdout, "API server: %s\nkubeconfig: %s\n", c.Server, c.KubeconfigPath)
	if c.PrometheusURL != "" {
		fmt.Fprintf(stdout, "Prometheus: %s\n", c.PrometheusURL)
	}
	fmt.Fprintf(stdout, "\n  export KUBECONFIG=%s\n  kubectl get nodes\n\nready\n", c.KubeconfigPath)

	select {
	case <-ctx.Done():
		fmt.Fprintln(stderr, "kroll: stopping")
		c.Stop()
		fmt.Fprintln(stderr, "kroll: stopped")
		return nil
	case <-c.Failed():
		c.Stop()
		return c.Err()
	}
}
