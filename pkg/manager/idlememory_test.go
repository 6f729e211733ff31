package manager

import "testing"

func TestReleaseDue(t *testing.T) {
	const mib = 1 << 20
	for _, tc := range []struct {
		name                     string
		sinceCheck, sinceRelease uint64
		want                     bool
	}{
		{"busy: still allocating", 40 * mib, 200 * mib, false},
		{"quiet after a burst", 100 << 10, 200 * mib, true},
		{"quiet at the threshold", quietBytes, worthItBytes, true},
		{"quiet, little since the last release", 100 << 10, 3 * mib, false},
		{"just over quiet", quietBytes + 1, 200 * mib, false},
		{"idle from the start", 0, 0, false},
	} {
		if got := releaseDue(tc.sinceCheck, tc.sinceRelease); got != tc.want {
			t.Errorf("%s: releaseDue(%d, %d) = %v, want %v", tc.name, tc.sinceCheck, tc.sinceRelease, got, tc.want)
		}
	}
}
