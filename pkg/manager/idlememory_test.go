package manager

import "testing"

func TestReleaseDue(t *testing.T) {
	const mib = 1 << 20
	for _, tc := range []struct {
		name                               string
		sinceCheck, sinceRelease, liveHeap uint64
		want                               bool
	}{
		{"busy: still allocating", 40 * mib, 200 * mib, 50 * mib, false},
		{"quiet after a burst", 100 << 10, 200 * mib, 50 * mib, true},
		{"quiet at the threshold", quietBytes, worthItBytes, 8 * mib, true},
		{"quiet, little since the last release", 100 << 10, 3 * mib, 8 * mib, false},
		{"just over quiet", quietBytes + 1, 200 * mib, 50 * mib, false},
		{"idle from the start", 0, 0, 8 * mib, false},
		{"a large cache, a trickle at rest", 100 << 10, 20 * mib, 120 * mib, false},
		{"a large cache, a heap's worth since", 100 << 10, 120 * mib, 120 * mib, true},
	} {
		if got := releaseDue(tc.sinceCheck, tc.sinceRelease, tc.liveHeap); got != tc.want {
			t.Errorf("%s: releaseDue(%d, %d, %d) = %v, want %v", tc.name, tc.sinceCheck, tc.sinceRelease, tc.liveHeap, got, tc.want)
		}
	}
}
