package replicaset

import (
	"sync"
	"time"
)

// expectationsTTL bounds how long unobserved creates/deletes block a ReplicaSet: after
// it, the controller trusts its cache again (a watch event was lost, say).
const expectationsTTL = 5 * time.Minute

// expectations remember, per ReplicaSet, the pod creates and deletes issued but not yet
// seen in the informer cache. Until they are seen, the cache is known to be stale and
// the ReplicaSet is not resized again — otherwise a slow cache would make it create or
// delete the same pods twice.
type expectations struct {
	mu  sync.Mutex
	now func() time.Time
	m   map[string]*expectation
}

type expectation struct {
	creates int                 // creates issued and not yet observed
	deletes map[string]struct{} // keys of pods whose deletion is not yet observed
	since   time.Time           // when these were set
}

func newExpectations(now func() time.Time) *expectations {
	return &expectations{now: now, m: map[string]*expectation{}}
}

// satisfied tells whether rsKey may be resized: nothing pending, or pending for longer
// than expectationsTTL.
func (e *expectations) satisfied(rsKey string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	x, ok := e.m[rsKey]
	if !ok {
		return true
	}
	return (x.creates <= 0 && len(x.deletes) == 0) || e.now().Sub(x.since) > expectationsTTL
}

// expect records creates and the keys of pods about to be deleted, replacing what was
// recorded before (which satisfied says is done or expired).
func (e *expectations) expect(rsKey string, creates int, deletes []string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	x := &expectation{creates: creates, deletes: map[string]struct{}{}, since: e.now()}
	for _, k := range deletes {
		x.deletes[k] = struct{}{}
	}
	e.m[rsKey] = x
}

// creationObserved counts one expected create as seen (or as not going to happen: a
// create that failed or was skipped).
func (e *expectations) creationObserved(rsKey string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if x, ok := e.m[rsKey]; ok {
		x.creates--
	}
}

// deletionObserved marks the deletion of podKey as seen (or as not going to happen).
func (e *expectations) deletionObserved(rsKey, podKey string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if x, ok := e.m[rsKey]; ok {
		delete(x.deletes, podKey)
	}
}

// forget drops what is recorded for a ReplicaSet that is gone.
func (e *expectations) forget(rsKey string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.m, rsKey)
}
