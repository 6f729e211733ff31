package kubelet

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// eventLines formats events as the fake recorder does, with the container they name.
func eventLines(events []podEvent) []string {
	out := make([]string, 0, len(events))
	for _, e := range events {
		out = append(out, fmt.Sprintf("%s %s %s %s", e.ref.FieldPath, e.kind, e.reason, e.message))
	}
	return out
}

// syncEvents syncs pod at each offset from t0, as the kubelet loop does, and returns the
// events each write posts (on a node holding present).
func syncEvents(t *testing.T, sim *simulator, pod *corev1.Pod, present map[string]bool, at ...time.Duration) [][]string {
	t.Helper()
	clk := newPodClock()
	addrs := addresses{hostIP: "127.1.0.1", podIP: "10.244.0.2"}
	var out [][]string
	for _, d := range at {
		st, _ := sim.podStatus(pod, clk, addrs, t0.Add(d))
		out = append(out, eventLines(transitionEvents(pod, pod.Status, st, present, sim.delayFor(pod))))
		pod.Status = st
	}
	return out
}

func TestTransitionEvents(t *testing.T) {
	ms, sec := time.Millisecond, time.Second
	c0 := "spec.containers{c0}"
	size := func(image string) int64 { return imageSize(normalizeImage(image)) }
	pulled := func(image string) string {
		return fmt.Sprintf("%s Normal Pulled Successfully pulled image %q in 500ms (500ms including waiting). Image size: %d bytes.", c0, image, size(image))
	}
	started := []string{c0 + " Normal Created Container created", c0 + " Normal Started Container started"}
	crashing := func(p *corev1.Pod) *corev1.Pod {
		p.Annotations[AnnotationFault] = "CrashLoopBackOff"
		return p
	}
	notFound := notFound("docker.io/library/nginx:1.161").Message
	tests := []struct {
		name    string
		pod     *corev1.Pod
		present []string
		edit    map[int]func(*corev1.Pod) // before the sync of that index
		at      []time.Duration
		want    [][]string
	}{
		{
			name: "a first start on a node without the image: Pulling, Pulled in the creation time with its size, Created, Started; nothing at rest",
			pod:  newPod("nginx:1.27"),
			at:   []time.Duration{0, 500 * ms, 10 * sec},
			want: [][]string{
				{},
				append([]string{c0 + ` Normal Pulling Pulling image "nginx:1.27"`, pulled("nginx:1.27")}, started...),
				{},
			},
		},
		{
			name:    "the image already on the node (IfNotPresent): Pulled already present, as written in the spec",
			pod:     newPod("nginx:1.27"),
			present: []string{"docker.io/library/nginx:1.27"},
			at:      []time.Duration{0, 500 * ms},
			want:    [][]string{{}, append([]string{c0 + ` Normal Pulled Container image "nginx:1.27" already present on machine and can be accessed by the pod`}, started...)},
		},
		{
			name:    "an untagged image is pulled Always, present or not, and named with :latest",
			pod:     newPod("nginx"),
			present: []string{"docker.io/library/nginx:latest"},
			at:      []time.Duration{0, 500 * ms},
			want:    [][]string{{}, append([]string{c0 + ` Normal Pulling Pulling image "nginx:latest"`, pulled("nginx:latest")}, started...)},
		},
		{
			name: "a tag the registry does not have: each attempt Pulling, Failed with the registry's error, Error: ErrImagePull; each back-off BackOff and Error: ImagePullBackOff",
			pod:  newPod("nginx:1.161"),
			at:   []time.Duration{0, 500 * ms, 1500 * ms, 5 * sec, 10500 * ms, 11500 * ms},
			want: [][]string{
				{},
				{c0 + ` Normal Pulling Pulling image "nginx:1.161"`, c0 + ` Warning Failed Failed to pull image "nginx:1.161": ` + notFound, c0 + " Warning Failed Error: ErrImagePull"},
				{c0 + ` Normal BackOff Back-off pulling image "nginx:1.161"`, c0 + " Warning Failed Error: ImagePullBackOff"},
				{},
				{c0 + ` Normal Pulling Pulling image "nginx:1.161"`, c0 + ` Warning Failed Failed to pull image "nginx:1.161": ` + notFound, c0 + " Warning Failed Error: ErrImagePull"},
				{c0 + ` Normal BackOff Back-off pulling image "nginx:1.161"`, c0 + " Warning Failed Error: ImagePullBackOff"},
			},
		},
		{
			name: "an invalid reference: InspectFailed with the parse error, Error: InvalidImageName, once",
			pod:  newPod("Nginx:1.27"),
			at:   []time.Duration{0, 500 * ms, time.Minute},
			want: [][]string{{}, {
				c0 + ` Warning InspectFailed Failed to apply default image tag "Nginx:1.27": couldn't parse image name "Nginx:1.27": invalid reference format: repository name (library/Nginx) must be lowercase`,
				c0 + " Warning Failed Error: InvalidImageName",
			}, {}},
		},
		{
			name: "a crash-looping container (the fault): BackOff restarting on each crash, and each restart finds the image present",
			pod:  crashing(newPod("nginx:1.27")),
			at:   []time.Duration{0, 500 * ms, 1500 * ms, 5 * sec, 11500 * ms, 12500 * ms},
			want: [][]string{
				{},
				append([]string{c0 + ` Normal Pulling Pulling image "nginx:1.27"`, pulled("nginx:1.27")}, started...),
				{c0 + " Warning BackOff Back-off restarting failed container c0 in pod web_default(uid-1)"},
				{},
				append([]string{c0 + ` Normal Pulled Container image "nginx:1.27" already present on machine and can be accessed by the pod`}, started...),
				{c0 + " Warning BackOff Back-off restarting failed container c0 in pod web_default(uid-1)"},
			},
		},
		{
			name: "an image changed in place: Killing definition changed, then the new image's pull and start",
			pod:  newPod("nginx:1.27"),
			edit: map[int]func(*corev1.Pod){2: func(p *corev1.Pod) { p.Spec.Containers[0].Image = "nginx:1.28" }},
			at:   []time.Duration{0, 500 * ms, 5 * sec},
			want: [][]string{
				{},
				append([]string{c0 + ` Normal Pulling Pulling image "nginx:1.27"`, pulled("nginx:1.27")}, started...),
				append([]string{c0 + " Normal Killing Container c0 definition changed, will be restarted", c0 + ` Normal Pulling Pulling image "nginx:1.28"`,
					fmt.Sprintf("%s Normal Pulled Successfully pulled image %q in 500ms (500ms including waiting). Image size: %d bytes.", c0, "nginx:1.28", size("nginx:1.28"))}, started...),
			},
		},
		{
			name: "init container, then sidecar, then app container, each with its own reference; the image pulled once per node",
			pod: func() *corev1.Pod {
				p := newPod("busybox:1.36")
				always := corev1.ContainerRestartPolicyAlways
				p.Spec.InitContainers = []corev1.Container{{Name: "setup", Image: "busybox:1.36"}, {Name: "proxy", Image: "nginx:1.27", RestartPolicy: &always}}
				return p
			}(),
			at: []time.Duration{0, 500 * ms},
			want: [][]string{{}, {
				`spec.initContainers{setup} Normal Pulling Pulling image "busybox:1.36"`,
				fmt.Sprintf("spec.initContainers{setup} Normal Pulled Successfully pulled image %q in 500ms (500ms including waiting). Image size: %d bytes.", "busybox:1.36", size("busybox:1.36")),
				"spec.initContainers{setup} Normal Created Container created", "spec.initContainers{setup} Normal Started Container started",
				`spec.initContainers{proxy} Normal Pulling Pulling image "nginx:1.27"`,
				fmt.Sprintf("spec.initContainers{proxy} Normal Pulled Successfully pulled image %q in 500ms (500ms including waiting). Image size: %d bytes.", "nginx:1.27", size("nginx:1.27")),
				"spec.initContainers{proxy} Normal Created Container created", "spec.initContainers{proxy} Normal Started Container started",
				c0 + ` Normal Pulled Container image "busybox:1.36" already present on machine and can be accessed by the pod`,
				c0 + " Normal Created Container created", c0 + " Normal Started Container started",
			}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sim := newSimulator(t)
			present := map[string]bool{}
			for _, img := range tt.present {
				present[img] = true
			}
			clk := newPodClock()
			addrs := addresses{hostIP: "127.1.0.1", podIP: "10.244.0.2"}
			pod := tt.pod
			for i, d := range tt.at {
				if e := tt.edit[i]; e != nil {
					e(pod)
				}
				st, _ := sim.podStatus(pod, clk, addrs, t0.Add(d))
				got := eventLines(transitionEvents(pod, pod.Status, st, present, sim.delayFor(pod)))
				pod.Status = st
				if strings.Join(got, "\n") != strings.Join(tt.want[i], "\n") {
					t.Errorf("sync %d at +%s posts\n%s\nwant\n%s", i, d, strings.Join(got, "\n"), strings.Join(tt.want[i], "\n"))
				}
			}
		})
	}
}

func TestContainerEvents_aBackOffSeenWithoutItsAttempt(t *testing.T) {
	// A simulator restarted while a pull backs off reports the back-off it finds, from a
	// status written before: the attempt is posted first, so that the back-off has a cause.
	pod := newPod("nginx:1.161")
	c := &pod.Spec.Containers[0]
	creating := waitingStatus("c0", c.Image, reasonContainerCreating, "", nil)
	backOff := waitingStatus("c0", c.Image, reasonImagePullBackOff, `Back-off pulling image "nginx:1.161": ErrImagePull: the registry's error`, nil)
	got := eventLines(containerEvents(pod, c, &creating, &backOff, nil, 0))
	want := []string{
		` Normal Pulling Pulling image "nginx:1.161"`, ` Warning Failed Failed to pull image "nginx:1.161": the registry's error`,
		" Warning Failed Error: ErrImagePull", ` Normal BackOff Back-off pulling image "nginx:1.161"`, " Warning Failed Error: ImagePullBackOff",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if again := containerEvents(pod, c, &backOff, &backOff, nil, 0); len(again) != 0 {
		t.Errorf("a back-off that goes on posts %q", eventLines(again))
	}
}

func TestStopEvents(t *testing.T) {
	sim := newSimulator(t)
	pod := newPod("nginx:1.27", "nginx:1.161")
	syncEvents(t, sim, pod, map[string]bool{}, 0, 500*time.Millisecond)
	got := eventLines(stopEvents(pod))
	want := []string{"spec.containers{c0} Normal Killing Stopping container c0"} // c1 never ran
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("stopping %q, want %q", got, want)
	}
}

func TestPullPolicy(t *testing.T) {
	for image, want := range map[string]corev1.PullPolicy{
		"nginx": corev1.PullAlways, "nginx:latest": corev1.PullAlways, "nginx:1.27": corev1.PullIfNotPresent,
		"registry:5000/app": corev1.PullAlways, "nginx@sha256:" + strings.Repeat("a", 64): corev1.PullIfNotPresent,
	} {
		if got := pullPolicy(&corev1.Container{Image: image}); got != want {
			t.Errorf("%s: %s, want %s", image, got, want)
		}
	}
	if got := pullPolicy(&corev1.Container{Image: "nginx", ImagePullPolicy: corev1.PullNever}); got != corev1.PullNever {
		t.Errorf("an explicit policy is kept: %s", got)
	}
}

// countingSink counts the events written to it.
type countingSink struct{ n int }

func (s *countingSink) Create(e *corev1.Event) (*corev1.Event, error) { s.n++; return e, nil }
func (s *countingSink) Update(e *corev1.Event) (*corev1.Event, error) { s.n++; return e, nil }
func (s *countingSink) Patch(e *corev1.Event, _ []byte) (*corev1.Event, error) {
	s.n++
	return e, nil
}

func TestLimitedSink_writesABurstThenFiftyASecond(t *testing.T) {
	counted := &countingSink{}
	sink := newLimitedSink(counted)
	start := time.Now()
	for i := 0; i < eventBurst; i++ {
		_, _ = sink.Create(&corev1.Event{})
	}
	if took := time.Since(start); took > 15*time.Millisecond {
		t.Errorf("a burst of %d took %s, want no wait", eventBurst, took)
	}
	start = time.Now()
	_, _ = sink.Patch(&corev1.Event{}, nil)
	_, _ = sink.Update(&corev1.Event{})
	if took := time.Since(start); took < 30*time.Millisecond {
		t.Errorf("2 writes past the burst took %s, want about 40ms at %d a second", took, eventQPS)
	}
	if counted.n != eventBurst+2 {
		t.Errorf("%d writes reached the sink, want %d", counted.n, eventBurst+2)
	}
}
