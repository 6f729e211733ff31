package kubelet

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

func withContainer(pod *corev1.Pod, edit func(c *corev1.Container), podEdits ...func(p *corev1.Pod)) *corev1.Pod {
	edit(&pod.Spec.Containers[0])
	for _, e := range podEdits {
		e(pod)
	}
	return pod
}

func TestPodStatus_containerModel(t *testing.T) {
	ms := time.Millisecond
	sec := time.Second
	httpProbe := func(path string, delay, period int32) *corev1.Probe {
		return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.FromInt32(80)}},
			InitialDelaySeconds: delay, PeriodSeconds: period}
	}
	never := func(p *corev1.Pod) *corev1.Pod { p.Spec.RestartPolicy = corev1.RestartPolicyNever; return p }
	tests := []struct {
		name  string
		pod   *corev1.Pod
		steps []step
	}{
		{
			name: "nginx with readinessProbe on /healthz (404) runs and is never ready",
			pod:  withContainer(newPod("nginx:1.25"), func(c *corev1.Container) { c.ReadinessProbe = httpProbe("/healthz", 0, 10) }),
			steps: []step{
				{at: 0, phase: corev1.PodPending, reason: "ContainerCreating", wake: 500 * ms},
				{at: 500 * ms, phase: corev1.PodRunning, reason: "Running", wake: 500 * ms},
				{at: 500 * ms, phase: corev1.PodRunning, reason: "Running", wake: 10500 * ms},
				{at: 10500 * ms, phase: corev1.PodRunning, reason: "Running", wake: 20500 * ms},
				// A sync long after: the runs missed in between are made up, on their schedule.
				{at: 5 * time.Minute, phase: corev1.PodRunning, reason: "Running", wake: 5*time.Minute + 500*ms},
			},
		},
		{
			name: "nginx with readinessProbe on / after initialDelaySeconds 5 is ready at 5s after start, not before",
			pod:  withContainer(newPod("nginx:1.25"), func(c *corev1.Container) { c.ReadinessProbe = httpProbe("/", 5, 5) }),
			steps: []step{
				{at: 0, phase: corev1.PodPending, reason: "ContainerCreating", wake: 500 * ms},
				{at: 500 * ms, phase: corev1.PodRunning, reason: "Running", wake: 500 * ms},
				{at: 500 * ms, phase: corev1.PodRunning, reason: "Running", wake: 5500 * ms},
				{at: 5499 * ms, phase: corev1.PodRunning, reason: "Running", wake: 5500 * ms},
				{at: 5500 * ms, phase: corev1.PodRunning, reason: "Running", ready: true, wake: 10500 * ms},
			},
		},
		{
			// busybox's sleep, PID 1, ignores SIGTERM: the kill ends it with the probe's
			// 5 s grace period (the pod's is 30 s). The first restart is at once, the
			// second after 10 s.
			name: "a liveness probe exec [false] every 10s, threshold 3, kills at 20s with the probe's grace period 5s, restarts at once, then crash-loops",
			pod: withContainer(newPod("busybox"), func(c *corev1.Container) {
				c.Command = []string{"sleep", "infinity"}
				c.LivenessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"false"}}}, PeriodSeconds: 10, FailureThreshold: 3,
					TerminationGracePeriodSeconds: ptr.To[int64](5)}
			}, func(p *corev1.Pod) { p.Spec.TerminationGracePeriodSeconds = ptr.To[int64](30) }),
			steps: []step{
				{at: 0, phase: corev1.PodPending, reason: "ContainerCreating", wake: 500 * ms},
				{at: 500 * ms, phase: corev1.PodRunning, reason: "Running", ready: true, wake: 500 * ms},
				{at: 500 * ms, phase: corev1.PodRunning, reason: "Running", ready: true, wake: 10500 * ms},
				{at: 10500 * ms, phase: corev1.PodRunning, reason: "Running", ready: true, wake: 20500 * ms},
				{at: 20500 * ms, phase: corev1.PodRunning, reason: "Running", wake: 25500 * ms},
				{at: 25 * sec, phase: corev1.PodRunning, reason: "Running", wake: 25500 * ms},
				{at: 25500 * ms, phase: corev1.PodRunning, reason: "Running", ready: true, restarts: 1, wake: 25500 * ms},
				{at: 25500 * ms, phase: corev1.PodRunning, reason: "Running", ready: true, restarts: 1, wake: 35500 * ms},
				{at: 45500 * ms, phase: corev1.PodRunning, reason: "Running", restarts: 1, wake: 50500 * ms},
				{at: 50500 * ms, phase: corev1.PodRunning, reason: "CrashLoopBackOff", restarts: 1, wake: 60500 * ms},
				{at: 60500 * ms, phase: corev1.PodRunning, reason: "Running", ready: true, restarts: 2, wake: 60500 * ms},
			},
		},
		{
			name: "sh -c 'sleep 5; exit 3' under restartPolicy Always ends at 5s, restarts at once, then backs off 10s",
			pod:  withContainer(newPod("busybox"), func(c *corev1.Container) { c.Command = []string{"sh", "-c", "sleep 5; exit 3"} }),
			steps: []step{
				{at: 0, phase: corev1.PodPending, reason: "ContainerCreating", wake: 500 * ms},
				{at: 500 * ms, phase: corev1.PodRunning, reason: "Running", ready: true},
				{at: 500 * ms, phase: corev1.PodRunning, reason: "Running", ready: true, wake: 5500 * ms},
				{at: 6 * sec, phase: corev1.PodRunning, reason: "Running", ready: true, restarts: 1},
				{at: 6 * sec, phase: corev1.PodRunning, reason: "Running", ready: true, restarts: 1, wake: 10500 * ms},
				{at: 10500 * ms, phase: corev1.PodRunning, reason: "CrashLoopBackOff", restarts: 1, wake: 20500 * ms},
				{at: 20500 * ms, phase: corev1.PodRunning, reason: "Running", ready: true, restarts: 2},
			},
		},
		{
			name: "a Job's pod: echo done under restartPolicy Never completes",
			pod:  never(withContainer(newPod("busybox"), func(c *corev1.Container) { c.Command = []string{"sh", "-c", "echo done"} })),
			steps: []step{
				{at: 0, phase: corev1.PodPending, reason: "ContainerCreating", wake: 500 * ms},
				{at: 500 * ms, phase: corev1.PodRunning, reason: "Running", ready: true},
				{at: 500 * ms, phase: corev1.PodSucceeded, reason: "Terminated"},
			},
		},
		{
			name: "exit 1 under restartPolicy Never fails the pod",
			pod:  never(withContainer(newPod("busybox"), func(c *corev1.Container) { c.Args = []string{"sh", "-c", "exit 1"} })),
			steps: []step{
				{at: 0, phase: corev1.PodPending, reason: "ContainerCreating", wake: 500 * ms},
				{at: 500 * ms, phase: corev1.PodRunning, reason: "Running", ready: true},
				{at: 500 * ms, phase: corev1.PodFailed, reason: "Terminated"},
			},
		},
		{
			name: "a shell that echoes and sleeps between its lines is ready once started, and stays so while it sleeps",
			pod: withContainer(newPod("busybox"), func(c *corev1.Container) {
				c.Command = []string{"sh", "-c", "echo started serving; sleep 6; echo second line; sleep 6; echo third line; sleep 3600"}
			}),
			steps: []step{
				{at: 0, phase: corev1.PodPending, reason: "ContainerCreating", wake: 500 * ms},
				{at: 500 * ms, phase: corev1.PodRunning, reason: "Running", ready: true},
				{at: 7 * sec, phase: corev1.PodRunning, reason: "Running", ready: true, wake: 12500 * ms},
				// sleep 3600 began at 12.5s; the shell ends with it.
				{at: time.Hour, phase: corev1.PodRunning, reason: "Running", ready: true, wake: time.Hour + 12500*ms},
			},
		},
		{
			name: "nginx without probes behaves as before the model: ready once started, no wake-ups",
			pod:  newPod("nginx:1.25"),
			steps: []step{
				{at: 0, phase: corev1.PodPending, reason: "ContainerCreating", wake: 500 * ms},
				{at: 500 * ms, phase: corev1.PodRunning, reason: "Running", ready: true},
				{at: time.Hour, phase: corev1.PodRunning, reason: "Running", ready: true},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			runSteps(t, newSimulator(t), tc.pod, tc.steps)
		})
	}
}

func TestPodStatus_livenessKillIsReportedAsTheKubeletDoes(t *testing.T) {
	pod := withContainer(newPod("busybox"), func(c *corev1.Container) {
		c.Command = []string{"sleep", "3600"}
		c.LivenessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"false"}}}, PeriodSeconds: 5, FailureThreshold: 1}
	})
	sim := newSimulator(t)
	var r *run
	sim.onRun = func(_ *corev1.Pod, created *run) { r = created }
	clk := newPodClock()
	addrs := addresses{hostIP: "127.1.0.1", podIP: "10.244.0.2"}
	// Killed at 0.5s; sleep ignores SIGTERM and the pod sets no grace period: the
	// kubelet's least, 2s, ends it at 2.5s, and the first restart is at once.
	for _, at := range []time.Duration{0, 500 * time.Millisecond, 500 * time.Millisecond, 2500 * time.Millisecond} {
		pod.Status, _ = sim.podStatus(pod, clk, addrs, t0.Add(at))
	}
	if r == nil || len(r.events) != 2 || r.events[0].Message != "Liveness probe failed: " || r.events[1].Reason != "Killing" ||
		r.events[1].Message != "Container c0 failed liveness probe, will be restarted" {
		t.Fatalf("run %+v", r)
	}
	cs := pod.Status.ContainerStatuses[0]
	term := cs.LastTerminationState.Terminated
	if cs.State.Running == nil || cs.RestartCount != 1 || term == nil || term.ExitCode != 137 || term.Reason != reasonError || !term.FinishedAt.Time.Equal(t0.Add(2500*time.Millisecond)) {
		t.Fatalf("container status after the kill: %+v", cs)
	}
}

func TestPodStatus_sidecarProbes(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	sidecar := func(probe func(c *corev1.Container)) *corev1.Pod {
		p := newPod("nginx:1.25")
		sc := corev1.Container{Name: "proxy", Image: "nginx:1.25", RestartPolicy: &always}
		probe(&sc)
		p.Spec.InitContainers = []corev1.Container{sc}
		return p
	}
	ms := time.Millisecond
	t.Run("a sidecar whose readiness probe fails keeps the pod unready; the app runs", func(t *testing.T) {
		pod := sidecar(func(c *corev1.Container) {
			c.ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(80)}}}
		})
		runSteps(t, newSimulator(t), pod, []step{
			{at: 0, phase: corev1.PodPending, reason: "PodInitializing", wake: 500 * ms},
			{at: 500 * ms, phase: corev1.PodRunning, reason: "Running", wake: 10500 * ms},
			{at: 10500 * ms, phase: corev1.PodRunning, reason: "Running", wake: 20500 * ms},
		})
		if c := podCondition(pod.Status, corev1.ContainersReady); c == nil || c.Message != "containers with unready status: [proxy]" {
			t.Errorf("ContainersReady %+v", c)
		}
	})
	// sidecarSteps syncs pod at each instant and checks, per step, the sidecar's state
	// and restart count and the app container's state ("10.5s Running/1 Running").
	sidecarSteps := func(pod *corev1.Pod, at []time.Duration, want ...string) {
		t.Helper()
		sim := newSimulator(t)
		clk := newPodClock()
		addrs := addresses{hostIP: "127.1.0.1", podIP: "10.244.0.2"}
		var got []string
		for _, a := range at {
			pod.Status, _ = sim.podStatus(pod, clk, addrs, t0.Add(a))
			sc, app := pod.Status.InitContainerStatuses[0], pod.Status.ContainerStatuses[0]
			got = append(got, fmt.Sprintf("%s %s/%d %s", a, containerReason(sc), sc.RestartCount, containerReason(app)))
		}
		if strings.Join(got, "; ") != strings.Join(want, "; ") {
			t.Errorf("steps:\n got %v\nwant %v", got, want)
		}
	}
	t.Run("a sidecar whose liveness probe fails is killed and restarted at once, then after 10s; the app runs on", func(t *testing.T) {
		pod := sidecar(func(c *corev1.Container) {
			c.LivenessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(80)}},
				PeriodSeconds: 10, FailureThreshold: 2}
		})
		sidecarSteps(pod, []time.Duration{0, 500 * ms, 500 * ms, 10500 * ms, 10500 * ms, 20500 * ms, 25 * time.Second, 30500 * ms, 30500 * ms, 40500 * ms, 60500 * ms},
			"0s PodInitializing/0 PodInitializing",
			"500ms Running/0 Running", "500ms Running/0 Running",
			// Killed at the second failure (nginx ends on SIGTERM): restarted at once.
			"10.5s Running/1 Running", "10.5s Running/1 Running",
			// Killed again at the new instance's second run: now the back-off, 10s.
			"20.5s CrashLoopBackOff/1 Running", "25s CrashLoopBackOff/1 Running",
			"30.5s Running/2 Running", "30.5s Running/2 Running",
			// Its probes run from its start, 30.5s: killed at 40.5s, then 20s of back-off.
			"40.5s CrashLoopBackOff/2 Running", "1m0.5s Running/3 Running")
	})
	t.Run("a sidecar whose command ends restarts, though the pod's restartPolicy is Never", func(t *testing.T) {
		pod := sidecar(func(c *corev1.Container) {
			c.Image, c.Command = "busybox", []string{"sh", "-c", "sleep 5; exit 1"}
		})
		pod.Spec.RestartPolicy = corev1.RestartPolicyNever
		sidecarSteps(pod, []time.Duration{0, 500 * ms, 500 * ms, 5500 * ms, 10500 * ms},
			"0s PodInitializing/0 PodInitializing",
			"500ms Running/0 Running", "500ms Running/0 Running",
			"5.5s Running/1 Running", "10.5s CrashLoopBackOff/1 Running")
	})
	t.Run("a sidecar whose startup probe never passes holds the app containers back", func(t *testing.T) {
		pod := sidecar(func(c *corev1.Container) {
			c.StartupProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"cat", "/tmp/started"}}}, FailureThreshold: 100}
		})
		runSteps(t, newSimulator(t), pod, []step{
			{at: 0, phase: corev1.PodPending, reason: "PodInitializing", wake: 500 * ms},
			{at: 500 * ms, phase: corev1.PodPending, reason: "PodInitializing", wake: 10500 * ms},
			{at: time.Minute, phase: corev1.PodPending, reason: "PodInitializing", wake: 60500 * ms},
		})
	})
}
