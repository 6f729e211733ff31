package kubelet

import (
	"fmt"
	"net/http"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// apiRuns keeps, per pod and container, the last two instances the kubelet API has
// used or the pod's sync has modelled (current and previous), so that an exec's changes
// to files last for the instance's life and `logs --previous` reads the instance
// before. An instance the sync models (it has probes, or its command may end) is the
// same run its probes see; any other is modelled here when first asked for, from its
// start time: the model is deterministic, so its log is the one it wrote.
type apiRuns struct {
	mu   sync.Mutex
	pods map[types.UID]map[string][]*run
}

func (a *apiRuns) add(uid types.UID, name string, r *run) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.addLocked(uid, name, r)
}

func (a *apiRuns) addLocked(uid types.UID, name string, r *run) {
	if a.pods == nil {
		a.pods = map[types.UID]map[string][]*run{}
	}
	byName := a.pods[uid]
	if byName == nil {
		byName = map[string][]*run{}
		a.pods[uid] = byName
	}
	list := append(byName[name], r)
	if len(list) > 2 {
		list = list[len(list)-2:]
	}
	byName[name] = list
}

// findOrAdd is the run of instance id, made by create and kept when there is none yet
// (two requests for one instance share one run, hence its files).
func (a *apiRuns) findOrAdd(uid types.UID, name, id string, create func() *run) *run {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, r := range a.pods[uid][name] {
		if r.id == id {
			return r
		}
	}
	r := create()
	a.addLocked(uid, name, r)
	return r
}

func (a *apiRuns) forget(uid types.UID) {
	a.mu.Lock()
	delete(a.pods, uid)
	a.mu.Unlock()
}

// apiError is an error of a kubelet API request with its HTTP status.
type apiError struct {
	code int
	msg  string
}

func (e *apiError) Error() string { return e.msg }

// containerSpec finds container name among pod's containers, init containers and
// ephemeral containers.
func containerSpec(pod *corev1.Pod, name string) (corev1.Container, *corev1.ContainerStatus, bool) {
	for _, c := range pod.Spec.Containers {
		if c.Name == name {
			return c, findStatus(pod.Status.ContainerStatuses, name), true
		}
	}
	for _, c := range pod.Spec.InitContainers {
		if c.Name == name {
			return c, findStatus(pod.Status.InitContainerStatuses, name), true
		}
	}
	return corev1.Container{}, nil, false
}

// instanceOf is the run of container name of pod: its current instance, or with
// previous the one before; an error names why there is none, as the kubelet words it.
func (k *Kubelet) instanceOf(pod *corev1.Pod, name string, previous bool) (*run, error) {
	c, _, ok := containerSpec(pod, name)
	if !ok {
		return nil, &apiError{http.StatusNotFound, fmt.Sprintf("container %s is not valid for pod %s", name, pod.Name)}
	}
	id, started, ended, err := pickInstance(pod, name, previous)
	if err != nil {
		return nil, err
	}
	return k.apiRuns.findOrAdd(pod.UID, name, id, func() *run {
		r := newRun(pod, c, id, pod.Status.PodIP, started, started, k.sim.config, k.sim.faults.For(pod, c.Image))
		if !ended.IsZero() {
			r.inst.AdvanceTo(ended)
		}
		return r
	}), nil
}

// pickInstance is the instance of container name a kubelet API request is about: its
// ID, when it started and (zero while it runs) when it ended.
func pickInstance(pod *corev1.Pod, name string, previous bool) (id string, started, ended time.Time, err error) {
	_, cs, _ := containerSpec(pod, name)
	refuse := func(msg string) (string, time.Time, time.Time, error) {
		return "", time.Time{}, time.Time{}, &apiError{http.StatusBadRequest, msg}
	}
	// Which instance, as the kubelet picks it (validateContainerLogStatus): the running
	// one; else the terminated one; else, waiting to restart (CrashLoopBackOff), the
	// one that ended last.
	var last *corev1.ContainerStateTerminated
	if cs != nil && cs.LastTerminationState.Terminated != nil && cs.LastTerminationState.Terminated.ContainerID != "" {
		last = cs.LastTerminationState.Terminated
	}
	switch {
	case previous:
		if last == nil {
			return refuse(fmt.Sprintf("previous terminated container %q in pod %q not found", name, pod.Name))
		}
		id, started, ended = last.ContainerID, last.StartedAt.Time, last.FinishedAt.Time
	case cs == nil:
		return refuse(fmt.Sprintf("container %q in pod %q is waiting to start: ContainerCreating", name, pod.Name))
	case cs.State.Running != nil:
		id, started = cs.ContainerID, cs.State.Running.StartedAt.Time
	case cs.State.Terminated != nil && cs.State.Terminated.ContainerID != "":
		t := cs.State.Terminated
		id, started, ended = t.ContainerID, t.StartedAt.Time, t.FinishedAt.Time
	case last != nil:
		id, started, ended = last.ContainerID, last.StartedAt.Time, last.FinishedAt.Time
	case cs.State.Terminated != nil:
		return refuse(fmt.Sprintf("container %q in pod %q is terminated", name, pod.Name))
	default:
		return refuse(waitingMessage(name, pod.Name, cs.State.Waiting))
	}
	return id, started, ended, nil
}

// waitingMessage is the kubelet's answer for a container that has not run yet.
func waitingMessage(name, pod string, w *corev1.ContainerStateWaiting) string {
	reason := "ContainerCreating"
	if w != nil && w.Reason != "" {
		reason = w.Reason
	}
	switch reason {
	case "ErrImagePull":
		reason = "image can't be pulled"
	case "ImagePullBackOff":
		reason = "trying and failing to pull image"
	}
	return fmt.Sprintf("container %q in pod %q is waiting to start: %s", name, pod, reason)
}

// writeAPIError answers a request with err.
func writeAPIError(w http.ResponseWriter, err error) {
	if e, ok := err.(*apiError); ok {
		http.Error(w, e.msg, e.code)
		return
	}
	http.Error(w, err.Error(), http.StatusInternalServerError)
}
