package kubelet

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func withContainer(pod *corev1.Pod, edit func(c *corev1.Container)) *corev1.Pod {
	edit(&pod.Spec.Containers[0])
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
			name: "a liveness probe exec [false] every 10s, threshold 3, kills at 20s and the container crash-loops",
			pod: withContainer(newPod("busybox"), func(c *corev1.Container) {
				c.Command = []string{"sleep", "infinity"}
				c.LivenessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"false"}}}, PeriodSeconds: 10, FailureThreshold: 3}
			}),
			steps: []step{
				{at: 0, phase: corev1.PodPending, reason: "ContainerCreating", wake: 500 * ms},
				{at: 500 * ms, phase: corev1.PodRunning, reason: "Running", ready: true},
				{at: 500 * ms, phase: corev1.PodRunning, reason: "Running", ready: true, wake: 10500 * ms},
				{at: 10500 * ms, phase: corev1.PodRunning, reason: "Running", ready: true, wake: 20500 * ms},
				{at: 20500 * ms, phase: corev1.PodRunning, reason: "CrashLoopBackOff", wake: 30500 * ms},
				{at: 30500 * ms, phase: corev1.PodRunning, reason: "Running", ready: true, restarts: 1},
				{at: 30500 * ms, phase: corev1.PodRunning, reason: "Running", ready: true, restarts: 1, wake: 40500 * ms},
			},
		},
		{
			name: "sh -c 'sleep 5; exit 3' under restartPolicy Always ends at 5s and backs off",
			pod:  withContainer(newPod("busybox"), func(c *corev1.Container) { c.Command = []string{"sh", "-c", "sleep 5; exit 3"} }),
			steps: []step{
				{at: 0, phase: corev1.PodPending, reason: "ContainerCreating", wake: 500 * ms},
				{at: 500 * ms, phase: corev1.PodRunning, reason: "Running", ready: true},
				{at: 500 * ms, phase: corev1.PodRunning, reason: "Running", ready: true, wake: 5500 * ms},
				{at: 6 * sec, phase: corev1.PodRunning, reason: "CrashLoopBackOff", wake: 15500 * ms},
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
	for _, at := range []time.Duration{0, 500 * time.Millisecond, 500 * time.Millisecond} {
		pod.Status, _ = sim.podStatus(pod, clk, addrs, t0.Add(at))
	}
	if r == nil || len(r.events) != 2 || r.events[0].Message != "Liveness probe failed: " || r.events[1].Reason != "Killing" ||
		r.events[1].Message != "Container c0 failed liveness probe, will be restarted" {
		t.Fatalf("run %+v", r)
	}
	cs := pod.Status.ContainerStatuses[0]
	term := cs.LastTerminationState.Terminated
	if cs.State.Waiting == nil || cs.State.Waiting.Reason != reasonCrashLoopBackOff || term == nil || term.ExitCode != 137 || term.Reason != reasonError {
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
