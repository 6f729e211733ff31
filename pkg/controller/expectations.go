package controller

import (
	"sync"
	"time"
)

// expectationsTTL bounds how long unobserved creates/deletes block an owner: after
// it, the controller trusts its cache again (a watch event was lost, say).
const expectationsTTL = 5 * time.Minute

// Expectations remember, per owner (a ReplicaSet, a DaemonSet), the pod creates and
// deletes issued but not yet seen in the informer cache. Until they are seen, the cache
// is known to be stale and the owner's pods are not resized again — otherwise a slow
// cache would make it create or delete the same pods twice.
type Expectations struct {
	mu  sync.Mutex
	now func() time.Time
	m   map[string]*expectation
}

type expectation struct {
	creates int                 // creates issued and not yet observed
	deletes map[string]struct{} // keys of pods whose deletion is not yet observed
	since   time.Time           // when these were set
}

// NewExpectations returns empty expectations on the clock now.
func NewExpectations(now func() time.Time) *Expectations {
	return &Expectations{now: now, m: map[string]*expectation{}}
}

// Satisfied tells whether key may be resized again: nothing pending, or pending for longer
// than expectationsTTL.
func (e *Expectations) Satisfied(key string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	x, ok := e.m[key]
	if !ok {
		return true
	}
	return (x.creates <= 0 && len(x.deletes) == 0) || e.now().Sub(x.since) > expectationsTTL
}

// expect records creates and the keys of pods about to be deleted, replacing what was
// recorded before (which satisfied says is done or expired).
func (e *Expectations) Expect(key string, creates int, deletes []string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	x := &expectation{creates: creates, deletes: map[string]struct{}{}, since: e.now()}
	for _, k := range deletes {
		x.deletes[k] = struct{}{}
	}
	e.m[key] = x
}

// CreationObserved counts one expected create as seen (or as not going to happen: a
// create that failed or was skipped).
func (e *Expectations) CreationObserved(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if x, ok := e.m[key]; ok {
		x.creates--
	}
}

// DeletionObserved marks the deletion of podKey as seen (or as not going to happen).
func (e *Expectations) DeletionObserved(key, podKey string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if x, ok := e.m[key]; ok {
		delete(x.deletes, podKey)
	}
}

// Forget drops what is recorded for an owner that is gone.
func (e *Expectations) Forget(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.m, key)
}
