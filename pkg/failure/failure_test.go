package failure

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var t0 = time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)

// pod is a one-container pod named name; edit shapes its status.
func pod(name string, edit func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app:2"}}},
		Status: corev1.PodStatus{
			Phase:             corev1.PodRunning,
			Conditions:        []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "app", Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(t0)}}}},
		},
	}
	if edit != nil {
		edit(p)
	}
	return p
}

func waiting(reason string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Status.Conditions[0].Status = corev1.ConditionFalse
		p.Status.ContainerStatuses[0] = corev1.ContainerStatus{Name: "app", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason}}}
	}
}

func notReady(p *corev1.Pod) {
	p.Status.Conditions[0].Status = corev1.ConditionFalse
	p.Status.ContainerStatuses[0].Ready = false
}

func restarted(n int32) func(*corev1.Pod) {
	return func(p *corev1.Pod) { p.Status.ContainerStatuses[0].RestartCount = n }
}

func TestPolicyOf(t *testing.T) {
	for _, tc := range []struct {
		name        string
		annotations map[string]string
		want        string // Policy.String()
		problem     string // a part of Problem(); empty for none
	}{
		{name: "not opted in: upstream's behaviour", want: "none (a failing rollout waits, as upstream's does)"},
		{name: "Rollback with the defaults: 1 failed pod, 3 restarts", annotations: map[string]string{OnFailureAnnotation: "Rollback"},
			want: "Rollback when 1 new pods fail (a container waiting in an error, 3 restarts)"},
		{name: "Pause at 25% with a ready timeout", annotations: map[string]string{OnFailureAnnotation: "Pause", ThresholdAnnotation: "25%", ReadyTimeoutAnnotation: "60s"},
			want: "Pause when 25% new pods fail (a container waiting in an error, 3 restarts, or not Ready 1m0s after starting)"},
		{name: "a progress deadline for a StatefulSet", annotations: map[string]string{OnFailureAnnotation: "Rollback", ProgressDeadlineAnnotation: "120", RestartsAnnotation: "5"},
			want: "Rollback when 1 new pods fail (a container waiting in an error, 5 restarts) or after 120s without progress"},
		{name: "on-failure Sometimes turns the policy off", annotations: map[string]string{OnFailureAnnotation: "Sometimes"},
			problem: `kroll.dev/on-failure="Sometimes" is not valid: want Rollback, Pause or None`},
		{name: "threshold abc turns Rollback off", annotations: map[string]string{OnFailureAnnotation: "Rollback", ThresholdAnnotation: "abc"},
			problem: `kroll.dev/failure-threshold="abc" is not valid: want a whole number of pods of at least 1 (2) or a percentage of the replicas (25%)`},
		{name: "threshold 0 is refused", annotations: map[string]string{OnFailureAnnotation: "Rollback", ThresholdAnnotation: "0"}, problem: `failure-threshold="0"`},
		{name: "threshold 0% and 101% are refused", annotations: map[string]string{OnFailureAnnotation: "Rollback", ThresholdAnnotation: "101%", RestartsAnnotation: "0"},
			problem: `failure-threshold="101%" is not valid: want a whole number of pods of at least 1 (2) or a percentage of the replicas (25%); kroll.dev/failure-restarts="0"`},
		{name: "a ready timeout without a unit is refused", annotations: map[string]string{OnFailureAnnotation: "Pause", ReadyTimeoutAnnotation: "60"}, problem: `ready-timeout="60" is not valid: want a positive duration`},
		{name: "a negative progress deadline is refused", annotations: map[string]string{ProgressDeadlineAnnotation: "-1"}, problem: `progress-deadline-seconds="-1"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := PolicyOf(tc.annotations)
			if tc.problem != "" {
				if p.Action != None || !strings.Contains(p.Problem(), tc.problem) || !strings.HasSuffix(p.Problem(), "(as with kroll.dev/on-failure=None)") {
					t.Fatalf("PolicyOf(%v) = action %s, problem %q; want None and a problem containing %q", tc.annotations, p.Action, p.Problem(), tc.problem)
				}
				return
			}
			if len(p.Problems) > 0 || p.String() != tc.want {
				t.Fatalf("PolicyOf(%v) = %q (problems %v), want %q", tc.annotations, p.String(), p.Problems, tc.want)
			}
		})
	}
}

func TestFailedPodsAllowed(t *testing.T) {
	for _, tc := range []struct {
		name      string
		threshold string
		desired   int32
		want      int32
	}{
		{"25% of 20 replicas is the 5th failed pod, not the 4th", "25%", 20, 5},
		{"25% of 10 rounds up to 3", "25%", 10, 3},
		{"1% of 10 is at least 1", "1%", 10, 1},
		{"a percentage of 0 replicas is still 1", "50%", 0, 1},
		{"a number is taken as it is", "2", 20, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := PolicyOf(map[string]string{OnFailureAnnotation: "Rollback", ThresholdAnnotation: tc.threshold})
			if got := p.FailedPodsAllowed(tc.desired); got != tc.want {
				t.Fatalf("FailedPodsAllowed(%d) with %s = %d, want %d", tc.desired, tc.threshold, got, tc.want)
			}
		})
	}
}

func TestPodFailure(t *testing.T) {
	policy := PolicyOf(map[string]string{OnFailureAnnotation: "Rollback", ReadyTimeoutAnnotation: "60s"})
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		at   time.Duration // after t0
		want string
	}{
		{"a Ready pod has not failed", pod("a", nil), time.Hour, ""},
		{"CrashLoopBackOff fails", pod("a", waiting("CrashLoopBackOff")), 0, "CrashLoopBackOff"},
		{"ImagePullBackOff fails", pod("a", waiting("ImagePullBackOff")), 0, "ImagePullBackOff"},
		{"ErrImagePull fails", pod("a", waiting("ErrImagePull")), 0, "ErrImagePull"},
		{"CreateContainerConfigError fails", pod("a", waiting("CreateContainerConfigError")), 0, "CreateContainerConfigError"},
		{"ContainerCreating is only slow", pod("a", waiting("ContainerCreating")), time.Hour, ""},
		{"2 restarts are under the limit of 3", pod("a", restarted(2)), 0, ""},
		{"3 restarts reach the limit", pod("a", restarted(3)), 0, "app restarted 3 times"},
		{"running, not Ready 59s after starting: still starting", pod("a", notReady), 59 * time.Second, ""},
		{"running, not Ready 60s after starting: failed", pod("a", notReady), 60 * time.Second, "not Ready 1m0s after starting"},
		{"a pod being deleted is on its way out", pod("a", func(p *corev1.Pod) {
			waiting("CrashLoopBackOff")(p)
			p.DeletionTimestamp = &metav1.Time{Time: t0}
		}), 0, ""},
		{"a pod the kubelet rejected failed", pod("a", func(p *corev1.Pod) { p.Status.Phase, p.Status.Reason = corev1.PodFailed, "OutOfcpu" }), 0, "OutOfcpu"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := PodFailure(tc.pod, policy, t0.Add(tc.at)); got != tc.want {
				t.Fatalf("PodFailure = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestJudge(t *testing.T) {
	rollback := PolicyOf(map[string]string{OnFailureAnnotation: "Rollback", ThresholdAnnotation: "25%", ReadyTimeoutAnnotation: "60s"})
	crashing := func(names ...string) []*corev1.Pod {
		var pods []*corev1.Pod
		for _, n := range names {
			pods = append(pods, pod(n, waiting("CrashLoopBackOff")))
		}
		return pods
	}
	for _, tc := range []struct {
		name         string
		policy       Policy
		desired      int32
		pods         []*corev1.Pod
		pastDeadline bool
		want         string // Message(""), or "" for a rollout that has not failed
		recheck      time.Duration
	}{
		{name: "20 replicas at 25%: 4 failed pods are not enough", policy: rollback, desired: 20, pods: crashing("p1", "p2", "p3", "p4")},
		{name: "20 replicas at 25%: the 5th failed pod fails the rollout", policy: rollback, desired: 20, pods: crashing("p5", "p1", "p2", "p3", "p4"),
			want: "5 of 5 new pods failed, threshold 5 (p1: CrashLoopBackOff)"},
		{name: "slow pods are not failed ones; look again when the first reaches its timeout", policy: rollback, desired: 4,
			pods: []*corev1.Pod{pod("a", notReady), pod("b", notReady), pod("c", notReady)}, recheck: 60 * time.Second},
		{name: "not watched: a policy of None never fails", policy: PolicyOf(nil), desired: 1, pods: crashing("a", "b")},
		{name: "an invalid policy never fails", policy: PolicyOf(map[string]string{OnFailureAnnotation: "Rollback", ThresholdAnnotation: "abc"}), desired: 1, pods: crashing("a")},
		{name: "the progress deadline fails a rollout with no failed pod", policy: rollback, desired: 4, pods: []*corev1.Pod{pod("a", nil)}, pastDeadline: true,
			want: "progress deadline exceeded; 0 of 1 new pods failed, threshold 1"},
		{name: "pods being deleted are not counted", policy: PolicyOf(map[string]string{OnFailureAnnotation: "Pause"}), desired: 3,
			pods: []*corev1.Pod{pod("a", func(p *corev1.Pod) { waiting("ImagePullBackOff")(p); p.DeletionTimestamp = &metav1.Time{Time: t0} }), pod("b", nil)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := Judge(tc.policy, tc.desired, tc.pods, tc.pastDeadline, t0)
			got := ""
			if v.Failed {
				got = v.Message("")
			}
			if got != tc.want {
				t.Fatalf("Judge: %q, want %q (verdict %+v)", got, tc.want, v)
			}
			var wantRecheck time.Time
			if tc.recheck > 0 {
				wantRecheck = t0.Add(tc.recheck)
			}
			if !v.Recheck.Equal(wantRecheck) {
				t.Fatalf("Recheck = %v, want %v", v.Recheck, wantRecheck)
			}
		})
	}
	v := Judge(rollback, 4, crashing("web-7d9f-abcde", "web-7d9f-fghij", "web-7d9f-klmno"), false, t0)
	if got, want := v.Message(RolledBackOutcome("5", "4")), "3 of 3 new pods failed, threshold 1 (web-7d9f-abcde: CrashLoopBackOff); rolled back from revision 5 to 4"; got != want {
		t.Fatalf("Message = %q, want %q", got, want)
	}
}
