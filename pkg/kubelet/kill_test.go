package kubelet

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/kroll-dev/kroll/pkg/prober"
)

func TestKillGrace(t *testing.T) {
	withGrace := func(pod *int64, probe *int64) (*corev1.Pod, *corev1.Container) {
		c := &corev1.Container{Name: "c",
			LivenessProbe: &corev1.Probe{TerminationGracePeriodSeconds: probe},
			StartupProbe:  &corev1.Probe{}}
		return &corev1.Pod{Spec: corev1.PodSpec{TerminationGracePeriodSeconds: pod}}, c
	}
	tests := []struct {
		name       string
		pod, probe *int64
		by         prober.Kind
		deleting   *int64
		want       time.Duration
	}{
		{"liveness, the probe's 5s over the pod's 30s", ptr.To[int64](30), ptr.To[int64](5), prober.Liveness, nil, 5 * time.Second},
		{"liveness, the probe's 60s even over the pod's 30s", ptr.To[int64](30), ptr.To[int64](60), prober.Liveness, nil, time.Minute},
		{"startup without its own: the pod's 30s", ptr.To[int64](30), ptr.To[int64](5), prober.Startup, nil, 30 * time.Second},
		{"the probe's 0 is raised to the least, 2s", ptr.To[int64](30), ptr.To[int64](0), prober.Liveness, nil, 2 * time.Second},
		{"no pod grace period: the probe's is not used, 2s", nil, ptr.To[int64](20), prober.Liveness, nil, 2 * time.Second},
		{"a pod being deleted: its deletion grace period", ptr.To[int64](30), ptr.To[int64](5), prober.Liveness, ptr.To[int64](10), 10 * time.Second},
	}
	for _, tc := range tests {
		pod, c := withGrace(tc.pod, tc.probe)
		pod.DeletionGracePeriodSeconds = tc.deleting
		if got := killGrace(pod, c, tc.by); got != tc.want {
			t.Errorf("%s: killGrace = %v, want %v", tc.name, got, tc.want)
		}
	}
	if got := killStop(t0, 5*time.Second, true); !got.Equal(t0) {
		t.Errorf("a server stops at %v after the kill, want at once", got.Sub(t0))
	}
	if got := killStop(t0, 5*time.Second, false); !got.Equal(t0.Add(5 * time.Second)) {
		t.Errorf("a process ignoring SIGTERM stops %v after the kill, want 5s", got.Sub(t0))
	}
}
