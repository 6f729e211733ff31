package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kroll-dev/kroll/pkg/cluster"
	"github.com/kroll-dev/kroll/pkg/cluster/clustertest"
	"github.com/kroll-dev/kroll/pkg/kubelet"
)

// Given an embedded cluster, when a user runs bare pods with kubectl, then the real
// scheduler binds them and the simulated kubelet runs them, fails to pull a missing
// image, rejects a pod bound to a node that cannot run it, stops a deleted pod before
// it goes, and leaves an unschedulable pod Pending; deleting a namespace deletes its pods.
func TestBarePods(t *testing.T) {
	t.Parallel()
	c := clustertest.Start(t)
	ctx := context.Background()

	t.Run("a pod is scheduled and runs 1/1 Ready", func(t *testing.T) {
		mustKubectl(t, c.KubeconfigPath, "run", "web", "--image=nginx:1.14.2")
		pod := waitPod(t, c.Client, "default", "web", "Running and Ready", func(p *corev1.Pod) bool {
			return p.Status.Phase == corev1.PodRunning && isPodReady(p)
		})
		if !strings.HasPrefix(pod.Spec.NodeName, "kroll-node-") {
			t.Errorf("pod bound to %q, want a simulated node", pod.Spec.NodeName)
		}
		cs := pod.Status.ContainerStatuses[0]
		if cs.Image != "docker.io/library/nginx:1.14.2" || !strings.Contains(cs.ImageID, "@sha256:") || cs.RestartCount != 0 {
			t.Errorf("container status image=%q imageID=%q restarts=%d", cs.Image, cs.ImageID, cs.RestartCount)
		}
		if pod.Status.PodIP == "" || pod.Status.HostIP == "" || pod.Status.StartTime == nil {
			t.Errorf("pod IP %q, host IP %q, start time %v: want all set", pod.Status.PodIP, pod.Status.HostIP, pod.Status.StartTime)
		}
		events, err := c.Client.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=web,reason=Scheduled"})
		if err != nil || len(events.Items) == 0 || events.Items[0].Source.Component != "default-scheduler" && events.Items[0].ReportingController != "default-scheduler" {
			t.Errorf("no Scheduled event from default-scheduler for web: %v %+v", err, events)
		}
		out := mustKubectl(t, c.KubeconfigPath, "get", "pod", "web", "--no-headers")
		if f := strings.Fields(out); len(f) < 3 || f[1] != "1/1" || f[2] != "Running" {
			t.Errorf("kubectl get pod web: %q, want 1/1 Running", out)
		}
	})

	t.Run("an image changed in place restarts the container, not the pod", func(t *testing.T) {
		before, err := c.Client.CoreV1().Pods("default").Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		mustKubectl(t, c.KubeconfigPath, "set", "image", "pod/web", "web=nginx:1.16.1")
		after := waitPod(t, c.Client, "default", "web", "restarted on the new image and Ready", func(p *corev1.Pod) bool {
			cs := p.Status.ContainerStatuses[0]
			return cs.Image == "docker.io/library/nginx:1.16.1" && cs.RestartCount == 1 && isPodReady(p)
		})
		cs, old := after.Status.ContainerStatuses[0], before.Status.ContainerStatuses[0]
		if after.UID != before.UID || after.Status.PodIP != before.Status.PodIP || after.Spec.NodeName != before.Spec.NodeName {
			t.Errorf("the pod was replaced: uid %s→%s ip %s→%s node %s→%s", before.UID, after.UID, before.Status.PodIP, after.Status.PodIP, before.Spec.NodeName, after.Spec.NodeName)
		}
		if cs.ImageID == old.ImageID || cs.ContainerID == old.ContainerID || cs.LastTerminationState.Terminated == nil {
			t.Errorf("container status after the restart: imageID %q containerID %q lastState %+v", cs.ImageID, cs.ContainerID, cs.LastTerminationState)
		}
	})

	t.Run("a pod with a readiness gate is Ready only once its condition is True", func(t *testing.T) {
		manifest := writeFile(t, "gated.yaml", `apiVersion: v1
kind: Pod
metadata:
  name: gated
spec:
  readinessGates:
  - conditionType: kroll.dev/in-place-update-ready
  containers:
  - name: app
    image: nginx:1.14.2
`)
		mustKubectl(t, c.KubeconfigPath, "apply", "-f", manifest)
		waitPod(t, c.Client, "default", "gated", "running with its containers ready", func(p *corev1.Pod) bool {
			return len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].Ready
		})
		podHolds(t, c.Client, "default", "gated", time.Second, "not Ready before its gate", func(p *corev1.Pod) bool { return !isPodReady(p) })
		patch := `{"status":{"conditions":[{"type":"kroll.dev/in-place-update-ready","status":"True"}]}}`
		if _, err := c.Client.CoreV1().Pods("default").Patch(ctx, "gated", types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}, "status"); err != nil {
			t.Fatal(err)
		}
		waitPod(t, c.Client, "default", "gated", "Ready once the gate is True", isPodReady)
	})

	t.Run("an image that does not exist stays ImagePullBackOff", func(t *testing.T) {
		mustKubectl(t, c.KubeconfigPath, "run", "broken", "--image=busybox:nonexistent")
		waitPod(t, c.Client, "default", "broken", "in ImagePullBackOff", func(p *corev1.Pod) bool {
			return len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].State.Waiting != nil &&
				p.Status.ContainerStatuses[0].State.Waiting.Reason == "ImagePullBackOff"
		})
		// A pull retried within the window fails again (ErrImagePull, then the back-off):
		// the pod never gets further.
		podHolds(t, c.Client, "default", "broken", 2*time.Second, "Pending, not ready, ImagePullBackOff or ErrImagePull", func(p *corev1.Pod) bool {
			w := p.Status.ContainerStatuses[0].State.Waiting
			return w != nil && (w.Reason == "ImagePullBackOff" || w.Reason == "ErrImagePull") && !isPodReady(p) && p.Status.Phase == corev1.PodPending
		})
	})

	t.Run("an image tag that does not exist (the walkthrough's nginx:1.161) fails ErrImagePull then ImagePullBackOff", func(t *testing.T) {
		mustKubectl(t, c.KubeconfigPath, "apply", "-f", writeFile(t, "typo.yaml", heldPod("typo", "nginx:1.161")))
		const pullErr = `rpc error: code = NotFound desc = failed to pull and unpack image "docker.io/library/nginx:1.161": ` +
			`failed to resolve reference "docker.io/library/nginx:1.161": docker.io/library/nginx:1.161: not found`
		for _, want := range []struct{ reason, message string }{
			{"ErrImagePull", pullErr},
			{"ImagePullBackOff", `Back-off pulling image "nginx:1.161": ErrImagePull: ` + pullErr},
		} {
			p := waitPod(t, c.Client, "default", "typo", "waiting "+want.reason, func(p *corev1.Pod) bool {
				return len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].State.Waiting != nil &&
					p.Status.ContainerStatuses[0].State.Waiting.Reason == want.reason
			})
			cs := p.Status.ContainerStatuses[0]
			if cs.State.Waiting.Message != want.message || cs.Image != "nginx:1.161" || p.Status.Phase != corev1.PodPending || isPodReady(p) {
				t.Errorf("%s: image %q message %q, %s; want %q, Pending and not ready", want.reason, cs.Image, cs.State.Waiting.Message, podState(p), want.message)
			}
		}

		// Deleted while Pending: nothing runs, so it stops at once, Failed, its container
		// ContainerStatusUnknown; a finalizer keeps the object with that status.
		mustKubectl(t, c.KubeconfigPath, "delete", "pod", "typo", "--wait=false")
		p := waitPod(t, c.Client, "default", "typo", "Failed", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodFailed })
		if term := p.Status.ContainerStatuses[0].State.Terminated; term == nil || term.Reason != "ContainerStatusUnknown" || term.ExitCode != 137 {
			t.Errorf("the never-started container of a deleted pod: %+v, want terminated ContainerStatusUnknown 137", p.Status.ContainerStatuses[0].State)
		}
		release(t, c, "typo")
	})

	t.Run("a pod bound by nodeName to a node with too little cpu is rejected: Failed OutOfcpu", func(t *testing.T) {
		mustKubectl(t, c.KubeconfigPath, "apply", "-f", writeFile(t, "greedy.yaml", `apiVersion: v1
kind: Pod
metadata:
  name: greedy
spec:
  nodeName: kroll-node-0
  containers:
  - name: app
    image: nginx:1.14.2
    resources:
      requests:
        cpu: "64"
`))
		p := waitPod(t, c.Client, "default", "greedy", "Failed", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodFailed })
		msg := p.Status.Message
		if p.Status.Reason != "OutOfcpu" || !strings.HasPrefix(msg, "Pod was rejected: Node didn't have enough resource: cpu, requested: 64000, used: ") ||
			!strings.HasSuffix(msg, ", capacity: 32000") {
			t.Errorf("greedy: reason %q message %q; want OutOfcpu, requested 64000 of capacity 32000", p.Status.Reason, msg)
		}
		if len(p.Status.ContainerStatuses) != 0 || p.Status.PodIP != "" {
			t.Errorf("a rejected pod started something: containers %+v, IP %q", p.Status.ContainerStatuses, p.Status.PodIP)
		}
		eventually(t, 30*time.Second, "the kubelet's OutOfcpu event", func(ctx context.Context) (bool, string) {
			events, err := c.Client.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=greedy,reason=OutOfcpu"})
			if err != nil || len(events.Items) == 0 {
				return false, fmt.Sprint(err)
			}
			e := events.Items[0]
			return e.Type == corev1.EventTypeWarning && e.Source.Component == "kubelet" && e.Source.Host == "kroll-node-0" &&
				strings.HasPrefix(e.Message, "Node didn't have enough resource: cpu"), fmt.Sprintf("%s %s %+v %s", e.Type, e.Reason, e.Source, e.Message)
		})
	})

	t.Run("a second pod on a node with the same host port is rejected: Failed NodePorts", func(t *testing.T) {
		for _, name := range []string{"port-a", "port-b"} {
			mustKubectl(t, c.KubeconfigPath, "apply", "-f", writeFile(t, name+".yaml", fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
spec:
  nodeName: kroll-node-1
  containers:
  - name: app
    image: nginx:1.14.2
    ports:
    - containerPort: 21017
      hostPort: 21017
`, name)))
			if name == "port-a" {
				waitPod(t, c.Client, "default", "port-a", "Running and Ready", isPodReady)
			}
		}
		p := waitPod(t, c.Client, "default", "port-b", "Failed", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodFailed })
		if p.Status.Reason != "NodePorts" || p.Status.Message != "Pod was rejected: Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports" {
			t.Errorf("port-b: reason %q message %q", p.Status.Reason, p.Status.Message)
		}
		if a, err := c.Client.CoreV1().Pods("default").Get(ctx, "port-a", metav1.GetOptions{}); err != nil || !isPodReady(a) {
			t.Errorf("port-a after port-b's rejection: %v %s", err, podState(a))
		}
	})

	t.Run("a deleted pod a finalizer holds stops (containers terminated and not Ready and Succeeded) and stays until the finalizer goes", func(t *testing.T) {
		mustKubectl(t, c.KubeconfigPath, "apply", "-f", writeFile(t, "held.yaml", heldPod("held", "nginx:1.14.2")))
		running := waitPod(t, c.Client, "default", "held", "Running and Ready", isPodReady)
		mustKubectl(t, c.KubeconfigPath, "delete", "pod", "held", "--wait=false")
		p := waitPod(t, c.Client, "default", "held", "stopped", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodSucceeded })
		cs := p.Status.ContainerStatuses[0]
		term := cs.State.Terminated
		if term == nil || term.ExitCode != 0 || term.Reason != "Completed" || cs.Ready || term.ContainerID != running.Status.ContainerStatuses[0].ContainerID {
			t.Errorf("held's container: %+v ready %v; want terminated Completed, exit 0, not ready", cs.State, cs.Ready)
		}
		for _, ct := range []corev1.PodConditionType{corev1.PodReady, corev1.ContainersReady} {
			for _, cond := range p.Status.Conditions {
				if cond.Type == ct && (cond.Status != corev1.ConditionFalse || cond.Reason != "PodCompleted") {
					t.Errorf("%s: %s/%s, want False/PodCompleted", ct, cond.Status, cond.Reason)
				}
			}
		}
		podHolds(t, c.Client, "default", "held", time.Second, "kept by its finalizer, deleted and Succeeded", func(p *corev1.Pod) bool {
			return p.DeletionTimestamp != nil && p.Status.Phase == corev1.PodSucceeded
		})
		release(t, c, "held")
	})

	t.Run("a pod no node has room for stays Pending with FailedScheduling", func(t *testing.T) {
		mustKubectl(t, c.KubeconfigPath, "run", "huge", "--image=nginx", "--overrides",
			`{"apiVersion":"v1","spec":{"containers":[{"name":"huge","image":"nginx","resources":{"requests":{"cpu":"1000"}}}]}}`)
		eventually(t, time.Minute, "a FailedScheduling event for huge", func(ctx context.Context) (bool, string) {
			events, err := c.Client.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=huge,reason=FailedScheduling"})
			if err != nil || len(events.Items) == 0 {
				return false, "no event yet"
			}
			msg := events.Items[0].Message
			return strings.Contains(msg, "Insufficient cpu"), msg
		})
		p, err := c.Client.CoreV1().Pods("default").Get(ctx, "huge", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if p.Status.Phase != corev1.PodPending || p.Spec.NodeName != "" {
			t.Errorf("huge: %s, want Pending and unbound", podState(p))
		}
	})

	t.Run("deleting a namespace deletes its pods", func(t *testing.T) {
		mustKubectl(t, c.KubeconfigPath, "create", "namespace", "doomed")
		eventually(t, time.Minute, "the default service account in doomed", func(ctx context.Context) (bool, string) {
			_, err := c.Client.CoreV1().ServiceAccounts("doomed").Get(ctx, "default", metav1.GetOptions{})
			return err == nil, "not yet"
		})
		mustKubectl(t, c.KubeconfigPath, "-n", "doomed", "run", "p1", "--image=nginx")
		mustKubectl(t, c.KubeconfigPath, "-n", "doomed", "run", "p2", "--image=nginx")
		for _, name := range []string{"p1", "p2"} {
			waitPod(t, c.Client, "doomed", name, "Ready", isPodReady)
		}
		mustKubectl(t, c.KubeconfigPath, "delete", "namespace", "doomed", "--timeout=90s")
		eventually(t, time.Minute, "namespace doomed and its pods to be gone", func(ctx context.Context) (bool, string) {
			pods, err := c.Client.CoreV1().Pods("doomed").List(ctx, metav1.ListOptions{})
			_, nsErr := c.Client.CoreV1().Namespaces().Get(ctx, "doomed", metav1.GetOptions{})
			return err == nil && len(pods.Items) == 0 && apierrors.IsNotFound(nsErr), "pods or namespace remain"
		})
	})
}

// heldPod is a pod named name of image that a finalizer keeps after its deletion.
func heldPod(name, image string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
  finalizers: [kroll.dev/e2e-hold]
spec:
  containers:
  - name: app
    image: %s
`, name, image)
}

// release removes the finalizers of default/name and waits until the pod is gone.
func release(t *testing.T, c *cluster.Cluster, name string) {
	t.Helper()
	patch := []byte(`{"metadata":{"finalizers":null}}`)
	if _, err := c.Client.CoreV1().Pods("default").Patch(context.Background(), name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, name+" to be gone", func(ctx context.Context) (bool, string) {
		_, err := c.Client.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
}

// Given clusters started side by side in one process, one with kroll's workload
// controllers and one with upstream's, then each serves and runs its own pods, and
// stopping one leaves the other running: the upstream components' process-wide names
// are claimed one component at a time.
func TestClustersSideBySide(t *testing.T) {
	t.Parallel()
	modes := []cluster.WorkloadControllers{cluster.WorkloadControllersKroll, cluster.WorkloadControllersUpstream}
	clusters := make([]*cluster.Cluster, len(modes))
	errs := make([]error, len(modes))
	var wg sync.WaitGroup
	for i, mode := range modes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			clusters[i], errs[i] = cluster.Start(context.Background(), clustertest.Config(t, clustertest.WithWorkloadControllers(mode)))
		}()
	}
	wg.Wait()
	for i, c := range clusters {
		if c != nil {
			t.Cleanup(c.Stop)
		}
		if errs[i] != nil {
			t.Fatalf("%s cluster: %v", modes[i], errs[i])
		}
	}
	for i, c := range clusters {
		name := fmt.Sprintf("web-%d", i)
		mustKubectl(t, c.KubeconfigPath, "create", "deployment", name, "--image=nginx:1.14.2", "--replicas=2")
		waitDeploymentAvailable(t, c, "default", name, 2, "nginx:1.14.2", time.Minute)
	}
	clusters[1].Stop()
	mustKubectl(t, clusters[0].KubeconfigPath, "scale", "deployment/web-0", "--replicas=3")
	waitDeploymentAvailable(t, clusters[0], "default", "web-0", 3, "nginx:1.14.2", time.Minute)
	if err := clusters[0].Err(); err != nil {
		t.Errorf("the cluster left running failed: %v", err)
	}
}

// Given the embedded cluster with upstream's workload controllers, when a user creates
// a Deployment and changes its image with kubectl, then it rolls out, and survives a
// restart of the cluster.
func TestUpstreamDeploymentRolloutAndResume(t *testing.T) {
	t.Parallel()
	dataDir := t.TempDir()
	c := clustertest.Start(t, clustertest.WithDataDir(dataDir), clustertest.WithWorkloadControllers(cluster.WorkloadControllersUpstream))

	mustKubectl(t, c.KubeconfigPath, "create", "deployment", "nginx", "--image=nginx:1.14.2", "--replicas=3")
	waitDeploymentAvailable(t, c, "default", "nginx", 3, "nginx:1.14.2", 2*time.Minute)

	watcher := clustertest.WatchDeployment(t, c.Client, "default", "nginx")
	mustKubectl(t, c.KubeconfigPath, "set", "image", "deployment/nginx", "nginx=nginx:1.16.1")
	out := mustKubectl(t, c.KubeconfigPath, "rollout", "status", "deployment/nginx", "--timeout=90s")
	if !strings.Contains(out, `deployment "nginx" successfully rolled out`) {
		t.Errorf("rollout status said %q", out)
	}
	waitDeploymentAvailable(t, c, "default", "nginx", 3, "nginx:1.16.1", 2*time.Minute)
	// 3 replicas at 25%/25%: surge 1, unavailable 0. Upstream's controllers are held to
	// the bounds only loosely: they count ReplicaSet sizes, not pods, so a pod the old
	// ReplicaSet's controller has not yet deleted can briefly run beside a full new
	// ReplicaSet (kroll's scenarios hold kroll to every bound; see scene.verify).
	watcher.Report(t)

	// Stop, start again on the same data dir: the Deployment is still there and 3/3.
	c.Stop()
	c2, err := cluster.Start(context.Background(), clustertest.Config(t, clustertest.WithDataDir(dataDir)))
	if err != nil {
		t.Fatalf("restart on %s: %v", dataDir, err)
	}
	t.Cleanup(c2.Stop)
	waitDeploymentAvailable(t, c2, "default", "nginx", 3, "nginx:1.16.1", 2*time.Minute)
	out = mustKubectl(t, c2.KubeconfigPath, "get", "deployment", "nginx", "--no-headers")
	if f := strings.Fields(out); len(f) < 2 || f[1] != "3/3" {
		t.Errorf("after restart kubectl get deployment nginx: %q, want 3/3", out)
	}
}

// waitDeploymentAvailable waits, up to timeout, until namespace/name has replicas pods
// updated and available, all of image, and no others.
func waitDeploymentAvailable(t testing.TB, c *cluster.Cluster, namespace, name string, replicas int32, image string, timeout time.Duration) *appsv1.Deployment {
	t.Helper()
	var d *appsv1.Deployment
	eventually(t, timeout, "deployment "+name+" to be available at "+image, func(ctx context.Context) (bool, string) {
		got, err := c.Client.AppsV1().Deployments(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		d = got
		s := got.Status
		state := fmt.Sprintf("image=%s replicas=%d updated=%d available=%d",
			got.Spec.Template.Spec.Containers[0].Image, s.Replicas, s.UpdatedReplicas, s.AvailableReplicas)
		return got.Spec.Template.Spec.Containers[0].Image == image && s.ObservedGeneration == got.Generation &&
			s.UpdatedReplicas == replicas && s.AvailableReplicas == replicas && s.Replicas == replicas, state
	})
	return d
}

// Faults from rules and annotations reproduce failed rollouts: a crash-looping
// container restarts with growing restartCount, a NeverReady one never becomes Ready.
func TestFaultRules(t *testing.T) {
	t.Parallel()
	rules, err := kubelet.NewFaultRules(kubelet.FaultRule{Image: "*:crash", Fault: "CrashLoopBackOff"})
	if err != nil {
		t.Fatal(err)
	}
	c := clustertest.Start(t, clustertest.WithNodes(1), clustertest.WithKubelet(func(k *kubelet.Config) {
		k.Faults = rules
		k.CrashLoopBackOff = 500 * time.Millisecond
	}))
	mustKubectl(t, c.KubeconfigPath, "run", "crasher", "--image=app:crash")
	waitPod(t, c.Client, "default", "crasher", "restarting in CrashLoopBackOff", func(p *corev1.Pod) bool {
		return len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].RestartCount >= 2 && !isPodReady(p)
	})
	mustKubectl(t, c.KubeconfigPath, "run", "sulky", "--image=nginx", "--annotations="+kubelet.AnnotationFault+"=NeverReady")
	waitPod(t, c.Client, "default", "sulky", "Running", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning })
	podHolds(t, c.Client, "default", "sulky", time.Second, "(NeverReady) Running and not ready", func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodRunning && !isPodReady(p)
	})
}
