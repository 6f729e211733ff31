package kubelet

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// container computes one app container's next status; see podStatus for the states.
func (s *simulator) container(pod *corev1.Pod, c corev1.Container, old *corev1.ContainerStatus, clk *podClock, created time.Time, delay time.Duration, now time.Time, w *wake) corev1.ContainerStatus {
	image := normalizeImage(c.Image)
	plan := s.planImage(pod, c.Image)
	fault := plan.fault

	if old != nil && normalizeImage(old.Image) != image && !isFirstCreation(old) {
		// The image changed under a container that exists: kill and start again.
		next := *old.DeepCopy()
		if old.State.Running != nil {
			next.LastTerminationState = stoppedInstance(old, now)
		}
		if !plan.pull.OK {
			next.ImageID, next.ContainerID, next.Ready, next.Started = "", "", false, ptrBool(false)
			delete(clk.since, c.Name)
			return s.pullFailure(c, plan.pull, &next, clk, now, w)
		}
		if old.State.Running == nil && old.RestartCount == 0 && old.LastTerminationState.Terminated == nil {
			// Never ran (say, stuck pulling a bad image): this is its first creation.
			clk.since[c.Name] = now
			return s.creatingOrStart(pod, c, image, plan, nil, clk, now, delay, w)
		}
		return s.startInstance(pod, c, image, &next, now, next.RestartCount+1, s.readinessDelay(fault, delay), delay, clk, w)
	}

	switch {
	case old == nil || isFirstCreation(old):
		if _, ok := clk.since[c.Name]; !ok {
			clk.since[c.Name] = clk.admitted
		}
		return s.creatingOrStart(pod, c, image, plan, old, clk, now, delay, w)

	case old.State.Running != nil:
		started := clk.sinceOr(c.Name, old.State.Running.StartedAt.Time)
		if fault.Kind == FaultCrashLoop {
			crashAt := started.Add(max(delay, minRunBeforeCrash))
			if !now.Before(crashAt) {
				return s.ended(pod, c, old, 1, now, clk, w)
			}
			w.offer(crashAt)
		}
		// The container model: a command that ended ends the container; a failed
		// liveness or startup probe kills it; probes decide started and ready.
		probed := probeGate{ready: true}
		if r := s.runOf(pod, c, old, clk, started, now); r != nil {
			o := r.observe(now)
			switch {
			case o.exited:
				return s.ended(pod, c, old, int32(o.code), o.exitedAt, clk, w)
			case o.probes.Kill != "":
				// Killed: it stops at once or when its grace period ends (kill.go).
				stop := killStop(o.probes.KilledAt, killGrace(pod, &c, o.probes.KilledBy), r.inst.EndsOnTerm(now))
				if !now.Before(stop) {
					return s.ended(pod, c, old, exitKilled, stop, clk, w)
				}
				w.offer(stop)
			}
			if s.onRun == nil {
				if t, ok := r.next(); ok {
					w.offer(t)
				}
			}
			probed = probeGate{ready: o.probes.Ready, started: o.probes.Started, hasStartup: c.StartupProbe != nil}
		}
		readyAt, ok := clk.readyAt[c.Name]
		if !ok && !old.Ready {
			// No memory of this instance (the simulator restarted): derive from the status.
			base := time.Duration(0)
			if t := old.LastTerminationState.Terminated; t != nil && t.Reason == reasonCompleted {
				base = delay // restarted for an image change
			}
			if rd := s.readinessDelay(fault, base); rd >= 0 {
				readyAt, ok = started.Add(rd), true
			}
		}
		timedReady := fault.Kind != FaultNeverReady && (old.Ready || (ok && !now.Before(readyAt)))
		if !timedReady && ok && fault.Kind != FaultNeverReady {
			w.offer(readyAt)
		}
		next := *old.DeepCopy()
		next.Ready, next.Started = timedReady && probed.ready, ptrBool(timedReady || fault.Kind == FaultNeverReady)
		if probed.hasStartup {
			next.Started = ptrBool(probed.started)
		}
		return next

	case old.State.Waiting != nil && old.State.Waiting.Reason == reasonCrashLoopBackOff:
		finished := now
		if t := old.LastTerminationState.Terminated; t != nil {
			finished = t.FinishedAt.Time
		}
		finished = clk.sinceOr(c.Name, finished)
		restartAt, entry := s.restartDue(c, finished, now, clk)
		if now.Before(restartAt) {
			w.offer(restartAt)
			return *old.DeepCopy()
		}
		clk.backOff[c.Name] = entry
		return s.startInstance(pod, c, image, old.DeepCopy(), now, old.RestartCount+1, s.readinessDelay(fault, 0), delay, clk, w)

	case old.State.Waiting != nil && !plan.pull.OK:
		return s.pullFailure(c, plan.pull, old, clk, now, w)

	case old.State.Waiting != nil:
		// Waiting on a fault that no longer applies (the rules changed): start.
		return s.startInstance(pod, c, image, old.DeepCopy(), now, old.RestartCount, s.readinessDelay(fault, 0), delay, clk, w)
	}
	return *old.DeepCopy() // terminated for good (restartPolicy Never)
}

// exitKilled is the exit code of a container the kubelet killed (SIGKILL: 128+9).
const exitKilled = 137

// probeGate is what a container's probes allow: ready (true without a readiness
// probe), and, when it has a startup probe, whether that has passed.
type probeGate struct {
	ready, started, hasStartup bool
}

// stoppedInstance is the last state of a running instance the kubelet stops to start
// it again (a new image, a resize that restarts it): it exited cleanly, now.
func stoppedInstance(cs *corev1.ContainerStatus, now time.Time) corev1.ContainerState {
	return corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
		ExitCode: 0, Reason: reasonCompleted, StartedAt: cs.State.Running.StartedAt, FinishedAt: metav1.Time{Time: now}, ContainerID: cs.ContainerID,
	}}
}

// creatingOrStart handles a container's first creation: ContainerCreating until the
// startup delay has passed, then a failed pull, an environment it cannot be given
// (CreateContainerConfigError, tried again as the kubelet's pod worker does after a
// failed sync), or a running first instance.
func (s *simulator) creatingOrStart(pod *corev1.Pod, c corev1.Container, image string, plan imagePlan, old *corev1.ContainerStatus, clk *podClock, now time.Time, delay time.Duration, w *wake) corev1.ContainerStatus {
	due := clk.since[c.Name].Add(delay)
	if now.Before(due) {
		w.offer(due)
		return waitingStatus(c.Name, c.Image, reasonContainerCreating, "", old)
	}
	if !plan.pull.OK {
		clk.since[c.Name] = now
		return s.pullFailure(c, plan.pull, old, clk, now, w)
	}
	if msg := envConfigError(pod, &c, s.config); msg != "" {
		w.offer(now.Add(mountRetryPeriod))
		return waitingStatus(c.Name, c.Image, reasonCreateContainerConfigError, msg, old)
	}
	return s.startInstance(pod, c, image, &corev1.ContainerStatus{}, now, 0, s.readinessDelay(plan.fault, 0), delay, clk, w)
}

// startInstance reports a new instance of c running since now, with restartCount,
// ready after readyDelay (never, when negative).
func (s *simulator) startInstance(pod *corev1.Pod, c corev1.Container, image string, base *corev1.ContainerStatus, now time.Time, restartCount int32, readyDelay, delay time.Duration, clk *podClock, w *wake) corev1.ContainerStatus {
	clk.since[c.Name] = now
	delete(clk.readyAt, c.Name)
	ready := false
	if readyDelay >= 0 {
		clk.readyAt[c.Name] = now.Add(readyDelay)
		ready = readyDelay == 0
		if !ready {
			w.offer(now.Add(readyDelay))
		}
	}
	fault := s.planImage(pod, c.Image).fault
	if fault.Kind == FaultCrashLoop {
		w.offer(now.Add(max(delay, minRunBeforeCrash)))
	}
	cs := *base
	cs.Name = c.Name
	cs.Image, cs.ImageID = image, imageID(image)
	cs.ContainerID = containerID(string(pod.UID), c.Name, restartCount)
	cs.RestartCount = restartCount
	cs.State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Time{Time: now}}}
	cs.Ready, cs.Started = ready, ptrBool(ready || fault.Kind == FaultNeverReady)
	if c.ReadinessProbe != nil || c.StartupProbe != nil {
		// Its probes decide, from the next sync on (runOf): not ready until they pass.
		cs.Ready = false
	}
	if c.ReadinessProbe != nil || c.StartupProbe != nil || c.LivenessProbe != nil {
		// The next sync, at once, starts its probes on their schedule from now.
		w.offer(now)
	}
	if c.StartupProbe != nil {
		cs.Started = ptrBool(false)
	}
	return cs
}

// pullFailure reports a container whose image does not pull. A malformed reference
// waits InvalidImageName for good. Otherwise the kubelet pulls again and again with the
// back-off it uses for crashes, 10s·2ⁿ up to 5m: after each attempt it shows
// ErrImagePull with the registry's error until its next sync (here max(startup delay,
// 1s), at most half the back-off), then ImagePullBackOff, quoting that error, until the
// next attempt. With the 10s default: ErrImagePull at 0s, ImagePullBackOff at 1s,
// ErrImagePull at 10s, ImagePullBackOff at 11s, ErrImagePull at 30s, 70s, 150s, 310s, …
func (s *simulator) pullFailure(c corev1.Container, pull PullResult, old *corev1.ContainerStatus, clk *podClock, now time.Time, w *wake) corev1.ContainerStatus {
	if pull.Reason == reasonInvalidImageName {
		return waitingStatus(c.Name, c.Image, reasonInvalidImageName, pull.Message, old)
	}
	attempt, ok := clk.since[c.Name]
	if !ok {
		attempt = now
		clk.since[c.Name] = now
	}
	backOff := s.backOff(0)
	for n := int32(1); !now.Before(attempt.Add(backOff)); n++ {
		attempt = attempt.Add(backOff)
		backOff = s.backOff(n)
	}
	if shown := attempt.Add(min(max(s.startupDelay, time.Second), backOff/2)); now.Before(shown) {
		w.offer(shown)
		return waitingStatus(c.Name, c.Image, reasonErrImagePull, pull.Message, old)
	}
	w.offer(attempt.Add(backOff))
	return waitingStatus(c.Name, c.Image, reasonImagePullBackOff,
		fmt.Sprintf("Back-off pulling image %q: %s: %s", withDefaultTag(c.Image), reasonErrImagePull, pull.Message), old)
}

// readinessDelay is how long a fresh instance takes to pass readiness: the fault's own
// delay, otherwise base; negative for an instance that never does.
func (s *simulator) readinessDelay(f Fault, base time.Duration) time.Duration {
	switch f.Kind {
	case FaultNeverReady:
		return -1
	case FaultReadyAfter:
		return f.After
	}
	return base
}

// backOff is the wait before restart number restarts+1: base·2^restarts, at most 5m.
func (s *simulator) backOff(restarts int32) time.Duration {
	d := s.crashBackOff
	for i := int32(0); i < restarts && d < maxCrashLoopBackOff; i++ {
		d *= 2
	}
	return min(d, maxCrashLoopBackOff)
}

// isFirstCreation tells a container still waiting for its very first instance: being
// created, or held back because its environment cannot be built.
func isFirstCreation(cs *corev1.ContainerStatus) bool {
	w := cs.State.Waiting
	return w != nil && (w.Reason == reasonContainerCreating || w.Reason == reasonCreateContainerConfigError) &&
		cs.RestartCount == 0 && cs.LastTerminationState.Terminated == nil
}

func findStatus(list []corev1.ContainerStatus, name string) *corev1.ContainerStatus {
	for i := range list {
		if list[i].Name == name {
			return &list[i]
		}
	}
	return nil
}

// waitingStatus is a container waiting for reason, keeping what old knew of past instances.
func waitingStatus(name, image, reason, message string, old *corev1.ContainerStatus) corev1.ContainerStatus {
	cs := corev1.ContainerStatus{Name: name}
	if old != nil {
		cs.RestartCount, cs.LastTerminationState = old.RestartCount, *old.LastTerminationState.DeepCopy()
	}
	cs.Image = image
	cs.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: message}}
	cs.Started = ptrBool(false)
	return cs
}

func runningStatus(pod *corev1.Pod, name, image string, since time.Time, ready bool, restarts int32, old *corev1.ContainerStatus) corev1.ContainerStatus {
	if old != nil && old.State.Running != nil && old.Image == image {
		return *old.DeepCopy()
	}
	return corev1.ContainerStatus{
		Name: name, Image: image, ImageID: imageID(image), ContainerID: containerID(string(pod.UID), name, restarts),
		RestartCount: restarts, Ready: ready, Started: ptrBool(true),
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Time{Time: since}}},
	}
}

func ptrBool(b bool) *bool { return &b }
