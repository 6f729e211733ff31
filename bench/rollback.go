package bench

import (
	"context"
	"fmt"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/kroll-dev/kroll/pkg/failure"
	"github.com/kroll-dev/kroll/pkg/kubelet"
)

// The rollback scenario's bounds. Upstream never recovers from a crash-looping
// revision: it reports ProgressDeadlineExceeded after progressDeadlineSeconds (600 s by
// default; rollbackDeadline here, so that a run sees it) and waits. The run watches
// DefaultRollbackWindow past the change (Options.RollbackWindow) and then says "not
// recovered within" it; a window shorter than the deadline sees no deadline.
const (
	rollbackDeadline      = 60
	DefaultRollbackWindow = 150 * time.Second
)

// crashPatch changes the image to newImage and makes the simulated kubelet crash-loop
// the new pods (kroll.dev/fault on the template: every pod of the new revision).
var crashPatch = []byte(`{"spec":{"template":{"metadata":{"annotations":{"` + kubelet.AnnotationFault + `":"CrashLoopBackOff"}},` +
	`"spec":{"containers":[{"name":"app","image":"` + newImage + `"}]}}}}`)

// rollbackScenario: a Deployment of size replicas with kroll.dev/on-failure: Rollback
// is changed to an image whose pods crash-loop. Measured from the first failing pod
// (a new pod waiting CrashLoopBackOff) to the rollback write (the Deployment's
// template back at oldImage), and to every replica updated and available at oldImage
// again; and when the progress deadline (rollbackDeadline s) was reported exceeded.
// Upstream's arm never rolls back: its sample has the deadline and no recovery.
func rollbackScenario(size int, window time.Duration) Scenario {
	s := Scenario{
		Name: fmt.Sprintf("rollback-%d-qps20", size),
		Title: fmt.Sprintf("Rollback on failure: 1 Deployment × %d to a crash-looping image, on-failure Rollback, progressDeadlineSeconds %d, watched %s, %s",
			size, rollbackDeadline, window, DefaultLimits),
		Size: size, Nodes: nodesFor(size), Arms: []Arm{krollArm, upstreamArm}, Limits: DefaultLimits, settle: settleFor(size),
	}
	s.prepare = func(ctx context.Context, r *run) error {
		d := newDeployment("bench", int32(size), false)
		d.Annotations = map[string]string{failure.OnFailureAnnotation: string(failure.Rollback)}
		deadline := int32(rollbackDeadline)
		d.Spec.ProgressDeadlineSeconds = &deadline
		return r.createDeployments(ctx, []*appsv1.Deployment{d})
	}
	s.measure = func(ctx context.Context, r *run) (measurement, error) {
		deployments := r.informers.Apps().V1().Deployments()
		pods := r.informers.Core().V1().Pods()
		if err := r.sync(ctx, pods.Informer()); err != nil {
			return measurement{}, err
		}
		w := &rollbackWatch{window: window}
		reg, err := pods.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { w.pod(obj) },
			UpdateFunc: func(_, obj any) { w.pod(obj) },
		})
		if err != nil {
			return measurement{}, err
		}
		defer func() { _ = pods.Informer().RemoveEventHandler(reg) }()
		w.began = time.Now()
		if _, err := r.client.AppsV1().Deployments(namespace).Patch(ctx, "bench", types.StrategicMergePatchType, crashPatch, metav1.PatchOptions{}); err != nil {
			return measurement{}, err
		}
		lister := deployments.Lister().Deployments(namespace)
		observe := func() bool {
			d, err := lister.Get("bench")
			if err != nil {
				return false
			}
			return w.deployment(d)
		}
		state := func() string { return w.String() }
		err = until(ctx, deployments.Informer(), window, "recovered", observe, state)
		if err != nil && ctx.Err() != nil {
			return measurement{}, err
		}
		return w.measurement(), nil
	}
	return s
}

// rollbackWatch keeps the moments of the rollback scenario, from the informers'
// events; every field is guarded by mu (pod events come on the pod informer's
// goroutine).
type rollbackWatch struct {
	// window is how long the run watches; set before the watch starts.
	window time.Duration
	mu     sync.Mutex
	began  time.Time
	// firstFailing is when a pod of the new revision was first seen failing; rolledBack
	// when the Deployment's template was first seen back at oldImage; ready when every
	// replica was seen updated and available there; deadline when Progressing was seen
	// ProgressDeadlineExceeded. Zero until seen.
	firstFailing, rolledBack, ready, deadline time.Time
	firstPod                                  string
}

func (w *rollbackWatch) pod(obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok || pod.Annotations[kubelet.AnnotationFault] == "" {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.firstFailing.IsZero() {
		return
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.State.Waiting != nil && cs.State.Waiting.Reason == "CrashLoopBackOff" {
			w.firstFailing, w.firstPod = time.Now(), pod.Name
		}
	}
}

// deployment records what d shows and tells whether the watch is over: recovered, or
// (upstream) past the deadline with no rollback coming.
func (w *rollbackWatch) deployment(d *appsv1.Deployment) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := time.Now()
	back := d.Spec.Template.Spec.Containers[0].Image == oldImage && d.Generation > 2
	if back && w.rolledBack.IsZero() {
		w.rolledBack = now
	}
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentProgressing && c.Reason == "ProgressDeadlineExceeded" && w.deadline.IsZero() {
			w.deadline = now
		}
	}
	if back && w.ready.IsZero() && deploymentDone(d, oldImage) {
		w.ready = now
	}
	return !w.ready.IsZero()
}

func (w *rollbackWatch) measurement() measurement {
	w.mu.Lock()
	defer w.mu.Unlock()
	m := measurement{notRecoveredWithin: w.window.Seconds()}
	since := func(from, to time.Time) float64 {
		if from.IsZero() || to.IsZero() {
			return 0
		}
		return to.Sub(from).Seconds()
	}
	m.failingToRollback = since(w.firstFailing, w.rolledBack)
	m.failingToReady = since(w.firstFailing, w.ready)
	m.deadlineExceeded = since(w.began, w.deadline)
	if !w.ready.IsZero() {
		m.seconds, m.notRecoveredWithin = since(w.began, w.ready), 0
	}
	return m
}

func (w *rollbackWatch) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	at := func(t time.Time) string {
		if t.IsZero() {
			return "not seen"
		}
		return fmt.Sprintf("%.1fs", t.Sub(w.began).Seconds())
	}
	return fmt.Sprintf("first failing pod %s (%s), rollback write %s, all Ready %s, deadline exceeded %s",
		at(w.firstFailing), w.firstPod, at(w.rolledBack), at(w.ready), at(w.deadline))
}
