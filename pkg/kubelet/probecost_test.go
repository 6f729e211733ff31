package kubelet

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// benchProbedPod is steady-10000-probed's pod: nginx with a readiness httpGet / on the
// port named http and a liveness tcpSocket on it, both every 10 s.
func benchProbedPod() *corev1.Pod {
	p := newPod("nginx:1.25")
	c := &p.Spec.Containers[0]
	c.Ports = []corev1.ContainerPort{{Name: "http", ContainerPort: 80}}
	c.ReadinessProbe = &corev1.Probe{PeriodSeconds: 10, TimeoutSeconds: 1, SuccessThreshold: 1, FailureThreshold: 3,
		ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromString("http")}}}
	c.LivenessProbe = &corev1.Probe{PeriodSeconds: 10, TimeoutSeconds: 1, SuccessThreshold: 1, FailureThreshold: 3,
		ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromString("http")}}}
	return p
}

// BenchmarkProbeRunAtRest is one probe period of a probed pod at rest: both probes run
// and pass, and nothing changes.
func BenchmarkProbeRunAtRest(b *testing.B) {
	p := benchProbedPod()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	r := newRun(p, p.Spec.Containers[0], "id", "10.244.0.2", t0, t0, configLookup{}, Fault{})
	r.emit = nil
	now := t0
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		now = now.Add(10 * time.Second)
		r.mu.Lock()
		o := r.observeLocked(now)
		r.mu.Unlock()
		if !o.probes.Ready {
			b.Fatal("not ready")
		}
	}
}

// The loop's heap gives runs back earliest first, whatever order they came in.
func TestRunHeapOrder(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	offsets := []int{7, 3, 9, 3, 0, 12, 5, 1, 8, 2, 11, 4}
	var h runHeap
	for _, o := range offsets {
		h.push(dueRun{at: t0.Add(time.Duration(o) * time.Second)})
	}
	prev := time.Duration(-1)
	for n := 0; len(h) > 0; n++ {
		got := h.pop().at.Sub(t0)
		if got < prev {
			t.Fatalf("pop %d gave %v after %v", n, got, prev)
		}
		prev = got
	}
	if prev != 12*time.Second {
		t.Fatalf("last pop %v, want 12s", prev)
	}
}
