package clustertest

import (
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
type DeploymentWatcher struct {
	// floor is the replicas count the availability bounds use: spec.replicas when last
	// seen complete, lowered at once by a scale-down; 0 before the first check.
	floor       int32
	name        string
	deployments appslisters.DeploymentNamespaceLister
	replicaSets appslisters.ReplicaSetNamespaceLister
	pods        corelisters.PodNamespaceLister
	observer
}

// WatchDeployment starts watching namespace/name until the test ends.
func WatchDeployment(t testing.TB, client kubernetes.Interface, namespace, name string) *DeploymentWatcher {
	t.Helper()
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(namespace))
	deployments, replicaSets, pods := factory.Apps().V1().Deployments(), factory.Apps().V1().ReplicaSets(), factory.Core().V1().Pods()
	w := &DeploymentWatcher{name: name, deployments: deployments.Lister().Deployments(namespace),
		replicaSets: replicaSets.Lister().ReplicaSets(namespace), pods: pods.Lister().Pods(namespace),
		observer: observer{what: "deployment " + name}}
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
	fail := w.observation(func() string {
		state := "replica sets spec/available:"
		for _, rs := range owned {
			state += fmt.Sprintf(" %s=%d/%d", rs.Labels[appsv1.DefaultDeploymentUniqueLabelKey], *rs.Spec.Replicas, rs.Status.AvailableReplicas)
		}
		return state
	})
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
