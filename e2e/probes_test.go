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

// Probes decide readiness and liveness on the simulated nodes as the kubelet's do, and
// containers run their commands.
func TestProbes(t *testing.T) {
	t.Parallel()
	c := clustertest.Start(t, clustertest.WithNodes(1), clustertest.WithKubelet(func(k *kubelet.Config) {
		k.CrashLoopBackOff = time.Second
	}))
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
	})

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
