package cluster

import (
	"context"
	"fmt"
	"maps"
	"net"
	"net/http"
	"strings"
	"sync"

	"github.com/spf13/pflag"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/util/compatibility"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	basecompatibility "k8s.io/component-base/compatibility"
	apiserverapp "k8s.io/kubernetes/cmd/kube-apiserver/app"
	apiserveroptions "k8s.io/kubernetes/cmd/kube-apiserver/app/options"
	kcmapp "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	kcmoptions "k8s.io/kubernetes/cmd/kube-controller-manager/app/options"
	schedulerapp "k8s.io/kubernetes/cmd/kube-scheduler/app"
	scheduleroptions "k8s.io/kubernetes/cmd/kube-scheduler/app/options"

	"github.com/kroll-dev/kroll/pkg/gates"
)

// The three upstream components run in this process, each from its options and Run
// function, as upstream's own in-process test servers run them: no cobra command, so no
// process signal handler of theirs and no second logging setup. Each gets its own
// compatibility registry instead of the process-global one, so that building one
// component's options never sees another's.

// serviceClusterIPRange is the Service CIDR; its first address is the kubernetes Service.
const serviceClusterIPRange = "10.96.0.0/12"

var kubernetesServiceIP = net.ParseIP("10.96.0.1")

// defaultFeatureGates are the gates kroll turns on for every component, so that the API
// server and the controllers agree: maxUnavailable for StatefulSet rolling updates
// (beta and off by default in v1.36, so the API server would drop the field). A
// Config's FeatureGates go over them (`kroll up --feature-gates`).
var defaultFeatureGates = map[string]bool{gates.MaxUnavailableStatefulSet: true}

// EffectiveFeatureGates are the gates a cluster with cfg's FeatureGates sets beyond
// Kubernetes' defaults: kroll's defaults with cfg's over them.
func EffectiveFeatureGates(set map[string]bool) map[string]bool {
	out := maps.Clone(defaultFeatureGates)
	maps.Copy(out, set)
	return out
}

// ValidateFeatureGates checks gates as kube-apiserver's --feature-gates would,
// against Kubernetes' own list, on a copy of the gate: a name it does not have, or a
// gate locked to its default (GA or deprecated) set the other way, is one line.
func ValidateFeatureGates(set map[string]bool) error {
	if len(set) == 0 {
		return nil
	}
	if err := utilfeature.DefaultMutableFeatureGate.DeepCopy().SetFromMap(set); err != nil {
		return fmt.Errorf("--feature-gates: %s (Kubernetes %s's gates: kube-apiserver --help lists them)",
			strings.ReplaceAll(err.Error(), "\n", "; "), KubernetesVersion)
	}
	return nil
}

// processFeatureGates are the gates set on the process-wide gate, which the API
// server's strategies read (dropping fields of disabled features) and every component
// copies: one set per process, whatever its clusters. Nil until the first Start.
var processFeatureGates struct {
	sync.Mutex
	set map[string]bool
}

// setFeatureGates sets the effective gates of set on the process-wide gate, once per
// process: a later cluster with other gates is refused (its API server would read the
// first one's), to be started in a process of its own.
func setFeatureGates(set map[string]bool) error {
	want := EffectiveFeatureGates(set)
	processFeatureGates.Lock()
	defer processFeatureGates.Unlock()
	if have := processFeatureGates.set; have != nil {
		if !maps.Equal(have, want) {
			return fmt.Errorf("--feature-gates %s: this process already runs a cluster with %s, and every cluster in a process shares one set of gates; start this one in a process of its own",
				gates.Format(want), gates.Format(have))
		}
		return nil
	}
	if err := utilfeature.DefaultMutableFeatureGate.SetFromMap(want); err != nil {
		return fmt.Errorf("--feature-gates: %w", err)
	}
	processFeatureGates.set = want
	return nil
}

// workloadControllers are kube-controller-manager's controllers that kroll replaces.
var workloadControllers = []string{
	"deployment-controller",
	"replicaset-controller",
	"replicationcontroller-controller",
	"statefulset-controller",
	"daemonset-controller",
}

// newComponentRegistry gives a component its own effective version and feature gate,
// copied from the process-wide gate (setFeatureGates has set it).
func newComponentRegistry() (basecompatibility.ComponentGlobalsRegistry, error) {
	featureGate := utilfeature.DefaultMutableFeatureGate.DeepCopy()
	effectiveVersion := compatibility.DefaultBuildEffectiveVersion()
	effectiveVersion.SetEmulationVersion(featureGate.EmulationVersion())
	effectiveVersion.SetMinCompatibilityVersion(featureGate.MinCompatibilityVersion())
	registry := basecompatibility.NewComponentGlobalsRegistry()
	if err := registry.Register(basecompatibility.DefaultKubeComponent, effectiveVersion, featureGate); err != nil {
		return nil, err
	}
	return registry, nil
}

// parseFlags applies command-line style flags to a component's flag sets.
func parseFlags(component string, sets map[string]*pflag.FlagSet, args []string) error {
	fs := pflag.NewFlagSet(component, pflag.ContinueOnError)
	for _, s := range sets {
		fs.AddFlagSet(s)
	}
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%s flags: %w", component, err)
	}
	return nil
}

// apiServerRunner builds kube-apiserver serving on listener and returns its Run.
func apiServerRunner(ctx context.Context, listener net.Listener, etcdURL string, p pki, extraArgs []string) (func(context.Context) error, error) {
	registry, err := newComponentRegistry()
	if err != nil {
		return nil, err
	}
	s := apiserveroptions.NewServerRunOptions()
	s.GenericServerRunOptions.ComponentGlobalsRegistry = registry
	port := listener.Addr().(*net.TCPAddr).Port
	args := append([]string{
		"--etcd-servers=" + etcdURL,
		"--etcd-cafile=" + p.etcdCACert(),
		"--etcd-certfile=" + p.apiServerEtcdClientCert(),
		"--etcd-keyfile=" + p.apiServerEtcdClientKey(),
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		fmt.Sprintf("--secure-port=%d", port),
		"--tls-cert-file=" + p.servingCert(),
		"--tls-private-key-file=" + p.servingKey(),
		"--client-ca-file=" + p.caCert(),
		// Each simulated node writes as itself (identities.go): the Node authorizer and
		// NodeRestriction admission keep it to its own Node, Lease and pods.
		"--authorization-mode=Node,RBAC",
		"--enable-admission-plugins=NodeRestriction",
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + p.saPub(),
		"--service-account-signing-key-file=" + p.saKey(),
		"--service-cluster-ip-range=" + serviceClusterIPRange,
		"--allow-privileged=true",
		"--profiling=false",
		// The simulated nodes serve the kubelet API on their loopback-range InternalIP,
		// with a serving certificate the cluster CA signed for it.
		"--kubelet-preferred-address-types=InternalIP",
		"--kubelet-client-certificate=" + p.clientCert(identityAPIServerKubeletClient),
		"--kubelet-client-key=" + p.clientKey(identityAPIServerKubeletClient),
		"--kubelet-certificate-authority=" + p.caCert(),
		// The kubernetes Service cannot have a loopback endpoint, and nothing in a
		// simulated cluster dials it: leave its endpoints alone.
		"--endpoint-reconciler-type=none",
		// On stop, end open watches (kubectl get -w, informers) within a second instead of
		// waiting out the 60s request timeout for them.
		"--shutdown-watch-termination-grace-period=1s",
	}, extraArgs...)
	if err := parseFlags("kube-apiserver", s.Flags().FlagSets, args); err != nil {
		return nil, err
	}
	s.SecureServing.Listener = listener
	if err := registry.Set(); err != nil {
		return nil, err
	}
	completed, err := s.Complete(ctx)
	if err != nil {
		return nil, fmt.Errorf("kube-apiserver options: %w", err)
	}
	if errs := completed.Validate(); len(errs) != 0 {
		return nil, fmt.Errorf("kube-apiserver options: %w", utilerrors.NewAggregate(errs))
	}
	config, err := apiserverapp.NewConfig(completed)
	if err != nil {
		return nil, fmt.Errorf("kube-apiserver config: %w", err)
	}
	// Requests enter through the aggregator's handler chain; inside its authentication,
	// kube-controller-manager's controllers' writes get its name (kcmidentity.go).
	buildChain := config.Aggregator.GenericConfig.BuildHandlerChainFunc
	config.Aggregator.GenericConfig.BuildHandlerChainFunc = func(h http.Handler, c *genericapiserver.Config) http.Handler {
		return buildChain(namingKCMControllers(h), c)
	}
	done, err := config.Complete()
	if err != nil {
		return nil, fmt.Errorf("kube-apiserver config: %w", err)
	}
	server, err := apiserverapp.CreateServerChain(done)
	if err != nil {
		return nil, fmt.Errorf("kube-apiserver: %w", err)
	}
	return func(ctx context.Context) error {
		prepared, err := server.PrepareRun()
		if err != nil {
			return err
		}
		return prepared.Run(ctx)
	}, nil
}

// controllerManagerRunner builds kube-controller-manager; withWorkloads keeps its
// workload controllers on (the upstream comparison mode).
func controllerManagerRunner(ctx context.Context, kubeconfig string, p pki, withWorkloads bool, extraArgs []string) (func(context.Context) error, error) {
	controllers := "*"
	if !withWorkloads {
		controllers += ",-" + strings.Join(workloadControllers, ",-")
	}
	return kcmRunner(ctx, append([]string{
		"--kubeconfig=" + kubeconfig,
		"--controllers=" + controllers,
		// Each of its controllers acts as its own service account in kube-system, under
		// upstream's bootstrap role for it, as on a kubeadm cluster (identities.go).
		"--use-service-account-credentials",
		"--service-account-private-key-file=" + p.saKey(),
		"--root-ca-file=" + p.caCert(),
		"--cluster-signing-cert-file=" + p.caCert(),
		"--cluster-signing-key-file=" + p.caKey(),
		"--allocate-node-cidrs=false",
		"--configure-cloud-routes=false",
	}, extraArgs...))
}

// RunUpstreamWorkloadControllers runs kube-controller-manager with only its workload
// controllers (Deployment, ReplicaSet, ReplicationController, StatefulSet, DaemonSet)
// against the cluster of kubeconfig until ctx ends, each controller's client limited to
// qps and burst (a negative qps: no limit), its logs appended to logFile. It is the
// counterpart of `kroll controller-manager --leader-elect=false`: the bench harness runs
// each in a process of its own, so that the controllers' CPU and memory are measured
// apart from the cluster's.
func RunUpstreamWorkloadControllers(ctx context.Context, kubeconfig string, qps float32, burst int, logFile string) error {
	// kroll up's default gates, as the cluster it runs against has them.
	if err := setFeatureGates(nil); err != nil {
		return err
	}
	release, err := setupLogging(logFile, 0)
	if err != nil {
		return err
	}
	defer release()
	run, err := kcmRunner(ctx, []string{
		"--kubeconfig=" + kubeconfig,
		"--controllers=" + strings.Join(workloadControllers, ","),
		fmt.Sprintf("--kube-api-qps=%g", qps),
		fmt.Sprintf("--kube-api-burst=%d", burst),
	})
	if err != nil {
		return err
	}
	return run(ctx)
}

// kcmRootQPS and kcmRootBurst limit kube-controller-manager's own client when its
// controllers act as their service accounts.
const (
	kcmRootQPS   = 200
	kcmRootBurst = 400
)

// kcmRunner builds kube-controller-manager from args, without leader election or a
// serving port.
func kcmRunner(ctx context.Context, args []string) (func(context.Context) error, error) {
	registry, err := newComponentRegistry()
	if err != nil {
		return nil, err
	}
	s, err := kcmoptions.NewKubeControllerManagerOptions()
	if err != nil {
		return nil, err
	}
	s.ComponentGlobalsRegistry = registry
	all, disabled, aliases := kcmapp.KnownControllers(), kcmapp.ControllersDisabledByDefault(), kcmapp.ControllerAliases()
	flagSets := s.Flags(all, disabled, aliases)
	args = append([]string{"--leader-elect=false", "--secure-port=0"}, args...)
	if err := parseFlags("kube-controller-manager", flagSets.FlagSets, args); err != nil {
		return nil, err
	}
	s.ParsedFlags = &flagSets
	if err := registry.Set(); err != nil {
		return nil, err
	}
	config, err := s.Config(ctx, all, disabled, aliases)
	if err != nil {
		return nil, fmt.Errorf("kube-controller-manager config: %w", err)
	}
	config.Kubeconfig.Wrap(asKubeControllerManager)
	if config.ComponentConfig.KubeCloudShared.UseServiceAccountCredentials {
		// Each controller's client first gets or creates its service account and asks
		// for its token through the manager's own client: some 100 requests at start,
		// which its default limit (20/s, burst 30) would spread over 4 seconds. The
		// controllers' own clients keep the limit.
		root := rest.CopyConfig(config.Kubeconfig)
		root.QPS, root.Burst = kcmRootQPS, kcmRootBurst
		if config.Client, err = kubernetes.NewForConfig(rest.AddUserAgent(root, kcmUserAgent)); err != nil {
			return nil, fmt.Errorf("kube-controller-manager client: %w", err)
		}
	}
	return func(ctx context.Context) error { return kcmapp.Run(ctx, config.Complete()) }, nil
}

// schedulerRunner builds kube-scheduler.
func schedulerRunner(ctx context.Context, kubeconfig string, extraArgs []string) (func(context.Context) error, error) {
	registry, err := newComponentRegistry()
	if err != nil {
		return nil, err
	}
	opts := scheduleroptions.NewOptionsWithComponentGlobalsRegistry(registry)
	args := append([]string{
		"--kubeconfig=" + kubeconfig,
		"--leader-elect=false",
		"--secure-port=0",
		// The scheduler shares one machine with everything else; its default client
		// limits (50/100) would make it, not the workload controllers, the bottleneck
		// of large rollouts.
		"--kube-api-qps=500",
		"--kube-api-burst=1000",
	}, extraArgs...)
	if err := parseFlags("kube-scheduler", opts.Flags.FlagSets, args); err != nil {
		return nil, err
	}
	if err := registry.Set(); err != nil {
		return nil, err
	}
	cc, sched, err := schedulerapp.Setup(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("kube-scheduler: %w", err)
	}
	return func(ctx context.Context) error { return schedulerapp.Run(ctx, cc, sched) }, nil
}

// RunUpstreamWorkloadControllers runs kube-controller-manager's workload controllers
// (only those) against c, in this process, until ctx ends; it returns once they have
// stopped. It lets a test hand a live population from upstream's controllers to kroll's
// and back on one cluster, as `kroll upstream-controller-manager` does in a process of
// its own. It takes over the process-wide names of the cluster's own
// kube-controller-manager (processnames.go), which runs on without them.
func (c *Cluster) RunUpstreamWorkloadControllers(ctx context.Context) error {
	run, err := kcmRunner(ctx, []string{
		"--kubeconfig=" + c.pki.path("controller-manager.kubeconfig"),
		"--controllers=" + strings.Join(workloadControllers, ","),
		// As the cluster's own: each controller as its service account, under its role.
		"--use-service-account-credentials",
	})
	if err != nil {
		return err
	}
	var runErr error
	stopped := make(chan struct{})
	claimErr := claimNames(ctx, controllerManagerNames, func() <-chan struct{} {
		go func() { defer close(stopped); runErr = stopsBetweenClaims(run)(ctx) }()
		return stopped
	})
	<-stopped
	if runErr == nil && ctx.Err() == nil {
		runErr = claimErr
	}
	return runErr
}
