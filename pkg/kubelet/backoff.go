package kubelet

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// crashBackOff is the kubelet's restart back-off of one container: its entry in the
// kubelet's crash-loop back-off, keyed by the pod, the container's name, its image and
// its resources (so a new image or a resize starts afresh). The kubelet's flow, for a
// container that has exited (finished at f):
//
//   - no entry, or the entry is stale (f more than 10 minutes after the entry last let
//     the container restart): restart at once; the entry is now base (10 s);
//   - else, until f + the entry's back-off: wait (CrashLoopBackOff, "back-off 10s …");
//   - then restart, and the entry doubles, at most 5 minutes.
//
// So a container that keeps crashing restarts 0, 10, 20, 40, 80, 160, 300, 300 … s
// after each exit: the first restart is immediate, and a container that ran for more
// than 10 minutes before crashing starts the series again. The zero value is no entry;
// a restarted simulator has none, as a restarted kubelet has none.
type crashBackOff struct {
	key  string        // the image and resources the entry is for
	wait time.Duration // the current back-off
	last time.Time     // when the entry last let the container restart
}

// backOffStale is how long after the last restart an exit starts the back-off series
// again (the kubelet's; its ceiling is maxCrashLoopBackOff).
const backOffStale = 10 * time.Minute

// backOffKey is what a back-off entry is for: the container's image and resources.
func backOffKey(c *corev1.Container) string {
	return c.Image + "/" + c.Resources.String()
}

// fresh tells whether e does not apply to a container of key that finished at finished.
func (e crashBackOff) fresh(key string, finished time.Time) bool {
	return e.last.IsZero() || e.key != key || finished.Sub(e.last) > backOffStale
}

// until is when the container of key that finished at finished may restart: at once
// (finished) when e does not apply.
func (e crashBackOff) until(key string, finished time.Time) time.Time {
	if e.fresh(key, finished) {
		return finished
	}
	return finished.Add(e.wait)
}

// next is the entry after it lets the container restart at now: base when it did not
// apply, else doubled up to the ceiling.
func (e crashBackOff) next(key string, finished, now time.Time, base time.Duration) crashBackOff {
	wait := base
	if !e.fresh(key, finished) {
		wait = min(2*e.wait, maxCrashLoopBackOff)
	}
	return crashBackOff{key: key, wait: wait, last: now}
}

// afterExit is the status of container c whose instance has ended at at and is to be
// restarted (next holds its last termination): a new instance at once when the
// back-off allows, else waiting CrashLoopBackOff until it does.
func (s *simulator) afterExit(pod *corev1.Pod, c corev1.Container, next corev1.ContainerStatus, at time.Time, clk *podClock, w *wake) corev1.ContainerStatus {
	key := backOffKey(&c)
	e := clk.backOff[c.Name]
	if e.fresh(key, at) && s.planImage(pod, c.Image).fault.Kind == FaultCrashLoop {
		// The CrashLoopBackOff fault is the state it names from the first crash on, as
		// it always was (rollouts' failure handling is tried against it): its first
		// restart waits the base back-off. A container's own exits (its command, a
		// failed liveness probe) follow the kubelet's flow, the first restart at once.
		e = crashBackOff{key: key, wait: s.crashBackOff, last: at}
		clk.backOff[c.Name] = e
	}
	if !e.until(key, at).After(at) {
		clk.backOff[c.Name] = e.next(key, at, at, s.crashBackOff)
		if regularInit(pod, c.Name) {
			// An init container's new instance runs its command from the next sync.
			cs := initInstance(pod, c.Name, normalizeImage(c.Image), &next, next.RestartCount+1, at)
			clk.since[c.Name] = at
			w.offer(at)
			return cs
		}
		fault := s.planImage(pod, c.Image).fault
		return s.startInstance(pod, c, normalizeImage(c.Image), &next, at, next.RestartCount+1, s.readinessDelay(fault, 0), s.delayFor(pod), clk, w)
	}
	next.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
		Reason:  reasonCrashLoopBackOff,
		Message: fmt.Sprintf("back-off %s restarting failed container=%s pod=%s_%s(%s)", e.wait, c.Name, pod.Name, pod.Namespace, pod.UID),
	}}
	clk.since[c.Name] = at
	w.offer(e.until(key, at))
	return next
}

// restartDue is, for container c waiting in CrashLoopBackOff since its instance
// finished at finished, when it restarts; and the entry to keep once it has.
func (s *simulator) restartDue(c corev1.Container, finished, now time.Time, clk *podClock) (time.Time, crashBackOff) {
	key := backOffKey(&c)
	e := clk.backOff[c.Name]
	return e.until(key, finished), e.next(key, finished, now, s.crashBackOff)
}
