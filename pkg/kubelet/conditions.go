package kubelet

import (
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// setConditions sets the conditions the kubelet owns for a pod that is not terminal.
func (s *simulator) setConditions(pod *corev1.Pod, st *corev1.PodStatus, initDone bool, incomplete, unready []string, now time.Time) {
	set := func(t corev1.PodConditionType, ok bool, reason, message string) {
		if ok {
			setCondition(st, pod.Generation, t, corev1.ConditionTrue, "", "", now)
		} else {
			setCondition(st, pod.Generation, t, corev1.ConditionFalse, reason, message, now)
		}
	}
	set(corev1.PodReadyToStartContainers, true, "", "")
	set(corev1.PodInitialized, initDone, "ContainersNotInitialized", fmt.Sprintf("containers with incomplete status: [%s]", strings.Join(incomplete, " ")))
	notReady := fmt.Sprintf("containers with unready status: [%s]", strings.Join(unready, " "))
	set(corev1.ContainersReady, len(unready) == 0, "ContainersNotReady", notReady)
	if len(unready) > 0 {
		set(corev1.PodReady, false, "ContainersNotReady", notReady)
	} else {
		gateOK, gateMsg := readinessGates(pod, st)
		set(corev1.PodReady, gateOK, "ReadinessGatesNotReady", gateMsg)
	}
	sortConditions(st)
}

// setCondition sets condition t of st, keeping its transition time unless its status
// flips. A True condition may carry a reason too (Initialized: PodCompleted).
func setCondition(st *corev1.PodStatus, generation int64, t corev1.PodConditionType, status corev1.ConditionStatus, reason, message string, now time.Time) {
	c := corev1.PodCondition{Type: t, Status: status, Reason: reason, Message: message, ObservedGeneration: generation, LastTransitionTime: metav1.Time{Time: now}}
	for i := range st.Conditions {
		if st.Conditions[i].Type == t {
			if st.Conditions[i].Status == status {
				c.LastTransitionTime = st.Conditions[i].LastTransitionTime
			}
			st.Conditions[i] = c
			return
		}
	}
	st.Conditions = append(st.Conditions, c)
}

// sortConditions orders the kubelet's conditions the way a kubelet lists them.
func sortConditions(st *corev1.PodStatus) {
	sort.SliceStable(st.Conditions, func(i, j int) bool {
		return conditionOrder(st.Conditions[i].Type) < conditionOrder(st.Conditions[j].Type)
	})
}

// readinessGates reports whether every readiness gate's condition is True, and the
// kubelet's message for the first that is not.
func readinessGates(pod *corev1.Pod, st *corev1.PodStatus) (bool, string) {
	for _, g := range pod.Spec.ReadinessGates {
		var found *corev1.PodCondition
		for i := range st.Conditions {
			if st.Conditions[i].Type == g.ConditionType {
				found = &st.Conditions[i]
			}
		}
		if found == nil {
			return false, fmt.Sprintf("corresponding condition of pod readiness gate %q does not exist.", g.ConditionType)
		}
		if found.Status != corev1.ConditionTrue {
			return false, fmt.Sprintf("the status of pod readiness gate %q is not \"True\", but %s", g.ConditionType, found.Status)
		}
	}
	return true, ""
}

// conditionOrder sorts the kubelet's conditions the way a kubelet lists them; others keep their place after.
func conditionOrder(t corev1.PodConditionType) int {
	switch t {
	case corev1.PodReadyToStartContainers:
		return 0
	case corev1.PodInitialized:
		return 1
	case corev1.PodReady:
		return 2
	case corev1.ContainersReady:
		return 3
	case corev1.PodScheduled:
		return 4
	}
	return 5
}
