package bench

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/kroll-dev/kroll/pkg/cluster"
	"github.com/kroll-dev/kroll/pkg/cluster/clustertest"
	"github.com/kroll-dev/kroll/pkg/inplace"
	"github.com/kroll-dev/kroll/pkg/kubelet"
)

// BenchmarkRollingUpdate1000 times a RollingUpdate image change of a 1,000-replica
// Deployment (25%/25%) from the template change to complete, with kroll's controllers
// and with upstream's, alternating, 3 runs each, each on a fresh cluster; both at
// upstream's default client limits (QPS 20, burst 30 per controller). It reports the
// median seconds of each and kroll/upstream.
func BenchmarkRollingUpdate1000(b *testing.B) {
	const replicas, runs = 1000, 3
	times := map[cluster.WorkloadControllers][]float64{}
	for run := 0; run < runs; run++ {
		for _, mode := range []cluster.WorkloadControllers{cluster.WorkloadControllersKroll, cluster.WorkloadControllersUpstream} {
			secs := rolloutOnce(b, mode, replicas)
			b.Logf("run %d %s: %.1fs", run+1, mode, secs)
			times[mode] = append(times[mode], secs)
		}
	}
	k, u := median(times[cluster.WorkloadControllersKroll]), median(times[cluster.WorkloadControllersUpstream])
	b.ReportMetric(k, "s-kroll")
	b.ReportMetric(u, "s-upstream")
	b.ReportMetric(k/u, "kroll/upstream")
	b.Logf("kroll %v, upstream %v (seconds)", times[cluster.WorkloadControllersKroll], times[cluster.WorkloadControllersUpstream])
}

func rolloutOnce(b *testing.B, mode cluster.WorkloadControllers, replicas int32) float64 {
	c := clustertest.Start(b, clustertest.WithWorkloadControllers(mode), clustertest.WithNodes(20),
		clustertest.WithKubelet(func(k *kubelet.Config) { k.PodStartupDelay = 500 * time.Millisecond }))
	defer c.Stop()
	ctx := context.Background()
	d := benchDeployment(replicas)
	if _, err := c.Client.AppsV1().Deployments("default").Create(ctx, d, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	waitComplete(b, c.Client, "nginx:1.14.2", replicas, 20*time.Minute)
	began := time.Now()
	patch := []byte(`{"spec":{"template":{"spec":{"containers":[{"name":"nginx","image":"nginx:1.16.1"}]}}}}`)
	if _, err := c.Client.AppsV1().Deployments("default").Patch(ctx, "bench", types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
		b.Fatal(err)
	}
	waitComplete(b, c.Client, "nginx:1.16.1", replicas, 20*time.Minute)
	return time.Since(began).Seconds()
}

func benchDeployment(replicas int32) *appsv1.Deployment {
	labels := map[string]string{"app": "bench"}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "bench"},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					Containers:                    []corev1.Container{{Name: "nginx", Image: "nginx:1.14.2"}},
					TerminationGracePeriodSeconds: new(int64),
				},
			},
		},
	}
}

// waitComplete waits until the Deployment runs replicas updated, available pods of image.
func waitComplete(b *testing.B, client kubernetes.Interface, image string, replicas int32, timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	last := ""
	for time.Now().Before(deadline) {
		d, err := client.AppsV1().Deployments("default").Get(context.Background(), "bench", metav1.GetOptions{})
		if err == nil {
			s := d.Status
			last = fmt.Sprintf("replicas=%d updated=%d available=%d", s.Replicas, s.UpdatedReplicas, s.AvailableReplicas)
			if d.Spec.Template.Spec.Containers[0].Image == image && s.ObservedGeneration >= d.Generation &&
				s.Replicas == replicas && s.UpdatedReplicas == replicas && s.AvailableReplicas == replicas {
				return
			}
		}
		time.Sleep(250 * time.Millisecond)
	}
	b.Fatalf("deployment not complete at %s within %s: %s", image, timeout, last)
}

func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return s[len(s)/2]
}

// BenchmarkInPlace1000 compares, on kroll's controllers, an image change of a
// 1,000-replica Deployment (25%/25%) made in place (kroll.dev/update-strategy:
// InPlaceIfPossible) with the same change made by the rolling update, alternating, 3
// runs each, each on a fresh cluster. It reports the median seconds from the template
// change to complete, and the median API writes the rollout cost (every create,
// update, patch and delete the API server served meanwhile, node leases and events
// left out), with the in-place/rolling ratios.
func BenchmarkInPlace1000(b *testing.B) {
	const replicas, runs = 1000, 3
	type result struct{ secs, writes float64 }
	results := map[bool][]result{}
	for run := 0; run < runs; run++ {
		for _, inPlace := range []bool{true, false} {
			secs, writes := strategyRolloutOnce(b, inPlace, replicas)
			b.Logf("run %d in-place=%v: %.1fs, %.0f writes", run+1, inPlace, secs, writes)
			results[inPlace] = append(results[inPlace], result{secs, writes})
		}
	}
	medians := func(inPlace bool) (float64, float64) {
		var secs, writes []float64
		for _, r := range results[inPlace] {
			secs, writes = append(secs, r.secs), append(writes, r.writes)
		}
		return median(secs), median(writes)
	}
	is, iw := medians(true)
	rs, rw := medians(false)
	b.ReportMetric(is, "s-inplace")
	b.ReportMetric(rs, "s-rolling")
	b.ReportMetric(is/rs, "time-inplace/rolling")
	b.ReportMetric(iw, "writes-inplace")
	b.ReportMetric(rw, "writes-rolling")
	b.ReportMetric(iw/rw, "writes-inplace/rolling")
}

func strategyRolloutOnce(b *testing.B, inPlace bool, replicas int32) (secs, writes float64) {
	c := clustertest.Start(b, clustertest.WithWorkloadControllers(cluster.WorkloadControllersKroll), clustertest.WithNodes(20),
		clustertest.WithKubelet(func(k *kubelet.Config) { k.PodStartupDelay = 500 * time.Millisecond }))
	defer c.Stop()
	ctx := context.Background()
	d := benchDeployment(replicas)
	if inPlace {
		d.Annotations = map[string]string{inplace.StrategyAnnotation: string(inplace.IfPossible)}
	}
	if _, err := c.Client.AppsV1().Deployments("default").Create(ctx, d, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	waitComplete(b, c.Client, "nginx:1.14.2", replicas, 20*time.Minute)
	time.Sleep(2 * time.Second) // let the last status writes land before counting
	before := apiWrites(b, c.Client)
	began := time.Now()
	patch := []byte(`{"spec":{"template":{"spec":{"containers":[{"name":"nginx","image":"nginx:1.16.1"}]}}}}`)
	if _, err := c.Client.AppsV1().Deployments("default").Patch(ctx, "bench", types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
		b.Fatal(err)
	}
	waitComplete(b, c.Client, "nginx:1.16.1", replicas, 20*time.Minute)
	secs = time.Since(began).Seconds()
	return secs, apiWrites(b, c.Client) - before
}

// apiWrites sums the API server's apiserver_request_total over the write verbs,
// leaving out node leases and events (they tick with time, not with work).
func apiWrites(b *testing.B, client kubernetes.Interface) float64 {
	raw, err := client.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	total := 0.0
	for _, line := range strings.Split(string(raw), "\n") {
		if !strings.HasPrefix(line, "apiserver_request_total{") || strings.Contains(line, `resource="leases"`) || strings.Contains(line, `resource="events"`) {
			continue
		}
		write := false
		for _, verb := range []string{`verb="POST"`, `verb="PUT"`, `verb="PATCH"`, `verb="DELETE"`} {
			write = write || strings.Contains(line, verb)
		}
		if !write {
			continue
		}
		fields := strings.Fields(line)
		if n, err := strconv.ParseFloat(fields[len(fields)-1], 64); err == nil {
			total += n
		}
	}
	return total
}
