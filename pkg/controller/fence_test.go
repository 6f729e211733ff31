package controller

import (
	"testing"
	"time"
)

type fakeVersion struct{ rv string }

func (v *fakeVersion) LastStoreSyncResourceVersion() string { return v.rv }

func TestFence(t *testing.T) {
	pods, sets := &fakeVersion{rv: "100"}, &fakeVersion{rv: "100"}
	f := NewFence(map[string]VersionSource{"pods": pods, "replicasets": sets})
	if !f.Caught("ns/web") {
		t.Fatal("nothing written: a sync must not be held back")
	}
	f.Wrote("ns/web", "u1", "pods", "105")
	f.Wrote("ns/web", "u1", "pods", "103") // older: the newest stays
	f.Wrote("ns/web", "u1", "replicasets", "107")
	if f.Caught("ns/web") {
		t.Error("caches at 100, writes at 105 and 107: caught")
	}
	pods.rv = "105"
	if f.Caught("ns/web") {
		t.Error("pods caught up but the status write (107) not: caught")
	}
	sets.rv = "108"
	if !f.Caught("ns/web") {
		t.Error("both caches past the writes: held back")
	}
	// The record is dropped once caught: a store that goes quiet holds nothing back.
	pods.rv, sets.rv = "1", "1"
	if !f.Caught("ns/web") {
		t.Error("caught once, then held back again without a new write")
	}

	// A workload recreated under the same name starts afresh.
	f.Wrote("ns/db", "u2", "pods", "200")
	f.Wrote("ns/db", "u3", "replicasets", "2")
	sets.rv = "5"
	if !f.Caught("ns/db") {
		t.Error("the old UID's pod write holds the new workload back")
	}

	// No version from the store (AtomicFIFO off), a resource nobody watches, a version
	// that does not compare: never held back.
	f.Wrote("ns/a", "u4", "pods", "300")
	pods.rv = ""
	if !f.Caught("ns/a") {
		t.Error("a store without versions holds back")
	}
	f.Wrote("ns/b", "u5", "nodes", "300")
	f.Wrote("ns/c", "u6", "pods", "not-a-version")
	pods.rv = "1"
	if !f.Caught("ns/b") || !f.Caught("ns/c") {
		t.Error("an unwatched resource or an odd version holds back")
	}

	f.Wrote("ns/d", "u7", "pods", "500")
	f.Forget("ns/d")
	if !f.Caught("ns/d") {
		t.Error("forgotten, still held back")
	}
	var none *Fence
	none.Wrote("ns/e", "u8", "pods", "1")
	if !none.Caught("ns/e") {
		t.Error("a nil fence holds back")
	}
}

// Given a write the cache has not shown, when a sync asks HoldBack, then it is held
// back and its key is queued again after FenceRecheck; once caught, it goes ahead.
func TestFenceHoldBack(t *testing.T) {
	pods := &fakeVersion{rv: "100"}
	f := NewFence(map[string]VersionSource{"pods": pods})
	q := NewQueue("fence-test")
	defer q.ShutDown()
	f.Wrote("ns/web", "u1", "pods", "101")
	if !f.HoldBack("ns/web", q) {
		t.Fatal("write at 101, cache at 100: not held back")
	}
	deadline := time.Now().Add(FenceRecheck + 5*time.Second)
	for q.Len() == 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if q.Len() != 1 {
		t.Errorf("held back, and %d keys queued after the re-check, want 1", q.Len())
	}
	pods.rv = "101"
	if f.HoldBack("ns/web", q) {
		t.Error("caught up, still held back")
	}
}
