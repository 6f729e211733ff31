package kubelet

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

var t0 = time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)

// newPod is a pod bound to kroll-node-0 with one container per image, named c0, c1, ….
func newPod(images ...string) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: types.UID("uid-1"), Generation: 1, Annotations: map[string]string{}},
		Spec:       corev1.PodSpec{NodeName: "kroll-node-0", RestartPolicy: corev1.RestartPolicyAlways},
		Status:     corev1.PodStatus{Phase: corev1.PodPending},
	}
	for i, img := range images {
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "c" + string(rune('0'+i)), Image: img})
	}
	return p
}

func newSimulator(t *testing.T, rules ...FaultRule) *simulator {
	t.Helper()
	fr, err := NewFaultRules(rules...)
	if err != nil {
		t.Fatal(err)
	}
	return &simulator{startupDelay: 500 * time.Millisecond, crashBackOff: 10 * time.Second, faults: fr, registry: DefaultRegistry()}
}

// step is what the pod looks like after a sync at offset at from t0.
type step struct {
	at time.Duration
	// edit, when set, changes the pod (its spec, a condition) before the sync.
	edit     func(*corev1.Pod)
	phase    corev1.PodPhase
	reason   string // first container: waiting reason, "Running" or "Terminated"
	ready    bool   // Ready condition of the pod
	restarts int32  // first container
	image    string // first container's reported image; "" skips the check
	// wake is the expected next self-change, as an offset from t0; 0 means none.
	wake time.Duration
}

func containerReason(cs corev1.ContainerStatus) string {
	switch {
	case cs.State.Waiting != nil:
		return cs.State.Waiting.Reason
	case cs.State.Running != nil:
		return "Running"
	case cs.State.Terminated != nil:
		return "Terminated"
	}
	return ""
}

func podCondition(st corev1.PodStatus, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range st.Conditions {
		if st.Conditions[i].Type == t {
			return &st.Conditions[i]
		}
	}
	return nil
}

// runSteps syncs pod at each step's time, as the kubelet loop would, and checks it.
func runSteps(t *testing.T, sim *simulator, pod *corev1.Pod, steps []step) {
	t.Helper()
	clk := newPodClock()
	addrs := addresses{hostIP: "127.1.0.1", podIP: "10.244.0.2"}
	for i, s := range steps {
		if s.edit != nil {
			s.edit(pod)
		}
		st, wake := sim.podStatus(pod, clk, addrs, t0.Add(s.at))
		pod.Status = st
		cs := st.ContainerStatuses[0]
		ready := podCondition(st, corev1.PodReady)
		gotReady := ready != nil && ready.Status == corev1.ConditionTrue
		if st.Phase != s.phase || containerReason(cs) != s.reason || gotReady != s.ready || cs.RestartCount != s.restarts {
			t.Errorf("step %d at %s: phase %s, container %s, ready %v, restarts %d; want %s, %s, %v, %d",
				i, s.at, st.Phase, containerReason(cs), gotReady, cs.RestartCount, s.phase, s.reason, s.ready, s.restarts)
		}
		if s.image != "" && cs.Image != s.image {
			t.Errorf("step %d: image %q, want %q", i, cs.Image, s.image)
		}
		var gotWake time.Duration
		if !wake.IsZero() {
			gotWake = wake.Sub(t0)
		}
		if gotWake != s.wake {
			t.Errorf("step %d at %s: next change at +%s, want +%s", i, s.at, gotWake, s.wake)
		}
	}
}

func TestPodStatus_lifecycle(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name  string
		pod   *corev1.Pod
		rules []FaultRule
		steps []step
	}{
		{
			name: "a new pod creates its container for the startup delay, then runs and is ready",
			pod:  newPod("nginx:1.14.2"),
			steps: []step{
				// Until it runs, a container reports the image as the pod spec writes it;
				// once it runs, as the runtime names it.
				{at: 0, phase: corev1.PodPending, reason: "ContainerCreating", wake: 500 * ms, image: "nginx:1.14.2"},
				{at: 200 * ms, phase: corev1.PodPending, reason: "ContainerCreating", wake: 500 * ms},
				{at: 500 * ms, phase: corev1.PodRunning, reason: "Running", ready: true, image: "docker.io/library/nginx:1.14.2"},
				{at: 10 * time.Second, phase: corev1.PodRunning, reason: "Running", ready: true},
			},
		},
		{
			name: "an image tagged nonexistent fails to pull, then the pull is retried after 10s, 20s, 40s …",
			pod:  newPod("busybox:nonexistent"),
			steps: []step{
				{at: 0, phase: corev1.PodPending, reason: "ContainerCreating", wake: 500 * ms},
				{at: 500 * ms, phase: corev1.PodPending, reason: "ErrImagePull", wake: 1500 * ms},
				{at: 1500 * ms, phase: corev1.PodPending, reason: "ImagePullBackOff", wake: 10500 * ms},
				{at: 10500 * ms, phase: corev1.PodPending, reason: "ErrImagePull", wake: 11500 * ms},
				{at: 11500 * ms, phase: corev1.PodPending, reason: "ImagePullBackOff", wake: 30500 * ms},
				{at: time.Minute, phase: corev1.PodPending, reason: "ImagePullBackOff", wake: 70500 * ms},
				{at: 70500 * ms, phase: corev1.PodPending, reason: "ErrImagePull", wake: 71500 * ms},
			},
		},
		{
			name: "a tag the catalogue does not list (the walkthrough's nginx:1.161) fails to pull as nonexistent does",
			pod:  newPod("nginx:1.161"),
			steps: []step{
				{at: 0, phase: corev1.PodPending, reason: "ContainerCreating", wake: 500 * ms, image: "nginx:1.161"},
				{at: 500 * ms, phase: corev1.PodPending, reason: "ErrImagePull", wake: 1500 * ms, image: "nginx:1.161"},
				{at: 1500 * ms, phase: corev1.PodPending, reason: "ImagePullBackOff", wake: 10500 * ms},
			},
		},
		{
			name: "a malformed image name waits InvalidImageName for good",
			pod:  newPod("Nginx:1.16.1"),
			steps: []step{
				{at: 0, phase: corev1.PodPending, reason: "ContainerCreating", wake: 500 * ms},
				{at: 500 * ms, phase: corev1.PodPending, reason: "InvalidImageName"},
				{at: time.Hour, phase: corev1.PodPending, reason: "InvalidImageName"},
			},
		},
		{
			name:  "a rule with fault None pulls a tag the catalogue does not list",
			pod:   newPod("nginx:1.99"),
			rules: []FaultRule{{Image: "nginx:1.99", Fault: "None"}},
			steps: []step{
				{at: 0, phase: corev1.PodPending, reason: "ContainerCreating", wake: 500 * ms},
				{at: 500 * ms, phase: corev1.PodRunning, reason: "Running", ready: true},
			},
		},
		{
			name:  "a crash-loop rule does not make a missing image pull: the pull fails first",
			pod:   newPod("nginx:1.99"),
			rules: []FaultRule{{Image: "nginx:*", Fault: "CrashLoopBackOff"}},
			steps: []step{
				{at: 0, phase: corev1.PodPending, reason: "ContainerCreating", wake: 500 * ms},
				{at: 500 * ms, phase: corev1.PodPending, reason: "ErrImagePull", wake: 1500 * ms},
			},
		},
		{
			name: "an image change restarts the container in place: new image, restart+1, not ready for the startup delay",
			pod:  newPod("nginx:1.14.2"),
			steps: []step{
				{at: 0, phase: corev1.PodPending, reason: "ContainerCreating", wake: 500 * ms},
				{at: 500 * ms, phase: corev1.PodRunning, reason: "Running", ready: true},
				{at: 5 * time.Second, edit: func(p *corev1.Pod) { p.Spec.Containers[0].Image = "nginx:1.16.1" },
					phase: corev1.PodRunning, reason: "Running", ready: false, restarts: 1, image: "docker.io/library/nginx:1.16.1", wake: 5500 * ms},
				{at: 5500 * ms, phase: corev1.PodRunning, reason: "Running", ready: true, restarts: 1, image: "docker.io/library/nginx:1.16.1"},
			},
		},
		{
			name: "an image change to a missing image: restart count unchanged, ErrImagePull then ImagePullBackOff",
			pod:  newPod("nginx:1.14.2"),
			steps: []step{
				{at: 0, phase: corev1.PodPending, reason: "ContainerCreating", wake: 500 * ms},
				{at: 500 * ms, phase: corev1.PodRunning, reason: "Running", ready: true},
				{at: 2 * time.Second, edit: func(p *corev1.Pod) { p.Spec.Containers[0].Image = "nginx:404" },
					phase: corev1.PodRunning, reason: "ErrImagePull", wake: 3 * time.Second, image: "nginx:404"},
				{at: 3 * time.Second, phase: corev1.PodRunning, reason: "ImagePullBackOff", wake: 12 * time.Second},
			},
		},
		{
			// The CrashLoopBackOff fault is that state from the first crash on (a
			// container's own exits restart at once first: backoff_test.go).
			name:  "a crash-looping container (the fault) exits after a second and restarts after 10s, 20s, 40s …",
			pod:   newPod("app:crash"),
			rules: []FaultRule{{Image: "*:crash", Fault: "CrashLoopBackOff"}},
			steps: []step{
				{at: 0, phase: corev1.PodPending, reason: "ContainerCreating", wake: 500 * ms},
				{at: 500 * ms, phase: corev1.PodRunning, reason: "Running", ready: true, wake: 1500 * ms},
				{at: 1500 * ms, phase: corev1.PodRunning, reason: "CrashLoopBackOff", wake: 11500 * ms},
				{at: 11500 * ms, phase: corev1.PodRunning, reason: "Running", ready: true, restarts: 1, wake: 12500 * ms},
				{at: 12500 * ms, phase: corev1.PodRunning, reason: "CrashLoopBackOff", restarts: 1, wake: 32500 * ms},
				{at: 32500 * ms, phase: corev1.PodRunning, reason: "Running", ready: true, restarts: 2, wake: 33500 * ms},
				{at: 33500 * ms, phase: corev1.PodRunning, reason: "CrashLoopBackOff", restarts: 2, wake: 73500 * ms},
			},
		},
		{
			name:  "NeverReady runs but never passes readiness",
			pod:   newPod("app:sulky"),
			rules: []FaultRule{{Image: "app:sulky", Fault: "NeverReady"}},
			steps: []step{
				{at: 0, phase: corev1.PodPending, reason: "ContainerCreating", wake: 500 * ms},
				{at: 500 * ms, phase: corev1.PodRunning, reason: "Running"},
				{at: time.Hour, phase: corev1.PodRunning, reason: "Running"},
			},
		},
		{
			name:  "ReadyAfter(3s) becomes ready three seconds after it started",
			pod:   newPod("app:slow"),
			rules: []FaultRule{{Image: "app:*", Fault: "ReadyAfter(3s)"}},
			steps: []step{
				{at: 0, phase: corev1.PodPending, reason: "ContainerCreating", wake: 500 * ms},
				{at: 500 * ms, phase: corev1.PodRunning, reason: "Running", wake: 3500 * ms},
				{at: 3500 * ms, phase: corev1.PodRunning, reason: "Running", ready: true},
			},
		},
		{
			name: "the pod's fault annotation wins over the image rules",
			pod: func() *corev1.Pod {
				p := newPod("busybox:nonexistent")
				p.Annotations[AnnotationFault] = "None"
				return p
			}(),
			steps: []step{
				{at: 0, phase: corev1.PodPending, reason: "ContainerCreating", wake: 500 * ms},
				{at: 500 * ms, phase: corev1.PodRunning, reason: "Running", ready: true},
			},
		},
		{
			name: "the startup-delay annotation overrides the node's delay",
			pod: func() *corev1.Pod {
				p := newPod("nginx")
				p.Annotations[AnnotationStartupDelay] = "2s"
				return p
			}(),
			steps: []step{
				{at: 0, phase: corev1.PodPending, reason: "ContainerCreating", wake: 2 * time.Second},
				{at: 2 * time.Second, phase: corev1.PodRunning, reason: "Running", ready: true},
			},
		},
		{
			name: "a pod someone else marked Succeeded is left alone",
			pod: func() *corev1.Pod {
				p := newPod("nginx")
				p.Status = corev1.PodStatus{Phase: corev1.PodSucceeded, ContainerStatuses: []corev1.ContainerStatus{{Name: "c0",
					State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0}}}}}
				return p
			}(),
			steps: []step{{at: time.Minute, phase: corev1.PodSucceeded, reason: "Terminated"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			runSteps(t, newSimulator(t, tt.rules...), tt.pod, tt.steps)
		})
	}
}

func TestPodStatus_readinessGates(t *testing.T) {
	sim := newSimulator(t)
	pod := newPod("nginx")
	pod.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: "kroll.dev/in-place-update-ready"}}
	clk := newPodClock()
	addrs := addresses{hostIP: "127.1.0.1", podIP: "10.244.0.2"}

	pod.Status, _ = sim.podStatus(pod, clk, addrs, t0)
	pod.Status, _ = sim.podStatus(pod, clk, addrs, t0.Add(time.Second))
	ready, containers := podCondition(pod.Status, corev1.PodReady), podCondition(pod.Status, corev1.ContainersReady)
	if containers.Status != corev1.ConditionTrue || ready.Status != corev1.ConditionFalse || ready.Reason != "ReadinessGatesNotReady" ||
		ready.Message != `corresponding condition of pod readiness gate "kroll.dev/in-place-update-ready" does not exist.` {
		t.Fatalf("gate condition missing: ContainersReady %s, Ready %s %q %q", containers.Status, ready.Status, ready.Reason, ready.Message)
	}

	pod.Status.Conditions = append(pod.Status.Conditions, corev1.PodCondition{Type: "kroll.dev/in-place-update-ready", Status: corev1.ConditionFalse})
	pod.Status, _ = sim.podStatus(pod, clk, addrs, t0.Add(2*time.Second))
	if ready = podCondition(pod.Status, corev1.PodReady); ready.Status != corev1.ConditionFalse ||
		ready.Message != `the status of pod readiness gate "kroll.dev/in-place-update-ready" is not "True", but False` {
		t.Fatalf("gate False: Ready %s %q", ready.Status, ready.Message)
	}

	podCondition(pod.Status, "kroll.dev/in-place-update-ready").Status = corev1.ConditionTrue
	pod.Status, _ = sim.podStatus(pod, clk, addrs, t0.Add(3*time.Second))
	if ready = podCondition(pod.Status, corev1.PodReady); ready.Status != corev1.ConditionTrue {
		t.Fatalf("gate True: Ready %s %q", ready.Status, ready.Message)
	}
	if gate := podCondition(pod.Status, "kroll.dev/in-place-update-ready"); gate == nil || gate.Status != corev1.ConditionTrue {
		t.Errorf("the gate's own condition was changed: %+v", gate)
	}
}

func TestPodStatus_initContainersRunFirst(t *testing.T) {
	sim := newSimulator(t)
	pod := newPod("nginx")
	pod.Spec.InitContainers = []corev1.Container{{Name: "setup", Image: "busybox"}}
	clk := newPodClock()
	addrs := addresses{hostIP: "127.1.0.1", podIP: "10.244.0.2"}

	pod.Status, _ = sim.podStatus(pod, clk, addrs, t0)
	if init := podCondition(pod.Status, corev1.PodInitialized); init.Status != corev1.ConditionFalse ||
		pod.Status.ContainerStatuses[0].State.Waiting.Reason != "PodInitializing" {
		t.Fatalf("before the delay: Initialized %s, container %s", init.Status, containerReason(pod.Status.ContainerStatuses[0]))
	}
	pod.Status, _ = sim.podStatus(pod, clk, addrs, t0.Add(time.Second))
	if term := pod.Status.InitContainerStatuses[0].State.Terminated; term == nil || term.Reason != "Completed" {
		t.Errorf("init container: %+v, want terminated Completed", pod.Status.InitContainerStatuses[0].State)
	}
	if podCondition(pod.Status, corev1.PodInitialized).Status != corev1.ConditionTrue || pod.Status.Phase != corev1.PodRunning {
		t.Errorf("after the delay: phase %s, Initialized %s", pod.Status.Phase, podCondition(pod.Status, corev1.PodInitialized).Status)
	}
}

func TestPodStatus_unchangedPodIsNotRewritten(t *testing.T) {
	sim := newSimulator(t)
	pod := newPod("nginx")
	clk := newPodClock()
	addrs := addresses{hostIP: "127.1.0.1", podIP: "10.244.0.2"}
	pod.Status, _ = sim.podStatus(pod, clk, addrs, t0)
	pod.Status, _ = sim.podStatus(pod, clk, addrs, t0.Add(time.Second))
	before := pod.Status.DeepCopy()
	again, wake := sim.podStatus(pod, clk, addrs, t0.Add(time.Hour))
	if !wake.IsZero() {
		t.Errorf("a settled pod asks to be woken at %s", wake)
	}
	if !equalStatus(*before, again) {
		t.Errorf("a settled pod's status changed an hour later:\nbefore %+v\nafter  %+v", before, again)
	}
}

// restartingInPlace is a pod that ran nginx:1.14.2 from t0 and, at t0+2s, is restarting
// in place on nginx:1.16.1 (not ready for the startup delay), with its simulator and clock.
func restartingInPlace(t *testing.T) (*simulator, *corev1.Pod, *podClock, addresses) {
	t.Helper()
	sim := newSimulator(t)
	pod := newPod("nginx:1.14.2")
	clk := newPodClock()
	addrs := addresses{hostIP: "127.1.0.1", podIP: "10.244.0.2"}
	pod.Status, _ = sim.podStatus(pod, clk, addrs, t0)
	pod.Status, _ = sim.podStatus(pod, clk, addrs, t0.Add(time.Second))
	pod.Spec.Containers[0].Image = "nginx:1.16.1"
	pod.Status, _ = sim.podStatus(pod, clk, addrs, t0.Add(2*time.Second))
	return sim, pod, clk, addrs
}

func TestPodStatus_resumesFromStatusAlone(t *testing.T) {
	// A simulator restarted mid-rollout has no clock for a pod; it must not restart
	// containers or lose track of a pending readiness.
	sim, pod, _, addrs := restartingInPlace(t)

	fresh := newPodClock()
	st, wake := sim.podStatus(pod, fresh, addrs, t0.Add(2*time.Second+100*time.Millisecond))
	if st.ContainerStatuses[0].RestartCount != 1 || st.ContainerStatuses[0].Ready {
		t.Errorf("after a simulator restart: restarts %d ready %v, want 1 and not yet ready", st.ContainerStatuses[0].RestartCount, st.ContainerStatuses[0].Ready)
	}
	if wake.IsZero() {
		t.Error("after a simulator restart the pending readiness has no wake-up")
	}
	st, _ = sim.podStatus(pod, fresh, addrs, t0.Add(4*time.Second))
	if !st.ContainerStatuses[0].Ready {
		t.Error("the restarted container never became ready after a simulator restart")
	}
}

func equalStatus(a, b corev1.PodStatus) bool {
	return equality.Semantic.DeepEqual(a, b)
}

func TestPodStatus_pullFailureMessages(t *testing.T) {
	sim := newSimulator(t)
	pod := newPod("nginx:1.161")
	clk := newPodClock()
	addrs := addresses{hostIP: "127.1.0.1", podIP: "10.244.0.2"}
	const pullErr = `rpc error: code = NotFound desc = failed to pull and unpack image "docker.io/library/nginx:1.161": failed to resolve reference "docker.io/library/nginx:1.161": docker.io/library/nginx:1.161: not found`
	steps := []struct {
		at              time.Duration
		reason, message string
	}{
		{0, "ContainerCreating", ""},
		{500 * time.Millisecond, "ErrImagePull", pullErr},
		{2 * time.Second, "ImagePullBackOff", `Back-off pulling image "nginx:1.161": ErrImagePull: ` + pullErr},
	}
	for _, s := range steps {
		pod.Status, _ = sim.podStatus(pod, clk, addrs, t0.Add(s.at))
		w := pod.Status.ContainerStatuses[0].State.Waiting
		if w == nil || w.Reason != s.reason || w.Message != s.message {
			t.Errorf("at %s: waiting %+v\nwant %s: %s", s.at, w, s.reason, s.message)
		}
	}

	// An image written without a tag is named with :latest, as the kubelet does.
	reg, err := NewRegistry(UnknownImagesFail)
	if err != nil {
		t.Fatal(err)
	}
	sim.registry = reg
	pod, clk = newPod("example.com/app"), newPodClock()
	for _, at := range []time.Duration{0, 500 * time.Millisecond, 2 * time.Second} {
		pod.Status, _ = sim.podStatus(pod, clk, addrs, t0.Add(at))
	}
	if w := pod.Status.ContainerStatuses[0].State.Waiting; w == nil || !strings.HasPrefix(w.Message, `Back-off pulling image "example.com/app:latest": ErrImagePull: rpc error: code = NotFound`) {
		t.Errorf("unknown repository with --unknown-images=fail: %+v", w)
	}

	pod, clk = newPod("Nginx:1.16.1"), newPodClock()
	for _, at := range []time.Duration{0, 500 * time.Millisecond} {
		pod.Status, _ = sim.podStatus(pod, clk, addrs, t0.Add(at))
	}
	if w := pod.Status.ContainerStatuses[0].State.Waiting; w == nil || w.Reason != "InvalidImageName" ||
		w.Message != `Failed to apply default image tag "Nginx:1.16.1": couldn't parse image name "Nginx:1.16.1": invalid reference format: repository name (library/Nginx) must be lowercase` {
		t.Errorf("malformed image: %+v", w)
	}
}

func TestPodStatus_aPodThatEndsOnItsOwnReportsEndedConditions(t *testing.T) {
	pod := newPod("app:crash")
	pod.Spec.RestartPolicy = corev1.RestartPolicyNever
	pod = simulated(t, pod, []FaultRule{{Image: "*:crash", Fault: "CrashLoopBackOff"}}, 0, 500*time.Millisecond, 1500*time.Millisecond)
	if pod.Status.Phase != corev1.PodFailed || conditionState(pod.Status, corev1.PodReady) != "False/PodFailed" ||
		conditionState(pod.Status, corev1.PodReadyToStartContainers) != "False/" {
		t.Errorf("a restartPolicy Never pod whose container failed: phase %s, Ready %s, ReadyToStartContainers %s",
			pod.Status.Phase, conditionState(pod.Status, corev1.PodReady), conditionState(pod.Status, corev1.PodReadyToStartContainers))
	}
}
