package e2e

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kroll-dev/kroll/pkg/cluster"
	"github.com/kroll-dev/kroll/pkg/cluster/clustertest"
	"github.com/kroll-dev/kroll/pkg/failure"
	"github.com/kroll-dev/kroll/pkg/kubelet"
	"github.com/kroll-dev/kroll/pkg/metrics"
	"github.com/kroll-dev/kroll/pkg/timeline"
)

// annotateWorkload adds annotations (key, value, key, value…) to the workload name in
// manifest, after any it has.
func annotateWorkload(manifest, name string, kv ...string) string {
	var b strings.Builder
	for i := 0; i+1 < len(kv); i += 2 {
		fmt.Fprintf(&b, "    %s: %q\n", kv[i], kv[i+1])
	}
	head := "  name: " + name + "\n"
	if strings.Contains(manifest, head+"  annotations:\n") {
		return strings.Replace(manifest, head+"  annotations:\n", head+"  annotations:\n"+b.String(), 1)
	}
	return strings.Replace(manifest, head, head+"  annotations:\n"+b.String(), 1)
}

// setsCondition is a workload's ("statefulset/web", "daemonset/logs") condition of
// type ct as "Status/Reason: message"; "/: " when it has none.
func (s *scene) setsCondition(t *testing.T, workload, ct string) string {
	t.Helper()
	type cond struct{ status, reason, message string }
	var conds []cond
	if workload == "statefulset/web" {
		for _, c := range s.statefulSet(t).Status.Conditions {
			if string(c.Type) == ct {
				conds = append(conds, cond{string(c.Status), c.Reason, c.Message})
			}
		}
	} else {
		for _, c := range s.daemonSet(t).Status.Conditions {
			if string(c.Type) == ct {
				conds = append(conds, cond{string(c.Status), c.Reason, c.Message})
			}
		}
	}
	if len(conds) == 0 {
		return "/: "
	}
	return conds[0].status + "/" + conds[0].reason + ": " + conds[0].message
}

// waitSetsCondition waits until the condition ct of workload matches the pattern want.
func (s *scene) waitSetsCondition(t *testing.T, workload, ct, want string) string {
	t.Helper()
	re := regexp.MustCompile(want)
	var got string
	eventually(t, 2*time.Minute, workload+" condition "+ct+" ~ "+want, func(context.Context) (bool, string) {
		got = s.setsCondition(t, workload, ct)
		return re.MatchString(got), got
	})
	return got
}

// setsAnnotation is one annotation of a workload.
func (s *scene) setsAnnotation(t *testing.T, workload, key string) string {
	t.Helper()
	return s.kubectl(t, "get", workload, "-o", "jsonpath={.metadata.annotations."+strings.NewReplacer(".", `\.`, "/", `\/`).Replace(key)+"}")
}

// deploymentRollbacks is held by a test while it expects
// kroll_rollouts_rolled_back_total{kind="Deployment"} to go up by an exact number, and
// by any other test whose in-process controllers roll a Deployment back.
var deploymentRollbacks sync.Mutex

// setRollbacks is held by testHealSets for its whole run, as it counts how much the
// StatefulSet and DaemonSet rollback and pause counters go up, and by any other test
// while its in-process controllers roll back or pause a StatefulSet or DaemonSet (an
// abort counts as a rollback).
var setRollbacks sync.Mutex

// setsCounter is the value of kroll's counter name{kind} in this process.
func setsCounter(t *testing.T, name, kind string) float64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "kind" && l.GetValue() == kind {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// imageWatch counts the pods of a namespace ever created with each image: the damage
// a failed rollout did.
type imageWatch struct {
	mu   sync.Mutex
	uids map[string]map[string]bool
}

func watchImages(t *testing.T, s *scene) *imageWatch {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	w, err := s.c.Client.CoreV1().Pods(s.ns).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	iw := &imageWatch{uids: map[string]map[string]bool{}}
	go func() {
		defer w.Stop()
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok || ev.Type == watch.Error {
				continue
			}
			iw.mu.Lock()
			for _, c := range p.Spec.Containers {
				if iw.uids[c.Image] == nil {
					iw.uids[c.Image] = map[string]bool{}
				}
				iw.uids[c.Image][string(p.UID)] = true
			}
			iw.mu.Unlock()
		}
	}()
	return iw
}

// pods is how many pods ran image.
func (iw *imageWatch) pods(image string) int {
	iw.mu.Lock()
	defer iw.mu.Unlock()
	return len(iw.uids[image])
}

// minReady is the minReadySeconds a workload rolling out image needs to see its pods
// fail. A crash-looping container without a readiness probe is Ready for the moment it
// runs (here 1 s before each crash, as on a real node): without minReadySeconds an
// OrderedReady StatefulSet or a DaemonSet moves past it, to the next pod, before it
// crashes, and the whole rollout can complete on a crashing image before anything
// fails. With minReadySeconds 2 the rollout waits for the pod to stay Ready 2 s, and
// sees it crash first.
func minReady(image string) string {
	if strings.HasSuffix(image, ":crash") {
		return "  minReadySeconds: 2\n"
	}
	return ""
}

// allAtOnce is a DaemonSet's updateStrategy that replaces every pod at once.
const allAtOnce = "  updateStrategy:\n    rollingUpdate:\n      maxUnavailable: 100%\n"

// expectSetRolledBack checks what a rollback from revision 2 to 1 of workload leaves: its
// record, one pod of image (the failure threshold), the RolledBack event, and kroll's
// status verbs exiting 1 with the RolloutFailed line.
func (s *scene) expectSetRolledBack(t *testing.T, workload string, iw *imageWatch, image string) {
	t.Helper()
	if got := s.setsAnnotation(t, workload, failure.RolledBackFromAnnotation); got != "2" {
		t.Errorf("rolled-back-from %q, want 2", got)
	}
	if n := iw.pods(image); n != 1 {
		t.Errorf("%d pods ran %s, want 1 (the failure threshold)", n, image)
	}
	s.expectEvent(t, failure.EventRolledBack, "rolled back from revision 2 to 1")
	expectTimelineRolledBack(t, workload, s.setsAnnotation(t, workload, timeline.Annotation))
	_, msg, _ := strings.Cut(s.setsCondition(t, workload, failure.ConditionRolloutFailed), ": ")
	kind, name, _ := strings.Cut(workload, "/")
	s.expectKrollStatusFails(t, kind, name, msg)
}

// krollResume runs kroll rollout resume on workload and checks kubectl's line.
func (s *scene) krollResume(t *testing.T, workload string) {
	t.Helper()
	kroll := krollCLI{t: t, bin: krollBinary(t), kubeconfig: s.c.KubeconfigPath, ns: s.ns}
	kind, name, _ := strings.Cut(workload, "/")
	if got, want := kroll.must("rollout", "resume", workload), kind+".apps/"+name+" resumed\n"; got != want {
		t.Errorf("kroll rollout resume %s: %q, want %q", workload, got, want)
	}
}

// TestHealing runs the self-healing scenarios of Deployments and of StatefulSets and
// DaemonSets side by side, with the package's other parallel tests. Both read kroll's
// rollout metrics, which count the controllers of every cluster in the process, each
// its own kinds' counters; where a check wants a counter to have gone up by exactly so
// much, no other test may make it count meanwhile: deploymentRollbacks.
func TestHealing(t *testing.T) {
	t.Parallel()
	t.Run("Deployments", func(t *testing.T) { t.Parallel(); testDeploymentHealsItself(t) })
	t.Run("StatefulSets and DaemonSets", func(t *testing.T) { t.Parallel(); testHealSets(t) })
}

// Given StatefulSets (RollingUpdate, partition 0, OrderedReady) and DaemonSets with
// kroll.dev/on-failure, when a rollout's new pods crash-loop, cannot pull their image,
// or are not Ready in time, then kroll rolls the workload back (or pauses it) once,
// with at most failure-threshold failed pods, and says so in a RolloutFailed condition,
// a Warning event and a metric. Upstream's controllers wait for ever in the same
// situations: a StatefulSet for the pod to be Running and Ready, a DaemonSet for the
// unavailable new pod that uses its maxUnavailable; neither has a progress deadline.
//
// Run by TestHealing.
func testHealSets(t *testing.T) {
	rules, err := kubelet.NewFaultRules(
		kubelet.FaultRule{Image: "*:crash", Fault: "CrashLoopBackOff"},
		kubelet.FaultRule{Image: "*:slow", Fault: "ReadyAfter(6s)"},
		kubelet.FaultRule{Image: "*:stuck", Fault: "NeverReady"},
	)
	if err != nil {
		t.Fatal(err)
	}
	c := clustertest.Start(t, clustertest.WithNodes(3), clustertest.WithKubelet(func(k *kubelet.Config) {
		k.Faults = rules
		k.CrashLoopBackOff = 500 * time.Millisecond
	}))
	setRollbacks.Lock()
	defer setRollbacks.Unlock()
	before := map[string]float64{}
	for _, kind := range []string{"StatefulSet", "DaemonSet"} {
		before["rb"+kind] = setsCounter(t, "kroll_rollouts_rolled_back_total", kind)
		before["p"+kind] = setsCounter(t, "kroll_rollouts_paused_on_failure_total", kind)
	}

	// stsRollback: web (3 replicas) with on-failure Rollback rolls out revision 1, then
	// image; it ends back on revision 1 (renumbered 3), every pod Ready, after one
	// failed pod (web-2, the first OrderedReady updates) with reason.
	stsRollback := func(t *testing.T, s *scene, extra []string, image, reason string) {
		m := annotateWorkload(statefulSetManifest(3, minReady(image)), "web", append([]string{failure.OnFailureAnnotation, "Rollback"}, extra...)...)
		s.apply(t, m)
		s.waitSTS(t, "web-0=r1 web-1=r1 web-2=r1")
		iw := watchImages(t, s)
		w := clustertest.WatchStatefulSet(t, s.c.Client, s.ns, "web")
		s.kubectl(t, "set", "image", "statefulset/web", "nginx="+image)
		s.waitSetsCondition(t, "statefulset/web", failure.ConditionRolloutFailed,
			`^True/`+reason+`: .*1 new pods failed, threshold 1( \(web-2: .*\))?; rolled back from revision 2 to 1$`)
		s.waitSTS(t, "web-0=r3 web-1=r3 web-2=r3")
		s.expectSetRolledBack(t, "statefulset/web", iw, image)
		w.Verify(t, 3)
		// No loop: the restored revision is not judged, the bad one not retried.
		gen := s.statefulSet(t).Generation
		holdsFor(t, 2*time.Second, 100*time.Millisecond, "the restored revision, untouched", func(context.Context) (bool, string) {
			set := s.statefulSet(t)
			return set.Generation == gen && set.Spec.Template.Spec.Containers[0].Image == "nginx:1.14.2",
				fmt.Sprintf("generation %d→%d, image %s", gen, set.Generation, set.Spec.Template.Spec.Containers[0].Image)
		})
	}
	// dsRollback: logs on 3 nodes with on-failure Rollback, then image: back on
	// fluentd:v1 after one failed pod.
	dsRollback := func(t *testing.T, s *scene, image, reason string) {
		s.apply(t, annotateWorkload(daemonSetManifest(minReady(image), ""), "logs", failure.OnFailureAnnotation, "Rollback"))
		s.waitDS(t, onNodes("fluentd:v1", 0, 1, 2))
		iw := watchImages(t, s)
		w := clustertest.WatchDaemonSet(t, s.c.Client, s.ns, "logs")
		s.kubectl(t, "set", "image", "daemonset/logs", "agent="+image)
		s.waitSetsCondition(t, "daemonset/logs", failure.ConditionRolloutFailed,
			`^True/`+reason+`: 1 of 1 new pods failed, threshold 1 \(logs-\w+: .*\); rolled back from revision 2 to 1$`)
		s.waitDS(t, onNodes("fluentd:v1", 0, 1, 2))
		s.expectSetRolledBack(t, "daemonset/logs", iw, image)
		w.Verify(t, 3)
		gen := s.daemonSet(t).Generation
		holdsFor(t, 2*time.Second, 100*time.Millisecond, "the restored revision, untouched", func(context.Context) (bool, string) {
			ds := s.daemonSet(t)
			return ds.Generation == gen, fmt.Sprintf("generation %d→%d", gen, ds.Generation)
		})
	}

	t.Run("scenarios", func(t *testing.T) {
		for _, sc := range []struct {
			name string
			run  func(t *testing.T, s *scene)
		}{
			{"sts-crash", func(t *testing.T, s *scene) { stsRollback(t, s, nil, "app:crash", "PodsFailing") }},
			{"sts-pull", func(t *testing.T, s *scene) { stsRollback(t, s, nil, "nginx:nonexistent", "PodsFailing") }},
			// A pod that runs but never becomes Ready is not failed without a ready
			// timeout: the progress deadline (5 s) catches it.
			{"sts-deadline", func(t *testing.T, s *scene) {
				stsRollback(t, s, []string{failure.ProgressDeadlineAnnotation, "5"}, "app:stuck", "ProgressDeadlineExceeded")
				if got := s.setsCondition(t, "statefulset/web", failure.ConditionProgressing); !strings.HasPrefix(got, "True/NewRevisionAvailable: ") {
					t.Errorf("Progressing %q, want True/NewRevisionAvailable after the rollback", got)
				}
			}},
			{"ds-crash", func(t *testing.T, s *scene) { dsRollback(t, s, "app:crash", "PodsFailing") }},
			{"ds-pull", func(t *testing.T, s *scene) { dsRollback(t, s, "fluentd:nonexistent", "PodsFailing") }},
			// All at once: with maxUnavailable 100% (as on one node) every old pod is
			// replaced before a new one can fail, so no old pod is left while the new
			// ones crash-loop: revision 2 is judged all the same until it completes
			// once (kroll.dev/complete on its ControllerRevision), and rolled back.
			// Revision 1 completed: its revision is marked before the change.
			{"ds-all-at-once", func(t *testing.T, s *scene) {
				s.apply(t, annotateWorkload(daemonSetManifest(minReady("app:crash")+allAtOnce, ""), "logs", failure.OnFailureAnnotation, "Rollback"))
				s.waitDS(t, onNodes("fluentd:v1", 0, 1, 2))
				eventually(t, time.Minute, "revision 1 marked complete", func(ctx context.Context) (bool, string) {
					revs, err := s.c.Client.AppsV1().ControllerRevisions(s.ns).List(ctx, metav1.ListOptions{LabelSelector: "app=logs"})
					if err != nil || len(revs.Items) != 1 {
						return false, fmt.Sprintf("%v %v", revs, err)
					}
					return revs.Items[0].Annotations[failure.CompleteAnnotation] == "true", fmt.Sprint(revs.Items[0].Annotations)
				})
				iw := watchImages(t, s)
				s.kubectl(t, "set", "image", "daemonset/logs", "agent=app:crash")
				s.waitSetsCondition(t, "daemonset/logs", failure.ConditionRolloutFailed,
					`^True/PodsFailing: [1-3] of [1-3] new pods failed, threshold 1 \(logs-\w+: .*\); rolled back from revision 2 to 1$`)
				s.waitDS(t, onNodes("fluentd:v1", 0, 1, 2))
				if got := s.setsAnnotation(t, "daemonset/logs", failure.RolledBackFromAnnotation); got != "2" {
					t.Errorf("rolled-back-from %q, want 2", got)
				}
				if n := iw.pods("app:crash"); n > 3 {
					t.Errorf("%d pods ran app:crash, want at most 3 (one per node, replaced once)", n)
				}
				s.expectEvent(t, failure.EventRolledBack, "rolled back from revision 2 to 1")
				if got := s.setsAnnotation(t, "daemonset/logs", failure.RolloutFailedAnnotation); got != "" {
					t.Errorf("%s left on the DaemonSet after its report: %q", failure.RolloutFailedAnnotation, got)
				}
			}},
			// Pause: web-2's new pod is not Ready 2 s after starting (it would be at 6 s):
			// the partition goes up to 2 and holds web-0 and web-1; kroll rollout resume
			// (the partition back from partition-before-pause) lets the rollout finish,
			// and it is not paused again for that revision.
			{"sts-pause", func(t *testing.T, s *scene) {
				s.apply(t, annotateWorkload(statefulSetManifest(3, ""), "web", failure.OnFailureAnnotation, "Pause", failure.ReadyTimeoutAnnotation, "2s"))
				s.waitSTS(t, "web-0=r1 web-1=r1 web-2=r1")
				s.kubectl(t, "set", "image", "statefulset/web", "nginx=app:slow")
				s.waitSetsCondition(t, "statefulset/web", failure.ConditionRolloutFailed,
					`^True/PodsFailing: 1 of 1 new pods failed, threshold 1 \(web-2: not Ready 2s after starting\); paused on revision 2$`)
				set := s.statefulSet(t)
				if p := set.Spec.UpdateStrategy.RollingUpdate.Partition; p == nil || *p != 2 ||
					set.Annotations[failure.PartitionBeforePauseAnnotation] != "0" || set.Annotations[failure.PausedOnFailureAnnotation] != "2" {
					t.Fatalf("partition %v, annotations %v; want 2, partition-before-pause 0, paused-on-failure 2", deref(p), set.Annotations)
				}
				s.expectEvent(t, failure.EventRolloutPaused, "paused on revision 2")
				// app:slow's pod turns Ready within the 7s: the rollout still stays.
				holdsFor(t, 7*time.Second, 200*time.Millisecond, "paused, the pods where they were", func(context.Context) (bool, string) {
					got := s.stsPods(t)
					return got == "web-0=r1 web-1=r1 web-2=r2", got
				})
				s.krollResume(t, "statefulset/web")
				s.waitSTS(t, "web-0=r2 web-1=r2 web-2=r2")
				if p := s.statefulSet(t).Spec.UpdateStrategy.RollingUpdate.Partition; deref(p) != 0 {
					t.Errorf("paused again: partition %d", deref(p))
				}
			}},
			{"ds-pause", func(t *testing.T, s *scene) {
				s.apply(t, annotateWorkload(daemonSetManifest("", ""), "logs", failure.OnFailureAnnotation, "Pause", failure.ReadyTimeoutAnnotation, "2s"))
				s.waitDS(t, onNodes("fluentd:v1", 0, 1, 2))
				s.kubectl(t, "set", "image", "daemonset/logs", "agent=app:slow")
				s.waitSetsCondition(t, "daemonset/logs", failure.ConditionRolloutFailed,
					`^True/PodsFailing: 1 of 1 new pods failed, threshold 1 \(logs-\w+: not Ready 2s after starting\); paused on revision 2$`)
				if ds := s.daemonSet(t); ds.Annotations[failure.PausedAnnotation] != "true" || ds.Annotations[failure.PausedOnFailureAnnotation] != "2" {
					t.Fatalf("annotations %v; want paused true, paused-on-failure 2", ds.Annotations)
				}
				s.expectEvent(t, failure.EventRolloutPaused, "paused on revision 2")
				// app:slow's pod turns Ready within the 7s: the rollout still stays.
				holdsFor(t, 7*time.Second, 200*time.Millisecond, "paused, the pods where they were", func(context.Context) (bool, string) {
					got := s.dsPods(t)
					return strings.Count(got, "app:slow") == 1 && strings.Count(got, "fluentd:v1") == 2, got
				})
				s.krollResume(t, "daemonset/logs")
				s.waitDS(t, onNodes("app:slow", 0, 1, 2))
			}},
			// Bad values: a Warning event and a FailurePolicy condition naming the
			// annotation and the accepted values; the workload behaves as with None.
			{"bad-annotations", func(t *testing.T, s *scene) {
				s.withoutAdmissionPolicy(t) // the API server would refuse the bad values
				s.apply(t, annotateWorkload(statefulSetManifest(1, ""), "web", failure.OnFailureAnnotation, "Rollback", failure.ThresholdAnnotation, "abc"))
				s.apply(t, annotateWorkload(daemonSetManifest("", ""), "logs", failure.OnFailureAnnotation, "Sometimes"))
				s.waitSetsCondition(t, "statefulset/web", failure.ConditionFailurePolicy,
					`^False/InvalidAnnotation: kroll.dev/failure-threshold="abc" is not valid: want a whole number .*as with kroll.dev/on-failure=None\)$`)
				s.waitSetsCondition(t, "daemonset/logs", failure.ConditionFailurePolicy,
					`^False/InvalidAnnotation: kroll.dev/on-failure="Sometimes" is not valid: want Rollback, Pause or None;`)
				s.expectEvent(t, failure.EventInvalidFailurePolicy, `kroll.dev/failure-threshold="abc"`)
				s.expectEvent(t, failure.EventInvalidFailurePolicy, `kroll.dev/on-failure="Sometimes"`)
				s.waitSTS(t, "web-0=r1")
				s.kubectl(t, "set", "image", "statefulset/web", "nginx=nginx:nonexistent")
				// The pull fails within the first second; a valid policy would act on it
				// within the window.
				holdsFor(t, 3*time.Second, 100*time.Millisecond, "no rollback under an invalid policy", func(context.Context) (bool, string) {
					got := s.setsAnnotation(t, "statefulset/web", failure.RolledBackFromAnnotation)
					return got == "", "rolled-back-from " + strconv.Quote(got)
				})
				s.kubectl(t, "annotate", "statefulset/web", failure.ThresholdAnnotation+"-")
				s.waitSetsCondition(t, "statefulset/web", failure.ConditionRolloutFailed, `^True/PodsFailing: `)
				if got := s.setsCondition(t, "statefulset/web", failure.ConditionFailurePolicy); got != "/: " {
					t.Errorf("FailurePolicy %q after the fix, want none", got)
				}
			}},
			// In place: web-2 is updated to the crashing image in place, and rolled back
			// in place: every pod keeps its UID.
			{"sts-inplace", func(t *testing.T, s *scene) {
				s.apply(t, annotateWorkload(optIn(statefulSetManifest(3, minReady("app:crash")), "web"), "web", failure.OnFailureAnnotation, "Rollback"))
				s.waitSTS(t, "web-0=r1 web-1=r1 web-2=r1")
				before := s.podRecords(t, "nginx")
				s.kubectl(t, "set", "image", "statefulset/web", "nginx=app:crash")
				s.waitSetsCondition(t, "statefulset/web", failure.ConditionRolloutFailed, `; rolled back from revision 2 to 1$`)
				s.waitSTS(t, "web-0=r3 web-1=r3 web-2=r3")
				after := s.podRecords(t, "nginx")
				for uid, b := range before {
					if a, ok := after[uid]; !ok || a.image != "nginx:1.14.2" {
						t.Errorf("pod %s (uid %s) replaced or not restored in place: %+v", b.name, uid, a)
					}
				}
			}},
		} {
			t.Run(sc.name, func(t *testing.T) {
				t.Parallel()
				s := newScene(t, c, "heal-"+sc.name, cluster.WorkloadControllersKroll)
				t.Cleanup(func() {
					if t.Failed() {
						out, _ := s.tryKubectl(t, "get", "statefulsets,daemonsets,controllerrevisions,pods,events", "-o", "yaml")
						t.Logf("state at failure:\n%s", out)
					}
				})
				sc.run(t, s)
			})
		}
	})

	// Each action counted once, after its write.
	for _, want := range []struct {
		metric, kind string
		n            float64
	}{
		{"kroll_rollouts_rolled_back_total", "StatefulSet", 5},
		{"kroll_rollouts_rolled_back_total", "DaemonSet", 3},
		{"kroll_rollouts_paused_on_failure_total", "StatefulSet", 1},
		{"kroll_rollouts_paused_on_failure_total", "DaemonSet", 1},
	} {
		key := "p" + want.kind
		if strings.Contains(want.metric, "rolled_back") {
			key = "rb" + want.kind
		}
		if got := setsCounter(t, want.metric, want.kind) - before[key]; got != want.n {
			t.Errorf("%s{kind=%q} went up by %v, want %v", want.metric, want.kind, got, want.n)
		}
	}
}
