// Package cluster runs a whole Kubernetes control plane in one process: etcd
// (go.etcd.io/etcd/server/v3/embed) and the real kube-apiserver, kube-scheduler and
// kube-controller-manager from k8s.io/kubernetes, plus simulated nodes (package kubelet),
// simulated dynamic storage (package storage) and, optionally, kroll's workload
// controllers. It is the only package of kroll that
// imports k8s.io/kubernetes.
//
// Several clusters may run in one process, side by side or one after another, each on
// its own data dir: the upstream components' process-wide names are claimed one
// component at a time (processnames.go), and klog, which every component logs through,
// writes to every running cluster's log (logging.go). Their metrics registries are
// process-wide too, so /metrics of one component counts every cluster's.
package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/kroll-dev/kroll/pkg/kubelet"
)

// WorkloadControllers selects who runs the Deployment, ReplicaSet, ReplicationController,
// StatefulSet and DaemonSet controllers.
type WorkloadControllers string

const (
	// WorkloadControllersKroll runs kroll's controllers; kube-controller-manager's are off.
	WorkloadControllersKroll WorkloadControllers = "kroll"
	// WorkloadControllersUpstream leaves kube-controller-manager's own controllers on, for
	// comparing kroll's behaviour and speed with upstream's.
	WorkloadControllersUpstream WorkloadControllers = "upstream"
	// WorkloadControllersNone runs neither, e.g. to run `kroll controller-manager` in a
	// process of its own against this cluster, or to measure the API alone.
	WorkloadControllersNone WorkloadControllers = "none"
)

// ParseWorkloadControllers reads kroll, upstream or none.
func ParseWorkloadControllers(s string) (WorkloadControllers, error) {
	switch w := WorkloadControllers(s); w {
	case WorkloadControllersKroll, WorkloadControllersUpstream, WorkloadControllersNone:
		return w, nil
	}
	return "", fmt.Errorf("--workload-controllers must be kroll, upstream or none, not %q", s)
}

// ControllerRunner runs workload controllers against the cluster until ctx ends.
type ControllerRunner func(ctx context.Context, cfg *rest.Config) error

// Config describes one embedded cluster.
type Config struct {
	// DataDir holds etcd's data, the PKI, kubeconfigs and logs. A second Start on the same
	// DataDir resumes the same cluster.
	DataDir string
	// Port is the API server's port on 127.0.0.1; 0 picks a free one.
	Port int
	// WorkloadControllers picks the workload controllers; see the constants.
	WorkloadControllers WorkloadControllers
	// KrollControllers runs kroll's controllers; required when WorkloadControllers is kroll.
	KrollControllers ControllerRunner
	// Kubelet configures the simulated nodes; its KubeletVersion is set by Start.
	Kubelet kubelet.Config
	// EtcdUnsafeNoFsync trades durability for speed (tests).
	EtcdUnsafeNoFsync bool
	// LogFile receives the components' logs; default <DataDir>/kroll.log.
	LogFile string
	// LogVerbosity is the klog -v level of the components.
	LogVerbosity int
	// APIServerArgs are extra kube-apiserver flags (e.g. admission plugins a test needs).
	APIServerArgs []string
	// NoAdmissionPolicy leaves kroll's ValidatingAdmissionPolicy out (see pkg/admission).
	NoAdmissionPolicy bool
	// FeatureGates are Kubernetes feature gates for every component, over kroll's
	// defaults (EffectiveFeatureGates): the API server, controller manager and
	// scheduler read them from the process-wide gate, kroll's controllers from
	// KrollControllers' options. Every cluster of one process must have the same.
	FeatureGates map[string]bool
	// Prometheus runs a Prometheus (prometheus.go) serving its API on 127.0.0.1 at
	// PrometheusPort (0: a free port); the cluster's PrometheusURL says where.
	Prometheus     bool
	PrometheusPort int
	// ReadyTimeout bounds Start's wait for the API, the nodes and the default service account.
	ReadyTimeout time.Duration
	// Warn, if set, receives warnings a user should act on (a data dir others may
	// read); otherwise they go to the log.
	Warn func(string)
	// Starting, if set, is called once Start holds the data dir and the API port and
	// before anything else happens: a command prints its "starting" line there, so a
	// refused start (data dir in use, port busy) prints nothing but its error.
	Starting func()
}

// Cluster is a running embedded cluster.
type Cluster struct {
	// Server is the API server's URL, "https://127.0.0.1:PORT".
	Server string
	// KubeconfigPath is the admin kubeconfig, <DataDir>/kubeconfig.
	KubeconfigPath string
	// RESTConfig is an admin client configuration, without client-side rate limits.
	RESTConfig *rest.Config
	// Client is an admin clientset.
	Client kubernetes.Interface
	// PrometheusURL is the embedded Prometheus' API, "http://127.0.0.1:PORT"; "" without one.
	PrometheusURL string

	cfg  Config
	pki  pki
	lock *dataDirLock
	etcd *embed.Etcd
	// server runs the API server and its egress; clients, everything that talks to it.
	// Stop stops the clients before the server: kube-controller-manager still building
	// its controllers ends the process when the API goes away under it (the namespace
	// controller's discovery calls klog.FlushAndExit).
	server, clients stage
	// ctx is clients.ctx with klog's logger, the context every client component runs in.
	ctx context.Context

	// nodes is how many simulated nodes run (cfg.Kubelet.Nodes plus those AddNodes added).
	nodesMu sync.Mutex
	nodes   int
	// egress carries the API server's connections to nodes and pods.
	egress *egress
	// prometheus stops and starts the embedded Prometheus (StopPrometheus).
	prometheus prometheusSwitch

	failOnce sync.Once
	failed   chan struct{}
	err      error
	stopOnce sync.Once
	// bootstrapping is set while the API server runs its post-start hooks (from its
	// start until /readyz first answers 200): see Stop.
	bootstrapping atomic.Bool
	// releaseLog stops klog writing to this cluster's log.
	releaseLog func()
}

// Start brings a cluster up and returns once the API is ready, every node is Ready and
// pods can be created in the default namespace. On any failure nothing is left running.
func Start(ctx context.Context, cfg Config) (_ *Cluster, err error) {
	if cfg.DataDir == "" {
		// filepath.Abs("") is the working directory: etcd/, pki/ and a kubeconfig would
		// land among the user's files.
		return nil, errors.New("--data-dir must not be empty; pass a directory for the cluster's state, such as .kroll")
	}
	if cfg.WorkloadControllers == "" {
		cfg.WorkloadControllers = WorkloadControllersUpstream
	}
	if cfg.WorkloadControllers == WorkloadControllersKroll && cfg.KrollControllers == nil {
		return nil, errors.New("--workload-controllers=kroll: this build has no kroll workload controllers; use upstream or none")
	}
	if cfg.ReadyTimeout <= 0 {
		cfg.ReadyTimeout = 2 * time.Minute
	}
	if err := cfg.Kubelet.Validate(); err != nil {
		return nil, err
	}
	if cfg.Port < 0 || cfg.Port > 65535 {
		return nil, fmt.Errorf("--port must be between 0 and 65535, got %d", cfg.Port)
	}
	if err := ValidateFeatureGates(cfg.FeatureGates); err != nil {
		return nil, err
	}
	if err := setFeatureGates(cfg.FeatureGates); err != nil {
		return nil, err
	}
	dir, err := filepath.Abs(cfg.DataDir)
	if err != nil {
		return nil, err
	}
	cfg.DataDir = dir
	if cfg.LogFile == "" {
		cfg.LogFile = filepath.Join(dir, "kroll.log")
	}
	listener, lock, err := claim(dir, cfg.Port)
	if err != nil {
		return nil, err
	}
	if cfg.Starting != nil {
		cfg.Starting()
	}

	c := &Cluster{cfg: cfg, pki: pki{dir: filepath.Join(dir, "pki")}, lock: lock, failed: make(chan struct{})}
	c.server.ctx, c.server.cancel = context.WithCancel(klog.NewContext(context.Background(), klog.Background()))
	c.clients.ctx, c.clients.cancel = context.WithCancel(c.server.ctx)
	c.ctx = c.clients.ctx
	defer func() {
		if err != nil {
			c.Stop()
		}
	}()
	if c.releaseLog, err = setupLogging(cfg.LogFile, cfg.LogVerbosity); err != nil {
		listener.Close()
		return nil, err
	}

	if err := c.pki.ensure(kubernetesServiceIP); err != nil {
		listener.Close()
		return nil, fmt.Errorf("create certificates in %s: %w", c.pki.dir, err)
	}
	warnExposure(dir, cfg.Warn)
	c.Server = fmt.Sprintf("https://%s", listener.Addr().String())

	release, err := bootstrapSlot(ctx)
	if err != nil {
		listener.Close()
		return nil, err
	}
	defer release() // once the API server is ready, or Start has failed
	etcd, etcdURL, err := startEtcd(ctx, dir, cfg.LogFile, c.pki, cfg.EtcdUnsafeNoFsync)
	if err != nil {
		listener.Close()
		return nil, err
	}
	c.etcd = etcd

	egress, egressArgs, err := listenEgress()
	if err != nil {
		listener.Close()
		return nil, err
	}
	c.egress = egress
	c.server.supervise(c, "the API server's egress to the simulated pods", egress.run)
	runAPIServer, err := apiServerRunner(c.server.ctx, listener, etcdURL, c.pki, append(egressArgs, c.cfg.APIServerArgs...))
	if err != nil {
		listener.Close()
		return nil, err
	}
	c.bootstrapping.Store(true)
	c.server.supervise(c, "kube-apiserver", runAPIServer)

	if c.RESTConfig, err = c.pki.restConfigFor(c.Server, identityAdmin); err != nil {
		return nil, err
	}
	if c.Client, err = kubernetes.NewForConfig(c.RESTConfig); err != nil {
		return nil, err
	}
	if err := c.waitFor(ctx, "the API server to be ready", c.apiReady); err != nil {
		return nil, err
	}
	c.bootstrapping.Store(false)
	release()
	if err := c.admissionPolicy(ctx); err != nil {
		return nil, err
	}

	if err := c.ensureIdentities(ctx, cfg.Kubelet.Nodes); err != nil {
		return nil, err
	}

	c.KubeconfigPath = filepath.Join(dir, "kubeconfig")
	if err := c.pki.writeKubeconfig(c.KubeconfigPath, c.Server, identityAdmin); err != nil {
		return nil, fmt.Errorf("write kubeconfig: %w", err)
	}
	if err := c.startComponents(); err != nil {
		return nil, err
	}
	if err := c.startStorage(ctx); err != nil {
		return nil, fmt.Errorf("simulated storage: %w", err)
	}
	if cfg.Prometheus {
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", cfg.PrometheusPort))
		if err != nil {
			return nil, fmt.Errorf("--prometheus-port %d: %w; pick another port, or 0 for a free one", cfg.PrometheusPort, err)
		}
		if err := c.startPrometheus(ctx, l); err != nil {
			return nil, fmt.Errorf("prometheus: %w", err)
		}
	}
	if err := c.waitFor(ctx, fmt.Sprintf("%d nodes to be Ready", cfg.Kubelet.Nodes), c.nodesReady); err != nil {
		return nil, err
	}
	if err := c.waitFor(ctx, "the default service account", c.defaultServiceAccount); err != nil {
		return nil, err
	}
	if err := c.admissionPolicyEnforced(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

// startComponents starts everything that talks to the API server as a client.
func (c *Cluster) startComponents() error {
	kcmKubeconfig := c.pki.path("controller-manager.kubeconfig")
	schedulerKubeconfig := c.pki.path("scheduler.kubeconfig")
	if err := c.pki.writeKubeconfig(kcmKubeconfig, c.Server, identityControllerManager); err != nil {
		return err
	}
	if err := c.pki.writeKubeconfig(schedulerKubeconfig, c.Server, identityScheduler); err != nil {
		return err
	}
	runKCM, err := controllerManagerRunner(c.ctx, kcmKubeconfig, c.pki, c.cfg.WorkloadControllers == WorkloadControllersUpstream, nil)
	if err != nil {
		return err
	}
	if err := claimNames(c.ctx, controllerManagerNames, func() <-chan struct{} { return c.supervise("kube-controller-manager", stopsBetweenClaims(runKCM)) }); err != nil {
		return fmt.Errorf("kube-controller-manager: %w", err)
	}
	c.clients.wg.Add(1)
	go func() { defer c.clients.wg.Done(); holdKCMLease(c.ctx, kcmKubeconfig) }()
	runScheduler, err := schedulerRunner(c.ctx, schedulerKubeconfig, nil)
	if err != nil {
		return err
	}
	if err := claimNames(c.ctx, schedulerNames, func() <-chan struct{} { return c.supervise("kube-scheduler", runScheduler) }); err != nil {
		return fmt.Errorf("kube-scheduler: %w", err)
	}

	c.nodes = c.cfg.Kubelet.Nodes
	kl, err := c.newKubelet(c.cfg.Kubelet)
	if err != nil {
		return err
	}
	c.supervise("simulated kubelet", kl.Run)

	if c.cfg.WorkloadControllers == WorkloadControllersKroll {
		rc, err := c.pki.restConfigFor(c.Server, identityControllers)
		if err != nil {
			return err
		}
		c.supervise("kroll workload controllers", func(ctx context.Context) error { return c.cfg.KrollControllers(ctx, rc) })
	}
	return nil
}

// AddNodes adds n simulated nodes to the running cluster, numbered after the existing
// ones, and waits until they are Ready; they run until the cluster stops.
func (c *Cluster) AddNodes(ctx context.Context, n int) error {
	c.nodesMu.Lock()
	cfg := c.cfg.Kubelet
	cfg.FirstNode, cfg.Nodes = c.nodes, n
	c.nodes += n
	total := c.nodes
	c.nodesMu.Unlock()
	if err := c.ensureNodeIdentities(ctx, total); err != nil {
		return err
	}
	kl, err := c.newKubelet(cfg)
	if err != nil {
		return err
	}
	c.supervise(fmt.Sprintf("simulated kubelet of nodes %d-%d", cfg.FirstNode, cfg.FirstNode+n-1), kl.Run)
	return c.waitFor(ctx, "the added nodes Ready", c.nodesReady)
}

func (c *Cluster) fail(err error) {
	c.failOnce.Do(func() {
		c.err = err
		close(c.failed)
		c.server.cancel()
	})
}

// Failed is closed when a component stopped on its own; Err then says which and why.
func (c *Cluster) Failed() <-chan struct{} { return c.failed }

// Err is the failure that stopped the cluster, or nil.
func (c *Cluster) Err() error {
	select {
	case <-c.failed:
		return c.err
	default:
		return nil
	}
}

// stopTimeout bounds how long Stop waits for the components to wind down.
const stopTimeout = 30 * time.Second

// Stop shuts every component down, closes etcd and releases the data dir. It is safe
// to call more than once.
func (c *Cluster) Stop() {
	c.stopOnce.Do(func() {
		c.awaitBootstrap()
		if !c.stopComponents(stopTimeout) {
			klog.Warningf("components still running %s after stop; closing etcd anyway", stopTimeout)
		}
		if c.etcd != nil {
			c.etcd.Close()
		}
		c.lock.release()
		if c.releaseLog != nil {
			c.releaseLog()
		}
	})
}

// waitFor polls check until it holds, a component fails, ctx ends or ReadyTimeout passes.
func (c *Cluster) waitFor(ctx context.Context, what string, check func(context.Context) bool) error {
	caller := ctx
	ctx, cancel := context.WithTimeout(ctx, c.cfg.ReadyTimeout)
	defer cancel()
	err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		if err := c.Err(); err != nil {
			return false, err
		}
		return check(ctx), nil
	})
	if err := c.Err(); err != nil {
		return err
	}
	if err != nil && caller.Err() != nil {
		return fmt.Errorf("stopped waiting for %s: %w", what, caller.Err())
	}
	if err != nil {
		return fmt.Errorf("timed out after %s waiting for %s (logs: %s)", c.cfg.ReadyTimeout, what, c.cfg.LogFile)
	}
	return nil
}

func (c *Cluster) nodesReady(ctx context.Context) bool {
	nodes, err := c.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: kubelet.LabelSimulated + "=true"})
	if err != nil {
		return false
	}
	ready := 0
	for _, n := range nodes.Items {
		for _, cond := range n.Status.Conditions {
			if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
				ready++
			}
		}
	}
	c.nodesMu.Lock()
	defer c.nodesMu.Unlock()
	return ready == c.nodes
}

func (c *Cluster) defaultServiceAccount(ctx context.Context) bool {
	_, err := c.Client.CoreV1().ServiceAccounts(metav1.NamespaceDefault).Get(ctx, "default", metav1.GetOptions{})
	return err == nil
}

// claim takes what a cluster needs exclusively: the data dir's lock and the API port.
// The data dir comes first when it exists, so that a second `kroll up` on a data dir in
// use is told just that, even when it would also find the port busy (both ask for
// 6443 by default). A data dir that does not exist yet has no user to find; it is
// created only after the port is bound, so a busy port leaves nothing behind.
func claim(dir string, port int) (net.Listener, *dataDirLock, error) {
	var lock *dataDirLock
	if info, err := os.Stat(dir); err == nil {
		if !info.IsDir() {
			return nil, nil, fmt.Errorf("data dir %s is a file, not a directory; pass a different --data-dir", dir)
		}
		if lock, err = lockDataDir(dir); err != nil {
			return nil, nil, err
		}
	}
	listener, err := listenAPI(port)
	if err != nil {
		lock.release()
		return nil, nil, err
	}
	if lock == nil {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			listener.Close()
			return nil, nil, fmt.Errorf("data dir: %w", err)
		}
		if lock, err = lockDataDir(dir); err != nil {
			listener.Close()
			return nil, nil, err
		}
	}
	return listener, lock, nil
}

// listenAPI binds the API server's port on 127.0.0.1 now, so that a busy port is
// reported before anything starts.
func listenAPI(port int) (net.Listener, error) {
	l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			return nil, fmt.Errorf("port %d on 127.0.0.1 is already in use; pass --port with a free port, or --port 0 to pick one", port)
		}
		return nil, fmt.Errorf("listen on 127.0.0.1:%d: %w", port, err)
	}
	return l, nil
}
