package clustertest

import (
	"context"
	"fmt"
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
// availability bounds do not hold while it first scales up. For the same reason, after
// a scale-up the availability floor stays at the replicas it last had all available
// until the new pods are: "replicas" in the availability bounds is the smaller of
// spec.replicas and that count.
//
// Each kind arrives on its own watch, so the watcher can see a ReplicaSet the
// controller resized for a spec it has not yet received itself. A state that breaks a
// bound is therefore confirmed against the Deployment read live: when the live
// generation is newer than the cached one, the state mixed two specs and is dropped;
// the Deployment's own event brings the consistent check that follows.
type DeploymentWatcher struct {
	// mixed counts the states dropped for pairing a stale spec with newer objects.
	mixed int
	// floor is the replicas count the availability bounds use: spec.replicas when last
	// seen complete, lowered at once by a scale-down; 0 before the first check.
	floor int32
	// budget, when above 0, is a PodDisruptionBudget's minAvailable: the pods available
	// must never be fewer (RequireAvailable). lowest is the fewest pods available in any
	// observed state; -1 before the first.
	budget, lowest int32
	name           string
	client         kubernetes.Interface
	deployments    appslisters.DeploymentNamespaceLister
	replicaSets    appslisters.ReplicaSetNamespaceLister
	pods           corelisters.PodNamespaceLister
	observer
}

// WatchDeployment starts watching namespace/name until the test ends.
func WatchDeployment(t testing.TB, client kubernetes.Interface, namespace, name string) *DeploymentWatcher {
	t.Helper()
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(namespace))
	deployments, replicaSets, pods := factory.Apps().V1().Deployments(), factory.Apps().V1().ReplicaSets(), factory.Core().V1().Pods()
	w := &DeploymentWatcher{name: name, client: client, deployments: deployments.Lister().Deployments(namespace),
		replicaSets: replicaSets.Lister().ReplicaSets(namespace), pods: pods.Lister().Pods(namespace),
		observer: observer{what: "deployment " + name}, lowest: -1}
	w.start(t, factory, w.check, deployments.Informer(), replicaSets.Informer(), pods.Informer())
	return w
}

// check evaluates the bounds on the state the informers hold now.
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
	state := func() string {
		state := "replica sets spec/available:"
		for _, rs := range owned {
			state += fmt.Sprintf(" %s=%d/%d", rs.Labels[appsv1.DefaultDeploymentUniqueLabelKey], *rs.Spec.Replicas, rs.Status.AvailableReplicas)
		}
		return state
	}
	var broken []string
	defer func() {
		if len(broken) > 0 && w.specMovedOn(d) {
			w.mixed++
			return
		}
		record := w.observation(state)
		for _, b := range broken {
			record("%s", b)
		}
	}()
	fail := func(format string, args ...any) { broken = append(broken, fmt.Sprintf(format, args...)) }
	if w.lowest < 0 || available < w.lowest {
		w.lowest = available
	}
	if w.budget > 0 && available < w.budget {
		fail("%d pods available, fewer than the disruption budget's %d", available, w.budget)
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
	if w.floor == 0 || d.Status.AvailableReplicas >= desired && d.Status.ObservedGeneration >= d.Generation {
		w.floor = desired
	}
	w.floor = min(w.floor, desired)
	if n := rollout.AvailableReplicas(owned); n < w.floor-f.MaxUnavailable {
		fail("ReplicaSets report %d available, fewer than %d replicas − %d unavailable", n, w.floor, f.MaxUnavailable)
	}
	if running > desired+f.MaxSurge {
		fail("%d pods running, more than %d replicas + %d surge", running, desired, f.MaxSurge)
	}
	if available < w.floor-f.MaxUnavailable {
		fail("%d pods available, fewer than %d replicas − %d unavailable", available, w.floor, f.MaxUnavailable)
	}
}

// RequireAvailable adds the bound of a PodDisruptionBudget of minAvailable n to the
// states checked from now on: at least n pods available (Ready for minReadySeconds,
// not terminating).
func (w *DeploymentWatcher) RequireAvailable(n int32) {
	w.mu.Lock()
	w.budget = n
	w.mu.Unlock()
}

// LowestAvailable is the fewest pods available in any state observed so far; -1 before
// the first.
func (w *DeploymentWatcher) LowestAvailable() int32 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.lowest
}

// specMovedOn says whether the Deployment's live generation is past cached's: the
// cached spec is then older than objects the other watches already delivered.
func (w *DeploymentWatcher) specMovedOn(cached *appsv1.Deployment) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	live, err := w.client.AppsV1().Deployments(cached.Namespace).Get(ctx, cached.Name, metav1.GetOptions{})
	return err == nil && live.Generation > cached.Generation
}

// Verify is the observer's Verify, and logs how many states were dropped as mixed.
func (w *DeploymentWatcher) Verify(t testing.TB, minObserved int) {
	t.Helper()
	w.mu.Lock()
	mixed := w.mixed
	w.mu.Unlock()
	if mixed > 0 {
		t.Logf("deployment %s: %d states dropped for pairing an older spec with newer objects", w.name, mixed)
	}
	w.observer.Verify(t, minObserved)
}
