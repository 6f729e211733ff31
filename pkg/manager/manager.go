// Package manager runs kroll's workload controllers together on one set of shared
// informers: in-process under `kroll up`, and as `kroll controller-manager` on any cluster,
// where it adds leader election on a Lease and serves /healthz, /readyz and /metrics
// over HTTPS, authenticated and authorized by the API server (serving.go).
// Both run Run: there is one code path.
package manager

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/kroll-dev/kroll/pkg/controller/daemonset"
	"github.com/kroll-dev/kroll/pkg/controller/deployment"
	"github.com/kroll-dev/kroll/pkg/controller/replicaset"
	"github.com/kroll-dev/kroll/pkg/controller/statefulset"
	"github.com/kroll-dev/kroll/pkg/gates"
	"github.com/kroll-dev/kroll/pkg/metrics"
)

// Run runs the controllers opts selects against cfg until ctx ends, and returns nil then.
// With leader election it runs them only while leading, and returns an error if it
// stops leading for any other reason than ctx ending: a restart then competes again,
// as kube-controller-manager does.
func Run(ctx context.Context, cfg *rest.Config, opts Options) error {
	if err := opts.Validate(); err != nil {
		return err
	}
	opts.defaults()
	enabled, _ := EnabledControllers(opts.Controllers)
	// The controllers are built when they are to run, as kube-controller-manager's are:
	// a standby holds no queues, informers or event broadcasters.
	work := func(ctx context.Context, h *health) error {
		m, err := newControllers(ctx, cfg, opts, enabled, nil)
		if err != nil {
			return err
		}
		defer m.stopEvents()
		m.run(ctx, h)
		return nil
	}

	h := &health{}
	if opts.LeaderElection.Enabled {
		// kube-controller-manager's tolerance: unhealthy 20s after a renewal was due.
		h.lease, h.standby = leaderelection.NewLeaderHealthzAdaptor(20*time.Second), true
	}
	if opts.Serving.enabled() {
		stop, err := opts.Serving.serve(ctx, h)
		if err != nil {
			return err
		}
		defer stop()
	}
	if !opts.LeaderElection.Enabled {
		return work(ctx, h)
	}
	return lead(ctx, cfg, opts.LeaderElection, h, func(ctx context.Context) error { return work(ctx, h) })
}

// controllers are the selected controllers over one informer factory.
type controllers struct {
	factory informers.SharedInformerFactory
	// events are the controllers' event broadcasters, one each; eventLedger follows
	// their events until posted (see stopEvents).
	events      []record.EventBroadcaster
	eventLedger eventLedger
	runs        []func(context.Context)
	// rollouts reports rollouts in progress and failed from the factory's caches.
	rollouts *rolloutCollector
}

// newControllers builds the controllers enabled names. Each gets its own client, so
// each has its own QPS/Burst budget as in kube-controller-manager, and its own user
// agent and request metrics; together they keep to maxInFlight requests at once. A
// non-nil wrap goes in front of every client's transport, the event sink's included (a
// dry run's writeRecorder).
func newControllers(ctx context.Context, cfg *rest.Config, opts Options, enabled []string,
	wrap func(http.RoundTripper) http.RoundTripper) (*controllers, error) {
	limit := newInFlightLimit(maxInFlight)
	configFor := func(name string) *rest.Config {
		c := withProtobuf(cfg)
		c.QPS, c.Burst = opts.QPS, opts.Burst
		c.RateLimiter = newClientLimiter(opts.QPS, opts.Burst, paceTick)
		c.Wrap(limit.wrap) // inside the metrics: a request's time includes its wait
		c.Wrap(metrics.InstrumentTransport(name))
		if wrap != nil {
			c.Wrap(wrap) // outside the metrics: a refused write is no request
		}
		return rest.AddUserAgent(c, "kroll/"+name)
	}
	clientFor := func(name string) (kubernetes.Interface, error) {
		return kubernetes.NewForConfig(configFor(name))
	}
	informerConfig := configFor("informers")
	informerClient, err := kubernetes.NewForConfig(informerConfig)
	if err != nil {
		return nil, err
	}
	m := &controllers{
		factory: informers.NewSharedInformerFactoryWithOptions(informerClient, 0, informers.WithTransform(newSlimmer().slim)),
	}
	if err := usePodsDecodedThin(m.factory, informerConfig, informerClient); err != nil {
		return nil, err
	}
	sink := &typedcorev1.EventSinkImpl{Interface: informerClient.CoreV1().Events("")}
	recorder := func(component string) record.EventRecorder { return m.newRecorder(ctx, sink, component) }
	f := m.factory
	featureGates := gates.Defaults().With(opts.FeatureGates)
	for _, name := range enabled {
		var run func(context.Context)
		var err error
		switch name {
		case DaemonSet:
			run, err = build(clientFor, daemonset.ControllerName, opts.DaemonSetWorkers, func(c kubernetes.Interface) (runner, error) {
				dc, err := daemonset.New(c, f.Apps().V1().DaemonSets(), f.Core().V1().Pods(), f.Core().V1().Nodes(),
					f.Apps().V1().ControllerRevisions(), recorder(daemonset.ControllerName))
				if err != nil {
					return nil, err
				}
				mode, err := opts.disruptionBudget()
				if err != nil {
					return nil, err
				}
				if err := dc.RespectBudgets(f.Policy().V1().PodDisruptionBudgets(), mode); err != nil {
					return nil, err
				}
				// Configuration rollout and analyze steps, as for Deployments (below).
				if err := dc.WatchConfig(f.Apps().V1().DaemonSets().Informer(), f.Core().V1().ConfigMaps(), f.Core().V1().Secrets()); err != nil {
					return nil, err
				}
				return dc, opts.setAnalysis(f, dc)
			})
		case StatefulSet:
			run, err = build(clientFor, statefulset.ControllerName, opts.StatefulSetWorkers, func(c kubernetes.Interface) (runner, error) {
				sc, err := statefulset.New(c, f.Apps().V1().StatefulSets(), f.Core().V1().Pods(), f.Core().V1().Nodes(), f.Apps().V1().ControllerRevisions(),
					f.Core().V1().PersistentVolumeClaims(), recorder(statefulset.ControllerName))
				if err != nil {
					return nil, err
				}
				sc.SetFeatureGates(featureGates)
				mode, err := opts.disruptionBudget()
				if err != nil {
					return nil, err
				}
				if err := sc.RespectBudgets(f.Policy().V1().PodDisruptionBudgets(), mode); err != nil {
					return nil, err
				}
				// Configuration rollout and analyze steps, as for Deployments (below).
				if err := sc.WatchConfig(f.Apps().V1().StatefulSets().Informer(), f.Core().V1().ConfigMaps(), f.Core().V1().Secrets()); err != nil {
					return nil, err
				}
				return sc, opts.setAnalysis(f, sc)
			})
		case ReplicaSet:
			run, err = build(clientFor, replicaset.ControllerName, opts.ReplicaSetWorkers, func(c kubernetes.Interface) (runner, error) {
				rs, err := replicaset.New(c, f.Apps().V1().ReplicaSets(), f.Core().V1().Pods(), recorder(replicaset.ControllerName))
				if err != nil {
					return nil, err
				}
				rs.SetFeatureGates(featureGates)
				// A configuration rollout's pods wait for their revision's snapshots.
				if err := rs.WaitForSnapshots(f.Core().V1().ConfigMaps(), f.Core().V1().Secrets()); err != nil {
					return nil, err
				}
				mode, err := opts.disruptionBudget()
				if err != nil {
					return nil, err
				}
				return rs, rs.RespectBudgets(f.Apps().V1().Deployments(), f.Policy().V1().PodDisruptionBudgets(), mode)
			})
		case ReplicationController:
			run, err = build(clientFor, replicaset.RCControllerName, opts.ReplicationControllerWorkers, func(c kubernetes.Interface) (runner, error) {
				return replicaset.NewForReplicationControllers(c, f.Core().V1().ReplicationControllers(), f.Core().V1().Pods(),
					recorder(replicaset.RCControllerName))
			})
		case Deployment:
			run, err = build(clientFor, deployment.ControllerName, opts.DeploymentWorkers, func(c kubernetes.Interface) (runner, error) {
				dc, err := deployment.New(c, f.Apps().V1().Deployments(), f.Apps().V1().ReplicaSets(), f.Core().V1().Pods(), f.Core().V1().Nodes(),
					recorder(deployment.ControllerName))
				if err != nil {
					return nil, err
				}
				dc.SetFeatureGates(featureGates)
				// In-place restarts take their budgets' disruptions themselves.
				mode, err := opts.disruptionBudget()
				if err != nil {
					return nil, err
				}
				if err := dc.RespectBudgets(f.Policy().V1().PodDisruptionBudgets(), mode); err != nil {
					return nil, err
				}
				// Configuration rollout (kroll.dev/config-rollout) reads ConfigMaps and
				// Secrets and writes their snapshots.
				if err := dc.WatchConfig(f.Apps().V1().Deployments().Informer(), f.Core().V1().ConfigMaps(), f.Core().V1().Secrets()); err != nil {
					return nil, err
				}
				// Analyze steps read their checks from the same ConfigMap informer.
				return dc, opts.setAnalysis(f, dc)
			})
		}
		if err != nil {
			m.stopEvents()
			return nil, err
		}
		m.runs = append(m.runs, run)
	}
	m.rollouts = newRolloutCollector(f, enabled)
	return m, nil
}

// withProtobuf is a copy of cfg whose requests and responses are protobuf-encoded, as
// kube-controller-manager's (its --kube-api-content-type default). client-go's typed
// clients already prefer protobuf for built-in kinds when no content type is set, but
// what they build by hand does not: the event sink's posts, with no content type, go
// as JSON, which the client and the API server both encode and decode at several times
// protobuf's cost, for every event a rollout records.
func withProtobuf(cfg *rest.Config) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.ContentType = runtime.ContentTypeProtobuf
	c.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	return c
}

// newRecorder is component's event recorder, on a broadcaster of its own posting to
// sink. One each, as in kube-controller-manager: a broadcaster posts its events one
// at a time and holds at most 1,000 waiting (then drops), so one shared by every
// controller would post a mass rollout's events tens of seconds late, and could drop
// some. The sink is the informers' client's: events do not take from the QPS budget
// of a controller's writes. The broadcaster outlives ctx: stopEvents ends it, once it
// has posted what the controllers recorded.
func (m *controllers) newRecorder(ctx context.Context, sink record.EventSink, component string) record.EventRecorder {
	events := record.NewBroadcaster(record.WithContext(context.WithoutCancel(ctx)))
	events.StartStructuredLogging(3)
	events.StartRecordingToSink(m.eventLedger.sink(sink))
	m.events = append(m.events, events)
	return m.eventLedger.recorder(events.NewRecorder(scheme.Scheme, corev1.EventSource{Component: component}))
}

// stopEvents lets the controllers' event broadcasters post the events they hold, for
// at most eventFlushTimeout (see events.go), and shuts them down. The controllers
// have stopped: nothing records another.
func (m *controllers) stopEvents() {
	m.eventLedger.wait(eventFlushTimeout, eventFlushQuiet)
	for _, events := range m.events {
		events.Shutdown()
	}
}

// runner is what every kroll controller is.
type runner interface {
	Run(ctx context.Context, workers int)
}

// build makes one controller on its own client and returns its Run with workers bound.
func build[C runner](clientFor func(string) (kubernetes.Interface, error), name string, workers int,
	newController func(kubernetes.Interface) (C, error)) (func(context.Context), error) {
	client, err := clientFor(name)
	if err != nil {
		return nil, err
	}
	c, err := newController(client)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return func(ctx context.Context) { c.Run(ctx, workers) }, nil
}

// run starts the informers and the controllers, marks h ready once the caches have
// synced, and returns when ctx has ended and every controller has stopped.
func (m *controllers) run(ctx context.Context, h *health) {
	klog.FromContext(ctx).Info("Starting kroll workload controllers")
	m.factory.Start(ctx.Done())
	defer m.factory.Shutdown()
	// Only one manager per process reports rollouts: the registry is the process's.
	if err := metrics.Registry.Register(m.rollouts); err != nil {
		klog.FromContext(ctx).V(2).Info("Not reporting rollouts in /metrics", "err", err)
	} else {
		defer metrics.Registry.Unregister(m.rollouts)
	}

	var wg sync.WaitGroup
	for _, run := range m.runs {
		wg.Add(1)
		go func() { defer wg.Done(); run(ctx) }()
	}
	go func() {
		for _, synced := range m.factory.WaitForCacheSync(ctx.Done()) {
			if !synced {
				return
			}
		}
		h.markSynced(ctx)
	}()
	wg.Wait()
	h.markStopped()
}
