package e2e

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kroll-dev/kroll/pkg/cluster"
	"github.com/kroll-dev/kroll/pkg/cluster/clustertest"
	"github.com/kroll-dev/kroll/pkg/failure"
	"github.com/kroll-dev/kroll/pkg/history"
	"github.com/kroll-dev/kroll/pkg/kubelet"
)

// statusRun is one `kroll rollout status` started in the background: its output as
// it comes, when it printed its first line, and how and when it ended.
type statusRun struct {
	cmd            *exec.Cmd
	stdout, stderr bytes.Buffer
	mu             sync.Mutex
	firstLine      chan struct{}
	done           chan struct{}
	code           int
	err            error
	endedAt        time.Time
}

// startStatus starts `kroll args... -n ns`; its first line of stdout closes firstLine.
func startStatus(k krollCLI, args ...string) *statusRun {
	r := &statusRun{firstLine: make(chan struct{}), done: make(chan struct{})}
	r.cmd = exec.Command(k.bin, append(args, "-n", k.ns, "--kubeconfig", k.kubeconfig)...)
	r.cmd.Stderr = &lockedWriter{mu: &r.mu, w: &r.stderr}
	out, err := r.cmd.StdoutPipe()
	if err == nil {
		err = r.cmd.Start()
	}
	if err != nil {
		r.err = err
		close(r.firstLine)
		close(r.done)
		return r
	}
	go func() {
		defer close(r.done)
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		first := true
		for sc.Scan() {
			r.mu.Lock()
			r.stdout.WriteString(sc.Text() + "\n")
			r.mu.Unlock()
			if first {
				first = false
				close(r.firstLine)
			}
		}
		werr := r.cmd.Wait()
		r.endedAt = time.Now()
		if first {
			close(r.firstLine)
		}
		var exit *exec.ExitError
		switch {
		case errors.As(werr, &exit):
			r.code = exit.ExitCode()
		case werr != nil:
			r.err = werr
		}
	}()
	return r
}

// wait waits at most timeout for the run to end (then kills it) and returns its exit
// code, stdout and stderr.
func (r *statusRun) wait(t *testing.T, timeout time.Duration) (int, string, string) {
	t.Helper()
	select {
	case <-r.done:
	case <-time.After(timeout):
		_ = r.cmd.Process.Kill()
		<-r.done
		t.Errorf("kroll %s still running after %s", strings.Join(r.cmd.Args[1:], " "), timeout)
	}
	if r.err != nil {
		t.Fatalf("kroll %s: %v", strings.Join(r.cmd.Args[1:], " "), r.err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.code, r.stdout.String(), r.stderr.String()
}

// Given the README's self-healing Deployment (4 replicas, kroll.dev/on-failure:
// Rollback, one new pod at a time) and the simulated kubelet's defaults, when a change
// makes every new pod crash-loop (the pod annotation kroll.dev/fault) and `kroll
// rollout status` watches it, then status exits 1 with RolledBack, never Complete —
// with minReadySeconds 5 as the README has it, and without, where the crash-looping
// pods look available for a moment and the counts say rolled out before the first
// crash. Ten Deployments at once per case, each watched by the plain and the -o json
// form. And when the change is healthy, status exits 0 only once the new pods stayed
// Ready failure.SettleTime (the controller's mark); an undo to a revision that
// completed before exits 0 at once; `kroll status` lists the rolled-back Deployments
// without failing, unless --fail-on=rolled-back.
func TestRolloutStatusWaitsForTheVerdict(t *testing.T) {
	t.Parallel()
	bin := krollBinary(t)
	c := clustertest.Start(t, clustertest.WithNodes(3))
	t.Run("crash loop", func(t *testing.T) {
		// This test's controllers roll Deployments back: hold the counter's lock.
		deploymentRollbacks.Lock()
		defer deploymentRollbacks.Unlock()
		for _, minReady := range []int{5, 0} {
			t.Run(fmt.Sprintf("minReadySeconds %d", minReady), func(t *testing.T) {
				testCrashLoopStatus(t, c, bin, minReady, 10)
			})
		}
	})
	t.Run("healthy", func(t *testing.T) { testHealthyStatus(t, c, bin) })
}

// crashPatch is the README's crash-loop change: a new image, and the annotation that
// makes the simulated kubelet crash the new revision's containers.
const crashPatch = `{"spec":{"template":{"metadata":{"annotations":{"` + kubelet.AnnotationFault + `":"CrashLoopBackOff"}},"spec":{"containers":[{"name":"app","image":"app:2"}]}}}}`

func testCrashLoopStatus(t *testing.T, c *cluster.Cluster, bin string, minReady, runs int) {
	s := newScene(t, c, fmt.Sprintf("verdict-crash-%d", minReady), cluster.WorkloadControllersKroll)
	kroll := krollCLI{t: t, bin: bin, kubeconfig: c.KubeconfigPath, ns: s.ns}
	// The README's Deployment after its patch (minReadySeconds 5, maxUnavailable 0)
	// and its crash-loop change. Without minReadySeconds, every new pod at once
	// (maxSurge 100%), each taking 3 s to start and then running 3 s before its first
	// crash (kroll.dev/startup-delay: a release that serves a few seconds, then dies):
	// each is available the moment it is Ready, so the counts say rolled out for
	// seconds before the controller can judge — when kubectl rollout status passes
	// the release.
	maxSurge, patch := "25%", crashPatch
	if minReady == 0 {
		maxSurge, patch = "100%", strings.Replace(crashPatch, `"CrashLoopBackOff"`, `"CrashLoopBackOff","`+kubelet.AnnotationStartupDelay+`":"3s"`, 1)
	}
	names := make([]string, runs)
	watchers := make([]*clustertest.DeploymentWatcher, runs)
	for i := range names {
		names[i] = fmt.Sprintf("shop-%d", i)
		s.apply(t, healDeploymentReadyAfter(names[i], 4, minReady, maxSurge, "0", "kroll.dev/on-failure=Rollback"))
	}
	for i, name := range names {
		_, watchers[i] = s.rolledOut(t, name)
	}
	// Paused while the change is made and the status commands start, so that each one
	// watches from before the first new pod: every run sees the window in which the
	// counts may say rolled out. (A paused Deployment is not judged; resumed, it rolls
	// out as if just changed.)
	ctx := context.Background()
	deployments := c.Client.AppsV1().Deployments(s.ns)
	plain, json := make([]*statusRun, runs), make([]*statusRun, runs)
	for i, name := range names {
		s.kubectl(t, "rollout", "pause", "deployment/"+name)
		if _, err := deployments.Patch(ctx, name, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		plain[i] = startStatus(kroll, "rollout", "status", "deployment/"+name, "--timeout=3m")
		json[i] = startStatus(kroll, "rollout", "status", "deployment/"+name, "--timeout=3m", "-o", "json")
	}
	for i := range names {
		for _, r := range []*statusRun{plain[i], json[i]} {
			select {
			case <-r.firstLine:
			case <-time.After(time.Minute):
				t.Fatalf("kroll %s printed nothing in a minute", strings.Join(r.cmd.Args[1:], " "))
			}
		}
	}
	for _, name := range names {
		s.kubectl(t, "rollout", "resume", "deployment/"+name)
	}
	sawCountsDone := 0
	for i, name := range names {
		code, out, errOut := plain[i].wait(t, 3*time.Minute)
		want := fmt.Sprintf("error: deployment %q rollout failed: ", name)
		if code != 1 || !strings.Contains(errOut, want) || !strings.Contains(errOut, "rolled back from revision 2 to 1") || strings.Contains(out, "successfully rolled out") {
			t.Errorf("run %d: kroll rollout status deployment/%s: exit %d\nstdout:\n%sstderr:\n%swant exit 1 with %q… rolled back from revision 2 to 1", i+1, name, code, out, errOut, want)
		}
		if strings.Contains(out, "all 4 pods updated and available; ") {
			sawCountsDone++
		}
		code, out, errOut = json[i].wait(t, 3*time.Minute)
		if strings.Contains(out, `"settling":`) {
			sawCountsDone++
		}
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if last := lines[len(lines)-1]; code != 1 || !strings.Contains(last, `"phase":"RolledBack"`) || strings.Contains(out, `"phase":"Complete"`) {
			t.Errorf("run %d: kroll rollout status deployment/%s -o json: exit %d\nstdout:\n%sstderr:\n%swant exit 1, the last line RolledBack, none Complete", i+1, name, code, out, errOut)
		}
	}
	t.Logf("minReadySeconds %d: %d of %d runs (plain and -o json) saw every pod updated and available before the rollback", minReady, sawCountsDone, 2*runs)
	if minReady == 0 && sawCountsDone == 0 {
		t.Errorf("no run saw the counts say rolled out before the rollback: the window this case is for was not exercised")
	}

	// Healed: every Deployment back on revision 1's template (revision 3, marked
	// complete), all pods available. kroll status lists them rolled-back and passes;
	// --fail-on=rolled-back fails.
	for i, name := range names {
		s.kubectl(t, "rollout", "status", "deployment/"+name, "--timeout=2m")
		if minReady > 0 {
			watchers[i].Verify(t, 5)
		} else {
			// Without minReadySeconds a crash-looping pod counts as available for the
			// second it runs, an old pod is removed for it, and then it crashes:
			// availability drops below replicas − maxUnavailable because the pods
			// broke it after the controller's step, which was within bounds.
			watchers[i].Report(t)
		}
	}
	var out string
	eventually(t, time.Minute, "kroll status to pass", func(context.Context) (bool, string) {
		code, o, errOut := kroll.run("status")
		out = o
		return code == 0, fmt.Sprintf("exit %d\n%s%s", code, o, errOut)
	})
	if n := strings.Count(out, " rolled-back "); n != runs {
		t.Errorf("kroll status lists %d rolled-back, want %d:\n%s", n, runs, out)
	}
	if code, o, errOut := kroll.run("status", "--fail-on=rolled-back"); code != 1 || !strings.Contains(errOut, fmt.Sprintf("%d of %d rollouts failed", runs, runs)) {
		t.Errorf("kroll status --fail-on=rolled-back: exit %d\n%s%s; want exit 1, %d of %d failed", code, o, errOut, runs, runs)
	}
}

func testHealthyStatus(t *testing.T, c *cluster.Cluster, bin string) {
	s := newScene(t, c, "verdict-healthy", cluster.WorkloadControllersKroll)
	kroll := krollCLI{t: t, bin: bin, kubeconfig: c.KubeconfigPath, ns: s.ns}
	type form struct{ name, output string }
	forms := []form{{"plain", ""}, {"json", "json"}}
	for _, f := range forms {
		s.apply(t, healDeploymentReadyAfter(f.name, 4, 0, "25%", "0", "kroll.dev/on-failure=Rollback"))
	}
	for _, f := range forms {
		s.rolledOut(t, f.name)
		s.waitMarked(t, f.name, "1")
	}
	var wg sync.WaitGroup
	for _, f := range forms {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t.Run(f.name, func(t *testing.T) {
				args := []string{"rollout", "status", "deployment/" + f.name, "--timeout=2m"}
				if f.output != "" {
					args = append(args, "-o", f.output)
				}
				w := clustertest.WatchDeployment(t, c.Client, s.ns, f.name)
				if _, err := c.Client.AppsV1().Deployments(s.ns).Patch(context.Background(), f.name, types.StrategicMergePatchType,
					[]byte(`{"spec":{"template":{"spec":{"containers":[{"name":"app","image":"app:2"}]}}}}`), metav1.PatchOptions{}); err != nil {
					t.Error(err)
					return
				}
				r := startStatus(kroll, args...)
				code, out, errOut := r.wait(t, 2*time.Minute)
				rs, readyAt := s.revisionReady(t, f.name, "2")
				settled := readyAt.Add(failure.SettleTime)
				if code != 0 || r.endedAt.Before(settled) {
					t.Errorf("exit %d at %s, want 0 no sooner than %s (its last new pod Ready at %s, plus %s)\n%s%s",
						code, r.endedAt.Format(time.StampMilli), settled.Format(time.StampMilli), readyAt.Format(time.StampMilli), failure.SettleTime, out, errOut)
				}
				if !failure.IsComplete(rs.Annotations) {
					t.Errorf("ReplicaSet %s not marked %s after status exited", rs.Name, failure.CompleteAnnotation)
				}
				wantWait, wantDone := "watching for failures for ", `successfully rolled out`
				if f.output == "json" {
					wantWait, wantDone = `"settling":{"holder":"ReplicaSet \"`+rs.Name+`\""`, `"phase":"Complete"`
				}
				lines := strings.Split(strings.TrimSpace(out), "\n")
				if !strings.Contains(out, wantWait) || !strings.Contains(lines[len(lines)-1], wantDone) {
					t.Errorf("output does not wait (%q) then end done (%q):\n%s", wantWait, wantDone, out)
				}
				w.Verify(t, 5)

				// Back to revision 1, which completed before: its ReplicaSet carries the
				// mark, so status is done once the pods are available, not a settle later.
				s.kubectl(t, "rollout", "undo", "deployment/"+f.name, "--to-revision=1")
				r = startStatus(kroll, args...)
				code, out, errOut = r.wait(t, 2*time.Minute)
				_, readyAt = s.revisionReady(t, f.name, "3")
				if code != 0 || !r.endedAt.Before(readyAt.Add(failure.SettleTime)) {
					t.Errorf("undo to a complete revision: exit %d at %s, want 0 before %s (no settling: its pods Ready at %s)\n%s%s",
						code, r.endedAt.Format(time.StampMilli), readyAt.Add(failure.SettleTime).Format(time.StampMilli), readyAt.Format(time.StampMilli), out, errOut)
				}
			})
		}()
	}
	wg.Wait()
}

// waitMarked waits for Deployment name's ReplicaSet of revision to be marked complete.
func (s *scene) waitMarked(t *testing.T, name, revision string) {
	t.Helper()
	eventually(t, time.Minute, name+" revision "+revision+" marked complete", func(context.Context) (bool, string) {
		rs := s.replicaSetOf(t, name, revision)
		return rs != nil && failure.IsComplete(rs.Annotations), fmt.Sprintf("%v", rs)
	})
}

// replicaSetOf is Deployment name's ReplicaSet of revision, or nil.
func (s *scene) replicaSetOf(t *testing.T, name, revision string) *appsv1.ReplicaSet {
	t.Helper()
	for _, rs := range s.replicaSets(t) {
		if metav1.IsControlledBy(rs, s.deployment(t, name)) && rs.Annotations[history.RevisionAnnotation] == revision {
			return rs
		}
	}
	return nil
}

// revisionReady is Deployment name's ReplicaSet of revision and the latest moment one
// of its pods became Ready, from the pods' conditions (whole seconds: the API's times
// are truncated, so the true moment is up to a second later).
func (s *scene) revisionReady(t *testing.T, name, revision string) (*appsv1.ReplicaSet, time.Time) {
	t.Helper()
	rs := s.replicaSetOf(t, name, revision)
	if rs == nil {
		t.Fatalf("deployment %s has no ReplicaSet of revision %s", name, revision)
	}
	var last time.Time
	for _, p := range s.pods(t, "app="+name) {
		if !metav1.IsControlledBy(p, rs) || p.DeletionTimestamp != nil {
			continue
		}
		for _, cond := range p.Status.Conditions {
			if cond.Type == corev1.PodReady && cond.Status == corev1.ConditionTrue && cond.LastTransitionTime.After(last) {
				last = cond.LastTransitionTime.Time
			}
		}
	}
	if last.IsZero() {
		t.Fatalf("ReplicaSet %s has no Ready pod", rs.Name)
	}
	return rs, last
}
