package e2e

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/kroll-dev/kroll/pkg/cluster"
	"github.com/kroll-dev/kroll/pkg/cluster/clustertest"
	"github.com/kroll-dev/kroll/pkg/inplace"
	"github.com/kroll-dev/kroll/pkg/kubelet"
)

// resizeDeployment is an in-place Deployment whose container asks for cpu (request),
// memory 64Mi (request) and 128Mi (limit): Burstable, cpu resized without a restart
// (NotRequired), memory with one (RestartContainer); maxSurge 0.
func resizeDeployment(name string, replicas int, mode inplace.Mode, maxUnavailable int, cpu string) string {
	return strings.Replace(inPlaceDeployment(name, replicas, mode, "0", fmt.Sprint(maxUnavailable), ""),
		"        image: nginx:1.14.2\n", `        image: nginx:1.14.2
        resources:
          requests:
            cpu: `+cpu+`
            memory: 64Mi
          limits:
            memory: 128Mi
        resizePolicy:
        - resourceName: cpu
          restartPolicy: NotRequired
        - resourceName: memory
          restartPolicy: RestartContainer
`, 1)
}

// resizeWatch checks, at every change of the pods of app=name it observes, that no
// more than maxUnavailable of the desired pods are without one that is ready and not
// mid-resize (its spec's resources not yet reported by the kubelet, or a resize
// condition); and it records the pods created after it started.
type resizeWatch struct {
	mu                      sync.Mutex
	desired, maxUnavailable int
	observed                int
	created                 []string
	failures                []string
}

func (s *scene) watchResize(t *testing.T, name string, desired, maxUnavailable int) *resizeWatch {
	t.Helper()
	w := &resizeWatch{desired: desired, maxUnavailable: maxUnavailable}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	factory := informers.NewSharedInformerFactoryWithOptions(s.c.Client, 0, informers.WithNamespace(s.ns),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = "app=" + name }))
	inf := factory.Core().V1().Pods().Informer()
	lister := factory.Core().V1().Pods().Lister()
	// The pods there are now: the informer's first list delivers them as added too.
	initial := map[string]bool{}
	for _, p := range s.pods(t, "app="+name) {
		initial[string(p.UID)] = true
	}
	check := func() {
		pods, _ := lister.List(labels.Everything())
		serving := 0
		var states []string
		for _, p := range pods {
			if p.DeletionTimestamp != nil {
				continue
			}
			ok := isPodReady(p) && !midResize(p)
			if ok {
				serving++
			}
			states = append(states, fmt.Sprintf("%s ready=%v mid=%v", p.Name, isPodReady(p), midResize(p)))
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		w.observed++
		if w.desired-serving > w.maxUnavailable && len(w.failures) < 5 {
			sort.Strings(states)
			w.failures = append(w.failures, fmt.Sprintf("%d of %d pods serving, maxUnavailable %d: %s", serving, w.desired, w.maxUnavailable, strings.Join(states, "; ")))
		}
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if p := obj.(*corev1.Pod); !initial[string(p.UID)] {
				w.mu.Lock()
				w.created = append(w.created, p.Name)
				w.mu.Unlock()
			}
			check()
		},
		UpdateFunc: func(_, _ any) { check() },
		DeleteFunc: func(any) { check() },
	}); err != nil {
		t.Fatal(err)
	}
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	return w
}

// verify fails t for each bound broken, fewer than minObserved states seen, or a
// number of pods created other than created.
func (w *resizeWatch) verify(t *testing.T, minObserved, created int) {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, f := range w.failures {
		t.Error(f)
	}
	if w.observed < minObserved {
		t.Errorf("only %d pod states observed, want at least %d", w.observed, minObserved)
	}
	if len(w.created) != created {
		t.Errorf("pods created during the change: %v, want %d", w.created, created)
	}
}

// midResize tells a pod whose spec's cpu and memory the kubelet does not report yet,
// or with a resize condition.
func midResize(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if (c.Type == corev1.PodResizePending || c.Type == corev1.PodResizeInProgress) && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	for _, c := range p.Spec.Containers {
		for _, cs := range p.Status.ContainerStatuses {
			if cs.Name != c.Name {
				continue
			}
			if cs.Resources == nil {
				return true
			}
			for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
				a, b := c.Resources.Requests[name], cs.Resources.Requests[name]
				x, y := c.Resources.Limits[name], cs.Resources.Limits[name]
				if a.Cmp(b) != 0 || x.Cmp(y) != 0 {
					return true
				}
			}
		}
	}
	return false
}

// reported is the cpu request and memory limit the kubelet reports for each pod of
// app=name, by UID ("200m/128Mi").
func (s *scene) reported(t *testing.T, name string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, p := range s.pods(t, "app="+name) {
		if p.DeletionTimestamp != nil || len(p.Status.ContainerStatuses) == 0 || p.Status.ContainerStatuses[0].Resources == nil {
			continue
		}
		r := p.Status.ContainerStatuses[0].Resources
		cpu, mem := r.Requests[corev1.ResourceCPU], r.Limits[corev1.ResourceMemory]
		out[string(p.UID)] = cpu.String() + "/" + mem.String()
	}
	return out
}

// expectResized checks that the pods of before are all there, each reporting want
// (reported's form) and with restarts more restarts, running image.
func (s *scene) expectResized(t *testing.T, name string, before map[string]podRecord, image, want string, restarts int32) {
	t.Helper()
	s.expectUpdatedInPlace(t, name, before, image, restarts)
	for uid, got := range s.reported(t, name) {
		if got != want {
			t.Errorf("pod %s reports %s, want %s", before[uid].name, got, want)
		}
	}
}

// changeInPlace rolls out a 6-replica resizeDeployment name (maxUnavailable 2), makes
// change (kubectl arguments), and checks that every pod was kept, runs image, reports
// want (reported's form) with restarts more restarts, and that the bounds held
// throughout; it returns how many ReplicaSets the Deployment had then, and removes it.
func (s *scene) changeInPlace(t *testing.T, name string, change []string, image, want string, restarts int32) int {
	t.Helper()
	s.apply(t, resizeDeployment(name, 6, inplace.IfPossible, 2, "100m"))
	before, w := s.rolledOut(t, name)
	rw := s.watchResize(t, name, 6, 2)
	s.kubectl(t, change...)
	s.kubectl(t, "rollout", "status", "deployment/"+name, "--timeout=2m")
	s.expectResized(t, name, before, image, want, restarts)
	rss := len(s.replicaSets(t))
	w.Verify(t, 20)
	rw.verify(t, 20, 0)
	s.removeDeployment(t, name)
	return rss
}

// removeDeployment deletes Deployment name and waits for its pods to be gone, so the
// next scenario has the nodes' room.
func (s *scene) removeDeployment(t *testing.T, name string) {
	t.Helper()
	s.kubectl(t, "delete", "deployment/"+name, "--wait=true")
	eventually(t, time.Minute, name+"'s pods gone", func(context.Context) (bool, string) {
		n := len(s.pods(t, "app="+name))
		return n == 0, fmt.Sprint(n, " pods")
	})
}

// Container cpu and memory changes of Deployments made in place, through pods/resize:
// on three 4-cpu nodes, one cluster, a scenario after another (each removes its
// Deployment). kroll's controllers run in the test process, so that one scenario can
// stop and start them.
func TestResizeDeployment(t *testing.T) {
	t.Parallel()
	c := clustertest.Start(t, clustertest.WithWorkloadControllers(cluster.WorkloadControllersNone), clustertest.WithNodes(3),
		clustertest.WithKubelet(func(k *kubelet.Config) {
			k.CPU, k.Memory = resource.MustParse("4"), resource.MustParse("16Gi")
			k.PodStartupDelay = 200 * time.Millisecond
		}))
	stop := startKrollControllers(t, c)
	defer func() { stop() }()

	t.Run("cpu request 100m to 200m in place, rollout status, undo resizes back", func(t *testing.T) {
		s := newScene(t, c, "resize-cpu", cluster.WorkloadControllersNone)
		s.apply(t, resizeDeployment("web", 10, inplace.IfPossible, 2, "100m"))
		before, w := s.rolledOut(t, "web")
		rw := s.watchResize(t, "web", 10, 2)

		s.kubectl(t, "set", "resources", "deployment/web", "-c", "app", "--requests=cpu=200m,memory=64Mi")
		if out := s.kubectl(t, "rollout", "status", "deployment/web", "--timeout=2m"); !strings.Contains(out, "successfully rolled out") {
			t.Fatalf("rollout status: %s", out)
		}
		// rollout status is done only once every pod reports the new resources.
		s.expectResized(t, "web", before, "nginx:1.14.2", "200m/128Mi", 0)
		if n := len(s.replicaSets(t)); n != 2 {
			t.Errorf("%d ReplicaSets, want 2 (one revision per change)", n)
		}
		s.waitInPlaceCondition(t, "deployment/web", "True/"+inplace.ReasonComplete)

		s.kubectl(t, "rollout", "undo", "deployment/web")
		s.kubectl(t, "rollout", "status", "deployment/web", "--timeout=2m")
		s.expectResized(t, "web", before, "nginx:1.14.2", "100m/128Mi", 0)
		d := s.deployment(t, "web")
		if d.Status.UpdatedReplicas != 10 || d.Status.AvailableReplicas != 10 || d.Status.ObservedGeneration != d.Generation {
			t.Errorf("status after the undo: %+v", d.Status)
		}
		w.Verify(t, 40)
		rw.verify(t, 40, 0)
		s.removeDeployment(t, "web")
	})

	t.Run("memory limit with RestartContainer: one restart each, within maxUnavailable", func(t *testing.T) {
		s := newScene(t, c, "resize-memory", cluster.WorkloadControllersNone)
		s.changeInPlace(t, "mem", []string{"set", "resources", "deployment/mem", "-c", "app", "--limits=memory=256Mi"}, "nginx:1.14.2", "100m/256Mi", 1)
	})

	t.Run("image and cpu in one change: one rollout, every pod in place", func(t *testing.T) {
		s := newScene(t, c, "resize-image", cluster.WorkloadControllersNone)
		rss := s.changeInPlace(t, "both", []string{"patch", "deployment/both", "-p",
			`{"spec":{"template":{"spec":{"containers":[{"name":"app","image":"nginx:1.16.1","resources":{"requests":{"cpu":"200m"}}}]}}}}`},
			"nginx:1.16.1", "200m/128Mi", 1)
		if rss != 2 {
			t.Errorf("%d ReplicaSets, want 2: one rollout", rss)
		}
	})

	t.Run("a QoS class change falls back, the condition naming the field", func(t *testing.T) {
		s := newScene(t, c, "resize-qos", cluster.WorkloadControllersNone)
		s.apply(t, resizeDeployment("qos", 4, inplace.IfPossible, 1, "100m"))
		before, w := s.rolledOut(t, "qos")
		s.kubectl(t, "set", "resources", "deployment/qos", "-c", "app", "--requests=cpu=100m,memory=128Mi", "--limits=cpu=100m,memory=128Mi")
		s.kubectl(t, "rollout", "status", "deployment/qos", "--timeout=2m")
		s.waitInPlaceCondition(t, "deployment/qos", "False/"+inplace.ReasonFallback+": the change to spec.containers[app].resources (QoS class Burstable → Guaranteed)")
		for uid, p := range s.podRecords(t, "qos") {
			if _, kept := before[uid]; kept {
				t.Errorf("pod %s was kept through a QoS class change", p.name)
			}
		}
		w.Verify(t, 10)
		s.removeDeployment(t, "qos")
	})

	t.Run("nodes nearly full: InPlaceOnly blocks naming the pods, InPlaceIfPossible recreates them elsewhere", func(t *testing.T) {
		s := newScene(t, c, "resize-full", cluster.WorkloadControllersNone)
		s.apply(t, resizeDeployment("tight", 6, inplace.Only, 2, "300m"))
		before, _ := s.rolledOut(t, "tight")
		full, stuck := s.fillBusiestNode(t, "tight", 200)
		rw := s.watchResize(t, "tight", 6, 2)

		// 300m → 600m: full has 200m free, so none of its pods can grow.
		s.kubectl(t, "set", "resources", "deployment/tight", "-c", "app", "--requests=cpu=600m,memory=64Mi")
		var want []string
		for _, name := range stuck {
			want = append(want, "pod "+name+": the resize cannot be made on node "+full+": needs cpu 600m, ")
		}
		eventually(t, time.Minute, "the others resized, the condition naming "+strings.Join(stuck, ", "), func(context.Context) (bool, string) {
			cond := s.inPlaceCondition(t, "deployment/tight")
			if !strings.HasPrefix(cond, "False/"+inplace.ReasonBlocked+": ") {
				return false, cond
			}
			for _, w := range want {
				if !strings.Contains(cond, w) {
					return false, cond
				}
			}
			resized := 0
			for _, got := range s.reported(t, "tight") {
				if strings.HasPrefix(got, "600m/") {
					resized++
				}
			}
			return resized == 6-len(stuck), fmt.Sprintf("%d resized; %s", resized, cond)
		})
		s.expectEvent(t, inplace.ReasonBlocked, "needs cpu 600m")
		for uid, r := range s.podRecords(t, "tight") {
			if before[uid].name != r.name {
				t.Errorf("pod %s appeared under InPlaceOnly", r.name)
			}
		}
		s.expectNonePending(t)

		s.kubectl(t, "annotate", "--overwrite", "deployment/tight", inplace.StrategyAnnotation+"="+string(inplace.IfPossible))
		s.kubectl(t, "rollout", "status", "deployment/tight", "--timeout=2m")
		eventually(t, time.Minute, "every pod reporting 600m", func(context.Context) (bool, string) {
			got := s.reported(t, "tight")
			for _, r := range got {
				if !strings.HasPrefix(r, "600m/") {
					return false, fmt.Sprint(got)
				}
			}
			return len(got) == 6, fmt.Sprint(got)
		})
		s.expectEvent(t, "ResizeUnfit", "the resize cannot be made on node "+full+": needs cpu 600m")
		// Each pass judges the pods it finds arrived: two arriving in one pass are both
		// recreated; one arriving after the other was recreated finds the room that pod
		// freed, and is resized where it is (every pod reports 600m, checked above).
		after := s.podRecords(t, "tight")
		keptOnFull := 0
		for uid, b := range before {
			a, kept := after[uid]
			onFull := b.node == full
			if onFull && kept {
				keptOnFull++
			}
			switch {
			case !onFull && !kept:
				t.Errorf("pod %s on %s, which had room, was recreated", b.name, b.node)
			case kept && a.restarts != b.restarts:
				t.Errorf("pod %s restarted", b.name)
			}
		}
		for uid, a := range after {
			if _, kept := before[uid]; !kept && a.node == full {
				t.Errorf("recreated pod %s placed on %s again", a.name, full)
			}
		}
		if keptOnFull >= len(stuck) {
			t.Errorf("every pod on %s stayed there, none of them having room to grow", full)
		}
		s.expectNonePending(t)
		rw.verify(t, 20, len(stuck)-keptOnFull)
		s.removeDeployment(t, "tight")
		s.kubectl(t, "delete", "pod", "hog", "--wait=true")
	})

	t.Run("controllers restarted mid-resize finish in place", func(t *testing.T) {
		s := newScene(t, c, "resize-restart", cluster.WorkloadControllersNone)
		// A 1s resize keeps pods mid-resize for the restarts to catch.
		m := strings.Replace(resizeDeployment("web", 20, inplace.IfPossible, 3, "100m"),
			"      labels:\n        app: web\n", "      labels:\n        app: web\n      annotations:\n        "+kubelet.AnnotationResizeDelay+": 1s\n", 1)
		s.apply(t, m)
		before, w := s.rolledOut(t, "web")
		rw := s.watchResize(t, "web", 20, 3)
		s.kubectl(t, "set", "resources", "deployment/web", "-c", "app", "--requests=cpu=200m,memory=64Mi")
		s.restartMidUpdate(t, &stop, []time.Duration{700 * time.Millisecond, 1300 * time.Millisecond, 900 * time.Millisecond}, "app=web")
		s.kubectl(t, "rollout", "status", "deployment/web", "--timeout=2m")
		s.expectResized(t, "web", before, "nginx:1.14.2", "200m/128Mi", 0)
		w.Verify(t, 40)
		rw.verify(t, 40, 0)
		s.removeDeployment(t, "web")
	})
}

// fillBusiestNode pins a pod "hog" to the node holding the most pods of app=name (by
// name among equals), asking for all its cpu but free millicores (fillNode): it returns
// the node and its pods of app=name.
func (s *scene) fillBusiestNode(t *testing.T, name string, free int64) (string, []string) {
	t.Helper()
	byNode := map[string][]string{}
	for _, p := range s.pods(t, "app="+name) {
		byNode[p.Spec.NodeName] = append(byNode[p.Spec.NodeName], p.Name)
	}
	var node string
	for n, ps := range byNode {
		if node == "" || len(ps) > len(byNode[node]) || len(ps) == len(byNode[node]) && n < node {
			node = n
		}
	}
	s.fillNode(t, "hog", node, fmt.Sprintf("%dm", free))
	sort.Strings(byNode[node])
	return node, byNode[node]
}

// expectNonePending fails t for a pod of the scene's namespace left Pending.
func (s *scene) expectNonePending(t *testing.T) {
	t.Helper()
	eventually(t, 30*time.Second, "no pod Pending", func(context.Context) (bool, string) {
		var pending []string
		for _, p := range s.pods(t, "") {
			if p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodPending {
				pending = append(pending, p.Name)
			}
		}
		return len(pending) == 0, strings.Join(pending, ", ")
	})
}
