package e2e

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/kroll-dev/kroll/internal/failpoint"
	"github.com/kroll-dev/kroll/pkg/cluster"
	"github.com/kroll-dev/kroll/pkg/cluster/clustertest"
	"github.com/kroll-dev/kroll/pkg/rollingupdate"
)

// webRCv1 is the controller the rolling-update scenarios start from: 3 pods of app=web
// on nginx:1.14.2 (version=v1 lets a file name a controller with a disjoint selector).
const webRCv1 = `apiVersion: v1
kind: ReplicationController
metadata:
  name: web
  labels:
    app: web
spec:
  replicas: 3
  selector:
    app: web
    version: v1
  template:
    metadata:
      labels:
        app: web
        version: v1
    spec:
      containers:
      - name: web
        image: nginx:1.14.2
`

// fast are the timing flags of every scenario: pods start in 100ms here.
var fast = []string{"--update-period=100ms", "--poll-interval=200ms"}

var synthesized = regexp.MustCompile(`web-[0-9a-f]{32}`)

// ruScene is one rolling-update scenario: the kroll binary and a namespace of its own.
type ruScene struct {
	*scene
	bin string
}

// krollRun is a finished kroll command.
type krollRun struct {
	code           int
	stdout, stderr string
}

// kroll runs `kroll args... --kubeconfig K -n NS` to completion (at most 2 minutes).
func (s *ruScene) kroll(t *testing.T, args ...string) krollRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, s.bin, append(args, "--kubeconfig", s.c.KubeconfigPath, "-n", s.ns)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := krollRun{stdout: stdout.String(), stderr: stderr.String()}
	if exit, ok := err.(*exec.ExitError); ok {
		r.code = exit.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	t.Logf("$ kroll %s\nexit %d\n%s%s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
	return r
}

func (s *ruScene) mustKroll(t *testing.T, args ...string) string {
	t.Helper()
	r := s.kroll(t, args...)
	if r.code != 0 {
		t.Fatalf("kroll %s: exit %d\n%s", strings.Join(args, " "), r.code, r.stderr)
	}
	return r.stdout
}

// background is a kroll command left running.
type background struct {
	cmd    *exec.Cmd
	mu     sync.Mutex
	stdout bytes.Buffer
	stderr bytes.Buffer
	lines  chan string // stderr, line by line
	done   chan struct{}
}

// start runs kroll args... in the background, with failpoints armed.
func (s *ruScene) start(t *testing.T, failpoints string, args ...string) *background {
	t.Helper()
	b := &background{cmd: exec.Command(s.bin, append(args, "--kubeconfig", s.c.KubeconfigPath, "-n", s.ns)...),
		lines: make(chan string, 100), done: make(chan struct{})}
	b.cmd.Env = append(os.Environ(), failpoint.EnvVar+"="+failpoints)
	b.cmd.Stdout = &lockedWriter{mu: &b.mu, w: &b.stdout}
	stderr, err := b.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := b.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			b.mu.Lock()
			b.stderr.WriteString(sc.Text() + "\n")
			b.mu.Unlock()
			select {
			case b.lines <- sc.Text():
			default:
			}
		}
		_ = b.cmd.Wait()
		close(b.done)
	}()
	t.Cleanup(func() { _ = b.cmd.Process.Kill(); <-b.done })
	return b
}

func (b *background) output() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.stdout.String() + b.stderr.String()
}

// waitLine waits until the command prints line on stderr.
func (b *background) waitLine(t *testing.T, line string) {
	t.Helper()
	deadline := time.After(time.Minute)
	for {
		select {
		case l := <-b.lines:
			if l == line {
				return
			}
		case <-b.done:
			t.Fatalf("kroll exited before printing %q:\n%s", line, b.output())
		case <-deadline:
			t.Fatalf("kroll did not print %q within 1m:\n%s", line, b.output())
		}
	}
}

// waitStdout waits until the command's stdout contains s.
func (b *background) waitStdout(t *testing.T, s string) {
	t.Helper()
	eventually(t, time.Minute, fmt.Sprintf("kroll to print %q", s), func(context.Context) (bool, string) {
		b.mu.Lock()
		defer b.mu.Unlock()
		return strings.Contains(b.stdout.String(), s), b.stdout.String()
	})
}

// stop sends sig and waits for the command to exit, returning its exit code.
func (b *background) stop(t *testing.T, sig syscall.Signal) int {
	t.Helper()
	if err := b.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	select {
	case <-b.done:
	case <-time.After(time.Minute):
		t.Fatalf("kroll did not exit within 1m of %v", sig)
	}
	return b.cmd.ProcessState.ExitCode()
}

// newRUScene makes a namespace with webRCv1 running and all its pods available.
func newRUScene(t *testing.T, s *scene, bin string) *ruScene {
	t.Helper()
	s.kubectl(t, "create", "namespace", s.ns)
	eventually(t, time.Minute, "the default service account", func(ctx context.Context) (bool, string) {
		_, err := s.c.Client.CoreV1().ServiceAccounts(s.ns).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, fmt.Sprint(err)
	})
	s.apply(t, webRCv1)
	s.waitRCStatus(t, "web", "replicas=3 fullyLabeled=3 ready=3 available=3 observed=1")
	return &ruScene{scene: s, bin: bin}
}

// watch starts the invariant watcher on the app=web pods: 3 replicas, surge 1, none unavailable.
func (s *ruScene) watch(t *testing.T) *clustertest.PodBoundsWatcher {
	return clustertest.WatchPodBounds(t, s.c.Client, s.ns, labels.SelectorFromSet(labels.Set{"app": "web"}),
		clustertest.PodBounds{Replicas: 3, MaxSurge: 1})
}

// rcs describes the namespace's controllers: name=image/size, sorted.
func (s *ruScene) rcs(t *testing.T) []corev1.ReplicationController {
	t.Helper()
	list, err := s.c.Client.CoreV1().ReplicationControllers(s.ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return list.Items
}

func (s *ruScene) rcSummary(t *testing.T) string {
	t.Helper()
	var parts []string
	for _, rc := range s.rcs(t) {
		parts = append(parts, fmt.Sprintf("%s=%s/%d", synthesized.ReplaceAllString(rc.Name, "web-<hash>"), rc.Spec.Template.Spec.Containers[0].Image, *rc.Spec.Replicas))
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}

// expectDone checks the end state of an update to image: one controller, name, at 3
// ready pods of image that it owns, no recovery annotations and no lock left.
func (s *ruScene) expectDone(t *testing.T, name, image string) {
	t.Helper()
	eventually(t, time.Minute, "3 ready pods of "+image+" owned by "+name, func(context.Context) (bool, string) {
		var state []string
		ok := 0
		for _, p := range s.pods(t, "app=web") {
			ref := metav1.GetControllerOf(p)
			owner := "none"
			if ref != nil {
				owner = ref.Name
			}
			state = append(state, fmt.Sprintf("%s %s ready=%v owner=%s", podState(p), p.Spec.Containers[0].Image, isPodReady(p), owner))
			if p.DeletionTimestamp == nil && isPodReady(p) && p.Spec.Containers[0].Image == image && owner == name {
				ok++
			}
		}
		return ok == 3 && len(state) == 3, strings.Join(state, "; ")
	})
	rcs := s.rcs(t)
	if len(rcs) != 1 || rcs[0].Name != name {
		t.Fatalf("controllers %s, want only %s", s.rcSummary(t), name)
	}
	rc := rcs[0]
	for k := range rc.Annotations {
		recovery := k == rollingupdate.DesiredReplicasAnnotation || k == rollingupdate.OriginalReplicasAnnotation ||
			k == rollingupdate.SourceIDAnnotation || k == rollingupdate.NextControllerAnnotation
		if recovery || strings.HasPrefix(k, "kroll.dev/") {
			t.Errorf("replicationcontroller/%s keeps annotation %s", name, k)
		}
	}
	if rc.Spec.Template.Spec.Containers[0].Image != image || *rc.Spec.Replicas != 3 {
		t.Errorf("replicationcontroller/%s: image %s, %d replicas; want %s, 3", name, rc.Spec.Template.Spec.Containers[0].Image, *rc.Spec.Replicas, image)
	}
	if _, ok := rc.Spec.Selector[rollingupdate.RenamingLabel]; ok {
		t.Errorf("replicationcontroller/%s keeps the rename label in its selector %v", name, rc.Spec.Selector)
	}
	leases, err := s.c.Client.CoordinationV1().Leases(s.ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(leases.Items) != 0 {
		t.Errorf("%d lock leases left, want none (first: %s)", len(leases.Items), leases.Items[0].Name)
	}
}

// snapshot is what a refused or failed command must not change: each controller's
// spec, labels and annotations, each pod's labels and owners, and the locks. It waits
// first until no pod is terminating and each controller has its pods, so that what
// the controllers are still finishing (a pod going away or being created, the status
// that follows) is not taken for a change.
func (s *ruScene) snapshot(t *testing.T) string {
	t.Helper()
	eventually(t, time.Minute, "no pod terminating, every controller at its size", func(context.Context) (bool, string) {
		var unsettled []string
		owned := map[string]int32{}
		for _, p := range s.pods(t, "") {
			if p.DeletionTimestamp != nil {
				unsettled = append(unsettled, "terminating "+p.Name)
			}
			if ref := metav1.GetControllerOf(p); ref != nil {
				owned[ref.Name]++
			}
		}
		for _, rc := range s.rcs(t) {
			if owned[rc.Name] != *rc.Spec.Replicas {
				unsettled = append(unsettled, fmt.Sprintf("rc/%s has %d pods of %d", rc.Name, owned[rc.Name], *rc.Spec.Replicas))
			}
		}
		return len(unsettled) == 0, strings.Join(unsettled, ", ")
	})
	var parts []string
	for _, rc := range s.rcs(t) {
		parts = append(parts, fmt.Sprintf("rc/%s gen=%d replicas=%d labels=%v annotations=%v selector=%v", rc.Name, rc.Generation, *rc.Spec.Replicas, rc.Labels, rc.Annotations, rc.Spec.Selector))
	}
	for _, p := range s.pods(t, "") {
		owner := ""
		if ref := metav1.GetControllerOf(p); ref != nil {
			owner = ref.Name
		}
		parts = append(parts, fmt.Sprintf("pod/%s uid=%s labels=%v owner=%s", p.Name, p.UID, p.Labels, owner))
	}
	leases, err := s.c.Client.CoordinationV1().Leases(s.ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range leases.Items {
		holder := ""
		if l.Spec.HolderIdentity != nil {
			holder = *l.Spec.HolderIdentity
		}
		parts = append(parts, "lease/"+l.Name+" held by "+holder)
	}
	sort.Strings(parts)
	return strings.Join(parts, "\n")
}

// The client-side update relies on nothing but the ReplicationController semantics
// upstream documents: with upstream's controllers it keeps the same bounds, and a
// rename interrupted mid-way finishes without a pod created or deleted.
func TestRollingUpdateWithUpstreamControllers(t *testing.T) {
	t.Parallel()
	bin := krollBinary(t)
	c := clustertest.Start(t, clustertest.WithWorkloadControllers(cluster.WorkloadControllersUpstream))
	t.Run("plain update", func(t *testing.T) { plainUpdate(t, newRUScene(t, &scene{c: c, ns: "ru-plain"}, bin)) })
	t.Run("killed after the stand-in", func(t *testing.T) {
		killAndResume(t, newRUScene(t, &scene{c: c, ns: "ru-killed"}, bin), "rolling-update/after-create-standin", "web-<hash>=nginx:1.16.1/3 web=nginx:1.16.1/0")
	})
}

func TestRollingUpdate(t *testing.T) {
	t.Parallel()
	bin := krollBinary(t)
	c := clustertest.Start(t)
	n := 0
	scene := func(t *testing.T) *ruScene {
		n++
		return newRUScene(t, &scene{c: c, ns: fmt.Sprintf("ru-%d", n)}, bin)
	}

	t.Run("plain update: name synthesized and renamed back", func(t *testing.T) { plainUpdate(t, scene(t)) })

	t.Run("named NEW kept: --image and -f", func(t *testing.T) {
		s := scene(t)
		w := s.watch(t)
		out := s.mustKroll(t, append([]string{"rolling-update", "web", "web-v2", "--image=nginx:1.16.1"}, fast...)...)
		if !strings.HasPrefix(out, "Created web-v2\n") || !strings.HasSuffix(out, "Update succeeded. Deleting web\nreplicationcontroller/web-v2 rolling updated to \"web-v2\"\n") {
			t.Errorf("output:\n%s", out)
		}
		s.expectDone(t, "web-v2", "nginx:1.16.1")
		w.Verify(t, 15)

		// The file's controller asks for minReadySeconds: 1; a pod counts as available
		// only a second after it is ready, and the update must wait for that.
		w = clustertest.WatchPodBounds(t, s.c.Client, s.ns, labels.SelectorFromSet(labels.Set{"app": "web"}),
			clustertest.PodBounds{Replicas: 3, MaxSurge: 1, MinReadySeconds: 1})
		file := writeFile(t, "web-v3.yaml", strings.NewReplacer("name: web\n", "name: web-v3\n", "version: v1", "version: v3", "nginx:1.14.2", "nginx:1.17.0",
			"  replicas: 3\n", "  replicas: 3\n  minReadySeconds: 1\n").Replace(webRCv1))
		out = s.mustKroll(t, append([]string{"rolling-update", "web-v2", "-f", file}, fast...)...)
		if !strings.HasPrefix(out, "Created web-v3\n") || !strings.HasSuffix(out, "replicationcontroller/web-v3 rolling updated to \"web-v3\"\n") {
			t.Errorf("output:\n%s", out)
		}
		s.expectDone(t, "web-v3", "nginx:1.17.0")
		w.Verify(t, 15)
	})

	t.Run("timeout then Ctrl-C then --rollback", func(t *testing.T) {
		s := scene(t)
		before := s.podNames(t, "app=web")
		w := s.watch(t)
		bad := append([]string{"rolling-update", "web", "--image=nginx:nonexistent"}, fast...)
		r := s.kroll(t, append(bad, "--timeout=2s")...)
		if r.code != 1 || !strings.Contains(r.stderr, "made no progress for 2s") || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
			t.Errorf("a stalled update: exit %d, stderr %q; want 1 and one line saying no progress", r.code, r.stderr)
		}
		if got := s.rcSummary(t); got != "web-<hash>=nginx:nonexistent/1 web=nginx:1.14.2/3" {
			t.Errorf("after the timeout: controllers %s, want web at 3 and the new one at 1", got)
		}

		b := s.start(t, "", bad...)
		b.waitStdout(t, "Continuing update with existing controller")
		if code := b.stop(t, syscall.SIGINT); code != 1 || !strings.Contains(b.output(), "kroll: interrupted") {
			t.Errorf("Ctrl-C: exit %d, output:\n%s", code, b.output())
		}

		out := s.mustKroll(t, append([]string{"rolling-update", "web", "--rollback"}, fast...)...)
		want := `Setting "web" replicas to 3
Continuing update with existing controller web.
Scaling up web from 3 to 3, scaling down web-<hash> from 1 to 0 (keep 3 pods available, don't exceed 4 pods)
Scaling web-<hash> down to 0
Update succeeded. Deleting web-<hash>
replicationcontroller/web rolled back
`
		if got := synthesized.ReplaceAllString(out, "web-<hash>"); got != want {
			t.Errorf("rollback output:\n%s\nwant:\n%s", got, want)
		}
		s.expectDone(t, "web", "nginx:1.14.2")
		if after := s.podNames(t, "app=web"); fmt.Sprint(after) != fmt.Sprint(before) {
			t.Errorf("pods %v after the rollback, want the original %v untouched", after, before)
		}
		w.Verify(t, 10)

		r = s.kroll(t, "rolling-update", "web", "--rollback")
		if r.code != 1 || !strings.Contains(r.stderr, "no rolling update of replicationcontroller/web is in progress") {
			t.Errorf("--rollback with nothing in progress: exit %d, %q", r.code, r.stderr)
		}
	})

	// Kill the client at each step; the same command run again must finish the update.
	for _, point := range []struct {
		name  string
		state string // the controllers when the client is killed
	}{
		{"rolling-update/before-create-new", "web=nginx:1.14.2/3"},
		{"rolling-update/after-create-new", "web-<hash>=nginx:1.16.1/0 web=nginx:1.14.2/3"},
		{"rolling-update/mid-scale", "web-<hash>=nginx:1.16.1/1 web=nginx:1.14.2/2"},
		{"rolling-update/after-delete-old", "web-<hash>=nginx:1.16.1/3"},
		{"rolling-update/after-create-standin", "web-<hash>=nginx:1.16.1/3 web=nginx:1.16.1/0"},
		{"rolling-update/after-orphan-new", "web=nginx:1.16.1/0"},
	} {
		t.Run("killed at "+point.name, func(t *testing.T) { killAndResume(t, scene(t), point.name, point.state) })
	}

	t.Run("a second client is refused", func(t *testing.T) {
		s := scene(t)
		cmd := append([]string{"rolling-update", "web", "--image=nginx:1.16.1"}, fast...)
		first := s.start(t, "rolling-update/mid-scale", cmd...)
		first.waitLine(t, "failpoint rolling-update/mid-scale")
		before := s.snapshot(t)
		for _, args := range [][]string{cmd, {"rolling-update", "web", "--rollback"}, append([]string{"rolling-update", "web", "--image=nginx:1.17.0"}, fast...)} {
			r := s.kroll(t, args...)
			if r.code != 1 || !strings.Contains(r.stderr, "replicationcontroller/web is being rolling-updated by another client") || !strings.Contains(r.stderr, "running: kroll rolling-update web --image=nginx:1.16.1") {
				t.Errorf("second client: exit %d, %q; want refused, naming the holder's command", r.code, r.stderr)
			}
		}
		if after := s.snapshot(t); after != before {
			t.Errorf("a refused client changed the namespace:\nbefore %s\nafter  %s", before, after)
		}
		first.stop(t, syscall.SIGKILL)
		s.mustKroll(t, cmd...) // the holder is gone: the lock is taken over at once
		s.expectDone(t, "web", "nginx:1.16.1")
	})

	t.Run("bad input changes nothing", func(t *testing.T) {
		s := scene(t)
		deployment := writeFile(t, "deployment.yaml", nginxDeployment)
		overlapping := writeFile(t, "overlap.yaml", strings.NewReplacer("name: web\n", "name: web-v2\n", "    version: v1\n", "    version: v1\n    track: next\n", "        version: v1\n", "        version: v1\n        track: next\n").Replace(webRCv1))
		malformed := writeFile(t, "malformed.yaml", "apiVersion: v1\nkind: ReplicationController\nspec: [\n")
		before := s.snapshot(t)
		for _, tt := range []struct {
			args []string
			want string
		}{
			{[]string{"rolling-update", "nope", "--image=nginx:1.16.1"}, "replicationcontroller/nope not found"},
			{[]string{"rolling-update", "nope", "--rollback"}, "replicationcontroller/nope not found"},
			{[]string{"rolling-update", "web"}, "say what to update to: --image=IMAGE or -f FILE"},
			{[]string{"rolling-update", "web", "--image=nginx:1.16.1", "-f", deployment}, "-f cannot be used with --image or --rollback"},
			{[]string{"rolling-update", "web", "-f", deployment}, "holds a Deployment (apps/v1), not a ReplicationController"},
			{[]string{"rolling-update", "web", "-f", malformed}, "is not a valid manifest"},
			{[]string{"rolling-update", "web", "--image=nginx:1.14.2"}, "--image nginx:1.14.2 is the current image of replicationcontroller/web"},
			{[]string{"rolling-update", "web", "-f", overlapping}, "the selector of replicationcontroller/web-v2 (app=web,track=next,version=v1) overlaps that of web (app=web,version=v1)"},
			{[]string{"rolling-update", "web", "--image=nginx:1.16.1", "--container=sidecar"}, `replicationcontroller/web has no container "sidecar"`},
			{[]string{"rolling-update", "web", "--image=nginx:1.16.1", "--max-surge=many"}, "--max-surge=many: want a number"},
			{[]string{"rolling-update", "web", "--image=nginx:1.16.1", "--max-surge=0", "--max-unavailable=0"}, "cannot both be 0"},
			{[]string{"rolling-update", "web", "--image=nginx:1.16.1", "--bogus"}, "unknown flag: --bogus"},
			{[]string{"rolling-update", "web", "web", "--image=nginx:1.16.1"}, "cannot have the name of the old one"},
			{[]string{"rolling-update", "web", "--image=nginx:1.16.1", "--server=https://127.0.0.1:1"}, "cannot reach the API server at https://127.0.0.1:1"},
		} {
			r := s.kroll(t, tt.args...)
			line := strings.TrimSuffix(r.stderr, "\n")
			if r.code != 1 || !strings.HasPrefix(line, "kroll: ") || strings.Contains(line, "\n") || !strings.Contains(line, tt.want) || r.stdout != "" {
				t.Errorf("kroll %s: exit %d, stdout %q, stderr %q; want exit 1 and one line with %q", strings.Join(tt.args, " "), r.code, r.stdout, r.stderr, tt.want)
			}
		}
		if after := s.snapshot(t); after != before {
			t.Errorf("bad input changed the namespace:\nbefore %s\nafter  %s", before, after)
		}
	})
}

// plainUpdate rolls web to nginx:1.16.1 without a new name: --dry-run first, then the
// update, with kubectl's messages, ending with one controller called web.
func plainUpdate(t *testing.T, s *ruScene) {
	before := s.podNames(t, "app=web")
	dry := s.mustKroll(t, "rolling-update", "web", "--image=nginx:1.16.1", "--dry-run")
	if !regexp.MustCompile(`^Rolling from:\nweb\nTo:\nweb-[0-9a-f]{32}\n$`).MatchString(dry) {
		t.Errorf("--dry-run printed %q", dry)
	}
	if after := s.podNames(t, "app=web"); fmt.Sprint(after) != fmt.Sprint(before) || s.rcSummary(t) != "web=nginx:1.14.2/3" {
		t.Fatalf("--dry-run changed something: controllers %s", s.rcSummary(t))
	}
	w := s.watch(t)
	out := s.mustKroll(t, append([]string{"rolling-update", "web", "--image=nginx:1.16.1"}, fast...)...)
	want := `Created web-<hash>
Scaling up web-<hash> from 0 to 3, scaling down web from 3 to 0 (keep 3 pods available, don't exceed 4 pods)
Scaling web-<hash> up to 1
Scaling web down to 2
Scaling web-<hash> up to 2
Scaling web down to 1
Scaling web-<hash> up to 3
Scaling web down to 0
Update succeeded. Deleting old controller: web
Renaming web-<hash> to web
replicationcontroller/web rolling updated
`
	if got := synthesized.ReplaceAllString(out, "web-<hash>"); got != want {
		t.Errorf("output:\n%s\nwant:\n%s", got, want)
	}
	s.expectDone(t, "web", "nginx:1.16.1")
	w.Verify(t, 20)
	rc := s.rcs(t)[0]
	if h := rc.Spec.Selector["deployment"]; len(h) != 32 || rc.Spec.Template.Labels["deployment"] != h || rc.Spec.Selector["app"] != "web" {
		t.Errorf("selector %v, template labels %v: want app=web and deployment=<template hash> in both", rc.Spec.Selector, rc.Spec.Template.Labels)
	}
}

// killAndResume kills an update of web to nginx:1.16.1 with kill -9 at failpoint name,
// checks the controllers it left (state, as rcSummary), and runs the same command
// again, which must finish the update.
func killAndResume(t *testing.T, s *ruScene, name, state string) {
	before := map[string]bool{}
	for _, p := range s.pods(t, "app=web") {
		before[string(p.UID)] = true
	}
	w := s.watch(t)
	cmd := append([]string{"rolling-update", "web", "--image=nginx:1.16.1"}, fast...)
	b := s.start(t, name, cmd...)
	b.waitLine(t, "failpoint "+name)
	if code := b.stop(t, syscall.SIGKILL); code != -1 {
		t.Errorf("kill -9: exit code %d", code)
	}
	if got := s.rcSummary(t); got != state {
		t.Errorf("killed with controllers %s, want %s", got, state)
	}
	if name == "rolling-update/before-create-new" {
		// The old pods were labelled in place, not replaced.
		for _, p := range s.pods(t, "app=web") {
			if !before[string(p.UID)] || len(p.Labels["deployment"]) != 32 {
				t.Errorf("pod %s: new=%v labels %v; want the original pods with the deployment label", p.Name, !before[string(p.UID)], p.Labels)
			}
		}
	}
	out := s.mustKroll(t, cmd...)
	if !strings.HasSuffix(out, "replicationcontroller/web rolling updated\n") {
		t.Errorf("re-run output:\n%s", out)
	}
	s.expectDone(t, "web", "nginx:1.16.1")
	w.Verify(t, 10)
}
