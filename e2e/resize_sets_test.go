package e2e

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/kroll-dev/kroll/pkg/cluster"
	"github.com/kroll-dev/kroll/pkg/cluster/clustertest"
	"github.com/kroll-dev/kroll/pkg/inplace"
	"github.com/kroll-dev/kroll/pkg/kubelet"
)

// sizedPodSpec is a pod template's metadata and spec (indented four spaces) for app
// name: one container "app" requesting cpu and 64Mi, limited to memory; cpu resized
// NotRequired, memory RestartContainer; each resize actuated after 1s.
func sizedPodSpec(name, cpu, memory string) string {
	return fmt.Sprintf(`  template:
    metadata:
      labels:
        app: %[1]s
      annotations:
        %[4]s: 1s
    spec:
      containers:
      - name: app
        image: nginx:1.14.2
        resources:
          requests:
            cpu: %[2]s
            memory: 64Mi
          limits:
            memory: %[3]s
        resizePolicy:
        - resourceName: cpu
          restartPolicy: NotRequired
        - resourceName: memory
          restartPolicy: RestartContainer
`, name, cpu, memory, kubelet.AnnotationResizeDelay)
}

// sizedStatefulSet is StatefulSet name opted in under mode, with replicas, partition
// and sizedPodSpec's pods.
func sizedStatefulSet(name string, mode inplace.Mode, replicas, partition int, cpu string) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: %[1]s
  annotations:
    kroll.dev/update-strategy: %[2]s
spec:
  serviceName: %[1]s
  replicas: %[3]d
  selector:
    matchLabels:
      app: %[1]s
  updateStrategy:
    type: RollingUpdate
    rollingUpdate:
      partition: %[4]d
`, name, mode, replicas, partition) + sizedPodSpec(name, cpu, "128Mi")
}

// sizedDaemonSet is DaemonSet name opted in under mode (a grace period of 1s), with
// maxUnavailable 1 and sizedPodSpec's pods.
func sizedDaemonSet(name string, mode inplace.Mode, cpu, memory string) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: %[1]s
  annotations:
    kroll.dev/update-strategy: %[2]s
    kroll.dev/in-place-grace-period: "1"
spec:
  selector:
    matchLabels:
      app: %[1]s
  updateStrategy:
    type: RollingUpdate
    rollingUpdate:
      maxUnavailable: 1
`, name, mode) + sizedPodSpec(name, cpu, memory)
}

// resizeWatcher checks every observed state of the pods of app=name in a namespace:
//
//	pods not ready, terminating or mid-resize (inplace.Resizing against their own
//	spec: a resize condition, or resources not yet what the spec asks) ≤ maxOut
//	a pod name keeps its UID (keepUIDs: pods updated in place are never replaced)
//	a pod whose ordinal is below partition (while ≥ 0) keeps the cpu request keep
type resizeWatcher struct {
	maxOut   int
	keepUIDs bool
	keep     resource.Quantity
	// partition is the StatefulSet's partition while it holds pods; -1: none checked.
	partition atomic.Int32

	mu         sync.Mutex
	uids       map[string]types.UID
	observed   int
	violations []string
}

func watchResizes(t *testing.T, s *scene, name string, maxOut int, keepUIDs bool, keep string) *resizeWatcher {
	t.Helper()
	w := &resizeWatcher{maxOut: maxOut, keepUIDs: keepUIDs, keep: resource.MustParse(keep), uids: map[string]types.UID{}}
	w.partition.Store(-1)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	factory := informers.NewSharedInformerFactoryWithOptions(s.c.Client, 0, informers.WithNamespace(s.ns),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = "app=" + name }))
	pods := factory.Core().V1().Pods()
	check := func() { w.check(pods.Lister()) }
	if _, err := pods.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { check() }, UpdateFunc: func(any, any) { check() }, DeleteFunc: func(any) { check() },
	}); err != nil {
		t.Fatal(err)
	}
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	check()
	return w
}

func (w *resizeWatcher) check(lister corelisters.PodLister) {
	pods, err := lister.List(labels.Everything())
	if err != nil {
		return
	}
	sort.Slice(pods, func(i, j int) bool { return pods[i].Name < pods[j].Name })
	w.mu.Lock()
	defer w.mu.Unlock()
	w.observed++
	var out, state []string
	fail := func(format string, args ...any) {
		w.violations = append(w.violations, fmt.Sprintf("observation %d: %s [%s]", w.observed, fmt.Sprintf(format, args...), strings.Join(state, " ")))
	}
	partition := int(w.partition.Load())
	var failures []string
	for _, p := range pods {
		own := &corev1.PodTemplateSpec{Spec: p.Spec}
		cpu := p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU]
		state = append(state, fmt.Sprintf("%s:%s:ready=%v:resizing=%v", p.Name, cpu.String(), isPodReady(p), inplace.Resizing(p, own)))
		if p.DeletionTimestamp != nil || !isPodReady(p) || inplace.Resizing(p, own) {
			out = append(out, p.Name)
		}
		if uid, seen := w.uids[p.Name]; w.keepUIDs && seen && uid != p.UID {
			failures = append(failures, fmt.Sprintf("pod %s was replaced (uid %s, was %s)", p.Name, p.UID, uid))
		}
		w.uids[p.Name] = p.UID
		if i := strings.LastIndex(p.Name, "-"); partition >= 0 && i > 0 {
			if ordinal, err := strconv.Atoi(p.Name[i+1:]); err == nil && ordinal < partition && cpu.Cmp(w.keep) != 0 {
				failures = append(failures, fmt.Sprintf("pod %s, below partition %d, asks for cpu %s", p.Name, partition, cpu.String()))
			}
		}
	}
	for _, f := range failures {
		fail("%s", f)
	}
	if len(out) > w.maxOut {
		fail("%d pods not ready or mid-resize (%s), more than %d", len(out), strings.Join(out, ","), w.maxOut)
	}
}

// verify fails t on a broken bound, or when fewer than minObserved states were seen.
func (w *resizeWatcher) verify(t *testing.T, minObserved int) {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, v := range w.violations {
		t.Errorf("invariant broken: %s", v)
	}
	if w.observed < minObserved {
		t.Errorf("only %d states observed, want at least %d", w.observed, minObserved)
	}
	t.Logf("%d states observed, %d violations", w.observed, len(w.violations))
}

// resizedTo tells a pod whose resize to a cpu request and a memory limit is made:
// asked for in its spec, reported by the kubelet, no resize condition, the generation
// observed, ready.
func resizedTo(cpu, memory string) func(*corev1.Pod) bool {
	return func(p *corev1.Pod) bool {
		if len(p.Status.ContainerStatuses) != 1 || p.Status.ContainerStatuses[0].Resources == nil || !isPodReady(p) ||
			p.Status.ObservedGeneration != p.Generation || p.DeletionTimestamp != nil {
			return false
		}
		if state, _ := inplace.ResizeStateOf(p); state != inplace.ResizeSettled {
			return false
		}
		for _, r := range []corev1.ResourceRequirements{p.Spec.Containers[0].Resources, *p.Status.ContainerStatuses[0].Resources} {
			c, m := r.Requests[corev1.ResourceCPU], r.Limits[corev1.ResourceMemory]
			if c.Cmp(resource.MustParse(cpu)) != 0 || m.Cmp(resource.MustParse(memory)) != 0 {
				return false
			}
		}
		return true
	}
}

// waitResized waits until the pods of app=name read want (pod name → resizedTo's cpu
// and memory "200m/128Mi", or "" for any other state), and returns them by name.
func (s *scene) waitResized(t *testing.T, name string, want map[string]string) map[string]*corev1.Pod {
	t.Helper()
	var byName map[string]*corev1.Pod
	eventually(t, 2*time.Minute, fmt.Sprintf("pods of %s resized as %v", name, want), func(context.Context) (bool, string) {
		byName = map[string]*corev1.Pod{}
		var state []string
		ok := true
		for _, p := range s.pods(t, "app="+name) {
			byName[p.Name] = p
			cpu, mem := p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU], p.Spec.Containers[0].Resources.Limits[corev1.ResourceMemory]
			state = append(state, fmt.Sprintf("%s=%s/%s", podState(p), cpu.String(), mem.String()))
		}
		for pod, res := range want {
			p, found := byName[pod]
			if res == "" {
				continue
			}
			cpu, mem, _ := strings.Cut(res, "/")
			if !found || !resizedTo(cpu, mem)(p) {
				ok = false
			}
		}
		sort.Strings(state)
		return ok, strings.Join(state, "; ")
	})
	return byName
}

// patch applies a strategic merge patch to workload ("statefulset/web").
func (s *scene) patch(t *testing.T, workload, patch string) {
	t.Helper()
	s.kubectl(t, "patch", workload, "--type", "strategic", "-p", patch)
}

// cpuPatch and memoryLimitPatch change container app's cpu request or memory limit.
func cpuPatch(cpu string) string {
	return fmt.Sprintf(`{"spec":{"template":{"spec":{"containers":[{"name":"app","resources":{"requests":{"cpu":%q}}}]}}}}`, cpu)
}

func memoryLimitPatch(memory string) string {
	return fmt.Sprintf(`{"spec":{"template":{"spec":{"containers":[{"name":"app","resources":{"limits":{"memory":%q}}}]}}}}`, memory)
}

// restartMidResize stops kroll's controllers (*stop) after each pause and starts them
// again (start: on the test that owns the cluster, so that they outlive a subtest),
// counting the pods of selector caught with a resize written and not yet made; it
// fails t if no stop caught one.
func (s *scene) restartMidResize(t *testing.T, stop *func(), start func() func(), pauses []time.Duration, selector string) {
	t.Helper()
	s.restartCounting(t, stop, start, pauses, "mid-resize", func() int {
		mid := 0
		for _, p := range s.pods(t, selector) {
			if inplace.Resizing(p, &corev1.PodTemplateSpec{Spec: p.Spec}) {
				mid++
			}
		}
		return mid
	})
}

// fillNode binds a pod to node requesting all the cpu the node's active pods leave
// but leave, and waits for it to run: the node then has leave free.
func (s *scene) fillNode(t *testing.T, name, node, leave string) {
	t.Helper()
	ctx := context.Background()
	n, err := s.c.Client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pods, err := s.c.Client.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + node})
	if err != nil {
		t.Fatal(err)
	}
	free := n.Status.Allocatable[corev1.ResourceCPU].DeepCopy()
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		for _, c := range p.Spec.Containers {
			free.Sub(c.Resources.Requests[corev1.ResourceCPU])
		}
	}
	free.Sub(resource.MustParse(leave))
	hog := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "hog"}},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "hog", Image: "nginx:1.14.2",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: free}}}}}}
	if _, err := s.c.Client.CoreV1().Pods(s.ns).Create(ctx, hog, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPod(t, s.c.Client, s.ns, name, "running", isPodReady)
	t.Logf("%s holds cpu %s of %s, leaving %s", name, free.String(), node, leave)
}

// Given StatefulSets and DaemonSets opted in to in-place updates, when their
// containers' cpu or memory change, then each pod is resized through pods/resize
// where it runs — kept (same UID), restarted only for a RestartContainer resize, paced
// by maxUnavailable, the partition honoured, across controller restarts — and a pod
// whose node cannot fit its resize is recreated elsewhere (StatefulSet,
// InPlaceIfPossible), or left and named in the InPlaceUpdate condition (InPlaceOnly,
// and every DaemonSet pod, which cannot move).
func TestResizeSets(t *testing.T) {
	t.Parallel()
	c := clustertest.Start(t, clustertest.WithWorkloadControllers(cluster.WorkloadControllersNone), clustertest.WithNodes(3),
		clustertest.WithKubelet(func(k *kubelet.Config) {
			k.CPU, k.Memory = resource.MustParse("4"), resource.MustParse("8Gi")
			k.PodStartupDelay = 200 * time.Millisecond
		}))
	start := func() func() { return startKrollControllers(t, c) }
	stop := start()
	defer func() { stop() }()

	t.Run("StatefulSet cpu 100m → 200m NotRequired: partition 2, then 0 across controller restarts", func(t *testing.T) {
		s := newScene(t, c, "resize-sts", cluster.WorkloadControllersNone)
		s.apply(t, sizedStatefulSet("web", inplace.IfPossible, 4, 2, "100m"))
		s.kubectl(t, "rollout", "status", "statefulset/web", "--timeout=2m")
		before := s.podRecords(t, "web")
		w := watchResizes(t, s, "web", 1, true, "100m")
		w.partition.Store(2)
		sw := clustertest.WatchStatefulSet(t, c.Client, s.ns, "web")

		s.patch(t, "statefulset/web", cpuPatch("200m"))
		if out := s.kubectl(t, "rollout", "status", "statefulset/web", "--timeout=2m"); !strings.Contains(out, "partitioned roll out complete") {
			t.Errorf("rollout status: %s", out)
		}
		pods := s.waitResized(t, "web", map[string]string{"web-3": "200m/128Mi", "web-2": "200m/128Mi"})
		for _, name := range []string{"web-0", "web-1"} {
			if cpu := pods[name].Spec.Containers[0].Resources.Requests[corev1.ResourceCPU]; cpu.String() != "100m" {
				t.Errorf("%s below the partition asks for cpu %s, want 100m", name, cpu.String())
			}
		}

		w.partition.Store(-1)
		s.patch(t, "statefulset/web", `{"spec":{"updateStrategy":{"rollingUpdate":{"partition":0}}}}`)
		s.restartMidResize(t, &stop, start, []time.Duration{400 * time.Millisecond, 900 * time.Millisecond, 600 * time.Millisecond}, "app=web")
		s.kubectl(t, "rollout", "status", "statefulset/web", "--timeout=2m")
		s.waitResized(t, "web", map[string]string{"web-0": "200m/128Mi", "web-1": "200m/128Mi", "web-2": "200m/128Mi", "web-3": "200m/128Mi"})
		s.expectUpdatedInPlace(t, "web", before, "nginx:1.14.2", 0)
		s.waitInPlaceCondition(t, "statefulset/web", "True/"+inplace.ReasonComplete)
		if created, terminated := sw.Order(); len(terminated) != 0 || len(created) != 4 {
			t.Errorf("pods created %v, terminated %v; a resize in place creates and deletes none", created, terminated)
		}
		w.verify(t, 10)
		sw.Verify(t, 10)
	})

	t.Run("DaemonSet memory limit 128Mi → 256Mi RestartContainer: one restart, maxUnavailable 1, across controller restarts", func(t *testing.T) {
		s := newScene(t, c, "resize-ds", cluster.WorkloadControllersNone)
		s.apply(t, sizedDaemonSet("logs", inplace.IfPossible, "100m", "128Mi"))
		s.kubectl(t, "rollout", "status", "daemonset/logs", "--timeout=2m")
		before := s.podRecords(t, "logs")
		w := watchResizes(t, s, "logs", 1, true, "0")
		dw := clustertest.WatchDaemonSet(t, c.Client, s.ns, "logs")

		s.patch(t, "daemonset/logs", memoryLimitPatch("256Mi"))
		s.restartMidResize(t, &stop, start, []time.Duration{300 * time.Millisecond, 800 * time.Millisecond, 700 * time.Millisecond}, "app=logs")
		s.kubectl(t, "rollout", "status", "daemonset/logs", "--timeout=2m")
		want := map[string]string{}
		for _, r := range before {
			want[r.name] = "100m/256Mi"
		}
		s.waitResized(t, "logs", want)
		s.expectUpdatedInPlace(t, "logs", before, "nginx:1.14.2", 1)
		w.verify(t, 10)
		dw.Verify(t, 10)
	})

	t.Run("nodes that cannot fit the resize", func(t *testing.T) {
		s := newScene(t, c, "resize-unfit", cluster.WorkloadControllersNone)

		// fat-0 (500m → 1) on a node left 300m free: 800m with its own, short of 1.
		s.apply(t, sizedStatefulSet("fat", inplace.IfPossible, 1, 0, "500m"))
		s.kubectl(t, "rollout", "status", "statefulset/fat", "--timeout=2m")
		fat := waitPod(t, c.Client, s.ns, "fat-0", "ready", isPodReady)
		full := fat.Spec.NodeName
		s.fillNode(t, "hog-a", full, "300m")
		s.patch(t, "statefulset/fat", cpuPatch("1"))
		s.kubectl(t, "rollout", "status", "statefulset/fat", "--timeout=2m")
		moved := s.waitResized(t, "fat", map[string]string{"fat-0": "1/128Mi"})["fat-0"]
		if moved.UID == fat.UID || moved.Spec.NodeName == full {
			t.Errorf("fat-0 (uid %s on %s) should be recreated off %s", moved.UID, moved.Spec.NodeName, full)
		}
		s.expectEvent(t, "ResizeUnfit", fmt.Sprintf("pod fat-0: the resize cannot be made on node %s: needs cpu 1, 800m free", full))
		s.expectEvent(t, "ResizeUnfit", "; recreating it")

		// strict-0, InPlaceOnly, the same on another node: left, the rollout blocked.
		s.apply(t, sizedStatefulSet("strict", inplace.Only, 1, 0, "500m"))
		s.kubectl(t, "rollout", "status", "statefulset/strict", "--timeout=2m")
		strict := waitPod(t, c.Client, s.ns, "strict-0", "ready", isPodReady)
		s.fillNode(t, "hog-b", strict.Spec.NodeName, "300m")
		s.patch(t, "statefulset/strict", cpuPatch("1"))
		blocked := fmt.Sprintf("False/%s: pod strict-0: the resize cannot be made on node %s: needs cpu 1, 800m free", inplace.ReasonBlocked, strict.Spec.NodeName)
		s.waitInPlaceCondition(t, "statefulset/strict", blocked)
		s.waitInPlaceCondition(t, "statefulset/strict", "; InPlaceOnly recreates no pod")
		podHolds(t, c.Client, s.ns, "strict-0", 2*time.Second, "Ready, neither written to nor replaced under InPlaceOnly", func(p *corev1.Pod) bool {
			return isPodReady(p) && p.UID == strict.UID && p.Generation == strict.Generation && p.Labels[appsv1.StatefulSetRevisionLabel] == strict.Labels[appsv1.StatefulSetRevisionLabel]
		})
		s.expectEvent(t, inplace.ReasonBlocked, "pod strict-0: the resize cannot be made")
		s.kubectl(t, "delete", "statefulset/strict", "pod/hog-b", "--wait=true")

		// agent (100m → 600m) on every node; one is left 200m free beside it: 300m
		// with its own, short of 600m.
		s.apply(t, sizedDaemonSet("agent", inplace.IfPossible, "100m", "128Mi"))
		s.kubectl(t, "rollout", "status", "daemonset/agent", "--timeout=2m")
		s.fillNode(t, "hog-c", full, "200m")
		before := s.podRecords(t, "agent")
		w := watchResizes(t, s, "agent", 1, true, "0")
		s.patch(t, "daemonset/agent", cpuPatch("600m"))
		want, left := map[string]string{}, ""
		for _, r := range before {
			want[r.name] = "600m/128Mi"
			if r.node == full {
				want[r.name], left = "", r.name
			}
		}
		s.waitResized(t, "agent", want)
		s.waitInPlaceCondition(t, "daemonset/agent", fmt.Sprintf("False/%s: pod %s: the resize cannot be made on node %s: needs cpu 600m, 300m free", inplace.ReasonBlocked, left, full))
		s.waitInPlaceCondition(t, "daemonset/agent", "a DaemonSet's pod cannot move to another node: left as it is")
		for uid, r := range s.podRecords(t, "agent") {
			if _, kept := before[uid]; !kept {
				t.Errorf("pod %s on %s was replaced", r.name, r.node)
			}
		}
		if p := waitPod(t, c.Client, s.ns, left, "ready", isPodReady); !resizedTo("100m", "128Mi")(p) {
			t.Errorf("%s on the full node %s was resized: %s", left, full, podState(p))
		}
		w.verify(t, 5)
	})
}
