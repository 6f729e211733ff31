package controller

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"
)

// PodControl is every write a controller makes to pods it owns (ReplicaSets,
// ReplicationControllers, DaemonSets). Events for creates
// and deletes are recorded on owner, as upstream does.
type PodControl interface {
	// CreatePod creates pod and returns the created object.
	CreatePod(ctx context.Context, owner runtime.Object, pod *corev1.Pod) (*corev1.Pod, error)
	// DeletePod deletes namespace/name (its UID as precondition).
	DeletePod(ctx context.Context, owner runtime.Object, pod *corev1.Pod) error
	// PatchPod applies a strategic-merge patch to a pod (adoption, release, an in-place
	// hand-over).
	PatchPod(ctx context.Context, namespace, name string, patch []byte) error
}

// NewPodControl is the PodControl that writes through client and records events on
// the owner with recorder ("Created pod: web-x", as upstream's controllers do).
func NewPodControl(client kubernetes.Interface, recorder record.EventRecorder) PodControl {
	return &realPodControl{client: client, recorder: recorder}
}

// realPodControl writes through the API.
type realPodControl struct {
	client   kubernetes.Interface
	recorder record.EventRecorder
}

var _ PodControl = &realPodControl{}

func (r *realPodControl) CreatePod(ctx context.Context, owner runtime.Object, pod *corev1.Pod) (*corev1.Pod, error) {
	created, err := r.client.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		r.recorder.Eventf(owner, corev1.EventTypeWarning, "FailedCreate", "Error creating: %v", err)
		return nil, err
	}
	r.recorder.Eventf(owner, corev1.EventTypeNormal, "SuccessfulCreate", "Created pod: %v", created.Name)
	return created, nil
}

func (r *realPodControl) DeletePod(ctx context.Context, owner runtime.Object, pod *corev1.Pod) error {
	err := r.client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &pod.UID}})
	if err != nil {
		r.recorder.Eventf(owner, corev1.EventTypeWarning, "FailedDelete", "Error deleting: %v", err)
		return err
	}
	r.recorder.Eventf(owner, corev1.EventTypeNormal, "SuccessfulDelete", "Deleted pod: %v", pod.Name)
	return nil
}

func (r *realPodControl) PatchPod(ctx context.Context, namespace, name string, patch []byte) error {
	_, err := r.client.CoreV1().Pods(namespace).Patch(ctx, name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
	return err
}

// FakePodControl records calls and fails on demand, for tests.
type FakePodControl struct {
	mu        sync.Mutex
	Created   []*corev1.Pod
	Deleted   []string
	Patched   []string
	CreateErr error
	// FailAfter lets this many creates succeed before CreateErr applies (-1: always fail).
	FailAfter int
}

var _ PodControl = &FakePodControl{}

func (f *FakePodControl) CreatePod(_ context.Context, _ runtime.Object, pod *corev1.Pod) (*corev1.Pod, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.CreateErr != nil && (f.FailAfter < 0 || len(f.Created) >= f.FailAfter) {
		return nil, f.CreateErr
	}
	p := pod.DeepCopy()
	p.Name = fmt.Sprintf("%s%d", pod.GenerateName, len(f.Created))
	f.Created = append(f.Created, p)
	return p, nil
}

func (f *FakePodControl) DeletePod(_ context.Context, _ runtime.Object, pod *corev1.Pod) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.Deleted = append(f.Deleted, pod.Name)
	return nil
}

func (f *FakePodControl) PatchPod(_ context.Context, _, name string, _ []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.Patched = append(f.Patched, name)
	return nil
}
