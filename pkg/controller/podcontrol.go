package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"
)

// PodControl is every write a controller makes to the pods it owns — ReplicaSets,
// ReplicationControllers, DaemonSets and StatefulSets, and the in-place steps of
// pkg/inplace (PatchPod and PatchPodStatus are its inplace.Patcher). Creates, deletes
// and updates are recorded as events on owner, in the words of the owner's upstream
// controller (PodEvents).
type PodControl interface {
	// CreatePod creates pod and returns the created object.
	CreatePod(ctx context.Context, owner runtime.Object, pod *corev1.Pod) (*corev1.Pod, error)
	// DeletePod deletes pod (its UID as precondition).
	DeletePod(ctx context.Context, owner runtime.Object, pod *corev1.Pod) error
	// DeletePodAsSeen deletes pod only as the caller saw it: its UID and its
	// resourceVersion as preconditions. A pod changed since (a finalizer added, say)
	// stays, and the error is a Conflict without an event: the caller's view was stale,
	// its write not wrong. For decisions that rest on the pod as seen, such as that the
	// API server removes it in the deleting request.
	DeletePodAsSeen(ctx context.Context, owner runtime.Object, pod *corev1.Pod) error
	// EvictPod deletes pod through the Eviction API (pods/eviction, its UID as
	// precondition), so that the API server first takes a disruption from every
	// PodDisruptionBudget selecting it, as it does for `kubectl drain`. A refusal (429
	// TooManyRequests: see disruption.Refused) is returned without an event: the pod
	// stays, and the caller reports what holds it.
	EvictPod(ctx context.Context, owner runtime.Object, pod *corev1.Pod) error
	// UpdatePod reads pod from the API server, applies change to it and writes it back:
	// the informers cache pods without the fields no controller reads (see pkg/manager),
	// and a pod's spec is immutable but for a few fields, so the whole of it goes back as
	// the API server has it. A pod that is gone is not an error; one replaced by another
	// of the same name is.
	UpdatePod(ctx context.Context, owner runtime.Object, pod *corev1.Pod, change func(*corev1.Pod)) error
	// PatchPod applies a strategic-merge patch to a pod (adoption, release, an in-place
	// update or hand-over) and returns the pod as the API server left it.
	PatchPod(ctx context.Context, namespace, name string, patch []byte) (*corev1.Pod, error)
	// PatchPodStatus applies a strategic-merge patch to a pod's status subresource,
	// which takes metadata too (the in-place readiness gate and State, together).
	PatchPodStatus(ctx context.Context, namespace, name string, patch []byte) error
	// PatchPodResize applies a strategic-merge patch to a pod's resize subresource,
	// which takes container cpu and memory alone (an in-place resize).
	PatchPodResize(ctx context.Context, namespace, name string, patch []byte) error
}

// PodEvents is how one kind's upstream controller words the events of its pod writes,
// and which failures it takes for success.
type PodEvents struct {
	// Created, Deleted and Updated are the Normal events' messages for pod on owner;
	// Failed the Warning's for a write (verb: "create", "delete", "update") that failed.
	Created, Deleted, Updated func(owner runtime.Object, pod *corev1.Pod) string
	Failed                    func(owner runtime.Object, verb string, pod *corev1.Pod, err error) string
	// Tolerant: a create that finds the pod there already, and a delete that finds it
	// gone or replaced, succeed without an event (a stale cache caused them).
	Tolerant bool
}

// ReplicaSetEvents are the words of the ReplicaSet, ReplicationController and DaemonSet
// controllers: "Created pod: web-x".
var ReplicaSetEvents = PodEvents{
	Created: func(_ runtime.Object, p *corev1.Pod) string { return "Created pod: " + p.Name },
	Deleted: func(_ runtime.Object, p *corev1.Pod) string { return "Deleted pod: " + p.Name },
	Updated: func(_ runtime.Object, p *corev1.Pod) string { return "Updated pod: " + p.Name },
	Failed: func(_ runtime.Object, verb string, _ *corev1.Pod, err error) string {
		return map[string]string{"create": "Error creating: ", "delete": "Error deleting: ", "update": "Error updating: "}[verb] + err.Error()
	},
}

// StatefulSetEvents are the StatefulSet controller's words: "Create Pod web-0 in
// StatefulSet web successful".
var StatefulSetEvents = PodEvents{
	Created: func(o runtime.Object, p *corev1.Pod) string { return setMessage("create", o, p) + " successful" },
	Deleted: func(o runtime.Object, p *corev1.Pod) string { return setMessage("delete", o, p) + " successful" },
	Updated: func(o runtime.Object, p *corev1.Pod) string { return setMessage("update", o, p) + " successful" },
	Failed: func(o runtime.Object, verb string, p *corev1.Pod, err error) string {
		return setMessage(verb, o, p) + " failed error: " + err.Error()
	},
	Tolerant: true,
}

func setMessage(verb string, owner runtime.Object, p *corev1.Pod) string {
	name := ""
	if set, ok := owner.(*appsv1.StatefulSet); ok {
		name = set.Name
	}
	return fmt.Sprintf("%s Pod %s in StatefulSet %s", strings.ToUpper(verb[:1])+verb[1:], p.Name, name)
}

// reasons are the events' reasons by verb, as upstream's controllers give them.
var reasons = map[string][2]string{
	"create": {"SuccessfulCreate", "FailedCreate"},
	"delete": {"SuccessfulDelete", "FailedDelete"},
	"update": {"SuccessfulUpdate", "FailedUpdate"},
}

// NewPodControl is the PodControl that writes through client and records events on the
// owner with recorder, in events' words.
func NewPodControl(client kubernetes.Interface, recorder record.EventRecorder, events PodEvents) PodControl {
	return &realPodControl{client: client, recorder: recorder, events: events}
}

// realPodControl writes through the API.
type realPodControl struct {
	client   kubernetes.Interface
	recorder record.EventRecorder
	events   PodEvents
}

var _ PodControl = &realPodControl{}

// record makes the event of a write: Normal with message on success, Warning on err.
func (r *realPodControl) record(owner runtime.Object, verb string, pod *corev1.Pod, message func(runtime.Object, *corev1.Pod) string, err error) {
	reason := reasons[verb]
	if err != nil {
		r.recorder.Eventf(owner, corev1.EventTypeWarning, reason[1], "%s", r.events.Failed(owner, verb, pod, err))
		return
	}
	r.recorder.Eventf(owner, corev1.EventTypeNormal, reason[0], "%s", message(owner, pod))
}

func (r *realPodControl) CreatePod(ctx context.Context, owner runtime.Object, pod *corev1.Pod) (*corev1.Pod, error) {
	created, err := r.client.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	if r.events.Tolerant && apierrors.IsAlreadyExists(err) {
		return pod, nil // a stale cache: the pod is there
	}
	if err != nil {
		r.record(owner, "create", pod, nil, err)
		return nil, err
	}
	r.record(owner, "create", created, r.events.Created, nil)
	return created, nil
}

func (r *realPodControl) DeletePod(ctx context.Context, owner runtime.Object, pod *corev1.Pod) error {
	return r.deletePod(ctx, owner, pod, metav1.Preconditions{UID: &pod.UID})
}

func (r *realPodControl) DeletePodAsSeen(ctx context.Context, owner runtime.Object, pod *corev1.Pod) error {
	return r.deletePod(ctx, owner, pod, metav1.Preconditions{UID: &pod.UID, ResourceVersion: &pod.ResourceVersion})
}

// deletePod deletes pod under pre. A Conflict on a resourceVersion precondition is the
// caller's stale view, returned without an event; on the UID alone it is a pod replaced
// by another of its name, which a Tolerant kind takes for success, as a pod gone.
func (r *realPodControl) deletePod(ctx context.Context, owner runtime.Object, pod *corev1.Pod, pre metav1.Preconditions) error {
	err := r.client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{Preconditions: &pre})
	if pre.ResourceVersion != nil && apierrors.IsConflict(err) {
		return err
	}
	if r.events.Tolerant && (apierrors.IsNotFound(err) || apierrors.IsConflict(err)) {
		err = nil // already gone (or replaced): nothing of ours to delete
	}
	r.record(owner, "delete", pod, r.events.Deleted, err)
	return err
}

func (r *realPodControl) EvictPod(ctx context.Context, owner runtime.Object, pod *corev1.Pod) error {
	eviction := &policyv1.Eviction{
		ObjectMeta:    metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name},
		DeleteOptions: &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &pod.UID}},
	}
	err := r.client.PolicyV1().Evictions(pod.Namespace).Evict(ctx, eviction)
	if apierrors.IsTooManyRequests(err) {
		return err
	}
	if r.events.Tolerant && (apierrors.IsNotFound(err) || apierrors.IsConflict(err)) {
		err = nil
	}
	r.record(owner, "delete", pod, r.events.Deleted, err)
	return err
}

func (r *realPodControl) UpdatePod(ctx context.Context, owner runtime.Object, pod *corev1.Pod, change func(*corev1.Pod)) error {
	live, err := r.client.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil // gone: its owner's next sync recreates it
	case err != nil:
		return err
	case live.UID != pod.UID:
		return fmt.Errorf("pod %s/%s was replaced (uid %s, cached %s); retrying", pod.Namespace, pod.Name, live.UID, pod.UID)
	}
	change(live)
	_, err = r.client.CoreV1().Pods(pod.Namespace).Update(ctx, live, metav1.UpdateOptions{})
	r.record(owner, "update", live, r.events.Updated, err)
	return err
}

func (r *realPodControl) PatchPod(ctx context.Context, namespace, name string, patch []byte) (*corev1.Pod, error) {
	return r.client.CoreV1().Pods(namespace).Patch(ctx, name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
}

func (r *realPodControl) PatchPodStatus(ctx context.Context, namespace, name string, patch []byte) error {
	_, err := r.client.CoreV1().Pods(namespace).Patch(ctx, name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
	return err
}

func (r *realPodControl) PatchPodResize(ctx context.Context, namespace, name string, patch []byte) error {
	_, err := r.client.CoreV1().Pods(namespace).Patch(ctx, name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "resize")
	return err
}

// FakePodControl records calls and fails on demand, for tests.
type FakePodControl struct {
	mu        sync.Mutex
	Created   []*corev1.Pod
	Deleted   []string
	Updated   []string
	Patched   []string
	CreateErr error
	// PatchedVersion is the resourceVersion of the pods PatchPod returns.
	PatchedVersion string
	// FailAfter lets this many creates succeed before CreateErr applies (-1: always fail).
	FailAfter int
	// Changed are the pods changed since their callers saw them (DeletePodAsSeen).
	Changed map[string]bool
	// Evicted are the pods EvictPod took down (they are in Deleted too); EvictErr the
	// error EvictPod returns for a pod, by name (a budget's refusal, say).
	Evicted  []string
	EvictErr map[string]error
	// EvictTakes is how long each EvictPod takes; MostEvictingAtOnce is the most
	// EvictPod calls seen in flight together.
	EvictTakes         time.Duration
	MostEvictingAtOnce int
	evicting           int
}

var _ PodControl = &FakePodControl{}

func (f *FakePodControl) CreatePod(_ context.Context, _ runtime.Object, pod *corev1.Pod) (*corev1.Pod, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.CreateErr != nil && (f.FailAfter < 0 || len(f.Created) >= f.FailAfter) {
		return nil, f.CreateErr
	}
	p := pod.DeepCopy()
	if p.Name == "" {
		p.Name = fmt.Sprintf("%s%d", pod.GenerateName, len(f.Created))
	}
	f.Created = append(f.Created, p)
	return p, nil
}

func (f *FakePodControl) DeletePod(_ context.Context, _ runtime.Object, pod *corev1.Pod) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.Deleted = append(f.Deleted, pod.Name)
	return nil
}

// DeletePodAsSeen is DeletePod, but fails with a Conflict for the pods named in
// Changed, as the API server does for a pod changed since the caller saw it.
func (f *FakePodControl) DeletePodAsSeen(ctx context.Context, owner runtime.Object, pod *corev1.Pod) error {
	f.mu.Lock()
	changed := f.Changed[pod.Name]
	f.mu.Unlock()
	if changed {
		return apierrors.NewConflict(corev1.Resource("pods"), pod.Name, errors.New("the object has been modified"))
	}
	return f.DeletePod(ctx, owner, pod)
}

// EvictPod is DeletePod, recorded in Evicted too, unless EvictErr names the pod.
func (f *FakePodControl) EvictPod(ctx context.Context, owner runtime.Object, pod *corev1.Pod) error {
	f.mu.Lock()
	f.evicting++
	f.MostEvictingAtOnce = max(f.MostEvictingAtOnce, f.evicting)
	takes := f.EvictTakes
	f.mu.Unlock()
	time.Sleep(takes)
	f.mu.Lock()
	f.evicting--
	err := f.EvictErr[pod.Name]
	if err == nil {
		f.Evicted = append(f.Evicted, pod.Name)
	}
	f.mu.Unlock()
	if err != nil {
		return err
	}
	return f.DeletePod(ctx, owner, pod)
}

func (f *FakePodControl) UpdatePod(_ context.Context, _ runtime.Object, pod *corev1.Pod, change func(*corev1.Pod)) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	change(pod.DeepCopy())
	f.Updated = append(f.Updated, pod.Name)
	return nil
}

func (f *FakePodControl) PatchPod(_ context.Context, namespace, name string, _ []byte) (*corev1.Pod, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.Patched = append(f.Patched, name)
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, ResourceVersion: f.PatchedVersion}}, nil
}

func (f *FakePodControl) PatchPodStatus(_ context.Context, _, name string, _ []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.Patched = append(f.Patched, name+"/status")
	return nil
}

func (f *FakePodControl) PatchPodResize(_ context.Context, _, name string, _ []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.Patched = append(f.Patched, name+"/resize")
	return nil
}
