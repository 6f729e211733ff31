package daemonset

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/kroll-dev/kroll/pkg/failure"
	"github.com/kroll-dev/kroll/pkg/staging"
)

func TestDaemonWait(t *testing.T) {
	st := func(desired, scheduled, updated, available int32) appsv1.DaemonSetStatus {
		return appsv1.DaemonSetStatus{DesiredNumberScheduled: desired, CurrentNumberScheduled: scheduled, UpdatedNumberScheduled: updated,
			NumberAvailable: available, NumberUnavailable: desired - available}
	}
	pausedDS := newDaemonSet("2", "0")
	pausedDS.Annotations[failure.PausedAnnotation] = "true"
	cases := []struct {
		name    string
		ds      *appsv1.DaemonSet
		status  appsv1.DaemonSetStatus
		staged  staging.Decision
		want    string
		message string
	}{
		{name: "10 nodes, all updated and available: at rest", ds: newDaemonSet("2", "0"), status: st(10, 10, 10, 10), want: ""},
		{name: "10 nodes, maxUnavailable 2, 6 updated, 8 available: 2 pods awaited before 4 more nodes",
			ds: newDaemonSet("2", "0"), status: st(10, 10, 6, 8), want: "MaxUnavailableSpent", message: "waiting for 2 pods to become available before more of the 4 nodes"},
		{name: "9 available: one more may go, no known wait", ds: newDaemonSet("2", "0"), status: st(10, 10, 6, 9), want: "NoWaitKnown"},
		{name: "all updated, 1 pod coming up", ds: newDaemonSet("2", "0"), status: st(10, 10, 10, 9), want: "PodsUnavailable"},
		{name: "paused by its failure policy", ds: pausedDS, status: st(10, 10, 6, 8), want: "Paused"},
		{name: "held at a step's pause", ds: newDaemonSet("2", "0"), status: st(10, 10, 2, 10),
			staged: staging.Decision{Phase: staging.StepPaused, Partition: 8}, want: "StagedStepHeld"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := daemonWait(c.ds, c.status, c.staged)
			if got.Reason != c.want || !strings.Contains(got.Message, c.message) {
				t.Fatalf("got %q %q, want %q with %q", got.Reason, got.Message, c.want, c.message)
			}
		})
	}
}
