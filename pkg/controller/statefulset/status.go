package statefulset

import (
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/kroll-dev/kroll/pkg/rollout"
)

// countPods sets status's pod counts from pods (the set's, in range or not):
//
//	replicas          created (they have a phase), terminating ones included
//	readyReplicas     Running and Ready
//	availableReplicas Running, Ready and available under minReadySeconds
//	currentReplicas   created, not terminating, at the current revision
//	updatedReplicas   created, not terminating, at the update revision, and not
//	                  being resized in place to it (see resizing)
func countPods(set *appsv1.StatefulSet, pods []*corev1.Pod, revs revisions, status *appsv1.StatefulSetStatus, now time.Time) {
	status.Replicas, status.ReadyReplicas, status.AvailableReplicas, status.CurrentReplicas, status.UpdatedReplicas = 0, 0, 0, 0, 0
	for _, p := range pods {
		if isCreated(p) {
			status.Replicas++
		}
		if isRunningAndReady(p) {
			status.ReadyReplicas++
			if rollout.IsPodAvailable(p, set.Spec.MinReadySeconds, now) {
				status.AvailableReplicas++
			}
		}
		if isCreated(p) && !isTerminating(p) {
			switch p.Labels[RevisionLabel] {
			case revs.current.Name:
				status.CurrentReplicas++
				if revs.update.Name == revs.current.Name {
					status.UpdatedReplicas++
				}
			case revs.update.Name:
				if !resizing(set, p, revs) {
					status.UpdatedReplicas++
				}
			}
		}
	}
}

// completeRollingUpdate makes the update revision current once a RollingUpdate has
// every pod updated and ready.
func completeRollingUpdate(set *appsv1.StatefulSet, status *appsv1.StatefulSetStatus) {
	if set.Spec.UpdateStrategy.Type == appsv1.RollingUpdateStatefulSetStrategyType &&
		status.UpdatedReplicas == status.ReadyReplicas && status.ReadyReplicas == status.Replicas && int(status.Replicas) == replicasOf(set) {
		status.CurrentReplicas = status.UpdatedReplicas
		status.CurrentRevision = status.UpdateRevision
	}
}

// statusChanged tells whether status differs from set's in what upstream writes for.
func statusChanged(set *appsv1.StatefulSet, status *appsv1.StatefulSetStatus) bool {
	s := set.Status
	return status.ObservedGeneration > s.ObservedGeneration || status.Replicas != s.Replicas || status.ReadyReplicas != s.ReadyReplicas ||
		status.CurrentReplicas != s.CurrentReplicas || status.UpdatedReplicas != s.UpdatedReplicas || status.AvailableReplicas != s.AvailableReplicas ||
		status.CurrentRevision != s.CurrentRevision || status.UpdateRevision != s.UpdateRevision ||
		!equality.Semantic.DeepEqual(status.Conditions, s.Conditions)
}
