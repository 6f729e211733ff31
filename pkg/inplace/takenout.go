package inplace

import (
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// TakenOut remembers the pods a controller took out of service for an in-place
// update until its informer cache shows the write: the next sync, on a stale cache,
// would otherwise see the pod still serving and take out another one too.
type TakenOut struct{ m sync.Map }

// takenOutAt is the resourceVersion a pod had when it was taken out (a cached pod of
// another version already shows the write) and when.
type takenOutAt struct {
	resourceVersion string
	at              time.Time
}

// Record notes that p (as cached) was just taken out of service.
func (t *TakenOut) Record(p *corev1.Pod, now time.Time) {
	t.m.Store(p.UID, takenOutAt{resourceVersion: p.ResourceVersion, at: now})
}

// OutOfServiceNow tells whether the cache shows p out of service for an in-place
// update: mid-update by its record or gate, or patched and not yet restarted.
func OutOfServiceNow(p *corev1.Pod) bool {
	_, mid := StateOf(p)
	return mid || GateStatus(p) == corev1.ConditionFalse || Restarting(p)
}

// Out tells whether p is out of service for an in-place update: as the cache shows it
// (OutOfServiceNow), or taken out by a write the cache does not show yet (for at most
// a minute, should the write have been lost).
func (t *TakenOut) Out(p *corev1.Pod, now time.Time) bool {
	if OutOfServiceNow(p) {
		t.m.Delete(p.UID) // the cache shows the update: it speaks for itself
		return true
	}
	v, ok := t.m.Load(p.UID)
	if !ok {
		return false
	}
	if seen := v.(takenOutAt); seen.resourceVersion == p.ResourceVersion && now.Sub(seen.at) < time.Minute {
		return true
	}
	t.m.Delete(p.UID)
	return false
}
