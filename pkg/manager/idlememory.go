package manager

import (
	"context"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// Idle memory: a controller process's heap is mostly its informers' cache, which
// lives as long as the process, plus the garbage of its last burst of work (a
// rollout, the initial list). The Go runtime keeps the pages that garbage freed for a
// while, and collects only once the heap has doubled (GOGC=100), which is what keeps
// the collector cheap while pods change. Once the work is over the pages are of no
// use: ReleaseMemoryWhenIdle hands them back, so that a controller at rest holds about
// its cache and no more.

// idleCheck is how often ReleaseMemoryWhenIdle looks at the allocation rate.
const idleCheck = 2 * time.Second

// Thresholds of releaseDue: quiet is at most what an idle process allocates in one
// idleCheck (metrics, probes, watch bookmarks); worthIt is the least burst of work
// after which a release (a full collection) pays.
const (
	quietBytes   = 1 << 20
	worthItBytes = 16 << 20
)

// releaseDue says whether to return the free heap to the operating system now: the
// process allocated little since the last check (the work is over) after allocating
// enough since the last release for the pages to matter: worthIt, and at least its live
// heap. A release is a full collection, and a process at rest still allocates a little
// (metrics, probes, bookmarks): the live-heap floor keeps releases at rest no more
// frequent than the collections GOGC=100 would run anyway, where a fixed 16 MiB would
// collect a large cache's heap over and over for a trickle of garbage.
func releaseDue(sinceCheck, sinceRelease, liveHeap uint64) bool {
	return sinceCheck <= quietBytes && sinceRelease >= max(worthItBytes, liveHeap)
}

// ReleaseMemoryWhenIdle returns the process's free heap to the operating system each
// time a burst of work has ended (see releaseDue), until ctx ends.
func ReleaseMemoryWhenIdle(ctx context.Context) {
	samples := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}, {Name: "/gc/heap/live:bytes"}}
	read := func() (allocated, live uint64) {
		metrics.Read(samples)
		return uint64Of(samples[0].Value), uint64Of(samples[1].Value)
	}
	lastCheck, _ := read()
	lastRelease := lastCheck
	tick := time.NewTicker(idleCheck)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		now, live := read()
		if releaseDue(now-lastCheck, now-lastRelease, live) {
			debug.FreeOSMemory()
			now, _ = read()
			lastRelease = now
		}
		lastCheck = now
	}
}

// uint64Of is v's value, or 0 where this Go runtime does not have the metric.
func uint64Of(v metrics.Value) uint64 {
	if v.Kind() != metrics.KindUint64 {
		return 0
	}
	return v.Uint64()
}
