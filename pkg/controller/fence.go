package controller

import (
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"
)

// Fence holds a workload's sync back until the informers' caches show the controller's
// own latest writes for it: the pods it created, the status it wrote. A sync on a cache
// older than those writes sees the workload as it was before them, and either repeats
// their work (expectations guard creates and deletes against that) or writes a status
// that the cache's next sight of the writes replaces at once. Held back, the sync runs
// once the writes' own watch events arrive (each enqueues the workload), on a cache
// that shows them and whatever else changed meanwhile: one sync and one status write
// where there would have been several. Kubernetes 1.36's workload controllers hold
// back the same way (StaleControllerConsistency*).
//
// Resource versions are compared as the API defines them (resourceversion), per
// resource, against the newest one each informer's store has applied. A store that
// reports none (client-go's AtomicFIFO off) or a version that does not compare never
// holds anything back.
type Fence struct {
	stores map[string]VersionSource
	mu     sync.Mutex
	wrote  map[string]*fenceRecord // by workload key
}

// FenceRecheck is when a sync held back by a Fence is tried again if no event of its
// writes has brought it back before: a safety net, since each write's own watch event
// enqueues the workload.
const FenceRecheck = time.Second

// VersionSource is what an informer's store says of the newest resource version it
// has applied (cache.Store has it).
type VersionSource interface {
	LastStoreSyncResourceVersion() string
}

type fenceRecord struct {
	uid      types.UID
	versions map[string]string // by resource
}

// NewFence watches stores, by resource name ("pods", "replicasets", ...).
func NewFence(stores map[string]VersionSource) *Fence {
	return &Fence{stores: stores, wrote: map[string]*fenceRecord{}}
}

// Wrote records that the controller wrote resource at version rv for the workload key
// (of UID uid: a workload deleted and recreated under the same name starts afresh).
func (f *Fence) Wrote(key string, uid types.UID, resource, rv string) {
	if f == nil || rv == "" {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.wrote[key]
	if r == nil || r.uid != uid {
		r = &fenceRecord{uid: uid, versions: map[string]string{}}
		f.wrote[key] = r
	}
	if old, ok := r.versions[resource]; ok {
		if cmp, err := resourceversion.CompareResourceVersion(old, rv); err == nil && cmp >= 0 {
			return
		}
	}
	r.versions[resource] = rv
}

// Caught tells whether the caches show every write recorded for key; once they do,
// the record is dropped.
func (f *Fence) Caught(key string) bool {
	if f == nil {
		return true
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.wrote[key]
	if r == nil {
		return true
	}
	for resource, wrote := range r.versions {
		store := f.stores[resource]
		if store == nil {
			continue
		}
		seen := store.LastStoreSyncResourceVersion()
		if seen == "" {
			continue
		}
		if cmp, err := resourceversion.CompareResourceVersion(wrote, seen); err == nil && cmp > 0 {
			return false
		}
	}
	delete(f.wrote, key)
	return true
}

// HoldBack is the head of a sync: when the caches do not yet show every write recorded
// for key (Caught is false), it schedules the re-check on queue and says the sync is to
// end at once, writing nothing.
func (f *Fence) HoldBack(key string, queue Queue) bool {
	if f.Caught(key) {
		return false
	}
	queue.AddAfter(key, FenceRecheck)
	return true
}

// Forget drops key's record (the workload is gone).
func (f *Fence) Forget(key string) {
	if f == nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.wrote, key)
}

// Created collects the pods a sync's creates returned (SlowStartBatch calls it from
// several goroutines), recording each in the fence under the workload's key, so that
// the sync's status counts them and the next sync waits until the cache shows them.
type Created struct {
	Fence *Fence
	Key   string
	UID   types.UID

	mu   sync.Mutex
	pods []*corev1.Pod
}

// Add records pod, as the API server returned it from its create; nil is ignored.
func (c *Created) Add(pod *corev1.Pod) {
	if pod == nil {
		return
	}
	c.Fence.Wrote(c.Key, c.UID, "pods", pod.ResourceVersion)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pods = append(c.pods, pod)
}

// Pods are the pods added so far.
func (c *Created) Pods() []*corev1.Pod {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pods
}
