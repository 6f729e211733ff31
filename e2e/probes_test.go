package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kroll-dev/kroll/pkg/cluster"
	"github.com/kroll-dev/kroll/pkg/cluster/clustertest"
	"github.com/kroll-dev/kroll/pkg/failure"
	"github.com/kroll-dev/kroll/pkg/kubelet"
)

// probedDeployment is a one-replica nginx Deployment whose container has probe (YAML
// lines under the container, indented by 8).
func probedDeployment(name, probe string) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: %[1]s
spec:
  replicas: 1
  progressDeadlineSeconds: 600
  selector:
    matchLabels:
      app: %[1]s
  template:
    metadata:
      labels:
        app: %[1]s
    spec:
      containers:
      - name: web
        image: nginx:1.25
%[2]s`, name, probe)
}

// onlyPod is the one pod of label app=name, once there is exactly one.
func onlyPod(t *testing.T, client kubernetes.Interface, ns, name string) *corev1.Pod {
	t.Helper()
	var pod *corev1.Pod
	eventually(t, time.Minute, "one pod of "+name, func(ctx context.Context) (bool, string) {
		pods, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + name})
		if err != nil || len(pods.Items) != 1 {
			return false, fmt.Sprint(len(pods.Items), err)
		}
		pod = &pods.Items[0]
		return true, ""
	})
	return pod
}

// podEvents are the messages of pod's events of reason.
func podEvents(ctx context.Context, client kubernetes.Interface, pod *corev1.Pod, reason string) []string {
	evs, err := client.CoreV1().Events(pod.Namespace).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.uid=" + string(pod.UID) + ",reason=" + reason})
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range evs.Items {
		out = append(out, fmt.Sprintf("%s (source %s, %s)", e.Message, e.Source.Component, e.InvolvedObject.FieldPath))
	}
	return out
}

// kubeletEvents are pod's events from the kubelet, as "fieldPath reason message ×count".
func kubeletEvents(ctx context.Context, client kubernetes.Interface, pod *corev1.Pod) []string {
	evs, err := client.CoreV1().Events(pod.Namespace).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.uid=" + string(pod.UID) + ",source=kubelet"})
	if err != nil {
		return []string{err.Error()}
	}
	var out []string
	for _, e := range evs.Items {
		out = append(out, fmt.Sprintf("%s %s %s ×%d", e.InvolvedObject.FieldPath, e.Reason, e.Message, e.Count))
	}
	return out
}

// hasEvents tells whether events (kubeletEvents) hold, for each of want ("fieldPath
// reason message-prefix"), an event that starts so; missing lists those that none does.
func hasEvents(events, want []string) (missing []string) {
	for _, w := range want {
		found := false
		for _, e := range events {
			found = found || strings.HasPrefix(e, w)
		}
		if !found {
			missing = append(missing, w)
		}
	}
	return missing
}

// waitEvents waits until pod has the kubelet events of want (see hasEvents).
func waitEvents(t *testing.T, client kubernetes.Interface, pod *corev1.Pod, want ...string) []string {
	t.Helper()
	var events []string
	eventually(t, 30*time.Second, "the kubelet's events of "+pod.Name, func(ctx context.Context) (bool, string) {
		events = kubeletEvents(ctx, client, pod)
		missing := hasEvents(events, want)
		return len(missing) == 0, fmt.Sprintf("missing %q in %q", missing, events)
	})
	return events
}

// describeShows checks that kubectl describe pod lists, for each reason and message,
// an event line from the kubelet.
func describeShows(t *testing.T, kubeconfig, pod string, reasonMessage ...[2]string) {
	t.Helper()
	out := mustKubectl(t, kubeconfig, "describe", "pod", pod)
	for _, rm := range reasonMessage {
		found := false
		for _, line := range strings.Split(out, "\n") {
			fields := strings.Fields(line)
			found = found || (len(fields) > 4 && fields[1] == rm[0] && strings.Contains(line, " kubelet ") && strings.Contains(line, rm[1]))
		}
		if !found {
			t.Errorf("kubectl describe pod %s lists no kubelet event %s %q", pod, rm[0], rm[1])
		}
	}
}

// Probes decide readiness and liveness on the simulated nodes as the kubelet's do,
// containers (init containers too) run their commands, and the kubelet posts its
// events for all of it — the same with kroll's controllers and with upstream's.
func TestProbes(t *testing.T) {
	t.Parallel()
	for _, mode := range []cluster.WorkloadControllers{cluster.WorkloadControllersKroll, cluster.WorkloadControllersUpstream} {
		t.Run(string(mode), func(t *testing.T) {
			t.Parallel()
			c := clustertest.Start(t, clustertest.WithNodes(1), clustertest.WithWorkloadControllers(mode), clustertest.WithKubelet(func(k *kubelet.Config) {
				k.CrashLoopBackOff = time.Second
			}))
			probeScenarios(t, c, mode)
		})
	}
}

func probeScenarios(t *testing.T, c *cluster.Cluster, mode cluster.WorkloadControllers) {
	ns := "default"

	t.Run("a readiness probe on a path nginx does not serve keeps the Deployment unavailable", func(t *testing.T) {
		mustKubectl(t, c.KubeconfigPath, "apply", "-f", writeFile(t, "healthz.yaml", probedDeployment("healthz", `        readinessProbe:
          httpGet: {path: /healthz, port: 80}
          periodSeconds: 2
`)))
		pod := onlyPod(t, c.Client, ns, "healthz")
		waitPod(t, c.Client, ns, pod.Name, "Running", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning })
		podHolds(t, c.Client, ns, pod.Name, 5*time.Second, "Running and not ready", func(p *corev1.Pod) bool {
			return p.Status.Phase == corev1.PodRunning && !isPodReady(p)
		})
		if out, err := kubectl(t, c.KubeconfigPath, "rollout", "status", "deployment/healthz", "--timeout=3s"); err == nil {
			t.Fatalf("rollout status succeeded on a Deployment whose pod is never ready:\n%s", out)
		}
		d, err := c.Client.AppsV1().Deployments(ns).Get(context.Background(), "healthz", metav1.GetOptions{})
		if err != nil || d.Status.AvailableReplicas != 0 {
			t.Fatalf("deployment available %d (%v), want 0", d.Status.AvailableReplicas, err)
		}
		want := "Readiness probe failed: HTTP probe failed with statuscode: 404"
		eventually(t, 30*time.Second, "Unhealthy events from the kubelet", func(ctx context.Context) (bool, string) {
			evs := podEvents(ctx, c.Client, pod, "Unhealthy")
			return len(evs) > 0 && strings.HasPrefix(evs[0], want+" (source kubelet, spec.containers{web})"), strings.Join(evs, "; ")
		})
		if out := mustKubectl(t, c.KubeconfigPath, "describe", "pod", pod.Name); !strings.Contains(out, want) {
			t.Errorf("kubectl describe pod does not show %q", want)
		}
		// The first pod on the node pulls the image; then the container is created and started.
		web := "spec.containers{web} "
		waitEvents(t, c.Client, pod, web+`Pulling Pulling image "nginx:1.25" ×1`, web+`Pulled Successfully pulled image "nginx:1.25" in `,
			web+"Created Container created ×1", web+"Started Container started ×1")
		describeShows(t, c.KubeconfigPath, pod.Name, [2]string{"Pulling", `Pulling image "nginx:1.25"`}, [2]string{"Pulled", `Successfully pulled image "nginx:1.25"`},
			[2]string{"Created", "Container created"}, [2]string{"Started", "Container started"}, [2]string{"Unhealthy", want})
	})

	t.Run("a readiness probe on / becomes Ready no earlier than initialDelaySeconds after start", func(t *testing.T) {
		mustKubectl(t, c.KubeconfigPath, "apply", "-f", writeFile(t, "root.yaml", probedDeployment("root", `        readinessProbe:
          httpGet: {path: /, port: 80}
          initialDelaySeconds: 6
          periodSeconds: 1
`)))
		pod := onlyPod(t, c.Client, ns, "root")
		pod = waitPod(t, c.Client, ns, pod.Name, "Ready", isPodReady)
		started := pod.Status.ContainerStatuses[0].State.Running.StartedAt.Time
		var readyAt time.Time
		for _, cond := range pod.Status.Conditions {
			if cond.Type == corev1.PodReady {
				readyAt = cond.LastTransitionTime.Time
			}
		}
		// Both instants are written at one-second resolution: 6s after start reads as
		// 5s to 7s.
		if gap := readyAt.Sub(started); gap < 5*time.Second || gap > 10*time.Second {
			t.Errorf("Ready %s after the container started, want about 6s (initialDelaySeconds)", gap)
		}
		mustKubectl(t, c.KubeconfigPath, "rollout", "status", "deployment/root", "--timeout=60s")
		// The image is on the node now; a deleted pod's container is stopped.
		waitEvents(t, c.Client, pod, `spec.containers{web} Pulled Container image "nginx:1.25" already present on machine and can be accessed by the pod ×1`)
		mustKubectl(t, c.KubeconfigPath, "delete", "pod", pod.Name, "--grace-period=1")
		waitEvents(t, c.Client, pod, "spec.containers{web} Killing Stopping container web ×1")
	})

	t.Run("a liveness probe exec [false] restarts the container into CrashLoopBackOff", func(t *testing.T) {
		mustKubectl(t, c.KubeconfigPath, "apply", "-f", writeFile(t, "live.yaml", probedDeployment("live", `        livenessProbe:
          exec: {command: ["false"]}
          periodSeconds: 2
          failureThreshold: 2
`)))
		pod := onlyPod(t, c.Client, ns, "live")
		sawBackOff := false
		pod = waitPod(t, c.Client, ns, pod.Name, "restarted twice", func(p *corev1.Pod) bool {
			if len(p.Status.ContainerStatuses) != 1 {
				return false
			}
			cs := p.Status.ContainerStatuses[0]
			if cs.State.Waiting != nil && cs.State.Waiting.Reason == "CrashLoopBackOff" {
				sawBackOff = true
			}
			return cs.RestartCount >= 2
		})
		if !sawBackOff {
			t.Error("never saw the container waiting in CrashLoopBackOff")
		}
		term := pod.Status.ContainerStatuses[0].LastTerminationState.Terminated
		if term == nil || term.ExitCode != 137 || term.Reason != "Error" {
			t.Fatalf("last termination %+v, want exit code 137, Error", term)
		}
		// Killed at the second failure: periodSeconds × (failureThreshold−1) after start,
		// at one-second resolution.
		if ran := term.FinishedAt.Sub(term.StartedAt.Time); ran < time.Second || ran > 4*time.Second {
			t.Errorf("the killed instance ran %s, want about 2s", ran)
		}
		eventually(t, 30*time.Second, "Killing events", func(ctx context.Context) (bool, string) {
			evs := podEvents(ctx, c.Client, pod, "Killing")
			return len(evs) > 0 && strings.HasPrefix(evs[0], "Container web failed liveness probe, will be restarted"), strings.Join(evs, "; ")
		})
		// Every restart is created and started again, its image already present; each
		// back-off is posted; identical events are counted, not repeated.
		web := "spec.containers{web} "
		events := waitEvents(t, c.Client, pod, web+"Unhealthy Liveness probe failed: ", web+"Killing Container web failed liveness probe, will be restarted",
			web+fmt.Sprintf("BackOff Back-off restarting failed container web in pod %s_%s(%s)", pod.Name, pod.Namespace, pod.UID),
			web+`Pulled Container image "nginx:1.25" already present on machine and can be accessed by the pod ×`, web+"Started Container started ×")
		eventually(t, 30*time.Second, "one Started event counting the 3 starts", func(ctx context.Context) (bool, string) {
			events = kubeletEvents(ctx, c.Client, pod)
			started := 0
			for _, e := range events {
				if strings.HasPrefix(e, web+"Started ") {
					started++
					var n int
					_, _ = fmt.Sscanf(e[strings.LastIndex(e, "×"):], "×%d", &n)
					if n < 3 {
						return false, e
					}
				}
			}
			return started == 1, strings.Join(events, "; ")
		})
		describeShows(t, c.KubeconfigPath, pod.Name, [2]string{"BackOff", "Back-off restarting failed container web in pod " + pod.Name},
			[2]string{"Killing", "Container web failed liveness probe, will be restarted"})
	})

	t.Run("an image tag the registry does not have: the pull's events", func(t *testing.T) {
		pod := simplePod("badtag", "nginx:1.161", nil, corev1.RestartPolicyAlways, nil)
		if _, err := c.Client.CoreV1().Pods(ns).Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		pod = waitPod(t, c.Client, ns, "badtag", "ImagePullBackOff", func(p *corev1.Pod) bool {
			return len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].State.Waiting != nil && p.Status.ContainerStatuses[0].State.Waiting.Reason == "ImagePullBackOff"
		})
		main := "spec.containers{main} "
		waitEvents(t, c.Client, pod, main+`Pulling Pulling image "nginx:1.161"`,
			main+`Failed Failed to pull image "nginx:1.161": rpc error: code = NotFound desc = failed to pull and unpack image "docker.io/library/nginx:1.161"`,
			main+"Failed Error: ErrImagePull", main+`BackOff Back-off pulling image "nginx:1.161"`, main+"Failed Error: ImagePullBackOff")
		describeShows(t, c.KubeconfigPath, "badtag", [2]string{"Failed", "Error: ErrImagePull"}, [2]string{"BackOff", `Back-off pulling image "nginx:1.161"`})
	})

	t.Run("init containers run their commands: exit 0 lets the app start, exit 1 fails the pod or crash-loops it", func(t *testing.T) {
		initC := func(script string) *corev1.Container {
			return &corev1.Container{Name: "init", Image: "busybox:1.36", Command: []string{"sh", "-c", script}}
		}
		for _, p := range []*corev1.Pod{
			simplePod("init-ok", "busybox:1.36", []string{"sleep", "3600"}, corev1.RestartPolicyAlways, initC("echo init-ran")),
			simplePod("init-never", "busybox:1.36", []string{"sleep", "3600"}, corev1.RestartPolicyNever, initC("echo init-failed; exit 1")),
			simplePod("init-always", "busybox:1.36", []string{"sleep", "3600"}, corev1.RestartPolicyAlways, initC("exit 2")),
		} {
			if _, err := c.Client.CoreV1().Pods(ns).Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		ok := waitPod(t, c.Client, ns, "init-ok", "Running", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning })
		if got, err := podLogs(t, c.Client, ns, "init-ok", &corev1.PodLogOptions{Container: "init"}); err != nil || got != "init-ran\n" {
			t.Errorf("logs -c init = %q (%v), want init-ran", got, err)
		}
		waitEvents(t, c.Client, ok, "spec.initContainers{init} Created Container created ×1", "spec.initContainers{init} Started Container started ×1",
			"spec.containers{main} Started Container started ×1")

		waitPod(t, c.Client, ns, "init-never", "Failed", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodFailed })
		if out := mustKubectl(t, c.KubeconfigPath, "get", "pod", "init-never", "--no-headers"); !strings.Contains(out, "Init:Error") {
			t.Errorf("kubectl get pod init-never shows %q, want Init:Error", out)
		}
		if got, err := podLogs(t, c.Client, ns, "init-never", &corev1.PodLogOptions{Container: "init"}); err != nil || got != "init-failed\n" {
			t.Errorf("logs -c init = %q (%v), want init-failed", got, err)
		}

		always := waitPod(t, c.Client, ns, "init-always", "restarted its init container", func(p *corev1.Pod) bool {
			return len(p.Status.InitContainerStatuses) == 1 && p.Status.InitContainerStatuses[0].RestartCount >= 1 && p.Status.Phase == corev1.PodPending
		})
		eventually(t, 30*time.Second, "kubectl get pod to show Init:CrashLoopBackOff", func(context.Context) (bool, string) {
			out, _ := kubectl(t, c.KubeconfigPath, "get", "pod", "init-always", "--no-headers")
			return strings.Contains(out, "Init:CrashLoopBackOff"), out
		})
		waitEvents(t, c.Client, always, fmt.Sprintf("spec.initContainers{init} BackOff Back-off restarting failed container init in pod init-always_%s(%s)", ns, always.UID))
	})

	// kroll.dev/on-failure is kroll's own: upstream's Deployment controller does not roll
	// back, so the scenario is kroll mode's alone.
	if mode != cluster.WorkloadControllersUpstream {
		t.Run("a self-healing rollout rolls back from a template whose liveness probe fails", func(t *testing.T) {
			mustKubectl(t, c.KubeconfigPath, "apply", "-f", writeFile(t, "heal.yaml", `apiVersion: apps/v1
kind: Deployment
metadata:
  name: heal
  annotations:
    kroll.dev/on-failure: Rollback
spec:
  replicas: 2
  minReadySeconds: 2
  selector:
    matchLabels:
      app: heal
  strategy:
    rollingUpdate: {maxSurge: 1, maxUnavailable: 0}
  template:
    metadata:
      labels:
        app: heal
    spec:
      containers:
      - name: web
        image: nginx:1.25
`))
			mustKubectl(t, c.KubeconfigPath, "rollout", "status", "deployment/heal", "--timeout=2m")
			// This cluster's in-process controllers count the rollback (heal_sets_test.go).
			deploymentRollbacks.Lock()
			defer deploymentRollbacks.Unlock()
			mustKubectl(t, c.KubeconfigPath, "patch", "deployment", "heal", "-p",
				`{"spec":{"template":{"spec":{"containers":[{"name":"web","livenessProbe":{"exec":{"command":["false"]},"periodSeconds":1,"failureThreshold":1}}]}}}}`)
			eventually(t, 2*time.Minute, "heal rolled back", func(ctx context.Context) (bool, string) {
				d, err := c.Client.AppsV1().Deployments(ns).Get(ctx, "heal", metav1.GetOptions{})
				if err != nil {
					return false, err.Error()
				}
				return d.Annotations[failure.RolledBackFromAnnotation] == "2" && d.Spec.Template.Spec.Containers[0].LivenessProbe == nil,
					fmt.Sprintf("annotations %v, %s", d.Annotations, rolloutFailed(d))
			})
		})
	}

	t.Run("a Job's busybox pod that echoes completes", func(t *testing.T) {
		mustKubectl(t, c.KubeconfigPath, "create", "job", "once", "--image=busybox:1.36", "--", "sh", "-c", "echo done")
		eventually(t, time.Minute, "the Job to complete", func(ctx context.Context) (bool, string) {
			j, err := c.Client.BatchV1().Jobs(ns).Get(ctx, "once", metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			return j.Status.Succeeded == 1 && j.Status.CompletionTime != nil, fmt.Sprintf("succeeded=%d failed=%d", j.Status.Succeeded, j.Status.Failed)
		})
	})
}
