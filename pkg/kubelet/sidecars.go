package kubelet

import (
	"time"

	corev1 "k8s.io/api/core/v1"
)

// sidecar is the status of sidecar c (a restartable init container) once the pod's
// sandbox is created and its image pulled. It runs as an app container does: its
// probes decide its started and ready (the app containers start once it has started,
// and the pod is not ready while it is not), a failed liveness or startup probe kills
// it, and a command that ends ends it; either way it restarts, whatever the pod's
// restartPolicy, with the kubelet's back-off (backoff.go) — a sidecar's restartPolicy
// is Always.
func (s *simulator) sidecar(pod *corev1.Pod, c corev1.Container, old *corev1.ContainerStatus, clk *podClock, created, now time.Time, w *wake) corev1.ContainerStatus {
	always := *pod
	always.Spec.RestartPolicy = corev1.RestartPolicyAlways
	if old != nil && old.State.Waiting != nil && old.State.Waiting.Reason == reasonCrashLoopBackOff {
		return s.container(&always, c, old, clk, created, s.delayFor(pod), now, w)
	}
	cs := runningStatus(pod, c.Name, normalizeImage(c.Image), created, true, 0, old)
	// The first instance started with the sandbox; a restarted one when the restart
	// recorded it (to the nanosecond: the status's startedAt is whole seconds).
	started := created
	if cs.RestartCount > 0 {
		started = clk.sinceOr(c.Name, cs.State.Running.StartedAt.Time)
	}
	r := s.runOf(pod, c, &cs, clk, started, now)
	if r == nil {
		return cs
	}
	o := r.observe(now)
	switch {
	case o.exited:
		return s.ended(&always, c, &cs, int32(o.code), o.exitedAt, clk, w)
	case o.probes.Kill != "":
		stop := killStop(o.probes.KilledAt, killGrace(pod, &c, o.probes.KilledBy), r.inst.EndsOnTerm(now))
		if !now.Before(stop) {
			return s.ended(&always, c, &cs, exitKilled, stop, clk, w)
		}
		w.offer(stop)
	}
	cs.Ready, cs.Started = o.probes.Ready, ptrBool(o.probes.Started)
	if s.onRun == nil {
		if t, ok := r.next(); ok {
			w.offer(t)
		}
	}
	return cs
}

// initializedOnce tells a pod whose app containers have started: a sidecar that
// restarts after that does not hold them back (they are not initialising again).
func initializedOnce(statuses []corev1.ContainerStatus) bool {
	for _, cs := range statuses {
		if cs.State.Running != nil || cs.State.Terminated != nil || cs.RestartCount > 0 || cs.LastTerminationState.Terminated != nil {
			return true
		}
	}
	return false
}
