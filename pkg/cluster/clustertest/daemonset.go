package clustertest

import (
	"sort"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"

	"github.com/kroll-dev/kroll/pkg/rollout"
)

// DaemonSetWatcher checks, at every change it observes, that no more than
// maxUnavailable (resolved as upstream does, rounding up) of the nodes the DaemonSet
// served when the watcher started are without a ready pod of it, and records whether a
// node ever ran an updated pod next to an old one (a surge). Start it once every node
// has its pod.
type DaemonSetWatcher struct {
	name  string
	sets  appslisters.DaemonSetNamespaceLister
	pods  corelisters.PodNamespaceLister
	nodes map[string]bool
	observer

	surged bool
}

// WatchDaemonSet starts watching namespace/name until the test ends.
func WatchDaemonSet(t testing.TB, client kubernetes.Interface, namespace, name string) *DaemonSetWatcher {
	t.Helper()
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(namespace))
	sets, pods := factory.Apps().V1().DaemonSets(), factory.Core().V1().Pods()
	w := &DaemonSetWatcher{name: name, sets: sets.Lister().DaemonSets(namespace), pods: pods.Lister().Pods(namespace),
		observer: observer{what: "daemonset " + name}}
	w.start(t, factory, w.check, sets.Informer(), pods.Informer())
	return w
}

func (w *DaemonSetWatcher) check() {
	if !w.synced.Load() {
		return
	}
	ds, err := w.sets.Get(w.name)
	if err != nil {
		return
	}
	selector, err := metav1.LabelSelectorAsSelector(ds.Spec.Selector)
	if err != nil {
		return
	}
	pods, err := w.pods.List(selector)
	if err != nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	serving := map[string]bool{}
	templates := map[string]map[string]bool{}
	for _, p := range pods {
		if p.Spec.NodeName == "" || p.DeletionTimestamp != nil {
			continue
		}
		if templates[p.Spec.NodeName] == nil {
			templates[p.Spec.NodeName] = map[string]bool{}
		}
		templates[p.Spec.NodeName][p.Labels[appsv1.DefaultDaemonSetUniqueLabelKey]] = true
		if rollout.IsPodReady(p) {
			serving[p.Spec.NodeName] = true
		}
	}
	if w.nodes == nil {
		w.nodes = serving
	}
	var down []string
	for n := range w.nodes {
		if !serving[n] {
			down = append(down, n)
		}
		if len(templates[n]) > 1 {
			w.surged = true
		}
	}
	sort.Strings(down)
	fail := w.observation(func() string { return "nodes without a ready pod: " + strings.Join(down, ",") })
	maxUnavailable := 1
	if ru := ds.Spec.UpdateStrategy.RollingUpdate; ru != nil {
		u, s := 0, 0
		if ru.MaxUnavailable != nil {
			u, _ = intstr.GetScaledValueFromIntOrPercent(ru.MaxUnavailable, len(w.nodes), true)
		}
		if ru.MaxSurge != nil {
			s, _ = intstr.GetScaledValueFromIntOrPercent(ru.MaxSurge, len(w.nodes), true)
		}
		maxUnavailable = u
		if u == 0 && s == 0 {
			maxUnavailable = 1
		}
	}
	if len(down) > maxUnavailable {
		fail("%d nodes without a ready pod, more than maxUnavailable %d", len(down), maxUnavailable)
	}
}

// Surged tells whether some node was seen running an updated pod next to an old one.
func (w *DaemonSetWatcher) Surged() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.surged
}
