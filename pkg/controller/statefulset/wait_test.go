package statefulset

import (
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kroll-dev/kroll/pkg/staging"
)

func TestSetWait(t *testing.T) {
	now := time.Now()
	set := newSet(3, appsv1.RetainPersistentVolumeClaimRetentionPolicyType, appsv1.RetainPersistentVolumeClaimRetentionPolicyType)
	st := func(pods, ready, updated int32) appsv1.StatefulSetStatus {
		return appsv1.StatefulSetStatus{Replicas: pods, ReadyReplicas: ready, AvailableReplicas: ready, UpdatedReplicas: updated,
			CurrentRevision: "web-a", UpdateRevision: "web-b"}
	}
	terminating := setPod(set, 1, "web-a", true)
	terminating.DeletionTimestamp = &metav1.Time{Time: now}
	cases := []struct {
		name    string
		pods    []*corev1.Pod
		status  appsv1.StatefulSetStatus
		staged  staging.Decision
		want    string
		message string // a part of the message; "" for any
	}{
		{name: "3 of 3 ready and updated: at rest",
			pods:   []*corev1.Pod{setPod(set, 0, "web-b", true), setPod(set, 1, "web-b", true), setPod(set, 2, "web-b", true)},
			status: st(3, 3, 3), want: ""},
		{name: "rolling update at ordinal 1: web-1 not ready",
			pods:   []*corev1.Pod{setPod(set, 0, "web-a", true), setPod(set, 1, "web-b", false), setPod(set, 2, "web-b", true)},
			status: st(3, 2, 2), want: "PodNotReady", message: "web-1 (ordinal 1): Running, not ready"},
		{name: "ordinal 1 deleted for its update, not recreated yet",
			pods:   []*corev1.Pod{setPod(set, 0, "web-a", true), setPod(set, 2, "web-b", true)},
			status: st(2, 2, 1), want: "PodNotReady", message: "web-1 (ordinal 1): not created yet"},
		{name: "ordinal 1 terminating",
			pods:   []*corev1.Pod{setPod(set, 0, "web-a", true), terminating, setPod(set, 2, "web-b", true)},
			status: st(3, 2, 1), want: "PodNotReady", message: "terminating"},
		{name: "all ready but one still on the old revision, and none to wait for: no known wait",
			pods:   []*corev1.Pod{setPod(set, 0, "web-a", true), setPod(set, 1, "web-b", true), setPod(set, 2, "web-b", true)},
			status: st(3, 3, 2), want: "NoWaitKnown"},
		{name: "held at a staged partition",
			pods:   []*corev1.Pod{setPod(set, 0, "web-a", true), setPod(set, 1, "web-a", true), setPod(set, 2, "web-b", true)},
			status: st(3, 3, 1), staged: staging.Decision{Phase: staging.PartitionReached, Partition: 2}, want: "StagedStepHeld"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := setWait(set, c.pods, c.status, c.staged, now)
			if got.Reason != c.want || !strings.Contains(got.Message, c.message) {
				t.Fatalf("got %q %q, want %q with %q", got.Reason, got.Message, c.want, c.message)
			}
		})
	}
}
