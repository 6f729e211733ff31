package replicaset

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

// PodControl is every write the ReplicaSet controller makes to pods. Events for creates
// and deletes are recorded on owner, as upstream does.
type PodControl interface {
	// CreatePod creates pod and returns the created object.
	CreatePod(ctx context.Context, owner runtime.Object, pod *corev1.Pod) (*corev1.Pod, error)
	// DeletePod deletes namespace/name (its UID as precondition).
	DeletePod(ctx context.Context, owner runtime.Object, pod *corev1.Pod) error
	// PatchPod applies a strategic-merge patch to a pod's metadata (adoption, release).
	PatchPod(ctx context.Context, namespace, name string, patch []byte) error
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

// fakePodControl records calls and fails on demand, for tests.
type fakePodControl struct {
	mu        sync.Mutex
	created   []*corev1.Pod
	deleted   []string
	patched   []string
	createErr error
	// failAfter lets this many creates succeed before createErr applies (-1: always fail).
	failAfter int
}

var _ PodControl = &fakePodControl{}

func (f *fakePodControl) CreatePod(_ context.Context, _ runtime.Object, pod *corev1.Pod) (*corev1.Pod, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.createErr != nil && (f.failAfter < 0 || len(f.created) >= f.failAfter) {
		return nil, f.createErr
	}
	p := pod.DeepCopy()
	p.Name = fmt.Sprintf("%s%d", pod.GenerateName, len(f.created))
	f.created = append(f.created, p)
	return p, nil
}

func (f *fakePodControl) DeletePod(_ context.Context, _ runtime.Object, pod *corev1.Pod) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.deleted = append(f.deleted, pod.Name)
	return nil
}

func (f *fakePodControl) PatchPod(_ context.Context, _, name string, _ []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.patched = append(f.patched, name)
	return nil
}
