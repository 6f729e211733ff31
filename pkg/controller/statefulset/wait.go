package statefulset

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/kroll-dev/kroll/pkg/controller"
	"github.com/kroll-dev/kroll/pkg/staging"
)

// setWait tells what a StatefulSet's rollout waits on after a sync, for the wait log
// (controller.WaitLog), from its pods as the sync read them and the status it
// computed; the zero Wait when it is at rest: every replica exists, is ready and
// available, and as updated as its strategy goes (all of them, or down to the
// partition; OnDelete updates only what is deleted). In order:
//
//	StagedStepHeld  held at a staged step, pause or partition
//	PodNotReady     the lowest ordinal that is missing, terminating, or not Running
//	                and Ready and available (minReadySeconds): OrderedReady creates,
//	                and a rolling update replaces, nothing past it until it is
//	NoWaitKnown     none of the above: the next sync should act
//
// The ordinal is a detail, not the reason: a rollout that moves from ordinal 4 to 3
// is the same wait, one line, not one per pod.
func setWait(set *appsv1.StatefulSet, pods []*corev1.Pod, status appsv1.StatefulSetStatus, staged staging.Decision, now time.Time) controller.Wait {
	if set.DeletionTimestamp != nil {
		return controller.Wait{}
	}
	replicas := int32(replicasOf(set))
	updatedEnough := status.UpdatedReplicas >= replicas-partitionOf(set) ||
		set.Spec.UpdateStrategy.Type == appsv1.OnDeleteStatefulSetStrategyType
	if status.Replicas == replicas && status.ReadyReplicas == replicas && status.AvailableReplicas == replicas && updatedEnough {
		return controller.Wait{}
	}
	details := []any{"replicas", replicas, "pods", status.Replicas, "ready", status.ReadyReplicas, "available", status.AvailableReplicas,
		"updated", status.UpdatedReplicas, "partition", partitionOf(set), "currentRevision", status.CurrentRevision, "updateRevision", status.UpdateRevision}
	if w := controller.StagedWait(staged, details...); w.Reason != "" {
		return w
	}
	byOrdinal := map[int]*corev1.Pod{}
	for _, p := range pods {
		if isMember(set, p) {
			byOrdinal[ordinalOf(p)] = p
		}
	}
	for o := startOrdinal(set); o < startOrdinal(set)+int(replicas); o++ {
		p := byOrdinal[o]
		var state string
		switch {
		case p == nil:
			state = "not created yet"
		case isTerminating(p):
			state = "terminating"
		case !isHealthy(set, p, now):
			ready := "not ready"
			if isRunningAndReady(p) {
				ready = fmt.Sprintf("ready, not yet available (minReadySeconds %d)", set.Spec.MinReadySeconds)
			}
			state = fmt.Sprintf("%s, %s", phaseOf(p), ready)
		default:
			continue
		}
		details = append(details, "ordinal", o, "pod", podName(set, o))
		return controller.Wait{Reason: "PodNotReady", Message: fmt.Sprintf("waiting for pod %s (ordinal %d): %s", podName(set, o), o, state), Details: details}
	}
	return controller.Wait{Reason: "NoWaitKnown", Message: "in progress and no known wait: the next sync should act", Details: details}
}

func phaseOf(p *corev1.Pod) string {
	if p.Status.Phase == "" {
		return "phase unset"
	}
	return string(p.Status.Phase)
}

// observeWait logs what set's rollout waits on (see setWait).
func (c *Controller) observeWait(ctx context.Context, set *appsv1.StatefulSet, pods []*corev1.Pod, status appsv1.StatefulSetStatus, staged staging.Decision, now time.Time) {
	c.waits.Observe(ctx, set, setWait(set, pods, status, staged, now))
}
