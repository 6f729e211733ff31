package kubelet

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kroll-dev/kroll/pkg/prober"
)

// minKillGrace is the kubelet's least grace period for stopping a container: it
// always gives one 2 s to shut down before SIGKILL.
const minKillGrace = 2 * time.Second

// killGrace is the grace period of container c's kill because its probe of kind by
// failed, as the kubelet chooses it: the pod's deletion grace period when the pod is
// being deleted; else the probe's terminationGracePeriodSeconds when set, else the
// pod's terminationGracePeriodSeconds (the API defaults it to 30 s; unset, 2 s); at
// least 2 s.
func killGrace(pod *corev1.Pod, c *corev1.Container, by prober.Kind) time.Duration {
	secs := int64(2)
	switch {
	case pod.DeletionGracePeriodSeconds != nil:
		secs = *pod.DeletionGracePeriodSeconds
	case pod.Spec.TerminationGracePeriodSeconds != nil:
		secs = *pod.Spec.TerminationGracePeriodSeconds
		var p *corev1.Probe
		switch by {
		case prober.Liveness:
			p = c.LivenessProbe
		case prober.Startup:
			p = c.StartupProbe
		}
		if p != nil && p.TerminationGracePeriodSeconds != nil {
			secs = *p.TerminationGracePeriodSeconds
		}
	}
	return max(time.Duration(secs)*time.Second, minKillGrace)
}

// killStop is when a container the kubelet killed at killedAt with grace period grace
// stops: at once when its main process ends on SIGTERM (a server), else at the end of
// the grace period, by SIGKILL (a shell or a sleep running as PID 1 has no handler for
// SIGTERM and ignores it). Worked numbers: busybox running `sleep 3600` with a liveness
// probe that fails at 20 s, in a pod with the default 30 s, stops at 50 s; with the
// probe's terminationGracePeriodSeconds 5, at 25 s; nginx stops at 20 s either way.
func killStop(killedAt time.Time, grace time.Duration, endsOnTerm bool) time.Time {
	if endsOnTerm {
		return killedAt
	}
	return killedAt.Add(grace)
}
