package kubelet

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// initContainer computes the next status of a regular (run-to-completion) init
// container whose turn has come and whose image has pulled. Its instance runs its
// command in pkg/container's model, as an app container's does (its echo output is its
// log):
//
//	never started ──▶ running (from now) ──command ends 0──▶ terminated Completed: the next one starts
//	                      │ ends non-zero
//	                      ▼
//	restartPolicy Never: terminated Error, for good (the pod fails: Init:Error)
//	otherwise: waiting CrashLoopBackOff ──back-off──▶ running again, restartCount+1
//	           (Init:CrashLoopBackOff)
//
// A command that runs for ever (a server, a command the model does not interpret)
// keeps the container running and the pod initializing, as on a real node.
func (s *simulator) initContainer(pod *corev1.Pod, c corev1.Container, old *corev1.ContainerStatus, clk *podClock, now time.Time, w *wake) corev1.ContainerStatus {
	image := normalizeImage(c.Image)
	var cs corev1.ContainerStatus
	switch {
	case old != nil && old.State.Terminated != nil:
		return *old.DeepCopy() // done, or failed for good
	case old != nil && old.State.Running != nil:
		cs = *old.DeepCopy()
	case old != nil && waitingReason(old) == reasonCrashLoopBackOff:
		finished := now
		if t := old.LastTerminationState.Terminated; t != nil {
			finished = t.FinishedAt.Time
		}
		restartAt, entry := s.restartDue(c, clk.sinceOr(c.Name, finished), now, clk)
		if now.Before(restartAt) {
			w.offer(restartAt)
			return *old.DeepCopy()
		}
		clk.backOff[c.Name] = entry
		cs = initInstance(pod, c.Name, image, old, old.RestartCount+1, now)
		clk.since[c.Name] = now
	default:
		// Never started (waiting for its turn, or for its image).
		cs = initInstance(pod, c.Name, image, old, 0, now)
		clk.since[c.Name] = now
	}
	started := clk.sinceOr(c.Name, cs.State.Running.StartedAt.Time)
	r := s.runOf(pod, c, &cs, clk, started, now)
	if r == nil {
		return cs // runs for ever
	}
	o := r.observe(now)
	if !o.exited {
		if s.onRun == nil {
			if t, ok := r.next(); ok {
				w.offer(t)
			}
		}
		return cs
	}
	if o.code != 0 {
		return s.ended(pod, c, &cs, int32(o.code), o.exitedAt, clk, w)
	}
	r.drop()
	delete(clk.runs, c.Name)
	cs.Ready, cs.Started = false, ptrBool(false)
	cs.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
		ExitCode: 0, Reason: reasonCompleted, StartedAt: cs.State.Running.StartedAt, FinishedAt: metav1.Time{Time: o.exitedAt}, ContainerID: cs.ContainerID,
	}}
	return cs
}

// initInstance is a new instance of init container name running since now.
func initInstance(pod *corev1.Pod, name, image string, old *corev1.ContainerStatus, restartCount int32, now time.Time) corev1.ContainerStatus {
	cs := corev1.ContainerStatus{}
	if old != nil {
		cs.LastTerminationState = *old.LastTerminationState.DeepCopy()
	}
	cs.Name, cs.Image, cs.ImageID = name, image, imageID(image)
	cs.ContainerID = containerID(string(pod.UID), name, restartCount)
	cs.RestartCount, cs.Started = restartCount, ptrBool(true)
	cs.State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Time{Time: now}}}
	return cs
}

// initFailed tells a pod whose regular init container failed for good (restartPolicy
// Never): the pod fails without running its app containers.
func initFailed(spec []corev1.Container, statuses []corev1.ContainerStatus) bool {
	for _, c := range spec {
		if cs := findStatus(statuses, c.Name); !isSidecar(c) && cs != nil && cs.State.Terminated != nil && cs.State.Terminated.ExitCode != 0 {
			return true
		}
	}
	return false
}

// regularInit tells whether name is one of pod's run-to-completion init containers
// (not a sidecar).
func regularInit(pod *corev1.Pod, name string) bool {
	for _, c := range pod.Spec.InitContainers {
		if c.Name == name {
			return !isSidecar(c)
		}
	}
	return false
}
