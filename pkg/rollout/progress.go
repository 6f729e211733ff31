package rollout

import (
	"math"
	"time"

	appsv1 "k8s.io/api/apps/v1"
)

// Progressing condition reasons, as upstream writes them.
const (
	ReasonNewReplicaSetCreated     = "NewReplicaSetCreated"
	ReasonFoundNewReplicaSet       = "FoundNewReplicaSet"
	ReasonReplicaSetUpdated        = "ReplicaSetUpdated"
	ReasonNewReplicaSetAvailable   = "NewReplicaSetAvailable"
	ReasonProgressDeadlineExceeded = "ProgressDeadlineExceeded"
	ReasonDeploymentPaused         = "DeploymentPaused"
	ReasonDeploymentResumed        = "DeploymentResumed"
	// Available condition reasons.
	ReasonMinimumReplicasAvailable   = "MinimumReplicasAvailable"
	ReasonMinimumReplicasUnavailable = "MinimumReplicasUnavailable"
)

// Complete tells a Deployment whose every replica is updated and available, and whose
// latest spec the status describes.
func Complete(d *appsv1.Deployment, s *appsv1.DeploymentStatus) bool {
	want := DesiredReplicas(d)
	return s.UpdatedReplicas == want && s.Replicas == want && s.AvailableReplicas == want && s.ObservedGeneration >= d.Generation
}

// Progressing tells whether the new status s moved the rollout forward from d's
// current status: more updated pods, fewer old pods, or more ready or available pods.
func Progressing(d *appsv1.Deployment, s *appsv1.DeploymentStatus) bool {
	old := d.Status
	return s.UpdatedReplicas > old.UpdatedReplicas ||
		s.Replicas-s.UpdatedReplicas < old.Replicas-old.UpdatedReplicas ||
		s.ReadyReplicas > old.ReadyReplicas ||
		s.AvailableReplicas > old.AvailableReplicas
}

// HasProgressDeadline tells a Deployment whose progress is watched (a deadline other
// than the "never" of MaxInt32).
func HasProgressDeadline(d *appsv1.Deployment) bool {
	return d.Spec.ProgressDeadlineSeconds != nil && *d.Spec.ProgressDeadlineSeconds != math.MaxInt32
}

// TimedOut tells whether, with the Progressing condition of s, the rollout has gone
// progressDeadlineSeconds since its last progress at now. A completed rollout
// (NewReplicaSetAvailable) never times out; one already marked as timed out stays so.
func TimedOut(d *appsv1.Deployment, s *appsv1.DeploymentStatus, now time.Time) bool {
	if !HasProgressDeadline(d) {
		return false
	}
	c := Condition(s, appsv1.DeploymentProgressing)
	switch {
	case c == nil || c.Reason == ReasonNewReplicaSetAvailable:
		return false
	case c.Reason == ReasonProgressDeadlineExceeded:
		return true
	}
	return c.LastUpdateTime.Add(time.Duration(*d.Spec.ProgressDeadlineSeconds) * time.Second).Before(now)
}

// Condition returns the condition of type t in s, or nil.
func Condition(s *appsv1.DeploymentStatus, t appsv1.DeploymentConditionType) *appsv1.DeploymentCondition {
	for i := range s.Conditions {
		if s.Conditions[i].Type == t {
			return &s.Conditions[i]
		}
	}
	return nil
}
