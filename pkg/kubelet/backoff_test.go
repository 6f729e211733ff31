package kubelet

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// A container that crashes 1s after every start waits 0, 10, 20, 40, 80, 160, 300,
// 300 s before each restart; one that ran more than 10 minutes starts the series
// again; a new image is a new entry.
func TestCrashBackOffSeries(t *testing.T) {
	base := 10 * time.Second
	tests := []struct {
		name  string
		runs  []time.Duration // how long each instance ran before it exited
		image []string        // the image of each instance ("" for "a")
		waits []time.Duration // the wait before each restart
	}{
		{"crashing after 1s: 0, 10s, 20s, … capped at 5m", []time.Duration{time.Second, time.Second, time.Second, time.Second, time.Second, time.Second, time.Second, time.Second, time.Second},
			nil, []time.Duration{0, 10 * time.Second, 20 * time.Second, 40 * time.Second, 80 * time.Second, 160 * time.Second, 300 * time.Second, 300 * time.Second, 300 * time.Second}},
		{"ran 11 minutes: the series starts again", []time.Duration{time.Second, time.Second, 11 * time.Minute, time.Second, time.Second},
			nil, []time.Duration{0, 10 * time.Second, 0, 10 * time.Second, 20 * time.Second}},
		{"ran 9 minutes: the series goes on", []time.Duration{time.Second, time.Second, 9 * time.Minute},
			nil, []time.Duration{0, 10 * time.Second, 20 * time.Second}},
		{"a new image starts afresh", []time.Duration{time.Second, time.Second, time.Second, time.Second},
			[]string{"a", "a", "b", "b"}, []time.Duration{0, 10 * time.Second, 0, 10 * time.Second}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var e crashBackOff
			now := t0
			for i, ran := range tc.runs {
				image := "a"
				if tc.image != nil {
					image = tc.image[i]
				}
				key := backOffKey(&corev1.Container{Image: image})
				finished := now.Add(ran)
				restart := e.until(key, finished)
				if got := restart.Sub(finished); got != tc.waits[i] {
					t.Fatalf("exit %d (after %v): restarts after %v, want %v", i+1, ran, got, tc.waits[i])
				}
				e = e.next(key, finished, restart, base)
				now = restart
			}
		})
	}
}
