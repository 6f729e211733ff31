package bench

import (
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/kroll-dev/kroll/pkg/rollout"
)

// availabilityMargin is how far d's reported availability stands above the floor its
// RollingUpdate keeps to: availableReplicas − (replicas − maxUnavailable), negative
// when below it, with maxUnavailable resolved as kroll's Deployment controller resolves
// it (rollout.DeploymentFenceposts). A Recreate Deployment has no floor: its margin is
// its availability.
func availabilityMargin(d *appsv1.Deployment) int32 {
	if d.Spec.Strategy.Type == appsv1.RecreateDeploymentStrategyType {
		return d.Status.AvailableReplicas
	}
	return d.Status.AvailableReplicas - (rollout.DesiredReplicas(d) - rollout.DeploymentFenceposts(d).MaxUnavailable)
}

// availabilityWatch follows the reported availability of some Deployments: the least
// margin (availabilityMargin) over every state of theirs the informer delivers, as the
// end-to-end scenarios' invariant watcher does for ReplicaSets.
type availabilityWatch struct {
	mu    sync.Mutex
	least int32
	seen  bool
	names map[string]bool
}

func (w *availabilityWatch) observe(obj any) {
	d, ok := obj.(*appsv1.Deployment)
	if !ok || !w.names[d.Name] {
		return
	}
	m := availabilityMargin(d)
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.seen || m < w.least {
		w.least, w.seen = m, true
	}
}

// watchAvailability follows the named Deployments through inf from now on; stop ends
// it and returns the least margin seen (nil when no state of theirs was delivered),
// the same each time it is called.
func watchAvailability(inf cache.SharedIndexInformer, names []string) (stop func() *int32, err error) {
	w := &availabilityWatch{names: map[string]bool{}}
	for _, name := range names {
		w.names[name] = true
	}
	reg, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { w.observe(obj) },
		UpdateFunc: func(_, obj any) { w.observe(obj) },
	})
	if err != nil {
		return nil, err
	}
	return sync.OnceValue(func() *int32 {
		_ = inf.RemoveEventHandler(reg)
		w.mu.Lock()
		defer w.mu.Unlock()
		if !w.seen {
			return nil
		}
		least := w.least
		return &least
	}), nil
}
