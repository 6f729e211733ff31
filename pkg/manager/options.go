package manager

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/informers"
	corelisters "k8s.io/client-go/listers/core/v1"

	"github.com/kroll-dev/kroll/pkg/analysis"
	"github.com/kroll-dev/kroll/pkg/analysis/promclient"
	"github.com/kroll-dev/kroll/pkg/disruption"
)

// The controllers a manager can run, by the names --controllers takes.
const (
	Deployment            = "deployment"
	ReplicaSet            = "replicaset"
	ReplicationController = "replicationcontroller"
	StatefulSet           = "statefulset"
	DaemonSet             = "daemonset"
)

// ControllerNames lists every controller.
var ControllerNames = []string{Deployment, ReplicaSet, ReplicationController, StatefulSet, DaemonSet}

// Options are the manager's settings; the zero value takes upstream's defaults and runs
// every controller without leader election or endpoints (what `kroll up` wants).
type Options struct {
	// Controllers selects controllers as kube-controller-manager's --controllers does:
	// "*" is every controller, "name" adds one, "-name" removes one. Empty means "*".
	Controllers []string
	// QPS and Burst are each controller's client-side API limits (kube-controller-manager:
	// 20 and 30, per controller). Negative QPS means no limit.
	QPS   float32
	Burst int
	// DeploymentWorkers … DaemonSetWorkers are the concurrent syncs per controller
	// (upstream: 5 each, 2 for DaemonSets).
	DeploymentWorkers            int
	ReplicaSetWorkers            int
	ReplicationControllerWorkers int
	StatefulSetWorkers           int
	DaemonSetWorkers             int
	// LeaderElection, when enabled, runs the controllers only while this process holds a
	// coordination.k8s.io Lease, so that several replicas can run with one active.
	LeaderElection LeaderElection
	// DefaultDisruptionBudget is the kroll.dev/disruption-budget of workloads without
	// one (--default-disruption-budget): Respect or Ignore; empty is Ignore, upstream's
	// behaviour (see pkg/disruption).
	DefaultDisruptionBudget string
	// FeatureGates are the Kubernetes feature gates the controllers read (pkg/gates)
	// set over gates.Defaults(); names they do not read are ignored. `kroll up` passes
	// its cluster's.
	FeatureGates map[string]bool
	// Prometheus, when set, is the Prometheus the Deployment, StatefulSet and
	// DaemonSet controllers ask the checks of their `analyze` steps
	// (kroll.dev/rollout-steps, pkg/analysis); nil: an analyze step holds as a bare
	// pause, until `kroll rollout promote`.
	Prometheus *promclient.Options
	// Serving, when set with a port, serves /healthz, /readyz, /metrics and (Profiling)
	// /debug/pprof/ over HTTPS with delegated authentication and authorization. Nil
	// serves nothing.
	Serving *Serving
}

// LeaderElection configures the Lease lock; durations default to kube-controller-manager's.
type LeaderElection struct {
	Enabled bool
	// LeaseDuration is how long a standby waits after the last renewal before taking the
	// lease (15s); RenewDeadline how long the leader keeps retrying a renewal before it
	// gives up leading (10s); RetryPeriod the wait between attempts (2s).
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// Namespace and Name locate the Lease (kube-system/kroll-controller-manager).
	Namespace, Name string
	// Identity is this process's holder identity; default "<hostname>_<uuid>" as upstream.
	Identity string
}

func (o *Options) defaults() {
	setDefault := func(v *int, def int) {
		if *v == 0 {
			*v = def
		}
	}
	if o.QPS == 0 {
		o.QPS = 20
	}
	setDefault(&o.Burst, 30)
	setDefault(&o.DeploymentWorkers, 5)
	setDefault(&o.ReplicaSetWorkers, 5)
	setDefault(&o.ReplicationControllerWorkers, 5)
	setDefault(&o.StatefulSetWorkers, 5)
	setDefault(&o.DaemonSetWorkers, 2) // kube-controller-manager's --concurrent-daemonset-syncs
	le := &o.LeaderElection
	if le.LeaseDuration == 0 {
		le.LeaseDuration = 15 * time.Second
	}
	if le.RenewDeadline == 0 {
		le.RenewDeadline = 10 * time.Second
	}
	if le.RetryPeriod == 0 {
		le.RetryPeriod = 2 * time.Second
	}
	if le.Namespace == "" {
		le.Namespace = "kube-system"
	}
	if le.Name == "" {
		le.Name = "kroll-controller-manager"
	}
	if le.Identity == "" {
		host, err := os.Hostname()
		if err != nil {
			host = "kroll"
		}
		le.Identity = host + "_" + string(uuid.NewUUID())
	}
}

// disruptionBudget is DefaultDisruptionBudget as a mode.
func (o Options) disruptionBudget() (disruption.Mode, error) {
	if o.DefaultDisruptionBudget == "" {
		return disruption.Ignore, nil
	}
	m, err := disruption.ParseMode(o.DefaultDisruptionBudget)
	if err != nil {
		return "", fmt.Errorf("--default-disruption-budget: %w", err)
	}
	return m, nil
}

// analyzer is a controller that runs analyze steps (SetAnalysis).
type analyzer interface {
	SetAnalysis(configMaps corelisters.ConfigMapLister, prometheus analysis.Querier)
}

// setAnalysis lets c run analyze steps against Prometheus, checks read from f's
// ConfigMap informer; without Prometheus every analyze step holds as a bare pause.
func (o Options) setAnalysis(f informers.SharedInformerFactory, c analyzer) error {
	if o.Prometheus == nil {
		return nil
	}
	prom, err := promclient.New(*o.Prometheus)
	if err != nil {
		return err
	}
	c.SetAnalysis(f.Core().V1().ConfigMaps().Lister(), prom)
	return nil
}

// Validate reports the first option a user must change.
func (o Options) Validate() error {
	if _, err := EnabledControllers(o.Controllers); err != nil {
		return err
	}
	workers := []struct {
		flag string
		n    int
	}{{"concurrent-deployment-syncs", o.DeploymentWorkers}, {"concurrent-replicaset-syncs", o.ReplicaSetWorkers},
		{"concurrent-rc-syncs", o.ReplicationControllerWorkers}, {"concurrent-statefulset-syncs", o.StatefulSetWorkers},
		{"concurrent-daemonset-syncs", o.DaemonSetWorkers}}
	for _, w := range workers {
		if w.n < 0 {
			return fmt.Errorf("--%s must be greater than 0, got %d", w.flag, w.n)
		}
	}
	if _, err := o.disruptionBudget(); err != nil {
		return err
	}
	if o.Burst < 0 {
		return fmt.Errorf("--kube-api-burst must not be negative, got %d", o.Burst)
	}
	if o.Prometheus != nil {
		if _, err := promclient.New(*o.Prometheus); err != nil {
			return fmt.Errorf("--prometheus-url: %w", err)
		}
	}
	if err := o.Serving.Validate(); err != nil {
		return err
	}
	le := o.LeaderElection
	if !le.Enabled {
		return nil
	}
	for _, d := range []struct {
		flag string
		v    time.Duration
	}{{"leader-elect-lease-duration", le.LeaseDuration}, {"leader-elect-renew-deadline", le.RenewDeadline}, {"leader-elect-retry-period", le.RetryPeriod}} {
		if d.v < 0 {
			return fmt.Errorf("--%s must be positive, got %v", d.flag, d.v)
		}
	}
	if errs := validation.IsDNS1123Subdomain(le.Name); le.Name != "" && len(errs) > 0 {
		return fmt.Errorf("--leader-elect-resource-name %q: %s", le.Name, strings.Join(errs, "; "))
	}
	if errs := validation.IsDNS1123Label(le.Namespace); le.Namespace != "" && len(errs) > 0 {
		return fmt.Errorf("--leader-elect-resource-namespace %q: %s", le.Namespace, strings.Join(errs, "; "))
	}
	if le.LeaseDuration > 0 && le.RenewDeadline > 0 && le.RetryPeriod > 0 {
		// client-go's own rules, said with the flags' names.
		if le.LeaseDuration <= le.RenewDeadline {
			return fmt.Errorf("--leader-elect-lease-duration (%v) must be longer than --leader-elect-renew-deadline (%v)", le.LeaseDuration, le.RenewDeadline)
		}
		if float64(le.RenewDeadline) <= 1.2*float64(le.RetryPeriod) {
			return fmt.Errorf("--leader-elect-renew-deadline (%v) must be longer than 1.2 × --leader-elect-retry-period (%v)", le.RenewDeadline, le.RetryPeriod)
		}
	}
	return nil
}

// EnabledControllers resolves a --controllers list to the controllers to run, in
// ControllerNames order.
func EnabledControllers(selection []string) ([]string, error) {
	if len(selection) == 0 {
		selection = []string{"*"}
	}
	on := map[string]bool{}
	all := false
	for _, s := range selection {
		name, off := strings.CutPrefix(strings.TrimSpace(s), "-")
		switch {
		case name == "*" && !off:
			all = true
		case slices.Contains(ControllerNames, name):
			if _, set := on[name]; !set || off { // "-name" wins over "name", as upstream
				on[name] = !off
			}
		default:
			return nil, fmt.Errorf("--controllers: unknown controller %q; known: *, %s (prefix - to disable)", s, strings.Join(ControllerNames, ", "))
		}
	}
	var out []string
	for _, name := range ControllerNames {
		if enabled, set := on[name]; enabled || (!set && all) {
			out = append(out, name)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("--controllers %s enables no controller", strings.Join(selection, ","))
	}
	return out, nil
}
