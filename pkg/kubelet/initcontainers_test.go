package kubelet

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// initState describes an init container status as `kubectl get pod` reads it: the
// state's reason (Running, or the waiting/terminated reason with its exit code), and
// its restart count.
func initState(cs corev1.ContainerStatus) string {
	switch {
	case cs.State.Terminated != nil:
		return fmt.Sprintf("%s(%d)/%d", cs.State.Terminated.Reason, cs.State.Terminated.ExitCode, cs.RestartCount)
	case cs.State.Running != nil:
		return fmt.Sprintf("Running/%d", cs.RestartCount)
	case cs.State.Waiting != nil:
		return fmt.Sprintf("%s/%d", cs.State.Waiting.Reason, cs.RestartCount)
	}
	return "?"
}

func TestPodStatus_initContainerCommands(t *testing.T) {
	ms, sec := time.Millisecond, time.Second
	type sync struct {
		at    time.Duration
		phase corev1.PodPhase
		inits string // each init container's initState, then the first app container's reason
		wake  time.Duration
	}
	withInits := func(restart corev1.RestartPolicy, inits ...corev1.Container) *corev1.Pod {
		p := newPod("nginx:1.25")
		p.Spec.RestartPolicy = restart
		p.Spec.InitContainers = inits
		return p
	}
	sh := func(name, script string) corev1.Container {
		return corev1.Container{Name: name, Image: "busybox:1.36", Command: []string{"sh", "-c", script}}
	}
	tests := []struct {
		name  string
		pod   *corev1.Pod
		syncs []sync
		log   string // what the first init container's instance wrote
	}{
		{
			name: "an init container that sleeps 5s then exits 0 holds the app container back until then",
			pod:  withInits(corev1.RestartPolicyAlways, sh("setup", "echo setting up; sleep 5")),
			syncs: []sync{
				{at: 0, phase: corev1.PodPending, inits: "%s", wake: 500 * ms},
				{at: 500 * ms, phase: corev1.PodPending, inits: "Running/0 PodInitializing", wake: 5500 * ms},
				{at: 5500 * ms, phase: corev1.PodRunning, inits: "Completed(0)/0 Running"},
			},
			log: "setting up",
		},
		{
			name: "the second init container starts when the first has completed, not before",
			pod:  withInits(corev1.RestartPolicyAlways, sh("first", "sleep 2"), sh("second", "echo second")),
			syncs: []sync{
				{at: 0, phase: corev1.PodPending, inits: "%s", wake: 500 * ms},
				{at: 500 * ms, phase: corev1.PodPending, inits: "Running/0 PodInitializing/0 PodInitializing", wake: 2500 * ms},
				{at: 2500 * ms, phase: corev1.PodRunning, inits: "Completed(0)/0 Completed(0)/0 Running"},
			},
		},
		{
			name: "exit 3 under restartPolicy Always: restarted at once, then after 10s, then 20s in CrashLoopBackOff (Init:CrashLoopBackOff)",
			pod:  withInits(corev1.RestartPolicyAlways, sh("setup", "echo failing; exit 3")),
			syncs: []sync{
				{at: 0, phase: corev1.PodPending, inits: "%s", wake: 500 * ms},
				{at: 500 * ms, phase: corev1.PodPending, inits: "Running/1 PodInitializing", wake: 500 * ms},
				{at: 5 * sec, phase: corev1.PodPending, inits: "CrashLoopBackOff/1 PodInitializing", wake: 10500 * ms},
				{at: 10500 * ms, phase: corev1.PodPending, inits: "CrashLoopBackOff/2 PodInitializing", wake: 30500 * ms},
			},
			log: "failing",
		},
		{
			name: "exit 3 under restartPolicy OnFailure restarts too",
			pod:  withInits(corev1.RestartPolicyOnFailure, sh("setup", "exit 3")),
			syncs: []sync{
				{at: 0, phase: corev1.PodPending, inits: "%s", wake: 500 * ms},
				{at: 500 * ms, phase: corev1.PodPending, inits: "Running/1 PodInitializing", wake: 500 * ms},
				{at: 5 * sec, phase: corev1.PodPending, inits: "CrashLoopBackOff/1 PodInitializing", wake: 10500 * ms},
			},
		},
		{
			name: "exit 3 under restartPolicy Never: terminated Error for good and the pod Failed (Init:Error)",
			pod:  withInits(corev1.RestartPolicyNever, sh("setup", "exit 3"), sh("next", "true")),
			syncs: []sync{
				{at: 0, phase: corev1.PodPending, inits: "%s", wake: 500 * ms},
				{at: 500 * ms, phase: corev1.PodFailed, inits: "Error(3)/0 PodInitializing/0 PodInitializing"},
			},
		},
		{
			name: "nginx as an init container serves for ever: the pod stays initializing",
			pod:  withInits(corev1.RestartPolicyAlways, corev1.Container{Name: "web", Image: "nginx:1.25"}),
			syncs: []sync{
				{at: 0, phase: corev1.PodPending, inits: "%s", wake: 500 * ms},
				{at: 500 * ms, phase: corev1.PodPending, inits: "Running/0 PodInitializing"},
				{at: time.Hour, phase: corev1.PodPending, inits: "Running/0 PodInitializing"},
			},
		},
		{
			name: "an image the model does not know completes as an init container",
			pod:  withInits(corev1.RestartPolicyAlways, corev1.Container{Name: "migrate", Image: "example.com/team/migrate:v1", Command: []string{"/migrate", "up"}}),
			syncs: []sync{
				{at: 0, phase: corev1.PodPending, inits: "%s", wake: 500 * ms},
				{at: 500 * ms, phase: corev1.PodRunning, inits: "Completed(0)/0 Running"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sim := newSimulator(t)
			clk := newPodClock()
			addrs := addresses{hostIP: "127.1.0.1", podIP: "10.244.0.2"}
			pod := tt.pod
			for i, s := range tt.syncs {
				if s.inits == "%s" { // before the sandbox: every container waits PodInitializing
					s.inits = strings.Repeat("PodInitializing/0 ", len(pod.Spec.InitContainers)) + "PodInitializing"
				}
				st, wake := sim.podStatus(pod, clk, addrs, t0.Add(s.at))
				pod.Status = st
				var parts []string
				for _, cs := range st.InitContainerStatuses {
					parts = append(parts, initState(cs))
				}
				parts = append(parts, containerReason(st.ContainerStatuses[0]))
				var gotWake time.Duration
				if !wake.IsZero() {
					gotWake = wake.Sub(t0)
				}
				if got := strings.Join(parts, " "); st.Phase != s.phase || got != s.inits || gotWake != s.wake {
					t.Errorf("sync %d at +%s: %s %q, next at +%s; want %s %q, +%s", i, s.at, st.Phase, got, gotWake, s.phase, s.inits, s.wake)
				}
			}
			if tt.log != "" {
				r := newRun(pod, pod.Spec.InitContainers[0], pod.Status.InitContainerStatuses[0].ContainerID, "", t0.Add(500*ms), t0.Add(500*ms), configLookup{}, Fault{})
				if log := r.inst.Log(); len(log) == 0 || log[0].Text != tt.log {
					t.Errorf("the init container's log %v, want %q first", log, tt.log)
				}
			}
		})
	}
}
