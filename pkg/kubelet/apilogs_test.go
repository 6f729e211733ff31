package kubelet

import (
	"net/url"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kroll-dev/kroll/pkg/container"
)

func TestSelectLog(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	lines := []container.LogLine{{At: t0, Text: "one"}, {At: t0.Add(time.Second), Text: "two"}, {At: t0.Add(2 * time.Second), Text: "three"}}
	tests := []struct {
		name  string
		query string
		want  string
	}{
		{"no options: every line", "", "one\ntwo\nthree\n"},
		{"tailLines=2: the last two", "tailLines=2", "two\nthree\n"},
		{"tailLines=0: nothing", "tailLines=0", ""},
		{"tailLines beyond the log: all of it", "tailLines=10", "one\ntwo\nthree\n"},
		{"sinceTime: lines at or after it", "sinceTime=2026-01-02T03:04:06Z", "two\nthree\n"},
		{"sinceSeconds=1 at t0+2.5s: the last line only", "sinceSeconds=1", "three\n"},
		{"timestamps: RFC 3339 prefix", "timestamps=true&tailLines=1", "2026-01-02T03:04:07Z three\n"},
		{"limitBytes cuts the text", "limitBytes=5", "one\nt"},
		{"since and tail together", "sinceTime=2026-01-02T03:04:06Z&tailLines=1", "three\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q, _ := url.ParseQuery(tt.query)
			o, err := parseLogOptions(q, t0.Add(2500*time.Millisecond))
			if err != nil {
				t.Fatal(err)
			}
			if got := selectLog(lines, o); got != tt.want {
				t.Errorf("selectLog = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestParseLogOptionsRefuses(t *testing.T) {
	for _, q := range []string{"tailLines=-1", "sinceSeconds=0", "sinceSeconds=5&sinceTime=2026-01-02T03:04:06Z", "follow=maybe", "limitBytes=0", "sinceTime=yesterday"} {
		v, _ := url.ParseQuery(q)
		if _, err := parseLogOptions(v, time.Now()); err == nil {
			t.Errorf("parseLogOptions(%q) accepted it", q)
		}
	}
}

func TestPickInstance(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	dead := &corev1.ContainerStateTerminated{ContainerID: "containerd://old", StartedAt: metav1.NewTime(t0), FinishedAt: metav1.NewTime(t0.Add(time.Minute)), ExitCode: 137}
	running := corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(t0.Add(2 * time.Minute))}}
	backOff := corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}
	cases := []struct {
		name     string
		state    corev1.ContainerState
		last     *corev1.ContainerStateTerminated
		previous bool
		id       string
		ended    bool
		err      string
	}{
		{name: "running: the current instance", state: running, last: dead, id: "containerd://new"},
		{name: "--previous after a restart: the dead instance", state: running, last: dead, previous: true, id: "containerd://old", ended: true},
		{name: "in CrashLoopBackOff: the instance that ended last, as the kubelet serves it", state: backOff, last: dead, id: "containerd://old", ended: true},
		{name: "never restarted: --previous is refused", state: running, previous: true, err: `previous terminated container "main" in pod "p" not found`},
		{name: "waiting for an image: the kubelet's words", state: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff"}},
			err: `container "main" in pod "p" is waiting to start: trying and failing to pull image`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main"}}}}
			cs := corev1.ContainerStatus{Name: "main", State: tc.state, ContainerID: "containerd://new"}
			if tc.last != nil {
				cs.LastTerminationState.Terminated = tc.last
			}
			pod.Status.ContainerStatuses = []corev1.ContainerStatus{cs}
			id, _, ended, err := pickInstance(pod, "main", tc.previous)
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Errorf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || id != tc.id || ended.IsZero() == tc.ended {
				t.Errorf("= %q ended %v (%v), want %q ended %v", id, ended, err, tc.id, tc.ended)
			}
		})
	}
}
