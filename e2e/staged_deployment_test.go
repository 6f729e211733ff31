package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/kroll-dev/kroll/pkg/cluster"
	"github.com/kroll-dev/kroll/pkg/cluster/clustertest"
	"github.com/kroll-dev/kroll/pkg/failure"
	"github.com/kroll-dev/kroll/pkg/kubelet"
	"github.com/kroll-dev/kroll/pkg/rollout"
	"github.com/kroll-dev/kroll/pkg/rolloutplan"
	"github.com/kroll-dev/kroll/pkg/staging"
)

// stagedWatch checks a staged Deployment at every change it observes of its pods: once
// the test says the partition is reached (hold), the pods on the old image (not
// terminating) never drop below it, nor rise above keepAtMost when set. It also records
// the sequence of kroll.dev/rollout-step values the Deployment carried.
type stagedWatch struct {
	mu             sync.Mutex
	oldImage       string
	pods           map[string]*corev1.Pod
	floor, ceiling int
	// floorAt is the partition each recorded step holds, once reached (nil: none).
	floorAt              map[string]int
	held                 map[string]bool
	step                 string
	observed             int
	violations, sequence []string
}

func watchStaged(t *testing.T, s *scene, name, oldImage string, floorAt map[string]int) *stagedWatch {
	w := &stagedWatch{oldImage: oldImage, pods: map[string]*corev1.Pod{}, floorAt: floorAt, held: map[string]bool{}}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	factory := informers.NewSharedInformerFactoryWithOptions(s.c.Client, 0, informers.WithNamespace(s.ns))
	podSeen := func(obj any) {
		if p, ok := obj.(*corev1.Pod); ok && p.Labels["app"] == name {
			w.mu.Lock()
			defer w.mu.Unlock()
			w.pods[p.Name] = p
			w.check()
		}
	}
	podReg, err := factory.Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    podSeen,
		UpdateFunc: func(_, cur any) { podSeen(cur) },
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			w.mu.Lock()
			defer w.mu.Unlock()
			delete(w.pods, obj.(*corev1.Pod).Name)
			w.check()
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	dSeen := func(obj any) {
		d, ok := obj.(*appsv1.Deployment)
		if !ok || d.Name != name {
			return
		}
		step, found := d.Annotations[staging.StepAnnotation]
		if !found {
			return
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		if n := len(w.sequence); n == 0 || w.sequence[n-1] != step {
			w.sequence = append(w.sequence, step)
		}
		w.step = step
	}
	dReg, err := factory.Apps().V1().Deployments().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: dSeen, UpdateFunc: func(_, cur any) { dSeen(cur) },
	})
	if err != nil {
		t.Fatal(err)
	}
	factory.Start(ctx.Done())
	// Every pod listed has reached the handlers before the test holds anything.
	cache.WaitForCacheSync(ctx.Done(), podReg.HasSynced, dReg.HasSynced)
	return w
}

// old counts the pods on the old image that are not terminating.
func (w *stagedWatch) old() int {
	n := 0
	for _, p := range w.pods {
		if p.DeletionTimestamp == nil && p.Spec.Containers[0].Image == w.oldImage {
			n++
		}
	}
	return n
}

func (w *stagedWatch) check() {
	w.observed++
	old := w.old()
	if w.floor > 0 && old < w.floor {
		w.violations = append(w.violations, fmt.Sprintf("%d old pods, below the partition %d", old, w.floor))
	}
	if floor, ok := w.floorAt[w.step]; ok && w.held[w.step] && old < floor {
		w.violations = append(w.violations, fmt.Sprintf("%d old pods at step %s, below its partition %d", old, w.step, floor))
	}
	if floor, ok := w.floorAt[w.step]; ok && old <= floor {
		w.held[w.step] = true // reached: from now on it holds
	}
	if w.ceiling > 0 && old > w.ceiling {
		w.violations = append(w.violations, fmt.Sprintf("%d old pods, above %d", old, w.ceiling))
	}
}

// hold starts checking that at least floor (and, with ceiling > 0, at most ceiling)
// old pods run; 0, 0 stops it.
func (w *stagedWatch) hold(floor, ceiling int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.floor, w.ceiling = floor, ceiling
	w.check()
}

func (w *stagedWatch) steps() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.sequence...)
}

func (w *stagedWatch) verify(t *testing.T) {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.observed < 5 {
		t.Errorf("the partition watcher observed %d states: it proves nothing", w.observed)
	}
	if len(w.violations) > 0 {
		t.Errorf("%d observed states broke the partition, first: %s", len(w.violations), w.violations[0])
	}
}

// images counts the pods of app=name (not terminating) by image.
func (s *scene) images(t *testing.T, name string) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, p := range s.pods(t, "app="+name) {
		if p.DeletionTimestamp == nil {
			out[p.Spec.Containers[0].Image]++
		}
	}
	return out
}

// waitStep waits until Deployment name records step and shows updated pods on image, all
// available, and old pods on other images.
func (s *scene) waitStep(t *testing.T, name, step, image string, updated, old int) {
	t.Helper()
	eventually(t, time.Minute, fmt.Sprintf("%s at step %s with %d on %s, %d old", name, step, updated, image, old), s.atStep(t, name, step, image, updated, old))
}

// holdStep checks that Deployment name stays at waitStep's state for window.
func (s *scene) holdStep(t *testing.T, window time.Duration, name, step, image string, updated, old int) {
	t.Helper()
	holdsFor(t, window, 100*time.Millisecond, fmt.Sprintf("%s at step %s with %d on %s, %d old", name, step, updated, image, old), s.atStep(t, name, step, image, updated, old))
}

// atStep is the condition of waitStep and holdStep.
func (s *scene) atStep(t *testing.T, name, step, image string, updated, old int) func(context.Context) (bool, string) {
	return func(context.Context) (bool, string) {
		d := s.deployment(t, name)
		imgs := s.images(t, name)
		others := 0
		for img, n := range imgs {
			if img != image {
				others += n
			}
		}
		got := d.Annotations[staging.StepAnnotation]
		ok := (step == "" || got == step) && imgs[image] == updated && others == old && d.Status.UpdatedReplicas == int32(updated) &&
			d.Status.AvailableReplicas == d.Status.Replicas
		return ok, fmt.Sprintf("step %q, pods %v, status %d updated %d available of %d", got, imgs, d.Status.UpdatedReplicas, d.Status.AvailableReplicas, d.Status.Replicas)
	}
}

// waitRecord waits until Deployment name records step (kroll.dev/rollout-step).
func (s *scene) waitRecord(t *testing.T, name, step string) {
	t.Helper()
	eventually(t, time.Minute, name+" records step "+step, func(context.Context) (bool, string) {
		got := s.deployment(t, name).Annotations[staging.StepAnnotation]
		return got == step, got
	})
}

// condition is a Deployment condition as "Status/Reason: message"; empty without one.
func condition(d *appsv1.Deployment, ct appsv1.DeploymentConditionType) string {
	if c := rollout.Condition(&d.Status, ct); c != nil {
		return fmt.Sprintf("%s/%s: %s", c.Status, c.Reason, c.Message)
	}
	return ""
}

// stagedDeployment is a Deployment of app:1 with 25% surge and unavailability, no
// minReadySeconds, and annotations.
func stagedDeployment(name string, replicas int, annotations ...string) string {
	return healDeploymentReadyAfter(name, replicas, 0, "25%", "25%", annotations...)
}

const tenPercentSteps = "kroll.dev/rollout-steps=10%, pause, 50%, pause: 5s, 100%"

// tenPercentFloors are the old pods tenPercentSteps keeps at each recorded step of 20
// replicas, once reached: 18 until promoted, 10 until the timed pause ends.
var tenPercentFloors = map[string]int{"0/5": 18, "1/5": 18, "2/5": 10, "3/5": 10}

// Given kroll's controllers (restartable) and a kubelet whose app:crash crash-loops,
// when Deployments with kroll.dev/rollout-steps or kroll.dev/partition roll out, then
// each stops at exactly the pods its step or partition lets through, moves on when
// promoted or when a timed pause ends, keeps its partition of old pods through a
// scale, aborts by request or on failure, and bad values roll out as without them.
func TestStagedDeployment(t *testing.T) {
	t.Parallel()
	rules, err := kubelet.NewFaultRules(kubelet.FaultRule{Image: "*:crash", Fault: "CrashLoopBackOff"})
	if err != nil {
		t.Fatal(err)
	}
	c := clustertest.Start(t, clustertest.WithWorkloadControllers(cluster.WorkloadControllersNone), clustertest.WithNodes(4),
		clustertest.WithKubelet(func(k *kubelet.Config) {
			k.Faults = rules
			k.CrashLoopBackOff = 500 * time.Millisecond
			k.PodStartupDelay = 100 * time.Millisecond
		}))
	stop := startKrollControllers(t, c)
	defer func() { stop() }()
	// Started on t, not on the subtest: they run on after it.
	// Each restart waits for the step's RolloutStep event first: events are sent
	// asynchronously, and one queued when the controllers stop is lost. A step the
	// controllers reach while they are being stopped may lose its event so (on a
	// loaded machine a 10% step of 2 pods is reached in a moment): such steps are
	// noted in lost, and their restart waits for the record instead.
	lost := map[string]bool{}
	restart := func(sub *testing.T, s *scene, name, at, event string) {
		eventually(sub, 30*time.Second, "the RolloutStep event of step "+at, func(context.Context) (bool, string) {
			out := s.kubectl(sub, "get", "events", "--field-selector", "reason="+staging.EventReason, "-o", "custom-columns=M:.message", "--no-headers")
			if lost[at] && s.deployment(sub, name).Annotations[staging.StepAnnotation] == at {
				return true, out
			}
			return strings.Contains(out, event), out
		})
		stop()
		if got := s.deployment(sub, name).Annotations[staging.StepAnnotation]; got != at {
			lost[got] = true
			sub.Logf("the controllers reached step %s while stopping: its event may be lost with them", got)
		}
		sub.Logf("controllers restarted at step %s", at)
		stop = startKrollControllers(t, c)
	}
	bin := krollBinary(t)
	krollIn := func(t *testing.T, s *scene) krollCLI {
		return krollCLI{t: t, bin: bin, kubeconfig: c.KubeconfigPath, ns: s.ns}
	}

	// Run alone: the controllers restart at every step boundary.
	t.Run("steps 10%, pause, 50%, pause: 5s, 100%, controllers restarted at every boundary", func(t *testing.T) {
		s := newScene(t, c, "staged-steps", cluster.WorkloadControllersKroll)
		s.apply(t, stagedDeployment("web", 20, tenPercentSteps))
		_, bounds := s.rolledOut(t, "web")
		w := watchStaged(t, s, "web", "app:1", tenPercentFloors)
		// The plan replays the same steps: 2 pods, the pause, to 10, the timed pause, 20.
		plan := krollIn(t, s).must("rollout", "plan", "deployment/web", "--image", "app=app:2")
		for _, want := range []string{"then: pause until promoted (kroll rollout promote): step 1/5", "then: pause 5s: step 3/5", "20 created, 20 deleted"} {
			if !strings.Contains(plan, want) {
				t.Errorf("kroll rollout plan does not say %q:\n%s", want, plan)
			}
		}
		s.kubectl(t, "set", "image", "deployment/web", "app=app:2")
		s.waitRecord(t, "web", "0/5")
		restart(t, s, "web", "0/5", "step 0/5: rolling out to 10%")
		s.waitStep(t, "web", "1/5", "app:2", 2, 18)
		restart(t, s, "web", "1/5", "step 1/5: 10% (2 of 20 updated), paused until promoted")
		s.holdStep(t, 2*time.Second, "web", "1/5", "app:2", 2, 18) // held: nothing moves on without promote
		d := s.deployment(t, "web")
		if got, want := condition(d, staging.ConditionType), "True/StepPaused: step 1/5: 10% (2 of 20 updated), paused until promoted"; got != want {
			t.Errorf("Staged condition %q, want %q", got, want)
		}
		if got := condition(d, appsv1.DeploymentProgressing); !strings.HasPrefix(got, "True/PartitionReached: ReplicaSet \"web-") ||
			!strings.HasSuffix(got, "reached its partition: 2 of 20 pods updated, 18 kept on older revisions.") {
			t.Errorf("Progressing %q, want PartitionReached with the numbers", got)
		}
		if out, err := s.tryKubectl(t, "rollout", "status", "deployment/web", "--timeout=2s"); err == nil {
			t.Errorf("kubectl rollout status returned at a partition: %s", out)
		}
		// kroll's status names the step and the command that continues, and returns
		// there only with --until-paused; kroll status shows the step too.
		if out := krollIn(t, s).must("rollout", "status", "deployment/web", "--until-paused"); !strings.Contains(out, "step 1/5: 10% (2 of 20 updated), paused until promoted") ||
			!strings.Contains(out, "kroll rollout promote deployment/web") {
			t.Errorf("kroll rollout status --until-paused: %q", out)
		}
		if code, out, _ := krollIn(t, s).run("rollout", "status", "deployment/web", "--timeout=2s"); code == 0 {
			t.Errorf("kroll rollout status returned 0 at a pause without --until-paused: %q", out)
		}
		if out := krollIn(t, s).must("status"); !strings.Contains(out, "paused at step 1/5") {
			t.Errorf("kroll status does not show the step:\n%s", out)
		}

		krollIn(t, s).must("rollout", "promote", "deployment/web")
		restart(t, s, "web", "2/5", "step 2/5: rolling out to 50%")
		s.waitStep(t, "web", "3/5", "app:2", 10, 10)
		reached := time.Now()
		restart(t, s, "web", "3/5", "step 3/5: 50% (10 of 20 updated), paused for 5s")
		s.waitRecord(t, "web", "4/5")
		restart(t, s, "web", "4/5", "step 4/5: rolling out to 100%")
		s.waitStep(t, "web", "5/5", "app:2", 20, 0)
		if waited := time.Since(reached); waited < 4*time.Second {
			t.Errorf("the 5s pause ended after %s", waited)
		}
		restart(t, s, "web", "5/5", "step 5/5: all steps done (20 of 20")
		s.kubectl(t, "rollout", "status", "deployment/web", "--timeout=1m")
		if got, want := strings.Join(w.steps(), " "), "5/5 0/5 1/5 2/5 3/5 4/5 5/5"; got != want {
			t.Errorf("recorded steps %q, want %q: the first revision's, then each step once", got, want)
		}
		events := s.kubectl(t, "get", "events", "--field-selector", "reason="+staging.EventReason, "-o", "custom-columns=M:.message", "--no-headers")
		for _, want := range []string{"step 0/5: rolling out to 10%", "step 1/5: 10% (2 of 20 updated), paused until promoted",
			"step 2/5: rolling out to 50%", "step 3/5: 50% (10 of 20 updated), paused for 5s", "step 4/5: rolling out to 100%", "step 5/5: all steps done"} {
			if step, _, _ := strings.Cut(strings.TrimPrefix(want, "step "), ":"); lost[step] {
				continue
			}
			if !strings.Contains(events, want) {
				t.Errorf("no RolloutStep event says %q:\n%s", want, events)
			}
		}
		w.verify(t)
		bounds.Verify(t, 10)
	})

	t.Run("parallel", func(t *testing.T) {
		t.Run("in place: the same steps keep every pod", func(t *testing.T) {
			t.Parallel()
			s := newScene(t, c, "staged-inplace", cluster.WorkloadControllersKroll)
			s.apply(t, stagedDeployment("web", 20, tenPercentSteps, "kroll.dev/update-strategy=InPlaceIfPossible"))
			before, _ := s.rolledOut(t, "web")
			w := watchStaged(t, s, "web", "app:1", tenPercentFloors)
			s.kubectl(t, "set", "image", "deployment/web", "app=app:2")
			s.waitStep(t, "web", "1/5", "app:2", 2, 18)
			s.holdStep(t, 2*time.Second, "web", "1/5", "app:2", 2, 18) // paused until promoted
			krollIn(t, s).must("rollout", "promote", "deployment/web")
			s.waitStep(t, "web", "3/5", "app:2", 10, 10)
			s.waitStep(t, "web", "5/5", "app:2", 20, 0)
			s.expectUpdatedInPlace(t, "web", before, "app:2", 1)
			w.verify(t)
		})

		t.Run("a crash-looping step with on-failure Rollback aborts at step 1", func(t *testing.T) {
			t.Parallel()
			deploymentRollbacks.Lock()
			defer deploymentRollbacks.Unlock()
			s := newScene(t, c, "staged-crash", cluster.WorkloadControllersKroll)
			ledger := watchPods(t, c, s.ns)
			s.apply(t, healDeployment("web", 20, "25%", "25%", tenPercentSteps, "kroll.dev/on-failure=Rollback"))
			s.rolledOut(t, "web")
			w := watchStaged(t, s, "web", "app:1", nil)
			w.hold(18, 0)
			s.kubectl(t, "set", "image", "deployment/web", "app=app:crash")
			eventually(t, time.Minute, "rolled back", func(context.Context) (bool, string) {
				d := s.deployment(t, "web")
				return d.Annotations[failure.RolledBackFromAnnotation] == "2", condition(d, failure.ConditionRolloutFailed)
			})
			s.kubectl(t, "rollout", "status", "deployment/web", "--timeout=1m")
			s.expectAllReady(t, "web", 20, "app:1")
			d := s.deployment(t, "web")
			if _, found := d.Annotations[staging.StepAnnotation]; found {
				t.Errorf("the step record stayed after the rollback: %v", d.Annotations)
			}
			crashHash := ""
			for _, rs := range s.replicaSets(t) {
				if rs.Spec.Template.Spec.Containers[0].Image == "app:crash" {
					crashHash = rs.Labels[appsv1.DefaultDeploymentUniqueLabelKey]
				}
			}
			ledger.mu.Lock()
			created := len(ledger.created[crashHash])
			ledger.mu.Unlock()
			if crashHash == "" || created > 2 || created == 0 {
				t.Errorf("%d pods of the crash-looping revision %q were created, want 1 or 2 (step 1 is 10%% of 20)", created, crashHash)
			}
			w.verify(t)
		})

		t.Run("scaling 20 to 40 at partition 10 keeps 10 old pods", func(t *testing.T) {
			t.Parallel()
			s := newScene(t, c, "staged-scale", cluster.WorkloadControllersKroll)
			ledger := watchPods(t, c, s.ns)
			s.apply(t, stagedDeployment("web", 20, "kroll.dev/partition=10"))
			s.rolledOut(t, "web")
			w := watchStaged(t, s, "web", "app:1", nil)
			oldHash := s.replicaSets(t)[0].Labels[appsv1.DefaultDeploymentUniqueLabelKey]
			// The plan printed before stops where the controller does: 10 created, 10
			// deleted, held by the partition.
			var plan rolloutplan.Plan
			if err := json.Unmarshal([]byte(krollIn(t, s).must("rollout", "plan", "deployment/web", "--image", "app=app:2", "-o", "json")), &plan); err != nil {
				t.Fatal(err)
			}
			if n := len(plan.Batches); n < 2 || !strings.HasPrefix(plan.Batches[n-1].Note, "the partition holds the rollout: 10 old pods stay") {
				t.Errorf("plan %+v: want batches ending with the partition's note", plan.Batches)
			}
			rec := recordPodOps(t, c, s.ns, func(p *corev1.Pod) string {
				if ref := metav1.GetControllerOf(p); ref != nil {
					return ref.Name
				}
				return ""
			})
			s.kubectl(t, "set", "image", "deployment/web", "app=app:2")
			s.waitStep(t, "web", "", "app:2", 10, 10)
			creates, deletes, _ := plan.Counts()
			if creates != 10 || deletes != 10 {
				t.Errorf("the plan printed before creates %d pods and deletes %d, want 10 and 10", creates, deletes)
			}
			// Held at the partition: the controller's operations are the plan's, and no
			// more come while it holds.
			holdsFor(t, time.Second, 50*time.Millisecond, "the controller's operations, the plan's", func(context.Context) (bool, string) {
				rec.mu.Lock()
				defer rec.mu.Unlock()
				ops := map[rolloutplan.Op]int{}
				for _, op := range rec.ops {
					ops[op.Op]++
				}
				return ops[rolloutplan.Create] == creates && ops[rolloutplan.Delete] == deletes,
					fmt.Sprintf("the controller created %d pods and deleted %d; the plan: %d and %d", ops[rolloutplan.Create], ops[rolloutplan.Delete], creates, deletes)
			})
			w.hold(10, 10)
			eventually(t, 30*time.Second, "Staged PartitionReached", func(context.Context) (bool, string) {
				got := condition(s.deployment(t, "web"), staging.ConditionType)
				return strings.HasPrefix(got, "True/PartitionReached: partition 10 reached: 10 of 20 updated, 10 kept on the old revisions"), got
			})
			s.kubectl(t, "scale", "deployment/web", "--replicas=40")
			s.waitStep(t, "web", "", "app:2", 30, 10)
			s.holdStep(t, time.Second, "web", "", "app:2", 30, 10) // the partition holds 10 old
			ledger.mu.Lock()
			created := len(ledger.created[oldHash])
			ledger.mu.Unlock()
			if created != 20 {
				t.Errorf("%d pods of the old revision were ever created, want the 20 of the first rollout", created)
			}
			w.hold(0, 0)
			s.kubectl(t, "annotate", "deployment/web", "kroll.dev/partition-")
			s.kubectl(t, "rollout", "status", "deployment/web", "--timeout=1m")
			w.verify(t)
		})

		t.Run("abort at step 2 returns every pod to the old revision; a stale abort is ignored", func(t *testing.T) {
			t.Parallel()
			s := newScene(t, c, "staged-abort", cluster.WorkloadControllersKroll)
			s.apply(t, stagedDeployment("web", 10, "kroll.dev/rollout-steps=20%, pause, 50%, pause, 100%"))
			s.rolledOut(t, "web")
			s.kubectl(t, "set", "image", "deployment/web", "app=app:2")
			s.waitStep(t, "web", "1/5", "app:2", 2, 8)
			kroll := krollIn(t, s)
			kroll.must("rollout", "promote", "deployment/web")
			s.waitStep(t, "web", "3/5", "app:2", 5, 5)
			kroll.must("rollout", "abort", "deployment/web")
			s.kubectl(t, "rollout", "status", "deployment/web", "--timeout=1m")
			s.expectAllReady(t, "web", 10, "app:1")
			d := s.deployment(t, "web")
			if got, want := condition(d, failure.ConditionRolloutFailed), "True/Aborted: aborted by request; rolled back from revision 2 to 1"; got != want {
				t.Errorf("RolloutFailed %q, want %q", got, want)
			}
			if _, found := d.Annotations[staging.AbortAnnotation]; found {
				t.Errorf("kroll.dev/abort stayed: %v", d.Annotations)
			}
			s.expectEvent(t, failure.EventRolledBack, "aborted by request; rolled back from revision 2 to 1")

			s.kubectl(t, "annotate", "deployment/web", "kroll.dev/abort=7")
			eventually(t, 30*time.Second, "stale abort removed", func(context.Context) (bool, string) {
				d := s.deployment(t, "web")
				_, found := d.Annotations[staging.AbortAnnotation]
				return !found, fmt.Sprint(d.Annotations)
			})
			s.expectEvent(t, "AbortIgnored", "abort of revision 7 ignored")
		})

		for i, tc := range []struct{ annotation, names string }{
			{"kroll.dev/partition=-1", "kroll.dev/partition"},
			{"kroll.dev/partition=150%", "kroll.dev/partition"},
			{"kroll.dev/rollout-steps=10%, wait, 100%", "kroll.dev/rollout-steps"},
		} {
			t.Run("bad value "+tc.annotation+" rolls out as without it", func(t *testing.T) {
				t.Parallel()
				s := newScene(t, c, fmt.Sprintf("staged-bad-%d", i), cluster.WorkloadControllersKroll)
				s.withoutAdmissionPolicy(t) // the API server would refuse the bad values
				s.apply(t, stagedDeployment("web", 4, tc.annotation))
				_, bounds := s.rolledOut(t, "web")
				s.kubectl(t, "set", "image", "deployment/web", "app=app:2")
				s.kubectl(t, "rollout", "status", "deployment/web", "--timeout=1m")
				s.expectAllReady(t, "web", 4, "app:2")
				if n := s.eventCount(t, "web", "InvalidStaging"); n != 1 {
					t.Errorf("%d InvalidStaging events, want 1", n)
				}
				s.expectEvent(t, "InvalidStaging", tc.names)
				if got := condition(s.deployment(t, "web"), staging.ConditionType); !strings.HasPrefix(got, "False/InvalidAnnotation: "+tc.names) {
					t.Errorf("Staged condition %q, want False/InvalidAnnotation naming %s", got, tc.names)
				}
				bounds.Verify(t, 3)
			})
		}
	})
}
