package e2e

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kroll-dev/kroll/pkg/cluster"
	"github.com/kroll-dev/kroll/pkg/cluster/clustertest"
	"github.com/kroll-dev/kroll/pkg/failure"
	"github.com/kroll-dev/kroll/pkg/history"
	"github.com/kroll-dev/kroll/pkg/kubelet"
	"github.com/kroll-dev/kroll/pkg/metrics"
	"github.com/kroll-dev/kroll/pkg/rollout"
	"github.com/kroll-dev/kroll/pkg/timeline"
)

// healDeployment is Deployment name of app:1 with replicas, maxSurge/maxUnavailable,
// minReadySeconds 2, and annotations ("key=value"). The simulated containers, like real
// ones without a readiness probe, are Ready for the second they run before a crash:
// minReadySeconds keeps such a pod from counting as available, so the rollout does
// not move on over it (the damage stays within the threshold).
func healDeployment(name string, replicas int, maxSurge, maxUnavailable string, annotations ...string) string {
	return healDeploymentReadyAfter(name, replicas, 2, maxSurge, maxUnavailable, annotations...)
}

// healDeploymentReadyAfter is healDeployment with minReadySeconds.
func healDeploymentReadyAfter(name string, replicas, minReadySeconds int, maxSurge, maxUnavailable string, annotations ...string) string {
	var a strings.Builder
	for _, line := range annotations {
		k, v, _ := strings.Cut(line, "=")
		fmt.Fprintf(&a, "    %s: %q\n", k, v)
	}
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: %[1]s
  annotations:
%[5]s
spec:
  replicas: %[2]d
  minReadySeconds: %[6]d
  selector:
    matchLabels:
      app: %[1]s
  strategy:
    type: RollingUpdate
    rollingUpdate:
      maxSurge: %[3]s
      maxUnavailable: %[4]s
  template:
    metadata:
      labels:
        app: %[1]s
    spec:
      containers:
      - name: app
        image: app:1
`, name, replicas, maxSurge, maxUnavailable, strings.TrimRight(a.String(), "\n"), minReadySeconds)
}

// rolloutFailed is d's RolloutFailed condition as "Status/Reason: message"; empty
// without one.
func rolloutFailed(d *appsv1.Deployment) string {
	if c := rollout.Condition(&d.Status, failure.ConditionRolloutFailed); c != nil {
		return fmt.Sprintf("%s/%s: %s", c.Status, c.Reason, c.Message)
	}
	return ""
}

// eventCount sums the count of the events with reason on object name.
func (s *scene) eventCount(t *testing.T, name, reason string) int {
	t.Helper()
	list, err := s.c.Client.CoreV1().Events(s.ns).List(context.Background(), metav1.ListOptions{FieldSelector: "involvedObject.name=" + name + ",reason=" + reason})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range list.Items {
		n += int(max(e.Count, 1))
	}
	return n
}

// expectAllReady waits until Deployment name has exactly replicas pods, all Ready on
// image, none terminating.
func (s *scene) expectAllReady(t *testing.T, name string, replicas int, image string) {
	t.Helper()
	eventually(t, 2*time.Minute, fmt.Sprintf("%d pods of %s Ready on %s", replicas, name, image), func(context.Context) (bool, string) {
		var states []string
		good := 0
		pods := s.pods(t, "app="+name)
		for _, p := range pods {
			states = append(states, podState(p))
			if p.DeletionTimestamp == nil && isPodReady(p) && p.Spec.Containers[0].Image == image {
				good++
			}
		}
		sort.Strings(states)
		return good == replicas && len(pods) == replicas, strings.Join(states, "; ")
	})
}

// expectRolledBack checks that Deployment name went back from revision 2 (whose pods
// failed with why) to revision 1's template, now revision 3, with every pod Ready,
// and reported it as specified.
func (s *scene) expectRolledBack(t *testing.T, name string, replicas int, why string) *appsv1.Deployment {
	t.Helper()
	eventually(t, time.Minute, name+" rolled back", func(context.Context) (bool, string) {
		d := s.deployment(t, name)
		return d.Annotations[failure.RolledBackFromAnnotation] == "2", fmt.Sprintf("annotations %v", d.Annotations)
	})
	s.kubectl(t, "rollout", "status", "deployment/"+name, "--timeout=2m")
	s.expectAllReady(t, name, replicas, "app:1")
	d := s.deployment(t, name)
	if got := d.Annotations[history.RevisionAnnotation]; got != "3" {
		t.Errorf("revision %s, want 3 (revision 1's ReplicaSet reused, as kubectl rollout undo does)", got)
	}
	for _, rs := range s.replicaSets(t) {
		if rs.Spec.Template.Spec.Containers[0].Image == "app:1" && (rs.Annotations[history.RevisionAnnotation] != "3" || rs.Annotations[history.RevisionHistoryAnnotation] != "1") {
			t.Errorf("ReplicaSet %s: revision %s, history %s; want 3 and 1", rs.Name, rs.Annotations[history.RevisionAnnotation], rs.Annotations[history.RevisionHistoryAnnotation])
		}
	}
	cond := rolloutFailed(d)
	if !strings.HasPrefix(cond, "True/PodsFailing: ") || !strings.Contains(cond, why) || !strings.HasSuffix(cond, "; rolled back from revision 2 to 1") {
		t.Errorf("RolloutFailed %q, want True/PodsFailing naming %s and rolled back from revision 2 to 1", cond, why)
	}
	_, msg, _ := strings.Cut(cond, ": ")
	s.expectEvent(t, failure.EventRolledBack, msg)
	s.expectKrollStatusFails(t, "deployment", name, msg)
	if n := s.eventCount(t, name, failure.EventRolledBack); n != 1 {
		t.Errorf("%d RolledBack events, want 1", n)
	}
	expectTimelineRolledBack(t, "deployment/"+name, d.Annotations[timeline.Annotation])
	return d
}

// expectTimelineRolledBack checks the rollout record (kroll.dev/rollout-timeline) of
// a workload rolled back from revision 2: one record holding revision 2's failed
// pods before the rollback's moment (as new pods, or, updated in place, as pods made
// unavailable while still counted old) and the restored revision after it, so that
// `kroll rollout timeline` charts both.
func expectTimelineRolledBack(t *testing.T, workload, annotation string) {
	t.Helper()
	tl, err := timeline.Parse(annotation)
	if err != nil || tl.Rollback == nil || tl.Rollback.Failed != "2" {
		t.Fatalf("%s: timeline %s (%v): want a record marked rolled back from 2", workload, annotation, err)
	}
	failedPods := false
	for _, sm := range tl.Samples {
		failedPods = failedPods || (sm.At < tl.Rollback.At && (sm.New > 0 || sm.Unavailable > 0))
	}
	if !failedPods || len(tl.Samples) == 0 || tl.Samples[len(tl.Samples)-1].At < tl.Rollback.At || tl.Revision == tl.Rollback.From {
		t.Errorf("%s: timeline %s: want revision 2's new or unavailable pods before the rollback at %v and the restored revision's samples after it", workload, annotation, tl.Rollback.At)
	}
}

// expectKrollStatusFails checks that kroll rollout status and kroll status report the
// failed rollout of kind/name with msg (its RolloutFailed message), rollout status
// exiting 1.
func (s *scene) expectKrollStatusFails(t *testing.T, kind, name, msg string) {
	t.Helper()
	kroll := krollCLI{t: t, bin: krollBinary(t), kubeconfig: s.c.KubeconfigPath, ns: s.ns}
	want := fmt.Sprintf("error: %s %q rollout failed: %s\n", kind, name, msg)
	if code, out, errOut := kroll.run("rollout", "status", kind+"/"+name, "--timeout=1m"); code != 1 || !strings.HasSuffix(errOut, want) {
		t.Errorf("kroll rollout status %s/%s: exit %d, stdout %q, stderr %q; want exit 1 ending %q", kind, name, code, out, errOut, want)
	}
	code, out, _ := kroll.run("rollout", "status", kind+"/"+name, "-o", "json")
	if code != 1 || !strings.Contains(out, `"phase":"RolledBack"`) {
		t.Errorf("kroll rollout status -o json %s/%s: exit %d, %s; want exit 1 and phase RolledBack", kind, name, code, out)
	}
	// kroll status lists it rolled-back; it fails the command until the workload is
	// healthy again on a complete revision (the row then says so), and always with
	// --fail-on=rolled-back.
	if code, out, _ := kroll.run("status", "--fail-on=rolled-back"); code != 1 || !strings.Contains(out, "rolled-back") {
		t.Errorf("kroll status --fail-on=rolled-back: exit %d, %s; want exit 1 and %s rolled-back", code, out, name)
	}
	code, out, _ = kroll.run("status")
	wantCode := 1
	if strings.Contains(out, "healthy since on revision") {
		wantCode = 0
	}
	if code != wantCode || !strings.Contains(out, "rolled-back") {
		t.Errorf("kroll status: exit %d, %s; want exit %d and %s rolled-back", code, out, wantCode, name)
	}
}

// Given kroll's controllers and the simulated kubelet's fault rules (app:crash
// crash-loops, app:slow is Ready 20s after starting, app:slower 90s), when Deployments
// watched by kroll.dev/on-failure roll out images that fail, then they heal as the
// policy says; where upstream would report ProgressDeadlineExceeded after
// progressDeadlineSeconds (600 by default) and wait.
//
// Run by TestHealing.
func testDeploymentHealsItself(t *testing.T) {
	rules, err := kubelet.NewFaultRules(
		kubelet.FaultRule{Image: "*:crash", Fault: "CrashLoopBackOff"},
		kubelet.FaultRule{Image: "*:slow", Fault: "ReadyAfter(20s)"},
		kubelet.FaultRule{Image: "*:slower", Fault: "ReadyAfter(90s)"},
	)
	if err != nil {
		t.Fatal(err)
	}
	c := clustertest.Start(t, clustertest.WithWorkloadControllers(cluster.WorkloadControllersNone), clustertest.WithNodes(2),
		clustertest.WithKubelet(func(k *kubelet.Config) {
			k.Faults = rules
			k.CrashLoopBackOff = 500 * time.Millisecond
			k.PodStartupDelay = 200 * time.Millisecond
		}))
	stop := startKrollControllers(t, c)
	defer func() { stop() }()
	rolledBack := func() float64 { return testutil.ToFloat64(metrics.RolledBack.WithLabelValues("Deployment")) }

	t.Run("parallel", func(t *testing.T) {
		t.Run("RollingUpdate to a crash-looping image rolls back at the 1st failed pod", func(t *testing.T) {
			t.Parallel()
			s := newScene(t, c, "heal-crash", cluster.WorkloadControllersKroll)
			s.apply(t, healDeployment("web", 4, "1", "0", "kroll.dev/on-failure=Rollback"))
			_, w := s.rolledOut(t, "web")
			before := rolledBack()
			s.kubectl(t, "set", "image", "deployment/web", "app=app:crash")
			d := s.expectRolledBack(t, "web", 4, ": CrashLoopBackOff)")
			if cond := rolloutFailed(d); !strings.HasPrefix(cond, "True/PodsFailing: 1 of 1 new pods failed, threshold 1 (web-") {
				t.Errorf("RolloutFailed %q: want the damage held to the 1 pod of the threshold", cond)
			}
			if rolledBack() <= before {
				t.Errorf("kroll_rollouts_rolled_back_total{kind=Deployment} did not go up")
			}
			w.Verify(t, 5)

			// The user's next change starts a new rollout: the condition goes.
			s.kubectl(t, "set", "image", "deployment/web", "app=app:2")
			s.kubectl(t, "rollout", "status", "deployment/web", "--timeout=2m")
			eventually(t, 30*time.Second, "RolloutFailed removed", func(context.Context) (bool, string) {
				cond := rolloutFailed(s.deployment(t, "web"))
				return cond == "", cond
			})
		})

		t.Run("RollingUpdate to an image that does not pull rolls back", func(t *testing.T) {
			t.Parallel()
			s := newScene(t, c, "heal-pull", cluster.WorkloadControllersKroll)
			s.apply(t, healDeployment("web", 3, "25%", "25%", "kroll.dev/on-failure=Rollback"))
			_, w := s.rolledOut(t, "web")
			s.kubectl(t, "set", "image", "deployment/web", "app=nginx:1.161")
			s.expectRolledBack(t, "web", 3, "ImagePull") // ErrImagePull, or ImagePullBackOff
			w.Verify(t, 3)
		})

		for _, tc := range []struct{ ns, image, why string }{
			{"heal-inplace", "app:crash", ": CrashLoopBackOff)"},
			{"heal-inplace-pull", "nginx:1.161", "ImagePull"},
		} {
			t.Run("in place, "+tc.image+" rolls back in place", func(t *testing.T) {
				t.Parallel()
				s := newScene(t, c, tc.ns, cluster.WorkloadControllersKroll)
				s.apply(t, healDeployment("web", 3, "0", "1", "kroll.dev/on-failure=Rollback", "kroll.dev/update-strategy=InPlaceIfPossible"))
				before, w := s.rolledOut(t, "web")
				s.kubectl(t, "set", "image", "deployment/web", "app="+tc.image)
				s.expectRolledBack(t, "web", 3, tc.why)
				after := s.podRecords(t, "web")
				for uid, b := range before {
					if a, kept := after[uid]; !kept || a.node != b.node || a.image != "app:1" {
						t.Errorf("pod %s (uid %s) was replaced or moved: now %+v", b.name, uid, a)
					}
				}
				w.Verify(t, 3)
			})
		}

		t.Run("Pause stops the rollout; resume goes on without pausing again, and an undo goes back", func(t *testing.T) {
			t.Parallel()
			s := newScene(t, c, "heal-pause", cluster.WorkloadControllersKroll)
			s.apply(t, healDeployment("web", 3, "1", "0", "kroll.dev/on-failure=Pause"))
			s.kubectl(t, "rollout", "status", "deployment/web", "--timeout=2m")
			paused := testutil.ToFloat64(metrics.PausedOnFailure.WithLabelValues("Deployment"))
			s.kubectl(t, "set", "image", "deployment/web", "app=app:crash")
			eventually(t, time.Minute, "paused on failure", func(context.Context) (bool, string) {
				d := s.deployment(t, "web")
				return d.Spec.Paused && d.Annotations[failure.PausedOnFailureAnnotation] == "2" && rolloutFailed(d) != "",
					fmt.Sprintf("paused %v annotations %v condition %q", d.Spec.Paused, d.Annotations, rolloutFailed(d))
			})
			cond := rolloutFailed(s.deployment(t, "web"))
			if !strings.HasPrefix(cond, "True/PodsFailing: 1 of 1 new pods failed, threshold 1 (web-") || !strings.HasSuffix(cond, ": CrashLoopBackOff); paused on revision 2") {
				t.Errorf("RolloutFailed %q", cond)
			}
			_, msg, _ := strings.Cut(cond, ": ")
			s.expectEvent(t, failure.EventRolloutPaused, msg)
			if testutil.ToFloat64(metrics.PausedOnFailure.WithLabelValues("Deployment")) <= paused {
				t.Errorf("kroll_rollouts_paused_on_failure_total{kind=Deployment} did not go up")
			}
			s.waitRS(t, "app:1=3 app:crash=1") // stopped where it was

			s.kubectl(t, "rollout", "resume", "deployment/web")
			// The resume is a change of the Deployment: its sync, within the window,
			// sees the failing pod again, and must not pause again.
			holdsFor(t, 3*time.Second, 100*time.Millisecond, "resumed by the user, not paused again", func(context.Context) (bool, string) {
				d := s.deployment(t, "web")
				return !d.Spec.Paused, fmt.Sprintf("paused %v, condition %q", d.Spec.Paused, rolloutFailed(d))
			})
			s.kubectl(t, "rollout", "undo", "deployment/web")
			s.kubectl(t, "rollout", "status", "deployment/web", "--timeout=2m")
			s.expectAllReady(t, "web", 3, "app:1")
			if n := s.eventCount(t, "web", failure.EventRolloutPaused); n != 1 {
				t.Errorf("%d RolloutPaused events, want 1", n)
			}
			if d := s.deployment(t, "web"); d.Annotations[failure.CompleteAnnotation] != "" {
				t.Errorf("the undo left kroll.dev/complete on the Deployment: %v", d.Annotations)
			}
		})

		t.Run("kroll rollout undo rolls a Deployment paused on failure back and resumes it; kubectl's undo refuses it, and a user's pause", func(t *testing.T) {
			t.Parallel()
			s := newScene(t, c, "heal-undo", cluster.WorkloadControllersKroll)
			s.apply(t, healDeployment("web", 3, "1", "0", "kroll.dev/on-failure=Pause"))
			_, w := s.rolledOut(t, "web")
			s.kubectl(t, "set", "image", "deployment/web", "app=app:crash")
			eventually(t, time.Minute, "paused on failure", func(context.Context) (bool, string) {
				d := s.deployment(t, "web")
				return d.Spec.Paused && d.Annotations[failure.PausedOnFailureAnnotation] == "2",
					fmt.Sprintf("paused %v annotations %v", d.Spec.Paused, d.Annotations)
			})
			const refusal = "you cannot rollback a paused deployment; resume it first"
			if out, err := s.tryKubectl(t, "rollout", "undo", "deployment/web"); err == nil || !strings.Contains(out, refusal) {
				t.Errorf("kubectl rollout undo of a Deployment paused on failure: %v, %q; want kubectl's own refusal", err, out)
			}
			kroll := krollCLI{t: t, bin: krollBinary(t), kubeconfig: c.KubeconfigPath, ns: s.ns}
			if out := kroll.must("rollout", "undo", "deployment/web"); out != "deployment.apps/web rolled back to revision 1 and resumed (paused on failure of revision 2)\n" {
				t.Errorf("kroll rollout undo: %q", out)
			}
			s.kubectl(t, "rollout", "status", "deployment/web", "--timeout=2m")
			s.expectAllReady(t, "web", 3, "app:1")
			d := s.deployment(t, "web")
			if d.Spec.Paused || d.Annotations[history.RevisionAnnotation] != "3" || d.Spec.Template.Spec.Containers[0].Image != "app:1" {
				t.Errorf("after the undo: paused %v, revision %s, image %s; want resumed on revision 3 (revision 1's template)",
					d.Spec.Paused, d.Annotations[history.RevisionAnnotation], d.Spec.Template.Spec.Containers[0].Image)
			}
			w.Verify(t, 5)

			// A Deployment its user paused is not kroll's to resume.
			s.kubectl(t, "set", "image", "deployment/web", "app=app:2")
			s.kubectl(t, "rollout", "status", "deployment/web", "--timeout=2m")
			s.kubectl(t, "rollout", "pause", "deployment/web")
			if code, out, errOut := kroll.run("rollout", "undo", "deployment/web"); code != 1 || !strings.Contains(errOut, refusal) {
				t.Errorf("kroll rollout undo of a Deployment its user paused: exit %d, %q %q; want kubectl's refusal", code, out, errOut)
			}
			if d := s.deployment(t, "web"); !d.Spec.Paused || d.Spec.Template.Spec.Containers[0].Image != "app:2" {
				t.Errorf("the refused undo changed the Deployment: paused %v, image %s", d.Spec.Paused, d.Spec.Template.Spec.Containers[0].Image)
			}
		})

		t.Run("pods Ready 20s after starting, with ready-timeout 60s, complete and are not rolled back", func(t *testing.T) {
			t.Parallel()
			s := newScene(t, c, "heal-slow", cluster.WorkloadControllersKroll)
			s.apply(t, healDeployment("web", 2, "2", "0", "kroll.dev/on-failure=Rollback", "kroll.dev/ready-timeout=60s"))
			s.kubectl(t, "rollout", "status", "deployment/web", "--timeout=2m")
			s.kubectl(t, "set", "image", "deployment/web", "app=app:slow")
			s.kubectl(t, "rollout", "status", "deployment/web", "--timeout=2m")
			s.expectAllReady(t, "web", 2, "app:slow")
			d := s.deployment(t, "web")
			if _, rolled := d.Annotations[failure.RolledBackFromAnnotation]; rolled || rolloutFailed(d) != "" {
				t.Errorf("a slow rollout was failed: annotations %v, condition %q", d.Annotations, rolloutFailed(d))
			}
			eventually(t, 30*time.Second, "revision 2 marked complete", func(context.Context) (bool, string) {
				for _, rs := range s.replicaSets(t) {
					if rs.Spec.Template.Spec.Containers[0].Image == "app:slow" {
						return rs.Annotations[failure.CompleteAnnotation] == "true", fmt.Sprint(rs.Annotations)
					}
				}
				return false, "no ReplicaSet of app:slow"
			})
		})

		t.Run("failure-threshold 25% of 20 replicas rolls back at the 5th failed pod, not the 4th", func(t *testing.T) {
			t.Parallel()
			s := newScene(t, c, "heal-threshold", cluster.WorkloadControllersKroll)
			s.apply(t, healDeployment("web", 20, "20", "0", "kroll.dev/on-failure=Rollback", "kroll.dev/failure-threshold=25%"))
			s.kubectl(t, "rollout", "status", "deployment/web", "--timeout=2m")
			s.kubectl(t, "set", "image", "deployment/web", "app=app:slower") // 20 new pods, Ready only after 90s
			var newPods []string
			eventually(t, time.Minute, "20 new pods running", func(context.Context) (bool, string) {
				newPods = nil
				for _, p := range s.pods(t, "app=web") {
					if p.Spec.Containers[0].Image == "app:slower" && p.Status.Phase == corev1.PodRunning {
						newPods = append(newPods, p.Name)
					}
				}
				return len(newPods) == 20, fmt.Sprint(len(newPods))
			})
			sort.Strings(newPods)
			crash := func(name string) {
				s.kubectl(t, "annotate", "pod", name, kubelet.AnnotationFault+"=CrashLoopBackOff")
				waitPod(t, c.Client, s.ns, name, "in CrashLoopBackOff", func(p *corev1.Pod) bool {
					return len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].State.Waiting != nil &&
						p.Status.ContainerStatuses[0].State.Waiting.Reason == "CrashLoopBackOff"
				})
			}
			for _, name := range newPods[:4] {
				crash(name)
			}
			// Each crash is a pod change the controller syncs on within the window: 4
			// failed pods seen, under the threshold of 5, and still rolling out.
			holdsFor(t, 3*time.Second, 100*time.Millisecond, "no rollback at the 4th failed pod", func(context.Context) (bool, string) {
				d := s.deployment(t, "web")
				return d.Spec.Template.Spec.Containers[0].Image == "app:slower" && rolloutFailed(d) == "",
					fmt.Sprintf("image %s, condition %q", d.Spec.Template.Spec.Containers[0].Image, rolloutFailed(d))
			})
			crash(newPods[4])
			d := s.expectRolledBack(t, "web", 20, newPods[0]+": ") // CrashLoopBackOff, or restarted 3 times by now
			if cond := rolloutFailed(d); !strings.HasPrefix(cond, "True/PodsFailing: 5 of 20 new pods failed, threshold 5 (") {
				t.Errorf("RolloutFailed %q, want 5 of 20 failed, threshold 5", cond)
			}
		})

		t.Run("bad annotations are reported and behave as None", func(t *testing.T) {
			t.Parallel()
			s := newScene(t, c, "heal-bad", cluster.WorkloadControllersKroll)
			s.withoutAdmissionPolicy(t) // the API server would refuse the bad values
			s.apply(t, healDeployment("web", 2, "1", "0", "kroll.dev/on-failure=Sometimes", "kroll.dev/failure-threshold=abc"))
			s.kubectl(t, "rollout", "status", "deployment/web", "--timeout=2m")
			want := `kroll.dev/on-failure="Sometimes" is not valid: want Rollback, Pause or None; kroll.dev/failure-threshold="abc" is not valid: want a whole number of pods of at least 1 (2) or a percentage of the replicas (25%); the rollout is not watched for failure (as with kroll.dev/on-failure=None)`
			eventually(t, 30*time.Second, "the FailurePolicy condition", func(context.Context) (bool, string) {
				c := rollout.Condition(&s.deployment(t, "web").Status, failure.ConditionFailurePolicy)
				return c != nil && c.Status == corev1.ConditionFalse && c.Reason == failure.ReasonInvalidAnnotation && c.Message == want, fmt.Sprintf("%+v", c)
			})
			s.expectEvent(t, failure.EventInvalidFailurePolicy, want)
			s.kubectl(t, "set", "image", "deployment/web", "app=nginx:1.161")
			s.waitRS(t, "app:1=2 nginx:1.161=1")
			// ImagePullBackOff: as upstream, it waits. The pull fails within the first
			// second; a valid policy would act on it within the window.
			holdsFor(t, 3*time.Second, 100*time.Millisecond, "the invalid policy not acting", func(context.Context) (bool, string) {
				d := s.deployment(t, "web")
				got := rsSizes(s.replicaSets(t))
				return got == "app:1=2 nginx:1.161=1" && !d.Spec.Paused && rolloutFailed(d) == "" && d.Spec.Template.Spec.Containers[0].Image == "nginx:1.161",
					fmt.Sprintf("ReplicaSets %s, paused %v, condition %q, image %s", got, d.Spec.Paused, rolloutFailed(d), d.Spec.Template.Spec.Containers[0].Image)
			})
			if n := s.eventCount(t, "web", failure.EventInvalidFailurePolicy); n != 1 {
				t.Errorf("%d InvalidFailurePolicy events, want 1 (once per message)", n)
			}
			// Fixed: the condition goes.
			s.kubectl(t, "annotate", "--overwrite", "deployment/web", "kroll.dev/on-failure=None", "kroll.dev/failure-threshold=1")
			eventually(t, 30*time.Second, "the FailurePolicy condition removed", func(context.Context) (bool, string) {
				c := rollout.Condition(&s.deployment(t, "web").Status, failure.ConditionFailurePolicy)
				return c == nil, fmt.Sprintf("%+v", c)
			})
		})
	})

	// Alone, since it stops the controllers: exactly one rollback however often they are
	// stopped and started again around the decision, with stops proven on both sides of
	// it (a decision is made afresh from the cache; once the template is restored there
	// is nothing left to decide).
	t.Run("controllers restarted around the rollback decision roll back once", func(t *testing.T) {
		s := newScene(t, c, "heal-restart", cluster.WorkloadControllersKroll)
		// No minReadySeconds: the crash-looping pods look available for a moment, and the
		// rollout may even look complete before the first crash; it is judged still.
		s.apply(t, healDeploymentReadyAfter("web", 4, 0, "1", "0", "kroll.dev/on-failure=Rollback"))
		s.kubectl(t, "rollout", "status", "deployment/web", "--timeout=2m")
		deploymentRollbacks.Lock()
		defer deploymentRollbacks.Unlock()
		before := rolledBack()
		patch := []byte(`{"spec":{"template":{"spec":{"containers":[{"name":"app","image":"app:crash"}]}}}}`)
		if _, err := c.Client.AppsV1().Deployments(s.ns).Patch(context.Background(), "web", types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		// The new pod crashes about 1.2s in (startup 0.2s, a second running): restarts
		// every 0.55s straddle the decision. Each stop is placed by what the controllers
		// left behind it: after the bad revision's pod exists and before the rollback,
		// or after the rollback. Restarts go on (at most 20) until both sides have at
		// least two, so that a loaded machine, where the decision comes later, still
		// puts stops on both sides; a run with none on one side proves nothing and fails.
		stopsBefore, stopsAfter := 0, 0
		for i := 0; i < 20 && (stopsBefore < 2 || stopsAfter < 2); i++ {
			time.Sleep(400 * time.Millisecond)
			stop()
			from := s.deployment(t, "web").Annotations[failure.RolledBackFromAnnotation]
			badPods := len(s.podsRunning(t, "app=web", "app:crash"))
			switch {
			case from != "":
				stopsAfter++
			case badPods > 0:
				stopsBefore++
			}
			t.Logf("restart %d: controllers stopped with rolled-back-from %s, %d pods of the bad revision", i+1, strconv.Quote(from), badPods)
			time.Sleep(150 * time.Millisecond)
			stop = startKrollControllers(t, c)
		}
		if stopsBefore == 0 || stopsAfter == 0 {
			t.Errorf("%d stops came with the bad revision's pods before the rollback and %d after it; the restarts did not straddle the decision", stopsBefore, stopsAfter)
		}
		s.expectRolledBack(t, "web", 4, ": CrashLoopBackOff)")
		// A second rollback would follow the first within a sync or two.
		holdsFor(t, 2*time.Second, 100*time.Millisecond, "exactly one rollback", func(context.Context) (bool, string) {
			n := rolledBack() - before
			return n == 1, fmt.Sprintf("kroll_rollouts_rolled_back_total{kind=Deployment} went up by %v", n)
		})
		if n := s.eventCount(t, "web", failure.EventRolledBack); n != 1 {
			t.Errorf("%d RolledBack events, want 1", n)
		}
		if rss := s.replicaSets(t); len(rss) != 2 {
			t.Errorf("ReplicaSets %s, want revision 1's and the bad one's only", rsSizes(rss))
		}
	})
}

// podsRunning are the pods of selector whose first container's spec image is image.
func (s *scene) podsRunning(t *testing.T, selector, image string) []*corev1.Pod {
	t.Helper()
	var out []*corev1.Pod
	for _, p := range s.pods(t, selector) {
		if p.DeletionTimestamp == nil && p.Spec.Containers[0].Image == image {
			out = append(out, p)
		}
	}
	return out
}
