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
// enough since the last release for the pages to matter.
func releaseDue(sinceCheck, sinceRelease uint64) bool {
	return sinceCheck <= quietBytes && sinceRelease >= worthItBytes
}

// ReleaseMemoryWhenIdle returns the process's free heap to the operating system each
// time a burst of work has ended (see releaseDue), until ctx ends.
func ReleaseMemoryWhenIdle(ctx context.Context) {
	sample := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	allocated := func() uint64 {
		metrics.Read(sample)
		if sample[0].Value.Kind() != metrics.KindUint64 {
			return 0
		}
		return sample[0].Value.Uint64()
	}
	lastCheck := allocated()
	lastRelease := lastCheck
	tick := time.NewTicker(idleCheck)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		now := allocated()
		if releaseDue(now-lastCheck, now-lastRelease) {
			debug.FreeOSMemory()
			now = allocated()
			lastRelease = now
		}
		lastCheck = now
	}
}
