package kubelet

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// writeStatus writes status if it differs from what pod reports, posts the events of
// the change, and remembers the version it was computed from until the informer shows
// the write. A pod that is gone,
// or replaced by a pod of the same name, is not an error.
func (k *Kubelet) writeStatus(ctx context.Context, pod *corev1.Pod, status *corev1.PodStatus) error {
	if sameStatus(*status, pod.Status) {
		return nil
	}
	written, err := k.patchStatus(ctx, pod, status)
	if err != nil {
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			return nil
		}
		return err
	}
	k.mu.Lock()
	if written.ResourceVersion != pod.ResourceVersion {
		k.writtenFrom[pod.UID] = pod.ResourceVersion
	}
	k.mu.Unlock()
	// What the write reports as having happened (a pull, a start, a back-off) is posted
	// once, with the write: a status that does not change posts nothing.
	k.postTransition(pod, pod.Status, *status)
	return nil
}

// sameStatus compares two statuses, the order of their conditions aside (the API server
// keeps conditions in the order they were first written, which is not the kubelet's).
func sameStatus(a, b corev1.PodStatus) bool {
	if len(a.Conditions) != len(b.Conditions) {
		return false
	}
	a, b = *a.DeepCopy(), *b.DeepCopy()
	for _, st := range []*corev1.PodStatus{&a, &b} {
		sort.SliceStable(st.Conditions, func(i, j int) bool { return st.Conditions[i].Type < st.Conditions[j].Type })
	}
	return equality.Semantic.DeepEqual(a, b)
}

// kubeletConditions are the pod condition types the kubelet owns; others' conditions
// (PodScheduled, readiness gates, DisruptionTarget) are never written here.
var kubeletConditions = map[corev1.PodConditionType]bool{
	corev1.PodResizePending:          true,
	corev1.PodResizeInProgress:       true,
	corev1.PodReadyToStartContainers: true,
	corev1.PodInitialized:            true,
	corev1.ContainersReady:           true,
	corev1.PodReady:                  true,
}

// statusPatch is the part of a pod's status the kubelet writes. Conditions merge by
// type, so conditions set by others between our read and our write survive.
type statusPatch struct {
	Phase                 corev1.PodPhase          `json:"phase"`
	Reason                string                   `json:"reason,omitempty"`
	Message               string                   `json:"message,omitempty"`
	Conditions            []map[string]any         `json:"conditions,omitempty"`
	HostIP                string                   `json:"hostIP,omitempty"`
	HostIPs               []any                    `json:"hostIPs,omitempty"`
	PodIP                 string                   `json:"podIP,omitempty"`
	PodIPs                []any                    `json:"podIPs,omitempty"`
	StartTime             *metav1.Time             `json:"startTime,omitempty"`
	InitContainerStatuses []corev1.ContainerStatus `json:"initContainerStatuses,omitempty"`
	ContainerStatuses     []corev1.ContainerStatus `json:"containerStatuses,omitempty"`
	ObservedGeneration    int64                    `json:"observedGeneration,omitempty"`
}

// patchStatus writes status with a strategic-merge patch guarded by the pod's UID, so a
// write meant for a deleted pod never lands on a new pod of the same name.
func (k *Kubelet) patchStatus(ctx context.Context, pod *corev1.Pod, status *corev1.PodStatus) (*corev1.Pod, error) {
	body, err := statusPatchBody(pod, status)
	if err != nil {
		return nil, fmt.Errorf("encode status of pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return k.podWriter(pod.Spec.NodeName).CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, body, metav1.PatchOptions{}, "status")
}

// statusPatchBody is the strategic-merge patch that writes status's kubelet-owned fields
// onto pod. Conditions merge by type, field by field, and a field the patch leaves out is
// kept: an empty reason or message, which omitempty leaves out, would keep the old one —
// Ready turning True after an in-place restart would keep reason ContainersNotReady and
// its message. So each kubelet condition says reason and message explicitly, null
// (removed) when empty.
func statusPatchBody(pod *corev1.Pod, status *corev1.PodStatus) ([]byte, error) {
	p := statusPatch{
		Phase: status.Phase, Reason: status.Reason, Message: status.Message,
		HostIP: status.HostIP, HostIPs: ipList(status.HostIPs, pod.Status.HostIPs), PodIP: status.PodIP, PodIPs: ipList(status.PodIPs, pod.Status.PodIPs),
		StartTime: status.StartTime, InitContainerStatuses: status.InitContainerStatuses,
		ContainerStatuses: status.ContainerStatuses, ObservedGeneration: status.ObservedGeneration,
	}
	for _, c := range status.Conditions {
		if !kubeletConditions[c.Type] {
			continue
		}
		raw, err := json.Marshal(c)
		if err != nil {
			return nil, err
		}
		var fields map[string]any
		if err := json.Unmarshal(raw, &fields); err != nil {
			return nil, err
		}
		for _, key := range []string{"reason", "message"} {
			if _, set := fields[key]; !set {
				fields[key] = nil
			}
		}
		p.Conditions = append(p.Conditions, fields)
	}
	// The resize conditions are the kubelet's to remove, once a resize is allocated or
	// actuated: a merge patch keeps what it leaves out, so it says so.
	for _, t := range []corev1.PodConditionType{corev1.PodResizePending, corev1.PodResizeInProgress} {
		if hasCondition(pod.Status, t) && !hasCondition(*status, t) {
			p.Conditions = append(p.Conditions, map[string]any{"type": t, "$patch": "delete"})
		}
	}
	return json.Marshal(map[string]any{"metadata": map[string]any{"uid": pod.UID}, "status": p})
}

func hasCondition(st corev1.PodStatus, t corev1.PodConditionType) bool {
	for _, c := range st.Conditions {
		if c.Type == t {
			return true
		}
	}
	return false
}
