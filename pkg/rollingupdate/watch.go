package rollingupdate

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/kroll-dev/kroll/pkg/rollout"
)

// view is what the updater waits on: the namespace's ReplicationControllers and pods
// as watched, with a signal at every change, so that waiting needs no polling; the
// poll interval only bounds how late a time-based change (minReadySeconds passing) is
// noticed.
type view struct {
	rcs     corelisters.ReplicationControllerNamespaceLister
	pods    corelisters.PodNamespaceLister
	changed chan struct{}
	poll    time.Duration
	stop    context.CancelFunc
}

func startView(ctx context.Context, client kubernetes.Interface, namespace string, poll time.Duration) (*view, error) {
	ctx, cancel := context.WithCancel(ctx)
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(namespace))
	rcs, pods := factory.Core().V1().ReplicationControllers(), factory.Core().V1().Pods()
	v := &view{rcs: rcs.Lister().ReplicationControllers(namespace), pods: pods.Lister().Pods(namespace),
		changed: make(chan struct{}, 1), poll: poll, stop: cancel}
	notify := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { v.signal() },
		UpdateFunc: func(any, any) { v.signal() },
		DeleteFunc: func(any) { v.signal() },
	}
	for _, inf := range []cache.SharedIndexInformer{rcs.Informer(), pods.Informer()} {
		if _, err := inf.AddEventHandler(notify); err != nil {
			cancel()
			return nil, err
		}
	}
	factory.Start(ctx.Done())
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			cancel()
			if ctx.Err() != nil {
				return nil, context.Cause(ctx)
			}
			return nil, fmt.Errorf("watch %v in namespace %s: the cache did not sync", typ, namespace)
		}
	}
	return v, nil
}

func (v *view) signal() {
	select {
	case v.changed <- struct{}{}:
	default:
	}
}

// until waits until cond holds, re-checking at every change and every poll interval.
// It fails when ctx ends or timeout passes, with what cond last reported.
func (v *view) until(ctx context.Context, timeout time.Duration, what string, cond func() (bool, string)) error {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(v.poll)
	defer tick.Stop()
	for {
		ok, state := cond()
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-deadline.C:
			return &timeoutError{what: what, after: timeout, state: state}
		case <-v.changed:
		case <-tick.C:
		}
	}
}

type timeoutError struct {
	what  string
	after time.Duration
	state string
}

func (e *timeoutError) Error() string {
	return fmt.Sprintf("timed out after %s waiting for %s (%s)", e.after, e.what, e.state)
}

// podCounts are the pods a controller's selector matches.
type podCounts struct {
	// active are not terminating and not finished; available are active pods ready for
	// minReadySeconds.
	active, available int32
}

func (v *view) countPods(selector map[string]string, minReadySeconds int32) podCounts {
	var c podCounts
	if len(selector) == 0 {
		return c
	}
	pods, err := v.pods.List(labels.SelectorFromSet(selector))
	if err != nil {
		return c
	}
	now := time.Now()
	for _, p := range pods {
		if !rollout.IsPodActive(p) {
			continue
		}
		c.active++
		if rollout.IsPodAvailable(p, minReadySeconds, now) {
			c.available++
		}
	}
	return c
}

// settled tells whether rc's controller has acted on rc's latest size: it has observed
// the generation, counts spec.replicas pods, and no more active pods than that exist.
func (v *view) settled(name string) (bool, string) {
	rc, err := v.rcs.Get(name)
	if err != nil {
		return false, err.Error()
	}
	want := replicasOf(rc)
	c := v.countPods(rc.Spec.Selector, rc.Spec.MinReadySeconds)
	state := fmt.Sprintf("%s: %d of %d pods, generation %d observed %d", name, c.active, want, rc.Generation, rc.Status.ObservedGeneration)
	return rc.Status.ObservedGeneration >= rc.Generation && rc.Status.Replicas == want && c.active == want, state
}

func replicasOf(rc *corev1.ReplicationController) int32 {
	if rc.Spec.Replicas == nil {
		return 1
	}
	return *rc.Spec.Replicas
}
