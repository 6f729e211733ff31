package clustertest

import (
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"

	"github.com/kroll-dev/kroll/pkg/rollout"
)

// PodBounds are the bounds of an update that moves Replicas pods from one
// ReplicationController to another (a client-side rolling update).
type PodBounds struct {
	Replicas, MaxSurge, MaxUnavailable int32
	MinReadySeconds                    int32
}

// PodBoundsWatcher checks, at every change it observes to the namespace's pods and
// ReplicationControllers, the bounds of an update of the pods Selector matches:
//
//	pods not terminating              ≤ replicas + maxSurge
//	pods available, not terminating   ≥ replicas − maxUnavailable
//	Σ spec.replicas of the RCs whose template Selector matches ≤ replicas + maxSurge
//
// Start it once the pods are all available.
type PodBoundsWatcher struct {
	selector labels.Selector
	bounds   PodBounds
	rcs      corelisters.ReplicationControllerNamespaceLister
	pods     corelisters.PodNamespaceLister
	observer
}

// WatchPodBounds starts watching namespace until the test ends.
func WatchPodBounds(t testing.TB, client kubernetes.Interface, namespace string, selector labels.Selector, bounds PodBounds) *PodBoundsWatcher {
	t.Helper()
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(namespace))
	rcs, pods := factory.Core().V1().ReplicationControllers(), factory.Core().V1().Pods()
	w := &PodBoundsWatcher{selector: selector, bounds: bounds,
		rcs: rcs.Lister().ReplicationControllers(namespace), pods: pods.Lister().Pods(namespace),
		observer: observer{what: "pods " + selector.String()}}
	w.start(t, factory, w.check, rcs.Informer(), pods.Informer())
	return w
}

func (w *PodBoundsWatcher) check() {
	if !w.synced.Load() {
		return
	}
	pods, err := w.pods.List(w.selector)
	if err != nil {
		return
	}
	rcs, err := w.rcs.List(labels.Everything())
	if err != nil {
		return
	}
	now := time.Now()
	var active, available, sizes int32
	for _, p := range pods {
		if !rollout.IsPodActive(p) {
			continue
		}
		active++
		if rollout.IsPodAvailable(p, w.bounds.MinReadySeconds, now) {
			available++
		}
	}
	state := ""
	for _, rc := range rcs {
		if rc.Spec.Template == nil || !w.selector.Matches(labels.Set(rc.Spec.Template.Labels)) {
			continue
		}
		n := int32(1)
		if rc.Spec.Replicas != nil {
			n = *rc.Spec.Replicas
		}
		sizes += n
		state += fmt.Sprintf(" %s=%d", rc.Name, n)
	}
	b := w.bounds
	w.mu.Lock()
	defer w.mu.Unlock()
	fail := w.observation(func() string { return fmt.Sprintf("%d pods, %d available; controllers:%s", active, available, state) })
	if active > b.Replicas+b.MaxSurge {
		fail("%d pods running, more than %d replicas + %d surge", active, b.Replicas, b.MaxSurge)
	}
	if available < b.Replicas-b.MaxUnavailable {
		fail("%d pods available, fewer than %d replicas − %d unavailable", available, b.Replicas, b.MaxUnavailable)
	}
	if sizes > b.Replicas+b.MaxSurge {
		fail("controllers want %d pods, more than %d replicas + %d surge", sizes, b.Replicas, b.MaxSurge)
	}
}
