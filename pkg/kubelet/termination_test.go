package kubelet

import (
	"encoding/json"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
)

// simulated runs pod through the simulator until at, as the kubelet loop would.
func simulated(t *testing.T, pod *corev1.Pod, rules []FaultRule, at ...time.Duration) *corev1.Pod {
	t.Helper()
	sim, clk := newSimulator(t, rules...), newPodClock()
	for _, d := range at {
		pod.Status, _ = sim.podStatus(pod, clk, addresses{hostIP: "127.1.0.1", podIP: "10.244.0.2"}, t0.Add(d))
	}
	return pod
}

func conditionState(st corev1.PodStatus, t corev1.PodConditionType) string {
	c := podCondition(st, t)
	if c == nil {
		return "missing"
	}
	return string(c.Status) + "/" + c.Reason
}

func TestStoppedStatus(t *testing.T) {
	end := t0.Add(time.Minute)
	tests := []struct {
		name string
		pod  *corev1.Pod
		// want: phase, the first container's state ("Terminated <reason> <exit code>"
		// or "Waiting <reason>"), Ready and Initialized as Status/Reason.
		phase       corev1.PodPhase
		container   string
		ready, init string
		hostIP      string
	}{
		{
			name:  "a running pod deleted: its container exits 0 and the pod Succeeded, not ready",
			pod:   simulated(t, newPod("nginx:1.14.2"), nil, 0, time.Second),
			phase: corev1.PodSucceeded, container: "Terminated Completed 0", ready: "False/PodCompleted", init: "True/PodCompleted", hostIP: "127.1.0.1",
		},
		{
			name:  "a pod deleted while its container is being created: ContainerStatusUnknown, Failed",
			pod:   simulated(t, newPod("nginx:1.14.2"), nil, 0),
			phase: corev1.PodFailed, container: "Terminated ContainerStatusUnknown 137", ready: "False/PodFailed", init: "True/", hostIP: "127.1.0.1",
		},
		{
			name:  "a pod deleted while its image does not pull: ContainerStatusUnknown, Failed",
			pod:   simulated(t, newPod("nginx:1.161"), nil, 0, time.Second),
			phase: corev1.PodFailed, container: "Terminated ContainerStatusUnknown 137", ready: "False/PodFailed", init: "True/", hostIP: "127.1.0.1",
		},
		{
			name:  "a crash-looping pod deleted: its last exit is its state, Failed",
			pod:   simulated(t, newPod("app:crash"), []FaultRule{{Image: "*:crash", Fault: "CrashLoopBackOff"}}, 0, 500*time.Millisecond, 1500*time.Millisecond, 2500*time.Millisecond),
			phase: corev1.PodFailed, container: "Terminated Error 1", ready: "False/PodFailed", init: "True/", hostIP: "127.1.0.1",
		},
		{
			name: "a rejected pod deleted keeps its phase and reason; its never-started container is ContainerStatusUnknown; it gets its host IP",
			pod: func() *corev1.Pod {
				p := newPod("nginx:1.14.2")
				p.Status = rejectedStatus(p, admission{rejected: true, reason: "NodePorts", message: "Predicate NodePorts failed: x"}, t0)
				return p
			}(),
			phase: corev1.PodFailed, container: "Terminated ContainerStatusUnknown 137", ready: "False/PodFailed", init: "True/", hostIP: "127.1.0.1",
		},
		{
			name: "a pod whose init container has not completed: its app container stays waiting",
			pod: func() *corev1.Pod {
				p := newPod("nginx:1.14.2")
				p.Spec.InitContainers = []corev1.Container{{Name: "setup", Image: "busybox"}}
				return simulated(t, p, nil, 0)
			}(),
			phase: corev1.PodFailed, container: "Waiting PodInitializing", ready: "False/PodFailed", init: "False/ContainersNotInitialized", hostIP: "127.1.0.1",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := stoppedStatus(tt.pod, "127.1.0.1", end)
			cs := st.ContainerStatuses[0]
			got := "Waiting " + containerReason(cs)
			if term := cs.State.Terminated; term != nil {
				got = "Terminated " + term.Reason + " " + strconv.Itoa(int(term.ExitCode))
			}
			if st.Phase != tt.phase || got != tt.container || conditionState(st, corev1.PodReady) != tt.ready ||
				conditionState(st, corev1.ContainersReady) != tt.ready || conditionState(st, corev1.PodInitialized) != tt.init ||
				conditionState(st, corev1.PodReadyToStartContainers) != "False/" || st.HostIP != tt.hostIP {
				t.Errorf("phase %s, container %q, Ready %s, ContainersReady %s, Initialized %s, ReadyToStartContainers %s, hostIP %q\nwant %s, %q, %s, %s, %s, False/, %q",
					st.Phase, got, conditionState(st, corev1.PodReady), conditionState(st, corev1.ContainersReady), conditionState(st, corev1.PodInitialized),
					conditionState(st, corev1.PodReadyToStartContainers), st.HostIP, tt.phase, tt.container, tt.ready, tt.ready, tt.init, tt.hostIP)
			}
			if cs.Ready || (cs.Started != nil && *cs.Started) {
				t.Errorf("a stopped container reports ready %v started %v", cs.Ready, cs.Started)
			}
			if tt.pod.Status.Phase == corev1.PodFailed && (st.Reason != tt.pod.Status.Reason || st.Message != tt.pod.Status.Message) {
				t.Errorf("a Failed pod's reason and message changed: %q %q", st.Reason, st.Message)
			}
			// Idempotent: the kubelet compares its next computation with what it wrote.
			again := stoppedStatus(&corev1.Pod{ObjectMeta: tt.pod.ObjectMeta, Spec: tt.pod.Spec, Status: st}, "127.1.0.1", end.Add(time.Hour))
			if !sameStatus(st, again) {
				t.Errorf("stoppedStatus is not idempotent:\nfirst  %+v\nsecond %+v", st, again)
			}
		})
	}
}

func TestStoppedStatus_runningContainerKeepsItsStartAndID(t *testing.T) {
	pod := simulated(t, newPod("nginx:1.14.2"), nil, 0, time.Second)
	running := pod.Status.ContainerStatuses[0]
	end := t0.Add(time.Minute)
	term := stoppedStatus(pod, "127.1.0.1", end).ContainerStatuses[0].State.Terminated
	if term == nil || !term.StartedAt.Equal(&running.State.Running.StartedAt) || !term.FinishedAt.Time.Equal(end) || term.ContainerID != running.ContainerID {
		t.Errorf("terminated %+v; want started %s, finished %s, container %s", term, running.State.Running.StartedAt, end, running.ContainerID)
	}
}

func TestRunsContainers(t *testing.T) {
	if runsContainers(simulated(t, newPod("nginx:1.14.2"), nil, 0).Status) {
		t.Error("a pod still creating its container runs containers")
	}
	if !runsContainers(simulated(t, newPod("nginx:1.14.2"), nil, 0, time.Second).Status) {
		t.Error("a running pod runs no containers")
	}
}

func TestRemovedWithItsDeletion(t *testing.T) {
	deleted := func(grace int64, finalizers ...string) *corev1.Pod {
		pod := newPod("nginx:1.14.2")
		pod.DeletionTimestamp = &metav1.Time{Time: time.Now()}
		pod.DeletionGracePeriodSeconds = &grace
		pod.Finalizers = finalizers
		return pod
	}
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		want bool
	}{
		{"zero grace, no finalizer", deleted(0), true},
		{"zero grace, held by a finalizer", deleted(0, "example.com/hold"), false},
		{"a grace period", deleted(30), false},
		{"not being deleted", newPod("nginx:1.14.2"), false},
	} {
		if got := removedWithItsDeletion(tc.pod); got != tc.want {
			t.Errorf("%s: removedWithItsDeletion = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// The kubelet writes conditions with a strategic-merge patch that merges by type. Ready
// turning True after an in-place restart has no reason or message; left out of the patch
// (omitempty), the old ones would stay: Ready=True with reason ContainersNotReady.
func TestStatusPatchBody_clearsReasonAndMessageOfAConditionTurningTrue(t *testing.T) {
	sim, pod, clk, addrs := restartingInPlace(t)
	if c := podCondition(pod.Status, corev1.PodReady); c.Status != corev1.ConditionFalse || c.Reason != "ContainersNotReady" {
		t.Fatalf("during the in-place restart Ready is %s/%s, want False/ContainersNotReady", c.Status, c.Reason)
	}
	next, _ := sim.podStatus(pod, clk, addrs, t0.Add(3*time.Second))
	body, err := statusPatchBody(pod, &next)
	if err != nil {
		t.Fatal(err)
	}
	after := patchedWith(t, pod, &next)
	for _, ct := range []corev1.PodConditionType{corev1.PodReady, corev1.ContainersReady} {
		if c := podCondition(after.Status, ct); c == nil || c.Status != corev1.ConditionTrue || c.Reason != "" || c.Message != "" {
			t.Errorf("%s after the patch: %+v; want True without reason or message", ct, c)
		}
	}
	// A condition someone else owns is neither written nor removed.
	pod.Status.Conditions = append(pod.Status.Conditions, corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Time{Time: t0}})
	stored, err := json.Marshal(pod)
	if err != nil {
		t.Fatal(err)
	}
	merged, err := strategicpatch.StrategicMergePatch(stored, body, &corev1.Pod{})
	if err != nil {
		t.Fatal(err)
	}
	after = corev1.Pod{}
	if err := json.Unmarshal(merged, &after); err != nil {
		t.Fatal(err)
	}
	if c := podCondition(after.Status, corev1.PodScheduled); c == nil || c.Status != corev1.ConditionTrue {
		t.Errorf("PodScheduled after the patch: %+v", c)
	}
}
