package rollout

import (
	"math"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func status(replicas, updated, ready, available int32) appsv1.DeploymentStatus {
	return appsv1.DeploymentStatus{Replicas: replicas, UpdatedReplicas: updated, ReadyReplicas: ready, AvailableReplicas: available}
}

func TestComplete(t *testing.T) {
	d := newDeployment(3, "1", "0")
	d.Generation = 2
	done := status(3, 3, 3, 3)
	done.ObservedGeneration = 2
	if !Complete(d, &done) {
		t.Error("3/3 updated and available at the observed generation: not complete")
	}
	stale := done
	stale.ObservedGeneration = 1
	surplus := done
	surplus.Replicas = 4
	for name, s := range map[string]appsv1.DeploymentStatus{"older generation": stale, "an old pod left": surplus} {
		if Complete(d, &s) {
			t.Errorf("%s: complete", name)
		}
	}
}

func TestProgressing(t *testing.T) {
	d := newDeployment(3, "1", "0")
	d.Status = status(4, 1, 3, 3)
	tests := []struct {
		name string
		s    appsv1.DeploymentStatus
		want bool
	}{
		{"more updated", status(4, 2, 3, 3), true},
		{"fewer old", status(3, 1, 3, 3), true},
		{"more ready", status(4, 1, 4, 3), true},
		{"more available", status(4, 1, 3, 4), true},
		{"nothing moved", status(4, 1, 3, 3), false},
		{"fewer available only", status(4, 1, 3, 2), false},
	}
	for _, tt := range tests {
		if got := Progressing(d, &tt.s); got != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestTimedOut(t *testing.T) {
	ten := int32(10)
	never := int32(math.MaxInt32)
	progressing := func(reason string, ago time.Duration) *appsv1.DeploymentStatus {
		return &appsv1.DeploymentStatus{Conditions: []appsv1.DeploymentCondition{{
			Type: appsv1.DeploymentProgressing, Reason: reason, LastUpdateTime: metav1.NewTime(now.Add(-ago)),
		}}}
	}
	d := newDeployment(3, "1", "0")
	d.Spec.ProgressDeadlineSeconds = &ten
	tests := []struct {
		name string
		s    *appsv1.DeploymentStatus
		want bool
	}{
		{"last progress 11s ago, deadline 10s", progressing(ReasonReplicaSetUpdated, 11*time.Second), true},
		{"last progress 9s ago", progressing(ReasonReplicaSetUpdated, 9*time.Second), false},
		{"complete rollouts never time out", progressing(ReasonNewReplicaSetAvailable, time.Hour), false},
		{"already timed out stays so", progressing(ReasonProgressDeadlineExceeded, 0), true},
		{"no Progressing condition yet", &appsv1.DeploymentStatus{}, false},
	}
	for _, tt := range tests {
		if got := TimedOut(d, tt.s, now); got != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
	d.Spec.ProgressDeadlineSeconds = &never
	if TimedOut(d, progressing(ReasonReplicaSetUpdated, time.Hour), now) {
		t.Error("a MaxInt32 deadline timed out")
	}
}
