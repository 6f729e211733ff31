package failure

import (
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// The condition kroll reports a failed rollout with, on every kind's status, its
// reasons, and the Warning events of the actions.
const (
	// ConditionRolloutFailed is True once a rollout failed and the policy acted.
	ConditionRolloutFailed = "RolloutFailed"
	// ConditionFailurePolicy is False with ReasonInvalidAnnotation while the policy's
	// annotations do not parse.
	ConditionFailurePolicy = "FailurePolicy"

	ReasonPodsFailing              = "PodsFailing"
	ReasonProgressDeadlineExceeded = "ProgressDeadlineExceeded"
	ReasonInvalidAnnotation        = "InvalidAnnotation"
	// ReasonAborted: the rollout was rolled back on request (kroll.dev/abort).
	ReasonAborted = "Aborted"

	EventRolledBack           = "RolledBack"
	EventRolloutPaused        = "RolloutPaused"
	EventInvalidFailurePolicy = "InvalidFailurePolicy"
)

// waitingFailures are the reasons a container waits with that mean it will not start
// by itself.
var waitingFailures = map[string]bool{
	"CrashLoopBackOff":           true,
	"ImagePullBackOff":           true,
	"ErrImagePull":               true,
	"InvalidImageName":           true,
	"CreateContainerConfigError": true,
	"CreateContainerError":       true,
}

// PodFailure says why pod has failed under p at now ("CrashLoopBackOff", "restarted 3
// times", "not Ready 1m0s after starting"); empty when it has not. A pod being deleted
// has not failed: it is on its way out.
func PodFailure(pod *corev1.Pod, p Policy, now time.Time) string {
	if pod.DeletionTimestamp != nil {
		return ""
	}
	if pod.Status.Phase == corev1.PodFailed {
		if pod.Status.Reason != "" {
			return pod.Status.Reason
		}
		return "Failed"
	}
	statuses := append(append([]corev1.ContainerStatus(nil), pod.Status.InitContainerStatuses...), pod.Status.ContainerStatuses...)
	for _, cs := range statuses {
		if w := cs.State.Waiting; w != nil && waitingFailures[w.Reason] {
			return w.Reason
		}
	}
	for _, cs := range statuses {
		if p.Restarts > 0 && cs.RestartCount >= p.Restarts {
			return fmt.Sprintf("%s restarted %d times", cs.Name, cs.RestartCount)
		}
	}
	if p.ReadyTimeout <= 0 || podReady(pod) || len(pod.Status.ContainerStatuses) < len(pod.Spec.Containers) {
		return ""
	}
	var started time.Time
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.State.Running == nil {
			return "" // not all running yet: starting, not failing
		}
		if t := cs.State.Running.StartedAt.Time; t.After(started) {
			started = t
		}
	}
	if !started.IsZero() && now.Sub(started) >= p.ReadyTimeout {
		return fmt.Sprintf("not Ready %s after starting", p.ReadyTimeout)
	}
	return ""
}

// NextCheck is when pod, running but not Ready, reaches p's ready timeout: the moment
// to look again without polling; zero when no timeout is pending for it.
func NextCheck(pod *corev1.Pod, p Policy) time.Time {
	if p.ReadyTimeout <= 0 || podReady(pod) || pod.DeletionTimestamp != nil || len(pod.Status.ContainerStatuses) < len(pod.Spec.Containers) {
		return time.Time{}
	}
	var started time.Time
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.State.Running == nil {
			return time.Time{}
		}
		if t := cs.State.Running.StartedAt.Time; t.After(started) {
			started = t
		}
	}
	if started.IsZero() {
		return time.Time{}
	}
	return started.Add(p.ReadyTimeout)
}

func podReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// Verdict is the judgement of one rollout.
type Verdict struct {
	// Failed is true when the rollout failed: failed pods reached the threshold, or the
	// progress deadline passed.
	Failed bool
	// Reason is ReasonPodsFailing or ReasonProgressDeadlineExceeded; empty unless Failed.
	Reason string
	// FailedPods is how many pods of the new revision failed; NewPods how many it has.
	FailedPods, NewPods int32
	// Threshold is the number of failed pods that fails the rollout.
	Threshold int32
	// Example is one failed pod and why, "web-7d9f-abcde: CrashLoopBackOff" (the first
	// by name); empty when none failed.
	Example string
	// Recheck is the earliest moment a pod reaches its ready timeout (look again then);
	// zero when none is pending.
	Recheck time.Time
}

// Judge judges a rollout under p: newPods are the pods of the revision being rolled
// out, desired the workload's replicas, pastDeadline whether its progress deadline
// passed. A policy that does not act never fails a rollout.
func Judge(p Policy, desired int32, newPods []*corev1.Pod, pastDeadline bool, now time.Time) Verdict {
	v := Verdict{Threshold: p.FailedPodsAllowed(desired)}
	if !p.Watched() {
		return v
	}
	pods := append([]*corev1.Pod(nil), newPods...)
	sort.Slice(pods, func(i, j int) bool { return pods[i].Name < pods[j].Name })
	for _, pod := range pods {
		if pod.DeletionTimestamp != nil {
			continue
		}
		v.NewPods++
		if why := PodFailure(pod, p, now); why != "" {
			v.FailedPods++
			if v.Example == "" {
				v.Example = pod.Name + ": " + why
			}
			continue
		}
		if t := NextCheck(pod, p); !t.IsZero() && (v.Recheck.IsZero() || t.Before(v.Recheck)) {
			v.Recheck = t
		}
	}
	switch {
	case v.FailedPods >= v.Threshold:
		v.Failed, v.Reason = true, ReasonPodsFailing
	case pastDeadline:
		v.Failed, v.Reason = true, ReasonProgressDeadlineExceeded
	}
	return v
}

// Message is the verdict in one line, "3 of 4 new pods failed, threshold 2
// (web-7d9f-abcde: CrashLoopBackOff)", or for a deadline "progress deadline exceeded; 1
// of 4 new pods failed, threshold 2 (…)"; outcome, when given, follows after "; "
// ("rolled back from revision 5 to 4").
func (v Verdict) Message(outcome string) string {
	s := fmt.Sprintf("%d of %d new pods failed, threshold %d", v.FailedPods, v.NewPods, v.Threshold)
	if v.Example != "" {
		s += " (" + v.Example + ")"
	}
	if v.Reason == ReasonProgressDeadlineExceeded {
		s = "progress deadline exceeded; " + s
	}
	if outcome != "" {
		s += "; " + outcome
	}
	return s
}

// RolledBackOutcome and PausedOutcome are the outcomes the controllers name in the
// condition and event.
func RolledBackOutcome(from, to string) string {
	return fmt.Sprintf("rolled back from revision %s to %s", from, to)
}

// PausedOutcome names the revision a rollout was paused on.
func PausedOutcome(revision string) string {
	return fmt.Sprintf("paused on revision %s", revision)
}
