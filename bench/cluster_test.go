package bench

// The embedded cluster's own figures, as Go benchmarks: go test ./bench -run '^$' -bench . -benchtime 1x -timeout 60m

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/kroll-dev/kroll/pkg/cluster/clustertest"
	"github.com/kroll-dev/kroll/pkg/kubelet"
)

// BenchmarkIdleCluster reports the start-to-ready time of a 3-node cluster and its
// CPU and memory at rest.
func BenchmarkIdleCluster(b *testing.B) {
	for i := 0; i < b.N; i++ {
		began := time.Now()
		c := clustertest.Start(b, clustertest.WithKubelet(func(k *kubelet.Config) { k.PodStartupDelay = 500 * time.Millisecond }))
		b.ReportMetric(time.Since(began).Seconds(), "s-to-ready")
		time.Sleep(10 * time.Second) // let start-up work settle
		cores := cpuCores(30 * time.Second)
		b.ReportMetric(cores, "idle-cores")
		b.ReportMetric(rssMiB("VmRSS"), "idle-RSS-MiB")
		c.Stop()
	}
}

// BenchmarkPods10k creates 10,000 bare pods directly (no controllers) on 100 nodes,
// waits for all to run Ready, and reports the time, the process's peak and steady
// memory and its CPU at rest with them running. It fails if any node stopped being
// Ready meanwhile: node heartbeats must keep up under pod load.
func BenchmarkPods10k(b *testing.B) {
	const nodes, pods, creators = 100, 10000, 32
	for i := 0; i < b.N; i++ {
		c := clustertest.Start(b, clustertest.WithNodes(nodes), clustertest.WithKubelet(func(k *kubelet.Config) {
			k.PodStartupDelay = 500 * time.Millisecond
		}))
		ctx, cancel := context.WithCancel(context.Background())
		notReady := watchNodeHealth(b, ctx, c.Client)

		ns := "scale"
		if _, err := c.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		waitServiceAccount(b, c.Client, ns)
		running := countReadyPods(b, ctx, c.Client, ns)

		began := time.Now()
		var next atomic.Int64
		var wg sync.WaitGroup
		errs := make(chan error, creators)
		for w := 0; w < creators; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					n := next.Add(1)
					if n > pods {
						return
					}
					if _, err := c.Client.CoreV1().Pods(ns).Create(ctx, benchPod(int(n)), metav1.CreateOptions{}); err != nil {
						errs <- err
						return
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			b.Fatalf("create pod: %v", err)
		}
		created := time.Since(began)
		deadline := time.After(20 * time.Minute)
		for running() < pods {
			select {
			case <-deadline:
				b.Fatalf("only %d of %d pods Ready after 20m", running(), pods)
			case <-time.After(500 * time.Millisecond):
			}
		}
		allReady := time.Since(began)
		b.ReportMetric(created.Seconds(), "s-created")
		b.ReportMetric(allReady.Seconds(), "s-all-ready")
		b.ReportMetric(float64(pods)/allReady.Seconds(), "pods/s")
		b.ReportMetric(rssMiB("VmHWM"), "peak-RSS-MiB")
		time.Sleep(10 * time.Second)
		b.ReportMetric(cpuCores(30*time.Second), "steady-cores")
		b.ReportMetric(rssMiB("VmRSS"), "steady-RSS-MiB")
		if n := notReady(); n > 0 {
			b.Errorf("%d node condition changes away from Ready during the run: heartbeats fell behind", n)
		}
		cancel()
		c.Stop()
	}
}

func benchPod(i int) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p-%05d", i), Labels: map[string]string{"app": "scale"}},
		Spec: corev1.PodSpec{
			Containers:                    []corev1.Container{{Name: "app", Image: "nginx:1.14.2"}},
			TerminationGracePeriodSeconds: new(int64),
		},
	}
}

// watchNodeHealth counts every observed change of a node to not Ready or to a
// not-ready/unreachable taint.
func watchNodeHealth(b *testing.B, ctx context.Context, client kubernetes.Interface) func() int64 {
	var bad atomic.Int64
	factory := informers.NewSharedInformerFactory(client, 0)
	inf := factory.Core().V1().Nodes().Informer()
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{UpdateFunc: func(_, obj any) {
		n := obj.(*corev1.Node)
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status != corev1.ConditionTrue {
				bad.Add(1)
			}
		}
		for _, t := range n.Spec.Taints {
			if t.Key == corev1.TaintNodeNotReady || t.Key == corev1.TaintNodeUnreachable {
				bad.Add(1)
			}
		}
	}})
	if err != nil {
		b.Fatal(err)
	}
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	return bad.Load
}

// countReadyPods returns a function telling how many pods of ns are Ready now.
func countReadyPods(b *testing.B, ctx context.Context, client kubernetes.Interface, ns string) func() int {
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(ns))
	lister := factory.Core().V1().Pods().Lister()
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	return func() int {
		pods, _ := lister.List(labels.Everything())
		return readyPods(pods)
	}
}

func waitServiceAccount(b *testing.B, client kubernetes.Interface, ns string) {
	for i := 0; i < 300; i++ {
		if _, err := client.CoreV1().ServiceAccounts(ns).Get(context.Background(), "default", metav1.GetOptions{}); err == nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	b.Fatalf("no default service account in %s after 30s", ns)
}

// cpuCores is the process's CPU use (user+system) over window, in cores.
func cpuCores(window time.Duration) float64 {
	before := ownCPUSeconds()
	time.Sleep(window)
	return (ownCPUSeconds() - before) / window.Seconds()
}

// rssMiB reads a memory figure (VmRSS, VmHWM) of this process from /proc.
func rssMiB(field string) float64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == field+":" {
			kb, _ := strconv.ParseFloat(f[1], 64)
			return kb / 1024
		}
	}
	return 0
}
