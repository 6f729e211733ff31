// Package controller holds what kroll's controllers share: the work queue and the loop
// that drains it, and the checks around adopting objects.
package controller

import (
	"context"
	"fmt"
	"runtime/debug"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/kroll-dev/kroll/pkg/metrics"
)

// Queue is a rate-limited queue of namespace/name keys.
type Queue struct {
	workqueue.TypedRateLimitingInterface[string]
}

// NewQueue returns an empty queue named for metrics and logs.
func NewQueue(name string) Queue {
	return Queue{workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: name})}
}

// Enqueue adds the key of obj (a tombstone's too).
func (q Queue) Enqueue(obj any) {
	if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
		q.Add(key)
	}
}

// EnqueueAfter adds the key of obj once after has passed.
func (q Queue) EnqueueAfter(obj metav1.Object, after time.Duration) {
	q.AddAfter(obj.GetNamespace()+"/"+obj.GetName(), after)
}

// Run waits for synced, then calls syncKey for queued keys on workers goroutines until ctx
// ends. A key is never synced by two workers at once; a failed sync is retried with
// back-off, a successful one forgets its failures.
func (q Queue) Run(ctx context.Context, controller string, workers int, synced []cache.InformerSynced, syncKey func(context.Context, string) error) {
	defer utilruntime.HandleCrash()
	defer q.ShutDown()
	logger := klog.FromContext(ctx)
	logger.Info("Starting controller", "controller", controller)
	defer logger.Info("Shutting down controller", "controller", controller)
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		return
	}
	var wg sync.WaitGroup
	for i := 0; i < workers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for q.processNext(ctx, controller, syncKey) {
			}
		}()
	}
	<-ctx.Done()
	q.ShutDown()
	wg.Wait()
}

func (q Queue) processNext(ctx context.Context, controller string, syncKey func(context.Context, string) error) bool {
	key, quit := q.Get()
	if quit {
		return false
	}
	defer q.Done(key)
	if err := syncRecovering(ctx, controller, key, syncKey); err != nil {
		utilruntime.HandleErrorWithContext(ctx, err, "Sync failed", "controller", controller, "key", key)
		q.AddRateLimited(key)
		return true
	}
	q.Forget(key)
	return true
}

// syncRecovering calls syncKey for key and times it. A panic in it is the sync's error,
// not the process's end: it is logged with the key and stack, counted in
// kroll_sync_panics_total, and the key retried with back-off like any failed sync. One bad
// object must not crash-loop the manager and with it every other rollout.
func syncRecovering(ctx context.Context, controller, key string, syncKey func(context.Context, string) error) (err error) {
	start := time.Now()
	result := "success"
	defer func() {
		if r := recover(); r != nil {
			result = "panic"
			metrics.SyncPanics.WithLabelValues(controller).Inc()
			klog.FromContext(ctx).Error(nil, "Sync panicked; retrying with back-off", "controller", controller, "key", key,
				"panic", r, "stack", string(debug.Stack()))
			err = fmt.Errorf("sync of %s panicked: %v", key, r)
		}
		metrics.ObserveSync(controller, result, time.Since(start))
	}()
	if err = syncKey(ctx, key); err != nil {
		result = "error"
	}
	return err
}

// CheckAdoptable tells whether owner may adopt objects, given a fresh read of it from
// the API server (not the cache): it must still be the same object (UID) and not be
// being deleted.
func CheckAdoptable(owner, fresh metav1.Object, readErr error, kind string) error {
	if readErr != nil {
		return readErr
	}
	if fresh.GetUID() != owner.GetUID() {
		return fmt.Errorf("original %s %s/%s is gone: got uid %s, wanted %s", kind, owner.GetNamespace(), owner.GetName(), fresh.GetUID(), owner.GetUID())
	}
	if fresh.GetDeletionTimestamp() != nil {
		return fmt.Errorf("%s/%s has just been deleted at %v", owner.GetNamespace(), owner.GetName(), fresh.GetDeletionTimestamp())
	}
	return nil
}

// Selecting returns the owners whose selector (selectorOf) matches childLabels: the
// candidates to adopt an orphan. An empty or invalid selector matches nothing.
func Selecting[T any](owners []T, selectorOf func(T) *metav1.LabelSelector, childLabels map[string]string) []T {
	if len(childLabels) == 0 {
		return nil
	}
	var out []T
	for _, o := range owners {
		sel, err := metav1.LabelSelectorAsSelector(selectorOf(o))
		if err == nil && !sel.Empty() && sel.Matches(labels.Set(childLabels)) {
			out = append(out, o)
		}
	}
	return out
}
