package prober

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kroll-dev/kroll/pkg/container"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

const podIP = "10.244.0.5"

func httpGet(path string, port intstr.IntOrString) *corev1.Probe {
	return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: port}}}
}

func execProbe(argv ...string) *corev1.Probe {
	return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: argv}}}
}

func TestRun(t *testing.T) {
	nginx := corev1.Container{Name: "web", Image: "nginx:1.25", Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 80}}}
	redis := corev1.Container{Name: "db", Image: "redis:7"}
	grpcHost := corev1.Container{Name: "g", Image: "registry.k8s.io/e2e-test-images/agnhost:2.53", Args: []string{"grpc-health-checking"}}
	https := httpGet("/", intstr.FromInt32(80))
	https.HTTPGet.Scheme = corev1.URISchemeHTTPS
	slow := execProbe("sleep", "5")
	slow.TimeoutSeconds = 1
	cases := []struct {
		name    string
		c       corev1.Container
		p       *corev1.Probe
		result  Result
		output  string
		errored bool
	}{
		{name: "nginx serves /", c: nginx, p: httpGet("/", intstr.FromInt32(80)), result: Success},
		{name: "nginx does not serve /healthz", c: nginx, p: httpGet("/healthz", intstr.FromInt32(80)), result: Failure, output: "HTTP probe failed with statuscode: 404"},
		{name: "port by name", c: nginx, p: httpGet("/index.html", intstr.FromString("http")), result: Success},
		{name: "a port name the container does not declare errors", c: nginx, p: httpGet("/", intstr.FromString("metrics")), result: Failure, output: "couldn't find port: metrics in web", errored: true},
		{name: "nothing listens on 8080", c: nginx, p: httpGet("/", intstr.FromInt32(8080)), result: Failure,
			output: `Get "http://10.244.0.5:8080/": dial tcp 10.244.0.5:8080: connect: connection refused`},
		{name: "https against plain http", c: nginx, p: https, result: Failure, output: "server gave HTTP response to HTTPS client"},
		{name: "tcp to redis", c: redis, p: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(6379)}}}, result: Success},
		{name: "tcp to a closed port", c: redis, p: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(80)}}}, result: Failure,
			output: "dial tcp 10.244.0.5:80: connect: connection refused"},
		{name: "exec redis-cli ping", c: redis, p: execProbe("redis-cli", "ping"), result: Success},
		{name: "exec false", c: nginx, p: execProbe("false"), result: Failure, output: ""},
		{name: "exec cat of a missing file fails with its message", c: nginx, p: execProbe("cat", "/tmp/healthy"), result: Failure, output: "cat: can't open '/tmp/healthy': No such file or directory\n"},
		{name: "exec slower than its timeout", c: nginx, p: slow, result: Failure, output: `command timed out: "sleep 5" timed out after 1s`},
		{name: "grpc health of agnhost grpc-health-checking", c: grpcHost, p: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: 5000}}}, result: Success},
		{name: "grpc against nginx's http port", c: nginx, p: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: 80}}}, result: Failure, output: "does not implement the grpc health protocol"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			inst := container.Start(container.Spec{Image: tc.c.Image, Command: tc.c.Command, Args: tc.c.Args}, t0)
			got := Run(tc.p, &tc.c, podIP, inst, t0.Add(time.Second))
			if got.Result != tc.result || got.Errored != tc.errored || !strings.Contains(got.Output, tc.output) || (tc.output == "" && got.Output != "") {
				t.Errorf("Run = %+v, want %v %q errored %v", got, tc.result, tc.output, tc.errored)
			}
		})
	}
}

func TestStateThresholds(t *testing.T) {
	tm := Timing{InitialDelay: 5 * time.Second, Period: 10 * time.Second, SuccessThreshold: 2, FailureThreshold: 3}
	cases := []struct {
		name    string
		kind    Kind
		runs    []Result
		reports []Result // the reported result after each run
		changed []bool
	}{
		{"readiness starts failing and needs 2 successes", Readiness, []Result{Success, Success, Failure, Failure, Failure},
			[]Result{Failure, Success, Success, Success, Failure}, []bool{false, true, false, false, true}},
		{"a flapping readiness probe never reaches a threshold", Readiness, []Result{Success, Failure, Success, Failure},
			[]Result{Failure, Failure, Failure, Failure}, []bool{false, false, false, false}},
		{"liveness starts passing; 3 failures kill", Liveness, []Result{Failure, Failure, Failure},
			[]Result{Success, Success, Failure}, []bool{false, false, true}},
		{"startup reports its first threshold and holds", Startup, []Result{Success, Success},
			[]Result{Unknown, Success}, []bool{false, true}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := NewState(tc.kind, tm, t0)
			if want := t0.Add(5 * time.Second); !s.Due.Equal(want) {
				t.Fatalf("first run due %v, want 5s", s.Due.Sub(t0))
			}
			for i, r := range tc.runs {
				var changed bool
				s, changed = s.Observe(tc.kind, tm, r, s.Due)
				if s.Result != tc.reports[i] || changed != tc.changed[i] {
					t.Fatalf("run %d (%v): reported %v changed %v, want %v %v", i, r, s.Result, changed, tc.reports[i], tc.changed[i])
				}
			}
		})
	}
	s := NewState(Liveness, tm, t0)
	for i := 0; i < 3; i++ {
		s, _ = s.Observe(Liveness, tm, Failure, s.Due)
	}
	if !s.Due.IsZero() {
		t.Errorf("a failed liveness probe is still scheduled at %v", s.Due.Sub(t0))
	}
}

// step is one check of a timeline: at a time, what the probes report.
type step struct {
	at      time.Duration
	ready   bool
	started bool
	kill    bool
	events  []string // reasons of the events produced since the previous step
}

func runTimeline(t *testing.T, c corev1.Container, steps []step) {
	t.Helper()
	inst := container.Start(container.Spec{Image: c.Image, Command: c.Command, Args: c.Args}, t0)
	set := NewSet(&c, t0)
	for _, st := range steps {
		var reasons []string
		// Advance the way the kubelet does: at each due run, then at the step's instant.
		for {
			next, ok := set.Next()
			if !ok || next.After(t0.Add(st.at)) {
				break
			}
			evs, _ := set.Advance(next, &c, podIP, inst)
			for _, e := range evs {
				reasons = append(reasons, e.Reason)
			}
		}
		evs, _ := set.Advance(t0.Add(st.at), &c, podIP, inst)
		for _, e := range evs {
			reasons = append(reasons, e.Reason)
		}
		got := set.Status(c.Name)
		if got.Ready != st.ready || got.Started != st.started || (got.Kill != "") != st.kill || strings.Join(reasons, ",") != strings.Join(st.events, ",") {
			t.Fatalf("at %v: %+v events %v; want ready %v started %v kill %v events %v", st.at, got, reasons, st.ready, st.started, st.kill, st.events)
		}
	}
}

func TestSetTimelines(t *testing.T) {
	t.Run("readiness on / with initialDelay 20s: ready at 20s, not before", func(t *testing.T) {
		p := httpGet("/", intstr.FromInt32(80))
		p.InitialDelaySeconds, p.PeriodSeconds = 20, 5
		runTimeline(t, corev1.Container{Name: "web", Image: "nginx", ReadinessProbe: p}, []step{
			{at: 0, started: true}, {at: 19 * time.Second, started: true}, {at: 20 * time.Second, started: true, ready: true},
		})
	})
	t.Run("readiness on /healthz: never ready, one Unhealthy per period", func(t *testing.T) {
		p := httpGet("/healthz", intstr.FromInt32(80))
		p.PeriodSeconds = 10
		runTimeline(t, corev1.Container{Name: "web", Image: "nginx", ReadinessProbe: p}, []step{
			{at: 0, started: true, events: []string{"Unhealthy"}},
			{at: 25 * time.Second, started: true, events: []string{"Unhealthy", "Unhealthy"}},
		})
	})
	t.Run("liveness exec false, period 10s, threshold 3: killed at 20s", func(t *testing.T) {
		p := execProbe("false")
		p.PeriodSeconds, p.FailureThreshold = 10, 3
		runTimeline(t, corev1.Container{Name: "c", Image: "busybox", Command: []string{"sleep", "3600"}, LivenessProbe: p}, []step{
			{at: 19 * time.Second, started: true, ready: true, events: []string{"Unhealthy", "Unhealthy"}},
			{at: 20 * time.Second, started: true, kill: true, events: []string{"Unhealthy", "Killing"}},
			{at: time.Minute, started: true, kill: true},
		})
	})
	t.Run("startup gates readiness until the file appears", func(t *testing.T) {
		startup := execProbe("cat", "/tmp/ready")
		startup.PeriodSeconds, startup.FailureThreshold = 10, 10
		ready := execProbe("true")
		ready.PeriodSeconds = 5
		// Would kill at 0s if it ran before the startup probe passed.
		live := execProbe("test", "-f", "/tmp/ready")
		live.FailureThreshold = 1
		runTimeline(t, corev1.Container{Name: "c", Image: "busybox", Command: []string{"sh", "-c", "sleep 15; touch /tmp/ready; sleep 3600"},
			StartupProbe: startup, ReadinessProbe: ready, LivenessProbe: live}, []step{
			{at: 14 * time.Second, events: []string{"Unhealthy", "Unhealthy"}},
			{at: 20 * time.Second, started: true, ready: true},
		})
	})
	t.Run("startup that never passes kills after its threshold", func(t *testing.T) {
		startup := execProbe("cat", "/tmp/ready")
		startup.PeriodSeconds, startup.FailureThreshold = 5, 2
		runTimeline(t, corev1.Container{Name: "c", Image: "nginx", StartupProbe: startup, LivenessProbe: execProbe("true")}, []step{
			{at: 5 * time.Second, kill: true, events: []string{"Unhealthy", "Unhealthy", "Killing"}},
		})
	})
	t.Run("the documentation's liveness walkthrough: healthy 30s, then killed", func(t *testing.T) {
		p := execProbe("cat", "/tmp/healthy")
		p.InitialDelaySeconds, p.PeriodSeconds = 5, 5
		runTimeline(t, corev1.Container{Name: "liveness", Image: "registry.k8s.io/busybox", Args: []string{"/bin/sh", "-c", "touch /tmp/healthy; sleep 30; rm -f /tmp/healthy; sleep 600"}, LivenessProbe: p}, []step{
			{at: 30 * time.Second, started: true, ready: true, events: []string{"Unhealthy"}},
			{at: 40 * time.Second, started: true, kill: true, events: []string{"Unhealthy", "Unhealthy", "Killing"}},
		})
	})
}

func TestEventWording(t *testing.T) {
	c := corev1.Container{Name: "web", Image: "nginx", ReadinessProbe: httpGet("/healthz", intstr.FromInt32(80)), LivenessProbe: execProbe("false")}
	c.LivenessProbe.FailureThreshold = 1
	set := NewSet(&c, t0)
	evs, changed := set.Advance(t0, &c, podIP, container.Start(container.Spec{Image: "nginx"}, t0))
	want := []Event{
		{Type: "Warning", Reason: "Unhealthy", Message: "Liveness probe failed: "},
		{Type: "Normal", Reason: "Killing", Message: "Container web failed liveness probe, will be restarted"},
	}
	if len(evs) != len(want) || evs[0] != want[0] || evs[1] != want[1] || !changed {
		t.Fatalf("events %+v changed %v, want %+v", evs, changed, want)
	}
	set = NewSet(&corev1.Container{Name: "web", ReadinessProbe: c.ReadinessProbe}, t0)
	evs, _ = set.Advance(t0, &c, podIP, container.Start(container.Spec{Image: "nginx"}, t0))
	if len(evs) != 1 || evs[0].Message != "Readiness probe failed: HTTP probe failed with statuscode: 404" {
		t.Fatalf("readiness events %+v", evs)
	}
}

// An httpGet probe sends its httpHeaders: nginx logs the User-Agent the probe set,
// and a Host header does not change where the probe connects (the pod).
func TestHTTPProbeSendsItsHeaders(t *testing.T) {
	c := corev1.Container{Name: "web", Image: "nginx:1.25"}
	p := httpGet("/", intstr.FromInt32(80))
	p.HTTPGet.HTTPHeaders = []corev1.HTTPHeader{{Name: "User-Agent", Value: "health-checker/2"}, {Name: "Host", Value: "www.example.com"}}
	inst := container.Start(container.Spec{Image: c.Image, NodeIP: "10.0.0.7"}, t0)
	if got := Run(p, &c, podIP, inst, t0.Add(time.Second)); got.Result != Success {
		t.Fatalf("Run = %+v, want success", got)
	}
	log := inst.Log()
	if last := log[len(log)-1].Text; !strings.Contains(last, `"health-checker/2"`) {
		t.Errorf("nginx logged %q; want the probe's User-Agent", last)
	}
}
