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

// BudgetWatcher checks, at every change it observes to the pods selector matches, the
// bound of a PodDisruptionBudget over them, whatever workload owns them:
//
//	pods available (Ready for minReadySeconds, not terminating) ≥ minAvailable
//
// and keeps the fewest seen, for a run that only measures. Start it once the pods are
// all available.
type BudgetWatcher struct {
	selector        labels.Selector
	minReadySeconds int32
	pods            corelisters.PodNamespaceLister
	observer
	// minAvailable is the bound (0: none); lowest the fewest available seen (-1: none).
	minAvailable, lowest int32
}

// WatchBudget starts watching the pods of namespace selector matches until the test
// ends, holding them to minAvailable.
func WatchBudget(t testing.TB, client kubernetes.Interface, namespace string, selector labels.Selector, minReadySeconds, minAvailable int32) *BudgetWatcher {
	t.Helper()
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(namespace))
	pods := factory.Core().V1().Pods()
	w := &BudgetWatcher{selector: selector, minReadySeconds: minReadySeconds, pods: pods.Lister().Pods(namespace),
		minAvailable: minAvailable, lowest: -1, observer: observer{what: "budget over pods " + selector.String()}}
	w.start(t, factory, w.check, pods.Informer())
	return w
}

func (w *BudgetWatcher) check() {
	if !w.synced.Load() {
		return
	}
	pods, err := w.pods.List(w.selector)
	if err != nil {
		return
	}
	now := time.Now()
	var active, available int32
	for _, p := range pods {
		if !rollout.IsPodActive(p) {
			continue
		}
		active++
		if rollout.IsPodAvailable(p, w.minReadySeconds, now) {
			available++
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	fail := w.observation(func() string { return fmt.Sprintf("%d pods, %d available", active, available) })
	if w.lowest < 0 || available < w.lowest {
		w.lowest = available
	}
	if available < w.minAvailable {
		fail("%d pods available, fewer than the budget's minAvailable %d", available, w.minAvailable)
	}
}

// RequireAvailable changes the bound checked from now on (0: none).
func (w *BudgetWatcher) RequireAvailable(n int32) {
	w.mu.Lock()
	w.minAvailable = n
	w.mu.Unlock()
}

// LowestAvailable is the fewest pods available in any state observed so far; -1 before
// the first.
func (w *BudgetWatcher) LowestAvailable() int32 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.lowest
}
