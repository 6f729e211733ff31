package clustertest

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/kroll-dev/kroll/pkg/rollout"
)

// DeploymentWatcher checks a RollingUpdate Deployment's surge and availability bounds
// at every change of the Deployment or its ReplicaSets that it observes, not just at the end:
//
//	Σ rs.spec.replicas            ≤ replicas + maxSurge
//	Σ rs.status.availableReplicas ≥ replicas − maxUnavailable
//
// Start it once the Deployment is available: the second bound does not hold while the
// Deployment first scales up.
type DeploymentWatcher struct {
	name        string
	deployments appslisters.DeploymentNamespaceLister
	replicaSets appslisters.ReplicaSetNamespaceLister

	// synced turns true once both caches hold the full state; events before that
	// would be judged on half a picture.
	synced atomic.Bool

	mu         sync.Mutex
	observed   int
	violations []string
}

// WatchDeployment starts watching namespace/name until the test ends.
func WatchDeployment(t testing.TB, client kubernetes.Interface, namespace, name string) *DeploymentWatcher {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(namespace))
	deployments, replicaSets := factory.Apps().V1().Deployments(), factory.Apps().V1().ReplicaSets()
	w := &DeploymentWatcher{name: name, deployments: deployments.Lister().Deployments(namespace), replicaSets: replicaSets.Lister().ReplicaSets(namespace)}
	handler := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { w.check() },
		UpdateFunc: func(any, any) { w.check() },
		DeleteFunc: func(any) { w.check() },
	}
	for _, inf := range []cache.SharedIndexInformer{deployments.Informer(), replicaSets.Informer()} {
		if _, err := inf.AddEventHandler(handler); err != nil {
			t.Fatal(err)
		}
	}
	factory.Start(ctx.Done())
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			t.Fatalf("invariant watcher: the %v cache did not sync", typ)
		}
	}
	w.synced.Store(true)
	w.check()
	return w
}

// check evaluates the bounds on the state the informers hold now. Informer handlers run
// one at a time per informer, and the listers see every event applied in order.
func (w *DeploymentWatcher) check() {
	if !w.synced.Load() {
		return
	}
	d, err := w.deployments.Get(w.name)
	if err != nil || d.Spec.Strategy.Type != appsv1.RollingUpdateDeploymentStrategyType || d.Spec.Strategy.RollingUpdate == nil {
		return
	}
	desired := int32(1)
	if d.Spec.Replicas != nil {
		desired = *d.Spec.Replicas
	}
	f, err := rollout.ResolveFenceposts(d.Spec.Strategy.RollingUpdate.MaxSurge, d.Spec.Strategy.RollingUpdate.MaxUnavailable, desired)
	if err != nil {
		return
	}
	all, err := w.replicaSets.List(labels.Everything())
	if err != nil {
		return
	}
	var specTotal, available int32
	for _, rs := range all {
		if !metav1.IsControlledBy(rs, d) {
			continue
		}
		if rs.Spec.Replicas != nil {
			specTotal += *rs.Spec.Replicas
		}
		available += rs.Status.AvailableReplicas
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.observed++
	if specTotal > desired+f.MaxSurge {
		w.violations = append(w.violations, fmt.Sprintf("observation %d: ReplicaSets want %d pods, more than %d replicas + %d surge", w.observed, specTotal, desired, f.MaxSurge))
	}
	if available < desired-f.MaxUnavailable {
		w.violations = append(w.violations, fmt.Sprintf("observation %d: %d pods available, fewer than %d replicas − %d unavailable", w.observed, available, desired, f.MaxUnavailable))
	}
}

// Verify fails t if any observed state broke a bound, or if fewer than minObserved
// states were observed (a watcher that saw nothing proves nothing).
func (w *DeploymentWatcher) Verify(t testing.TB, minObserved int) {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, v := range w.violations {
		t.Errorf("deployment %s invariant broken: %s", w.name, v)
	}
	if w.observed < minObserved {
		t.Errorf("deployment %s: only %d states observed, want at least %d", w.name, w.observed, minObserved)
	}
	t.Logf("deployment %s: %d states observed, %d violations", w.name, w.observed, len(w.violations))
}
