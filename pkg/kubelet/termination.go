package kubelet

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// What the kubelet reports of containers it stops, and of pods that end.
const (
	// reasonStatusUnknown and messageStatusUnknown mark a container that never ran (or
	// whose end the runtime no longer knows) when its pod ends; exit code 137.
	reasonStatusUnknown  = "ContainerStatusUnknown"
	messageStatusUnknown = "The container could not be located when the pod was terminated"
	exitCodeUnknown      = 137
	// reasonPodCompleted and reasonPodFailed are the reasons of Ready and ContainersReady
	// (False) once a pod is Succeeded or Failed.
	reasonPodCompleted = "PodCompleted"
	reasonPodFailed    = "PodFailed"
)

// isTerminal tells a pod that will never run again.
func isTerminal(phase corev1.PodPhase) bool {
	return phase == corev1.PodSucceeded || phase == corev1.PodFailed
}

// zeroGraceStop is how long the kubelet takes to stop the containers of a pod deleted
// with a zero grace period, before it reports them stopped.
const zeroGraceStop = 100 * time.Millisecond

// removedWithItsDeletion tells a pod the API server removes in the very request that
// deletes it: a zero grace period and no finalizer. Its watch still shows the deletion
// timestamp being set just before the pod goes, and a kubelet that wrote the final
// status on that sight would, more often than not, write to a pod no longer there.
func removedWithItsDeletion(pod *corev1.Pod) bool {
	return pod.DeletionGracePeriodSeconds != nil && *pod.DeletionGracePeriodSeconds == 0 && len(pod.Finalizers) == 0
}

// runsContainers tells whether any container of pod is running: only then does its
// deletion wait for the grace period; a pod whose containers are all waiting (being
// created, pulling, backing off) or terminated stops at once.
func runsContainers(st corev1.PodStatus) bool {
	for _, list := range [][]corev1.ContainerStatus{st.InitContainerStatuses, st.ContainerStatuses} {
		for _, cs := range list {
			if cs.State.Running != nil {
				return true
			}
		}
	}
	return false
}

// stoppedStatus is the status a kubelet reports for pod once it has stopped it for good
// (deleted, and its grace period over), and before it removes the pod:
//
//   - a running container has exited: terminated, exit code 0, reason Completed (the
//     simulated container shuts down cleanly within its grace period); not ready;
//   - a container waiting after a crash reports that last exit as its state;
//   - a container that never ran (being created, failing to pull, or never started
//     because the pod was rejected) is terminated ContainerStatusUnknown, exit code
//     137, once the pod has initialized; init containers up to the last one that
//     started likewise;
//   - the phase is Succeeded if every app container exited 0, Failed otherwise (a pod
//     already Succeeded or Failed, say rejected, keeps its phase, reason and message);
//   - Ready and ContainersReady are False with reason PodCompleted or PodFailed,
//     PodReadyToStartContainers is False (the sandbox is gone), Initialized is True
//     with reason PodCompleted for a Succeeded pod;
//   - hostIP is reported (a rejected pod had none), podIP is kept.
//
// It is pure and idempotent: applied to its own result it changes nothing.
func stoppedStatus(pod *corev1.Pod, hostIP string, now time.Time) corev1.PodStatus {
	st := *pod.Status.DeepCopy()
	if st.StartTime == nil {
		st.StartTime = &metav1.Time{Time: now}
	}
	if st.HostIP == "" && hostIP != "" {
		st.HostIP, st.HostIPs = hostIP, []corev1.HostIP{{IP: hostIP}}
	}
	initialized := hasInitialized(pod)
	stop := func(cs *corev1.ContainerStatus) {
		switch {
		case cs.State.Running != nil:
			cs.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				ExitCode: 0, Reason: reasonCompleted, StartedAt: cs.State.Running.StartedAt, FinishedAt: metav1.Time{Time: now}, ContainerID: cs.ContainerID,
			}}
		case cs.State.Waiting != nil && cs.LastTerminationState.Terminated != nil:
			cs.State = corev1.ContainerState{Terminated: cs.LastTerminationState.Terminated.DeepCopy()}
		}
		cs.Ready, cs.Started = false, ptrBool(false)
	}
	unknown := func(cs *corev1.ContainerStatus) {
		cs.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ExitCode: exitCodeUnknown, Reason: reasonStatusUnknown, Message: messageStatusUnknown,
		}}
	}

	defaultWaiting := reasonContainerCreating
	if len(pod.Spec.InitContainers) > 0 {
		defaultWaiting = reasonPodInitializing
	}
	initStatuses := statusesFor(pod.Spec.InitContainers, st.InitContainerStatuses, reasonPodInitializing)
	lastStarted := 0
	for i := range initStatuses {
		stop(&initStatuses[i])
		if initStatuses[i].State.Waiting == nil || initStatuses[i].LastTerminationState.Terminated != nil {
			lastStarted = i
		}
	}
	for i := 0; i < len(initStatuses) && i <= lastStarted; i++ {
		if initStatuses[i].State.Terminated == nil {
			unknown(&initStatuses[i])
		}
	}
	statuses := statusesFor(pod.Spec.Containers, st.ContainerStatuses, defaultWaiting)
	allExited, allSucceeded := true, true
	for i := range statuses {
		stop(&statuses[i])
		if statuses[i].State.Terminated == nil && initialized {
			unknown(&statuses[i])
		}
		switch t := statuses[i].State.Terminated; {
		case t == nil:
			allExited = false
		case t.ExitCode != 0:
			allSucceeded = false
		}
	}
	if len(initStatuses) > 0 {
		st.InitContainerStatuses = initStatuses
	}
	st.ContainerStatuses = statuses

	if !isTerminal(st.Phase) {
		st.Phase = corev1.PodFailed
		if allExited && allSucceeded {
			st.Phase = corev1.PodSucceeded
		}
	}
	setEndedConditions(pod, &st, now)
	return st
}

// setEndedConditions sets the kubelet's conditions of a pod that is Succeeded or Failed:
// Ready and ContainersReady False with reason PodCompleted or PodFailed,
// PodReadyToStartContainers False (its sandbox is gone), Initialized True (with reason
// PodCompleted for a Succeeded pod) unless it never got past its init containers.
func setEndedConditions(pod *corev1.Pod, st *corev1.PodStatus, now time.Time) {
	ended := reasonPodFailed
	if st.Phase == corev1.PodSucceeded {
		ended = reasonPodCompleted
	}
	gen := pod.Generation
	setCondition(st, gen, corev1.PodReadyToStartContainers, corev1.ConditionFalse, "", "", now)
	switch incomplete := incompleteInit(pod.Spec.InitContainers, st.InitContainerStatuses); {
	case st.Phase == corev1.PodSucceeded:
		setCondition(st, gen, corev1.PodInitialized, corev1.ConditionTrue, reasonPodCompleted, "", now)
	case anyStarted(st.ContainerStatuses) || len(incomplete) == 0:
		setCondition(st, gen, corev1.PodInitialized, corev1.ConditionTrue, "", "", now)
	default:
		setCondition(st, gen, corev1.PodInitialized, corev1.ConditionFalse, "ContainersNotInitialized",
			fmt.Sprintf("containers with incomplete status: [%s]", strings.Join(incomplete, " ")), now)
	}
	setCondition(st, gen, corev1.PodReady, corev1.ConditionFalse, ended, "", now)
	setCondition(st, gen, corev1.ContainersReady, corev1.ConditionFalse, ended, "", now)
	sortConditions(st)
}

// statusesFor returns a status per container of spec, in spec order: the reported one,
// or the kubelet's default for a container it has no record of (waiting, reason).
func statusesFor(spec []corev1.Container, reported []corev1.ContainerStatus, reason string) []corev1.ContainerStatus {
	out := make([]corev1.ContainerStatus, 0, len(spec))
	for _, c := range spec {
		if old := findStatus(reported, c.Name); old != nil {
			out = append(out, *old.DeepCopy())
			continue
		}
		out = append(out, corev1.ContainerStatus{Name: c.Name, Image: c.Image,
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason}}, Started: ptrBool(false)})
	}
	return out
}

// hasInitialized tells whether pod, as reported, ever got past its init containers: it has
// none, an app container left waiting once, or its last init container completed (or, a
// sidecar, started). Until then a pod's app containers that never ran stay waiting when it ends.
func hasInitialized(pod *corev1.Pod) bool {
	if len(pod.Spec.InitContainers) == 0 {
		return true
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.LastTerminationState.Terminated != nil || cs.State.Waiting == nil {
			return true
		}
	}
	last := pod.Spec.InitContainers[len(pod.Spec.InitContainers)-1]
	cs := findStatus(pod.Status.InitContainerStatuses, last.Name)
	switch {
	case cs == nil:
		return false
	case last.RestartPolicy != nil && *last.RestartPolicy == corev1.ContainerRestartPolicyAlways:
		return cs.Started != nil && *cs.Started
	}
	for _, s := range []corev1.ContainerState{cs.State, cs.LastTerminationState} {
		if s.Terminated != nil && s.Terminated.ExitCode == 0 {
			return true
		}
	}
	return false
}

// incompleteInit names the init containers that have not done their part: a regular one
// that has not exited 0, a sidecar that has not started.
func incompleteInit(spec []corev1.Container, statuses []corev1.ContainerStatus) []string {
	var out []string
	for _, c := range spec {
		cs := findStatus(statuses, c.Name)
		done := false
		switch {
		case cs == nil:
		case c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways:
			done = cs.Started != nil && *cs.Started
		default:
			done = cs.State.Terminated != nil && cs.State.Terminated.ExitCode == 0
		}
		if !done {
			out = append(out, c.Name)
		}
	}
	return out
}

// anyStarted tells whether an app container ever ran (running or terminated).
func anyStarted(statuses []corev1.ContainerStatus) bool {
	for _, cs := range statuses {
		if cs.State.Running != nil || cs.State.Terminated != nil {
			return true
		}
	}
	return false
}
