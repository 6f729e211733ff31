// Package manager runs kroll's workload controllers together on one set of shared
// informers: in-process under `kroll up`, and (later) as `kroll controller-manager`.
package manager

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/kroll-dev/kroll/pkg/controller/daemonset"
	"github.com/kroll-dev/kroll/pkg/controller/deployment"
	"github.com/kroll-dev/kroll/pkg/controller/replicaset"
	"github.com/kroll-dev/kroll/pkg/controller/statefulset"
)

// Options are the manager's settings; the zero value takes upstream's defaults.
type Options struct {
	// QPS and Burst are each controller's client-side API limits (kube-controller-manager:
	// 20 and 30, per controller).
	QPS   float32
	Burst int
	// DeploymentWorkers, ReplicaSetWorkers and ReplicationControllerWorkers are the
	// concurrent syncs (upstream: 5 each).
	DeploymentWorkers            int
	ReplicaSetWorkers            int
	ReplicationControllerWorkers int
	StatefulSetWorkers           int
	DaemonSetWorkers             int
}

func (o *Options) defaults() {
	if o.QPS == 0 {
		o.QPS = 20
	}
	if o.Burst == 0 {
		o.Burst = 30
	}
	if o.DeploymentWorkers == 0 {
		o.DeploymentWorkers = 5
	}
	if o.ReplicaSetWorkers == 0 {
		o.ReplicaSetWorkers = 5
	}
	if o.ReplicationControllerWorkers == 0 {
		o.ReplicationControllerWorkers = 5
	}
	if o.StatefulSetWorkers == 0 {
		o.StatefulSetWorkers = 5
	}
	if o.DaemonSetWorkers == 0 {
		o.DaemonSetWorkers = 2 // kube-controller-manager's --concurrent-daemonset-syncs
	}
}

// Run runs the Deployment, ReplicaSet, ReplicationController, StatefulSet and DaemonSet
// controllers against cfg until ctx ends.
func Run(ctx context.Context, cfg *rest.Config, opts Options) error {
	opts.defaults()
	clientFor := func(name string) (kubernetes.Interface, error) {
		c := rest.CopyConfig(cfg)
		c.QPS, c.Burst = opts.QPS, opts.Burst
		return kubernetes.NewForConfig(rest.AddUserAgent(c, "kroll/"+name))
	}
	informerClient, err := clientFor("informers")
	if err != nil {
		return err
	}
	rsClient, err := clientFor(replicaset.ControllerName)
	if err != nil {
		return err
	}
	dClient, err := clientFor(deployment.ControllerName)
	if err != nil {
		return err
	}
	rcClient, err := clientFor(replicaset.RCControllerName)
	if err != nil {
		return err
	}
	stsClient, err := clientFor(statefulset.ControllerName)
	if err != nil {
		return err
	}
	dsClient, err := clientFor(daemonset.ControllerName)
	if err != nil {
		return err
	}
	factory := informers.NewSharedInformerFactory(informerClient, 0)
	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	broadcaster.StartStructuredLogging(3)
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: informerClient.CoreV1().Events("")})
	defer broadcaster.Shutdown()

	rsc, err := replicaset.New(rsClient, factory.Apps().V1().ReplicaSets(), factory.Core().V1().Pods(),
		broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: replicaset.ControllerName}))
	if err != nil {
		return fmt.Errorf("replicaset controller: %w", err)
	}
	dc, err := deployment.New(dClient, factory.Apps().V1().Deployments(), factory.Apps().V1().ReplicaSets(), factory.Core().V1().Pods(),
		broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: deployment.ControllerName}))
	if err != nil {
		return fmt.Errorf("deployment controller: %w", err)
	}
	rcc, err := replicaset.NewForReplicationControllers(rcClient, factory.Core().V1().ReplicationControllers(), factory.Core().V1().Pods(),
		broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: replicaset.RCControllerName}))
	if err != nil {
		return fmt.Errorf("replicationcontroller controller: %w", err)
	}
	ssc, err := statefulset.New(stsClient, factory.Apps().V1().StatefulSets(), factory.Core().V1().Pods(),
		factory.Apps().V1().ControllerRevisions(), factory.Core().V1().PersistentVolumeClaims(),
		broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: statefulset.ControllerName}))
	if err != nil {
		return fmt.Errorf("statefulset controller: %w", err)
	}
	dsc, err := daemonset.New(dsClient, factory.Apps().V1().DaemonSets(), factory.Core().V1().Pods(), factory.Core().V1().Nodes(),
		factory.Apps().V1().ControllerRevisions(), broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: daemonset.ControllerName}))
	if err != nil {
		return fmt.Errorf("daemonset controller: %w", err)
	}
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	klog.FromContext(ctx).Info("Starting kroll workload controllers")

	var wg sync.WaitGroup
	wg.Add(5)
	go func() { defer wg.Done(); dsc.Run(ctx, opts.DaemonSetWorkers) }()
	go func() { defer wg.Done(); ssc.Run(ctx, opts.StatefulSetWorkers) }()
	go func() { defer wg.Done(); rsc.Run(ctx, opts.ReplicaSetWorkers) }()
	go func() { defer wg.Done(); rcc.Run(ctx, opts.ReplicationControllerWorkers) }()
	go func() { defer wg.Done(); dc.Run(ctx, opts.DeploymentWorkers) }()
	wg.Wait()
	return nil
}
