package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kroll-dev/kroll/pkg/cluster"
	"github.com/kroll-dev/kroll/pkg/cluster/clustertest"
	"github.com/kroll-dev/kroll/pkg/controller"
	"github.com/kroll-dev/kroll/pkg/failure"
	"github.com/kroll-dev/kroll/pkg/staging"
)

// heldNodesWatch fails an observed state in which a node the partition holds runs a
// pod of image while the hold stands: the old revision never drops below the partition
// once reached.
type heldNodesWatch struct {
	mu         sync.Mutex
	held       map[string]bool
	holding    atomic.Bool
	observed   int
	violations []string
	// created are the violating pods' creation times, by violation.
	created []time.Time
}

func watchHeldNodes(t *testing.T, s *scene, image string, held ...int) *heldNodesWatch {
	t.Helper()
	hw := &heldNodesWatch{held: map[string]bool{}}
	for _, n := range held {
		hw.held[fmt.Sprintf("kroll-node-%d", n)] = true
	}
	hw.holding.Store(true)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	w, err := s.c.Client.CoreV1().Pods(s.ns).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		defer w.Stop()
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok || ev.Type == watch.Deleted {
				continue
			}
			hw.mu.Lock()
			hw.observed++
			if hw.holding.Load() && hw.held[p.Spec.NodeName] && p.Spec.Containers[0].Image == image {
				hw.violations = append(hw.violations, fmt.Sprintf("%s on held node %s runs %s", p.Name, p.Spec.NodeName, image))
				hw.created = append(hw.created, p.CreationTimestamp.Time)
			}
			hw.mu.Unlock()
		}
	}()
	return hw
}

func (hw *heldNodesWatch) verify(t *testing.T, minObserved int) {
	t.Helper()
	hw.verifyBefore(t, minObserved, time.Time{})
}

// verifyBefore is verify for a hold that ended by itself at until (an analysis that
// promoted the step): a pod created since, in the same second or later, may run the
// image; the zero time is verify's hold that the test ends.
func (hw *heldNodesWatch) verifyBefore(t *testing.T, minObserved int, until time.Time) {
	t.Helper()
	hw.mu.Lock()
	defer hw.mu.Unlock()
	for i, v := range hw.violations {
		if until.IsZero() || hw.created[i].Before(until.Truncate(time.Second)) {
			t.Errorf("partition broken: %s", v)
		}
	}
	if hw.observed < minObserved {
		t.Errorf("only %d pod states observed, want at least %d", hw.observed, minObserved)
	}
}

// partitionWatch records the distinct values web's partition field took, in order.
type partitionWatch struct {
	mu     sync.Mutex
	values []int32
}

func watchPartition(t *testing.T, s *scene) *partitionWatch {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	w, err := s.c.Client.AppsV1().StatefulSets(s.ns).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pw := &partitionWatch{}
	go func() {
		defer w.Stop()
		for ev := range w.ResultChan() {
			set, ok := ev.Object.(*appsv1.StatefulSet)
			if !ok {
				continue
			}
			p := int32(0)
			if ru := set.Spec.UpdateStrategy.RollingUpdate; ru != nil && ru.Partition != nil {
				p = *ru.Partition
			}
			pw.mu.Lock()
			if len(pw.values) == 0 || pw.values[len(pw.values)-1] != p {
				pw.values = append(pw.values, p)
			}
			pw.mu.Unlock()
		}
	}()
	return pw
}

func (pw *partitionWatch) String() string {
	pw.mu.Lock()
	defer pw.mu.Unlock()
	return fmt.Sprint(pw.values)
}

// Staged rollouts of StatefulSets and DaemonSets, on one cluster of 10 nodes:
// kroll.dev/partition holds the first nodes by name on a DaemonSet, kroll.dev/rollout-steps
// drive a StatefulSet's partition field and stop a DaemonSet at a pause, kroll rollout
// promote and abort move them on or back, and bad values are reported once.
func TestStagedSets(t *testing.T) {
	t.Parallel()
	bin := krollBinary(t)
	// kroll's controllers run beside the cluster (not inside it), so that a scenario can
	// restart them.
	c := clustertest.Start(t, clustertest.WithNodes(10), clustertest.WithWorkloadControllers(cluster.WorkloadControllersNone))
	top := t // the controllers live as long as the whole test
	stop := startKrollControllers(top, c)
	defer func() { stop() }()
	kroll := func(t *testing.T, s *scene) krollCLI {
		return krollCLI{t: t, bin: bin, kubeconfig: c.KubeconfigPath, ns: s.ns}
	}
	all := []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}
	// scene makes a namespace for one scenario; if the scenario fails, what its
	// workloads and events looked like is logged.
	scene := func(t *testing.T, ns string) *scene {
		s := newScene(t, c, ns, cluster.WorkloadControllersKroll)
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("at the failure:\n%s", s.kubectl(t, "get", "daemonsets,statefulsets,controllerrevisions,pods,events", "-o", "wide"))
				t.Logf("%s", s.kubectl(t, "get", "daemonsets,statefulsets", "-o", "yaml"))
			}
		})
		return s
	}

	// A DaemonSet over 10 nodes with partition 7: the last 3 nodes by name run the new
	// revision and it stays so; partition 0 finishes.
	t.Run("daemonset-partition", func(t *testing.T) {
		s := scene(t, "ds-partition")
		s.apply(t, annotateWorkload(daemonSetManifest("", ""), "logs", staging.PartitionAnnotation, "7"))
		s.waitDS(t, onNodes("fluentd:v1", all...))
		w := clustertest.WatchDaemonSet(t, s.c.Client, s.ns, "logs")
		// The plan shows where the partition holds: the last 3 nodes by name, then held.
		plan := kroll(t, s).must("rollout", "plan", "daemonset/logs", "--image", "agent=fluentd:v2")
		for _, line := range []string{"replace on kroll-node-7", "replace on kroll-node-9",
			"note: partition 7: batches 1–3 (3 of 10 updated), then held at kroll.dev/partition: lower or remove it to go on",
			"note: the first 7 nodes by name keep logs-"} {
			if !strings.Contains(plan, line) || strings.Contains(plan, "replace on kroll-node-6") {
				t.Errorf("rollout plan has no %q (or replaces a held node):\n%s", line, plan)
			}
		}
		hw := watchHeldNodes(t, s, "fluentd:v2", 0, 1, 2, 3, 4, 5, 6)
		s.kubectl(t, "set", "image", "daemonset/logs", "agent=fluentd:v2")
		want := onNodes("fluentd:v1", 0, 1, 2, 3, 4, 5, 6) + " " + onNodes("fluentd:v2", 7, 8, 9)
		s.waitSetsCondition(t, "daemonset/logs", staging.ConditionType,
			`^True/PartitionReached: partition 7 reached: 3 of 10 updated, 7 kept on the old revisions$`)
		holdsFor(t, 2*time.Second, 100*time.Millisecond, "held at partition 7: "+want, func(context.Context) (bool, string) {
			got := s.dsPods(t)
			return got == want, got
		})
		if st := s.daemonSet(t).Status; st.UpdatedNumberScheduled != 3 || st.NumberAvailable != 10 {
			t.Errorf("status at partition 7: %s", dsStatus(s.daemonSet(t)))
		}
		s.expectEvent(t, staging.EventReason, "partition 7 reached")
		hw.verify(t, 6)
		hw.holding.Store(false)
		s.kubectl(t, "annotate", "--overwrite", "daemonset/logs", staging.PartitionAnnotation+"=0")
		s.waitDS(t, onNodes("fluentd:v2", all...))
		s.waitSetsCondition(t, "daemonset/logs", staging.ConditionType, `^/: $`)
		w.Verify(t, 10)
	})

	// In place: partition 8 updates the pods of the last 2 nodes by name where they run
	// (no pod is created or deleted); removing the partition finishes in place.
	t.Run("daemonset-in-place-partition", func(t *testing.T) {
		s := scene(t, "ds-in-place")
		s.apply(t, annotateWorkload(optIn(daemonSetManifest("", ""), "logs"), "logs", staging.PartitionAnnotation, "8"))
		s.waitDS(t, onNodes("fluentd:v1", all...))
		names := func() string { return strings.Join(s.podNames(t, "app=logs"), " ") }
		before := names()
		hw := watchHeldNodes(t, s, "fluentd:v2", 0, 1, 2, 3, 4, 5, 6, 7)
		s.kubectl(t, "set", "image", "daemonset/logs", "agent=fluentd:v2")
		s.waitSetsCondition(t, "daemonset/logs", staging.ConditionType, `^True/PartitionReached: partition 8 reached: 2 of 10 updated`)
		if got, want := s.dsPods(t), onNodes("fluentd:v1", 0, 1, 2, 3, 4, 5, 6, 7)+" "+onNodes("fluentd:v2", 8, 9); got != want || names() != before {
			t.Fatalf("at partition 8: %s, want %s; pods %s, want the same as before (%s)", got, want, names(), before)
		}
		hw.verify(t, 4)
		hw.holding.Store(false)
		s.kubectl(t, "annotate", "daemonset/logs", staging.PartitionAnnotation+"-")
		s.waitDS(t, onNodes("fluentd:v2", all...))
		if names() != before {
			t.Errorf("pods %s, want the same as before (%s): an in-place update creates none", names(), before)
		}
	})

	// A StatefulSet of 5 with steps: the partition field follows them (5 → 4 at 20%,
	// 2 at 60%); promote moves past the bare pause; abort at the second share step
	// brings every pod back to the old revision and the partition to 0.
	t.Run("statefulset-steps", func(t *testing.T) {
		s := scene(t, "sts-steps")
		s.apply(t, annotateWorkload(statefulSetManifest(5, ""), "web", staging.StepsAnnotation, "20%, pause, 60%, pause, 100%"))
		s.waitSTS(t, "web-0=r1 web-1=r1 web-2=r1 web-3=r1 web-4=r1")
		plan := kroll(t, s).must("rollout", "plan", "statefulset/web", "--image", "nginx=nginx:1.16.1")
		if !strings.Contains(plan, "note: step 1/5: 20%: batch 1 (1 of 5 updated), then paused until promoted (kroll rollout promote)") ||
			!strings.Contains(plan, "note: step 3/5: 60%: batches 2–3 (3 of 5 updated), then paused until promoted") {
			t.Errorf("rollout plan does not show the steps:\n%s", plan)
		}
		w := clustertest.WatchStatefulSet(t, s.c.Client, s.ns, "web")
		pw := watchPartition(t, s)
		s.kubectl(t, "set", "image", "statefulset/web", "nginx=nginx:1.16.1")
		s.waitSetsCondition(t, "statefulset/web", staging.ConditionType, `^True/StepPaused: step 1/5: 20% \(1 of 5 updated\), paused until promoted$`)
		s.waitSTS(t, "web-0=r1 web-1=r1 web-2=r1 web-3=r1 web-4=r2")
		if got := s.setsAnnotation(t, "statefulset/web", staging.StepAnnotation); got != "1/5" {
			t.Errorf("step record %q, want 1/5", got)
		}
		kroll(t, s).must("rollout", "promote", "statefulset/web")
		s.waitSetsCondition(t, "statefulset/web", staging.ConditionType, `^True/StepPaused: step 3/5: 60% \(3 of 5 updated\), paused until promoted$`)
		s.waitSTS(t, "web-0=r1 web-1=r1 web-2=r2 web-3=r2 web-4=r2")
		if got := pw.String(); got != "[0 4 2]" {
			t.Errorf("partition went %s, want [0 4 2]", got)
		}
		s.expectEvent(t, staging.EventReason, "step 1/5: 20% (1 of 5 updated), paused until promoted")
		s.expectEvent(t, staging.EventReason, "step 3/5: 60% (3 of 5 updated), paused until promoted")
		// kroll rollout abort writes kroll.dev/abort naming the update revision; a
		// StatefulSet held at a step is not complete, so the verb takes it.
		update := s.statefulSet(t).Status.UpdateRevision
		setRollbacks.Lock()
		defer setRollbacks.Unlock()
		if got, want := kroll(t, s).must("rollout", "abort", "statefulset/web"), "statefulset.apps/web abort of revision "+update+" requested\n"; got != want {
			t.Errorf("kroll rollout abort: %q, want %q", got, want)
		}
		s.waitSetsCondition(t, "statefulset/web", failure.ConditionRolloutFailed, `^True/Aborted: aborted by request; rolled back from revision 2 to 1$`)
		s.waitSTS(t, "web-0=r3 web-1=r3 web-2=r3 web-3=r3 web-4=r3")
		eventually(t, 30*time.Second, "partition 0 and no step record", func(context.Context) (bool, string) {
			set := s.statefulSet(t)
			_, recorded := set.Annotations[staging.StepAnnotation]
			_, abort := set.Annotations[staging.AbortAnnotation]
			return deref(set.Spec.UpdateStrategy.RollingUpdate.Partition) == 0 && !recorded && !abort, fmt.Sprint(set.Annotations)
		})
		s.expectEvent(t, failure.EventRolledBack, "aborted by request; rolled back from revision 2 to 1")
		if got := pw.String(); got != "[0 4 2 0]" {
			t.Errorf("partition went %s, want [0 4 2 0]", got)
		}
		w.Verify(t, 10)
	})

	// The controllers restarted at every step boundary: the step record goes 0/5 to
	// 5/5 one step at a time, never skipping or repeating one, and the partition
	// follows (5 → 4 → 2 → 0).
	t.Run("statefulset-steps-restarts", func(t *testing.T) {
		s := scene(t, "sts-restarts")
		s.apply(t, annotateWorkload(statefulSetManifest(5, ""), "web", staging.StepsAnnotation, "20%, pause: 1s, 60%, pause: 1s, 100%"))
		s.waitSTS(t, "web-0=r1 web-1=r1 web-2=r1 web-3=r1 web-4=r1")
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		sets, err := s.c.Client.AppsV1().StatefulSets(s.ns).Watch(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer sets.Stop()
		w := clustertest.WatchStatefulSet(t, s.c.Client, s.ns, "web")
		pw := watchPartition(t, s)
		s.kubectl(t, "set", "image", "statefulset/web", "nginx=nginx:1.16.1")
		var steps []string
		deadline := time.After(90 * time.Second)
		for len(steps) == 0 || steps[len(steps)-1] != "5/5" {
			select {
			case ev := <-sets.ResultChan():
				set, ok := ev.Object.(*appsv1.StatefulSet)
				step := ""
				if ok {
					step = set.Annotations[staging.StepAnnotation]
				}
				if step == "" || (len(steps) > 0 && steps[len(steps)-1] == step) {
					continue
				}
				steps = append(steps, step)
				stop() // at the boundary, before the step is acted on
				stop = startKrollControllers(top, c)
			case <-deadline:
				t.Fatalf("steps seen %v, not done in 90s", steps)
			}
		}
		if got := fmt.Sprint(steps); got != "[0/5 1/5 2/5 3/5 4/5 5/5]" {
			t.Errorf("step records %s, want each of 0/5…5/5 once, in order", got)
		}
		s.waitSTS(t, "web-0=r2 web-1=r2 web-2=r2 web-3=r2 web-4=r2")
		if got := pw.String(); got != "[0 4 2 0]" {
			t.Errorf("partition went %s, want [0 4 2 0]", got)
		}
		w.Verify(t, 10)
	})

	// A DaemonSet with steps stops at its bare pause with 3 of 10 nodes updated (the
	// last 3 by name); promote finishes it.
	t.Run("daemonset-steps", func(t *testing.T) {
		s := scene(t, "ds-steps")
		s.apply(t, annotateWorkload(daemonSetManifest("", ""), "logs", staging.StepsAnnotation, "30%, pause, 100%"))
		s.waitDS(t, onNodes("fluentd:v1", all...))
		hw := watchHeldNodes(t, s, "fluentd:v2", 0, 1, 2, 3, 4, 5, 6)
		s.kubectl(t, "set", "image", "daemonset/logs", "agent=fluentd:v2")
		s.waitSetsCondition(t, "daemonset/logs", staging.ConditionType, `^True/StepPaused: step 1/3: 30% \(3 of 10 updated\), paused until promoted$`)
		if got, want := s.dsPods(t), onNodes("fluentd:v1", 0, 1, 2, 3, 4, 5, 6)+" "+onNodes("fluentd:v2", 7, 8, 9); got != want {
			t.Fatalf("at the pause: %s, want %s", got, want)
		}
		hw.verify(t, 6)
		hw.holding.Store(false)
		kroll(t, s).must("rollout", "promote", "daemonset/logs")
		s.waitDS(t, onNodes("fluentd:v2", all...))
		s.waitSetsCondition(t, "daemonset/logs", staging.ConditionType, `^True/StepsDone: step 3/3: all steps done \(10 of 10 updated\)$`)
		s.expectEvent(t, staging.EventReason, "step 1/3: 30% (3 of 10 updated), paused until promoted")
	})

	// Bad values: one Warning event naming the annotation; the workload rolls out as
	// without it. kroll.dev/partition on a StatefulSet names the field to use.
	t.Run("bad-values", func(t *testing.T) {
		s := scene(t, "staged-bad")
		s.withoutAdmissionPolicy(t) // the API server would refuse the bad values
		s.apply(t, annotateWorkload(daemonSetManifest("", ""), "logs", staging.PartitionAnnotation, "150%"))
		s.apply(t, annotateWorkload(statefulSetManifest(2, ""), "web", staging.PartitionAnnotation, "1"))
		s.waitDS(t, onNodes("fluentd:v1", all...))
		s.waitSTS(t, "web-0=r1 web-1=r1")
		s.kubectl(t, "set", "image", "daemonset/logs", "agent=fluentd:v2")
		s.kubectl(t, "set", "image", "statefulset/web", "nginx=nginx:1.16.1")
		s.waitDS(t, onNodes("fluentd:v2", all...))
		s.waitSTS(t, "web-0=r2 web-1=r2")
		s.waitSetsCondition(t, "daemonset/logs", staging.ConditionType, `^False/InvalidAnnotation: kroll.dev/partition="150%" is not valid: want .*; the rollout is not staged$`)
		s.waitSetsCondition(t, "statefulset/web", staging.ConditionType, `^False/InvalidAnnotation: kroll.dev/partition="1" is for Deployments and DaemonSets: .*spec.updateStrategy.rollingUpdate.partition`)
		s.expectEvent(t, controller.EventInvalidStaging, `kroll.dev/partition="150%"`)
		s.expectEvent(t, controller.EventInvalidStaging, "spec.updateStrategy.rollingUpdate.partition")
		for _, name := range []string{"logs", "web"} {
			if n := s.eventCount(t, name, controller.EventInvalidStaging); n != 1 {
				t.Errorf("%s: %d InvalidStaging events, want 1", name, n)
			}
		}
	})
}
