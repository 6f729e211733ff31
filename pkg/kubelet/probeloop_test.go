package kubelet

import (
	"context"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kroll-dev/kroll/pkg/prober"
)

// The loop brings a pod back only when its probes' result changes: a readiness probe
// that keeps failing is run every period and never syncs the pod; one that passes
// syncs it once.
func TestProbeLoopEnqueuesOnlyOnAChange(t *testing.T) {
	probe := func(path string) *corev1.Pod {
		p := newPod("nginx:1.25")
		p.Name = "web" + path
		p.Spec.Containers[0].ReadinessProbe = &corev1.Probe{PeriodSeconds: 1,
			ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.FromInt32(80)}}}
		return p
	}
	var mu sync.Mutex
	synced := map[string]int{}
	loop := newProbeLoop(func(key string) { mu.Lock(); synced[key]++; mu.Unlock() })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go loop.run(ctx)

	now := time.Now()
	failing, passing := probe("/healthz"), probe("/")
	var events []prober.Event
	var runs []*run
	for _, p := range []*corev1.Pod{failing, passing} {
		r := newRun(p, p.Spec.Containers[0], "id-"+p.Name, "10.244.0.2", now, now, configLookup{}, Fault{})
		r.emit = func(_ *corev1.ObjectReference, e prober.Event) { mu.Lock(); events = append(events, e); mu.Unlock() }
		runs = append(runs, r)
		loop.schedule(r)
	}
	time.Sleep(2500 * time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	if synced["default/web/healthz"] != 0 || synced["default/web/"] != 1 {
		t.Errorf("pods synced %v; want only the passing one, once", synced)
	}
	// The failing probe ran at 0s, 1s and 2s: three Unhealthy events.
	if len(events) < 2 || len(events) > 3 || events[0].Message != "Readiness probe failed: HTTP probe failed with statuscode: 404" {
		t.Errorf("events %+v; want 2–3 Unhealthy", events)
	}
	if runs[1].probes.Status("c0").Ready != true {
		t.Error("the passing run is not ready")
	}
}

// BenchmarkProbeFire is the probe loop's cost for one due run of a pod at rest, with a
// readiness httpGet and a liveness tcpSocket probe (both due at once), result
// unchanged: 10,000 such pods at periodSeconds 10 are 1,000 of these a second.
func BenchmarkProbeFire(b *testing.B) {
	p := newPod("nginx:1.25")
	p.Spec.Containers[0].ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromInt32(80)}}}
	p.Spec.Containers[0].LivenessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(80)}}}
	now := time.Now()
	r := newRun(p, p.Spec.Containers[0], "id", "10.244.0.2", now, now, configLookup{}, Fault{})
	loop := newProbeLoop(func(string) { b.Fatal("a pod at rest was synced") })
	r.observe(now)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		now = now.Add(10 * time.Second)
		loop.fire(r, now)
		loop.mu.Lock()
		loop.due = loop.due[:0]
		r.queued = time.Time{}
		loop.mu.Unlock()
	}
}
