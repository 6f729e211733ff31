package failure

import (
	"time"

	corev1 "k8s.io/api/core/v1"
)

// A revision completes once: its rollout finished and its pods stayed Ready
// SettleTime since. A watched workload records it (CompleteAnnotation: on a
// Deployment's ReplicaSet, on a set's ControllerRevision) and never judges that
// revision again; until then its pods are judged even when no old pod is left — a
// DaemonSet on one node, or with maxUnavailable 100%, replaces every old pod before
// the new ones can fail.

// SettleTime is how long every new pod must have been Ready, the rollout complete,
// before its revision counts as complete. A container that crashes without a
// readiness probe is Ready for the moments it runs: a 4-pod rollout of a crash-looping
// image with maxSurge 1 shows 4 updated, 4 available for an instant about 4s in (each
// pod up 1s before its first crash), and would be marked complete, never to be judged
// again. Ten seconds covers a crash loop's first back-off (10s on a kubelet) too.
const SettleTime = 10 * time.Second

// SettledAt is when every pod of pods will have been Ready for d: the latest Ready
// transition plus d; ok is false while a pod is not Ready.
func SettledAt(pods []*corev1.Pod, d time.Duration) (at time.Time, ok bool) {
	var last time.Time
	for _, pod := range pods {
		ready := false
		for _, c := range pod.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				ready = true
				if c.LastTransitionTime.After(last) {
					last = c.LastTransitionTime.Time
				}
			}
		}
		if !ready {
			return time.Time{}, false
		}
	}
	return last.Add(d), true
}

// IsComplete tells an object (a ReplicaSet, a ControllerRevision) whose annotations
// say its revision completed once.
func IsComplete(annotations map[string]string) bool {
	return annotations[CompleteAnnotation] == "true"
}
