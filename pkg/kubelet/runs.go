package kubelet

import (
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kroll-dev/kroll/pkg/container"
	"github.com/kroll-dev/kroll/pkg/prober"
)

// run is one running instance of an app container as the node models it (pkg/container:
// its files, its command, what it serves) and its probes (pkg/prober). It is shared by
// the pod's sync (which reads what it reports now) and the probe loop (probeloop.go,
// which runs its probes when due and brings the pod back only when something changed),
// hence its lock. A restarted container is a new run; the old one is dropped.
type run struct {
	mu     sync.Mutex
	id     string // the instance's containerID
	key    string // the pod's namespace/name
	ref    corev1.ObjectReference
	spec   corev1.Container
	podIP  string
	inst   *container.Instance
	probes *prober.Set
	// emit posts a probe's event; nil keeps them in events (tests).
	emit   func(ref *corev1.ObjectReference, e prober.Event)
	events []prober.Event
	dead   bool
	// queued is the instant the probe loop has this run scheduled at; zero when not.
	queued time.Time
}

// observation is what a run reports at an instant.
type observation struct {
	probes   prober.Status
	exited   bool
	code     int
	exitedAt time.Time
}

// newRun models container c of pod, whose instance id started at started.
// Its environment and mounted configuration files are read through look (configfiles.go);
// its servers answer their synthetic load as fault says.
func newRun(pod *corev1.Pod, c corev1.Container, id, podIP string, started, now time.Time, look configLookup, fault Fault) *run {
	env, files := containerConfig(pod, &c, look)
	fieldPath := fmt.Sprintf("spec.containers{%s}", c.Name)
	toCompletion := false // an init container that is not a sidecar runs to completion
	for _, ic := range pod.Spec.InitContainers {
		if ic.Name == c.Name {
			fieldPath = fmt.Sprintf("spec.initContainers{%s}", c.Name)
			toCompletion = !isSidecar(ic)
		}
	}
	hostname := pod.Name
	if pod.Spec.Hostname != "" {
		hostname = pod.Spec.Hostname
	}
	r := &run{
		id: id, key: pod.Namespace + "/" + pod.Name, spec: *c.DeepCopy(), podIP: podIP,
		ref:    corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID, FieldPath: fieldPath},
		inst:   container.Start(container.Spec{Image: c.Image, Command: c.Command, Args: c.Args, Env: env, Files: files, Hostname: hostname, NodeIP: pod.Status.HostIP, Init: toCompletion, Stdin: c.Stdin, TTY: c.TTY, Traffic: fault.Traffic()}, started),
		probes: prober.NewSet(&c, started),
	}
	r.probes.Resume(now)
	return r
}

// needed tells whether a run must be kept: it has probes, or its command may still
// end (it sleeps, has ended, or is a shell reading the input kubectl attach gives it). A server or a process that runs for ever without
// probes behaves as the node did before it had a container model: it needs nothing.
func (r *run) needed() bool {
	if !r.probes.Empty() {
		return true
	}
	_, sleeping := r.inst.Next()
	_, _, ended := r.inst.Exited()
	return sleeping || ended || r.inst.ReadsInput()
}

// observe advances the instance and its probes to now.
func (r *run) observe(now time.Time) observation {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.observeLocked(now)
}

func (r *run) observeLocked(now time.Time) observation {
	r.inst.AdvanceTo(now)
	var o observation
	o.code, o.exitedAt, o.exited = r.inst.Exited()
	if !o.exited || now.Before(o.exitedAt) {
		o.exited = false
		evs, _ := r.probes.Advance(now, &r.spec, r.podIP, r.inst)
		for _, e := range evs {
			if r.emit != nil {
				r.emit(&r.ref, e)
			} else {
				r.events = append(r.events, e)
			}
		}
	}
	o.probes = r.probes.Status(r.spec.Name)
	return o
}

// next is when the run next changes by itself (a probe is due, a sleep ends); ok is
// false when it never will.
func (r *run) next() (time.Time, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.dead {
		return time.Time{}, false
	}
	if _, _, ended := r.inst.Exited(); ended {
		return time.Time{}, false
	}
	if r.probes.Status(r.spec.Name).Kill != "" {
		return time.Time{}, false
	}
	var w wake
	if t, ok := r.inst.Next(); ok {
		w.offer(t)
	}
	if t, ok := r.probes.Next(); ok {
		w.offer(t)
	}
	return w.at, !w.at.IsZero()
}

func (r *run) drop() {
	r.mu.Lock()
	r.dead = true
	r.mu.Unlock()
}

// runOf is the run of app container c's running instance old, created when first
// needed; nil for an instance that needs none (see run.needed).
func (s *simulator) runOf(pod *corev1.Pod, c corev1.Container, old *corev1.ContainerStatus, clk *podClock, started, now time.Time) *run {
	if r, ok := clk.runs[c.Name]; ok {
		if r.id == old.ContainerID {
			return r
		}
		r.drop()
		delete(clk.runs, c.Name)
	}
	if clk.noRun[c.Name] == old.ContainerID {
		return nil
	}
	r := newRun(pod, c, old.ContainerID, clk.podIP, started, now, s.config, s.faults.For(pod, c.Image))
	if !r.needed() {
		clk.noRun[c.Name] = old.ContainerID
		return nil
	}
	clk.runs[c.Name] = r
	if s.onRun != nil {
		s.onRun(pod, r)
	}
	return r
}

// ended is the status of container c whose instance old ended at at with code: it
// stays terminated when the pod's restartPolicy says so (Never; OnFailure after a
// success), and otherwise restarts at once or waits CrashLoopBackOff (backoff.go).
func (s *simulator) ended(pod *corev1.Pod, c corev1.Container, old *corev1.ContainerStatus, code int32, at time.Time, clk *podClock, w *wake) corev1.ContainerStatus {
	reason := reasonCompleted
	if code != 0 {
		reason = reasonError
	}
	next := *old.DeepCopy()
	term := &corev1.ContainerStateTerminated{
		ExitCode: code, Reason: reason, StartedAt: old.State.Running.StartedAt, FinishedAt: metav1.Time{Time: at}, ContainerID: old.ContainerID,
	}
	next.Ready, next.Started = false, ptrBool(false)
	if r, ok := clk.runs[c.Name]; ok {
		r.drop()
		delete(clk.runs, c.Name)
	}
	if pod.Spec.RestartPolicy == corev1.RestartPolicyNever || (pod.Spec.RestartPolicy == corev1.RestartPolicyOnFailure && code == 0) {
		next.State = corev1.ContainerState{Terminated: term}
		return next
	}
	next.LastTerminationState = corev1.ContainerState{Terminated: term}
	return s.afterExit(pod, c, next, at, clk, w)
}

func isSidecar(c corev1.Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
}
