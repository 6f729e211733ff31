package clustertest

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/kroll-dev/kroll/pkg/history"
	"github.com/kroll-dev/kroll/pkg/rollout"
)

// DeploymentWatcher checks a Deployment's bounds at every change of the Deployment, its
// ReplicaSets or its pods that it observes, not just at the end. For RollingUpdate:
//
//	Σ rs.spec.replicas            ≤ replicas + maxSurge
//	Σ rs.status.availableReplicas ≥ replicas − maxUnavailable
//	pods not terminating          ≤ replicas + maxSurge
//	pods available, not terminating ≥ replicas − maxUnavailable
//
// for Recreate, that pods of two templates never exist at once; and for both, that no
// two ReplicaSets share a template. Start it once the Deployment is available: the
// availability bounds do not hold while it first scales up.
type DeploymentWatcher struct {
	name        string
	deployments appslisters.DeploymentNamespaceLister
	replicaSets appslisters.ReplicaSetNamespaceLister
	pods        corelisters.PodNamespaceLister

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
	deployments, replicaSets, pods := factory.Apps().V1().Deployments(), factory.Apps().V1().ReplicaSets(), factory.Core().V1().Pods()
	w := &DeploymentWatcher{name: name, deployments: deployments.Lister().Deployments(namespace),
		replicaSets: replicaSets.Lister().ReplicaSets(namespace), pods: pods.Lister().Pods(namespace)}
	handler := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { w.check() },
		UpdateFunc: func(any, any) { w.check() },
		DeleteFunc: func(any) { w.check() },
	}
	for _, inf := range []cache.SharedIndexInformer{deployments.Informer(), replicaSets.Informer(), pods.Informer()} {
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
	if err != nil {
		return
	}
	desired := rollout.DesiredReplicas(d)
	f := rollout.DeploymentFenceposts(d)
	all, err := w.replicaSets.List(labels.Everything())
	if err != nil {
		return
	}
	var owned []*appsv1.ReplicaSet
	for _, rs := range all {
		if metav1.IsControlledBy(rs, d) {
			owned = append(owned, rs)
		}
	}
	selector, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil {
		return
	}
	pods, err := w.pods.List(selector)
	if err != nil {
		return
	}
	var running, available int32
	templates := map[string]bool{}
	for _, p := range pods {
		if p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			if p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
				templates[p.Labels[appsv1.DefaultDeploymentUniqueLabelKey]] = true
			}
			continue
		}
		running++
		templates[p.Labels[appsv1.DefaultDeploymentUniqueLabelKey]] = true
		if rollout.IsPodAvailable(p, d.Spec.MinReadySeconds, time.Now()) {
			available++
		}
	}

	w.mu.Lock()
	defer w.mu.Unlock()
	w.observed++
	fail := func(format string, args ...any) {
		state := ""
		for _, rs := range owned {
			state += fmt.Sprintf(" %s=%d/%d", rs.Labels[appsv1.DefaultDeploymentUniqueLabelKey], *rs.Spec.Replicas, rs.Status.AvailableReplicas)
		}
		w.violations = append(w.violations, fmt.Sprintf("observation %d: ", w.observed)+fmt.Sprintf(format, args...)+" [replica sets spec/available:"+state+"]")
	}
	for i := range owned {
		for j := i + 1; j < len(owned); j++ {
			if history.EqualIgnoringHash(&owned[i].Spec.Template, &owned[j].Spec.Template) {
				fail("ReplicaSets %s and %s have the same template", owned[i].Name, owned[j].Name)
			}
		}
	}
	if d.Spec.Strategy.Type == appsv1.RecreateDeploymentStrategyType {
		if len(templates) > 1 {
			fail("pods of %d templates exist at once under Recreate", len(templates))
		}
		return
	}
	if n := rollout.SpecReplicas(owned); n > desired+f.MaxSurge {
		fail("ReplicaSets want %d pods, more than %d replicas + %d surge", n, desired, f.MaxSurge)
	}
	if n := rollout.AvailableReplicas(owned); n < desired-f.MaxUnavailable {
		fail("ReplicaSets report %d available, fewer than %d replicas − %d unavailable", n, desired, f.MaxUnavailable)
	}
	if running > desired+f.MaxSurge {
		fail("%d pods running, more than %d replicas + %d surge", running, desired, f.MaxSurge)
	}
	if available < desired-f.MaxUnavailable {
		fail("%d pods available, fewer than %d replicas − %d unavailable", available, desired, f.MaxUnavailable)
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

// Report logs what Verify would check, without failing t.
func (w *DeploymentWatcher) Report(t testing.TB) {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, v := range w.violations {
		t.Logf("deployment %s bound not kept: %s", w.name, v)
	}
	t.Logf("deployment %s: %d states observed, %d bounds not kept", w.name, w.observed, len(w.violations))
}
