package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"

	"github.com/kroll-dev/kroll/pkg/cluster/clustertest"
	"github.com/kroll-dev/kroll/pkg/kubelet"
)

// Given one 4-CPU simulated node running web (1 CPU, a 1s resize delay; cpu NotRequired, memory
// RestartContainer) and hog (2 CPUs), when web is resized through pods/resize, then the
// simulated kubelet carries each resize out as the 1.36 kubelet does: a CPU change in
// place without a restart, a memory change with restartCount+1, a CPU increase the node
// has no room for Deferred until hog shrinks (through its own resize) or leaves, each reported in containerStatuses'
// resources and allocatedResources with the pod's observedGeneration.
func TestKubeletResize(t *testing.T) {
	t.Parallel()
	c := clustertest.Start(t, clustertest.WithNodes(1), clustertest.WithKubelet(func(k *kubelet.Config) {
		k.CPU, k.Memory = resource.MustParse("4"), resource.MustParse("8Gi")
	}))
	ctx := context.Background()
	pods := c.Client.CoreV1().Pods("default")
	newPod := func(name, cpu string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{kubelet.AnnotationResizeDelay: "1s"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{
				Name: "app", Image: "nginx:1.14.2",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("256Mi")}},
				ResizePolicy: []corev1.ContainerResizePolicy{
					{ResourceName: corev1.ResourceCPU, RestartPolicy: corev1.NotRequired},
					{ResourceName: corev1.ResourceMemory, RestartPolicy: corev1.RestartContainer}},
			}}},
		}
	}
	for _, p := range []*corev1.Pod{newPod("web", "1"), newPod("hog", "2")} {
		if _, err := pods.Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	web := waitPod(t, c.Client, "default", "web", "ready", isPodReady)
	uid := web.UID

	// done is a pod whose last resize is carried out: cpu and memory as asked, reported
	// as allocated and actuated, no resize condition, the generation observed.
	done := func(cpu, memory string, restarts int32) func(*corev1.Pod) bool {
		return func(p *corev1.Pod) bool {
			if len(p.Status.ContainerStatuses) != 1 || p.Status.ObservedGeneration != p.Generation {
				return false
			}
			cs := p.Status.ContainerStatuses[0]
			if cs.Resources == nil || cs.RestartCount != restarts || !isPodReady(p) {
				return false
			}
			want := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(memory)}
			for name, q := range want {
				if r, a := cs.Resources.Requests[name], cs.AllocatedResources[name]; !r.Equal(q) || !a.Equal(q) {
					return false
				}
			}
			for _, cond := range p.Status.Conditions {
				if cond.Type == corev1.PodResizePending || cond.Type == corev1.PodResizeInProgress {
					return false
				}
			}
			return true
		}
	}
	web = waitPod(t, c.Client, "default", "web", "reporting its admitted resources", done("1", "256Mi", 0))

	t.Run("cpu through kubectl patch --subresource resize: in place, no restart", func(t *testing.T) {
		gen := web.Generation
		mustKubectl(t, c.KubeconfigPath, "patch", "pod", "web", "--subresource", "resize", "--type", "strategic",
			"-p", `{"spec":{"containers":[{"name":"app","resources":{"requests":{"cpu":"1500m"}}}]}}`)
		// For the 1s resize delay: allocated, reported as before, in progress.
		waitPod(t, c.Client, "default", "web", "resize in progress", func(p *corev1.Pod) bool {
			cs := p.Status.ContainerStatuses[0]
			allocated, actual := cs.AllocatedResources[corev1.ResourceCPU], cs.Resources.Requests[corev1.ResourceCPU]
			for _, cond := range p.Status.Conditions {
				if cond.Type == corev1.PodResizeInProgress {
					return cond.ObservedGeneration == gen+1 && allocated.String() == "1500m" && actual.String() == "1"
				}
			}
			return false
		})
		p := waitPod(t, c.Client, "default", "web", "resized to 1500m in place", done("1500m", "256Mi", 0))
		if p.UID != uid || p.Generation != gen+1 || p.Status.ObservedGeneration != gen+1 {
			t.Errorf("uid %s generation %d observed %d; want uid %s, generation and observed %d", p.UID, p.Generation, p.Status.ObservedGeneration, uid, gen+1)
		}
		expectEvents(t, c.Client, "web", "ResizeStarted", "ResizeCompleted")
	})

	t.Run("memory through UpdateResize: RestartContainer restarts the container once", func(t *testing.T) {
		p, err := pods.Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		p.Spec.Containers[0].Resources.Requests[corev1.ResourceMemory] = resource.MustParse("512Mi")
		if _, err := pods.UpdateResize(ctx, "web", p, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitPod(t, c.Client, "default", "web", "resized to 512Mi with one restart", done("1500m", "512Mi", 1))
	})

	// deferred patches web's CPU request to cpu and waits for PodResizePending Deferred
	// with admission's message, the allocation left at allocated.
	deferred := func(t *testing.T, cpu, message, allocated string) {
		t.Helper()
		mustKubectl(t, c.KubeconfigPath, "patch", "pod", "web", "--subresource", "resize", "--type", "strategic",
			"-p", fmt.Sprintf(`{"spec":{"containers":[{"name":"app","resources":{"requests":{"cpu":%q}}}]}}`, cpu))
		p := waitPod(t, c.Client, "default", "web", "resize Deferred", func(p *corev1.Pod) bool {
			for _, cond := range p.Status.Conditions {
				if cond.Type == corev1.PodResizePending {
					return cond.Reason == corev1.PodReasonDeferred && cond.Message == message && cond.ObservedGeneration == p.Generation
				}
			}
			return false
		})
		if got := p.Status.ContainerStatuses[0].AllocatedResources[corev1.ResourceCPU]; got.String() != allocated {
			t.Errorf("allocated cpu while deferred = %s, want %s", got.String(), allocated)
		}
	}

	t.Run("cpu the node has no room for: Deferred until hog shrinks", func(t *testing.T) {
		// web 1.5 → 3 CPUs beside hog's 2 of 4: 3 > 4 - 2, Deferred.
		deferred(t, "3", "Node didn't have enough resource: cpu, requested: 3000, used: 2000, capacity: 4000", "1500m")
		expectEvents(t, c.Client, "web", "ResizeDeferred")
		// hog 2 → 1 CPU frees the room once actuated (1s later): 3 + 1 ≤ 4.
		mustKubectl(t, c.KubeconfigPath, "patch", "pod", "hog", "--subresource", "resize", "--type", "strategic",
			"-p", `{"spec":{"containers":[{"name":"app","resources":{"requests":{"cpu":"1"}}}]}}`)
		waitPod(t, c.Client, "default", "web", "resized to 3 CPUs once hog shrank", done("3", "512Mi", 1))
	})

	t.Run("cpu the node has no room for: Deferred until hog leaves", func(t *testing.T) {
		// web 3 → 3.5 CPUs beside hog's 1 of 4: Deferred; hog deleted: 3.5 ≤ 4.
		deferred(t, "3500m", "Node didn't have enough resource: cpu, requested: 3500, used: 1000, capacity: 4000", "3")
		if err := pods.Delete(ctx, "hog", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		waitPod(t, c.Client, "default", "web", "resized to 3.5 CPUs once hog left", done("3500m", "512Mi", 1))
	})
}

// expectEvents waits until pod has an event of each reason, from its node's kubelet.
func expectEvents(t *testing.T, client kubernetes.Interface, pod string, reasons ...string) {
	t.Helper()
	eventually(t, 30*time.Second, fmt.Sprintf("events %v on pod %s", reasons, pod), func(ctx context.Context) (bool, string) {
		list, err := client.CoreV1().Events("default").List(ctx, metav1.ListOptions{
			FieldSelector: fields.OneTermEqualSelector("involvedObject.name", pod).String()})
		if err != nil {
			return false, err.Error()
		}
		seen := map[string]bool{}
		var all []string
		for _, e := range list.Items {
			if e.Source.Component == "kubelet" {
				seen[e.Reason] = true
				all = append(all, e.Reason+": "+e.Message)
			}
		}
		for _, r := range reasons {
			if !seen[r] {
				return false, strings.Join(all, "; ")
			}
		}
		return true, ""
	})
}
