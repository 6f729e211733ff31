package bench

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/tools/cache"

	"github.com/kroll-dev/kroll/pkg/inplace"
)

// The images of every measured change: from oldImage to newImage.
const (
	oldImage = "nginx:1.14.2"
	newImage = "nginx:1.16.1"
)

var (
	benchLabels = map[string]string{"app": "bench"}
	imagePatch  = []byte(`{"spec":{"template":{"spec":{"containers":[{"name":"app","image":"` + newImage + `"}]}}}}`)
)

// podTemplate is the template of every workload: one container, no grace period, so
// that a deleted pod is gone as soon as the kubelet sees the deletion.
func podTemplate(labels map[string]string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec: corev1.PodSpec{
			Containers:                    []corev1.Container{{Name: "app", Image: oldImage}},
			TerminationGracePeriodSeconds: new(int64),
		},
	}
}

// withProbes gives t's container the probes a real nginx Deployment has: a readiness
// probe GETting / and a liveness probe opening its port, both every 10 s.
func withProbes(t *corev1.PodTemplateSpec) {
	c := &t.Spec.Containers[0]
	c.Ports = []corev1.ContainerPort{{Name: "http", ContainerPort: 80}}
	c.ReadinessProbe = &corev1.Probe{
		ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromString("http")}},
		PeriodSeconds: 10, TimeoutSeconds: 1, SuccessThreshold: 1, FailureThreshold: 3,
	}
	c.LivenessProbe = &corev1.Probe{
		ProbeHandler:  corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromString("http")}},
		PeriodSeconds: 10, TimeoutSeconds: 1, SuccessThreshold: 1, FailureThreshold: 3,
	}
}

// newDeployment is a Deployment of replicas with the default RollingUpdate (25%/25%),
// opted into in-place updates when inPlace.
func newDeployment(name string, replicas int32, inPlace bool) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: podTemplate(labels),
		},
	}
	if inPlace {
		d.Annotations = map[string]string{inplace.StrategyAnnotation: string(inplace.IfPossible)}
	}
	return d
}

// newStatefulSet is a StatefulSet of replicas, OrderedReady with the default
// RollingUpdate, without volume claims.
func newStatefulSet(name string, replicas int32) *appsv1.StatefulSet {
	labels := map[string]string{"app": name}
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.StatefulSetSpec{
			Replicas:    &replicas,
			ServiceName: name,
			Selector:    &metav1.LabelSelector{MatchLabels: labels},
			Template:    podTemplate(labels),
		},
	}
}

// newDaemonSet is a DaemonSet with the default RollingUpdate (maxUnavailable 1).
func newDaemonSet(name string) *appsv1.DaemonSet {
	labels := map[string]string{"app": name}
	return &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: podTemplate(labels),
		},
	}
}

// newPod is a bare pod of the raw-ceiling scenario.
func newPod(i int) *corev1.Pod {
	t := podTemplate(benchLabels)
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p-%05d", i), Labels: t.Labels}, Spec: t.Spec}
}

// readyPods counts the pods whose Ready condition is True.
func readyPods(pods []*corev1.Pod) int {
	n := 0
	for _, p := range pods {
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				n++
			}
		}
	}
	return n
}

// deploymentDone is `kubectl rollout status` for a Deployment at image.
func deploymentDone(d *appsv1.Deployment, image string) bool {
	return d.Spec.Template.Spec.Containers[0].Image == image && deploymentComplete(d)
}

// deploymentComplete is `kubectl rollout status` for a Deployment: the latest spec
// observed, every replica updated and available, no old one left.
func deploymentComplete(d *appsv1.Deployment) bool {
	s := d.Status
	want := *d.Spec.Replicas
	return s.ObservedGeneration >= d.Generation && s.Replicas == want && s.UpdatedReplicas == want && s.AvailableReplicas == want
}

// statefulSetDone is `kubectl rollout status` for a StatefulSet at image: the latest
// spec observed, every replica updated and ready, the update revision current.
func statefulSetDone(s *appsv1.StatefulSet, image string) bool {
	st := s.Status
	want := *s.Spec.Replicas
	return s.Spec.Template.Spec.Containers[0].Image == image && st.ObservedGeneration >= s.Generation &&
		st.Replicas == want && st.UpdatedReplicas == want && st.ReadyReplicas == want && st.CurrentRevision == st.UpdateRevision
}

// daemonSetDone is `kubectl rollout status` for a DaemonSet at image on nodes nodes.
func daemonSetDone(d *appsv1.DaemonSet, image string, nodes int32) bool {
	s := d.Status
	return d.Spec.Template.Spec.Containers[0].Image == image && s.ObservedGeneration >= d.Generation &&
		s.DesiredNumberScheduled == nodes && s.CurrentNumberScheduled == nodes &&
		s.UpdatedNumberScheduled == nodes && s.NumberAvailable == nodes
}

// until waits until done holds, checking it again on every change inf sees, for at
// most timeout; what names the wait in the error, and state describes where it got.
func until(ctx context.Context, inf cache.SharedIndexInformer, timeout time.Duration, what string, done func() bool, state func() string) error {
	changed := make(chan struct{}, 1)
	poke := func() {
		select {
		case changed <- struct{}{}:
		default:
		}
	}
	reg, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { poke() },
		UpdateFunc: func(any, any) { poke() },
		DeleteFunc: func(any) { poke() },
	})
	if err != nil {
		return err
	}
	defer func() { _ = inf.RemoveEventHandler(reg) }()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for !done() {
		select {
		case <-changed:
		case <-deadline.C:
			return fmt.Errorf("%s: not done after %s: %s", what, timeout, state())
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// inParallel runs do(0..n-1) on workers goroutines and returns the first error.
func inParallel(ctx context.Context, n, workers int, do func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var next atomic.Int64
	var first error
	var once sync.Once
	var wg sync.WaitGroup
	for w := 0; w < min(workers, n); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1)) - 1; i < n && ctx.Err() == nil; i = int(next.Add(1)) - 1 {
				if err := do(ctx, i); err != nil {
					once.Do(func() { first = err; cancel() })
					return
				}
			}
		}()
	}
	wg.Wait()
	return first
}
