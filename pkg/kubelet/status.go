package kubelet

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Container waiting and termination reasons, as the kubelet reports them.
const (
	reasonContainerCreating = "ContainerCreating"
	reasonPodInitializing   = "PodInitializing"
	reasonErrImagePull      = "ErrImagePull"
	reasonImagePullBackOff  = "ImagePullBackOff"
	reasonCrashLoopBackOff  = "CrashLoopBackOff"
	// reasonCreateContainerConfigError: the container's environment names a ConfigMap,
	// Secret or key that does not exist.
	reasonCreateContainerConfigError = "CreateContainerConfigError"
	reasonCompleted                  = "Completed"
	reasonError                      = "Error"

	// maxCrashLoopBackOff is the kubelet's ceiling on the restart back-off.
	maxCrashLoopBackOff = 5 * time.Minute
	// minRunBeforeCrash keeps a crash-looping container up long enough to be seen running.
	minRunBeforeCrash = time.Second
)

// podClock holds, for one pod, the precise instants its simulation is measured from.
// The status carries the same instants at one-second resolution; after a restart of the
// simulator, with the clock empty, those are used instead.
type podClock struct {
	// admitted is when the pod was first seen bound to one of our nodes: its containers
	// are being created from then until admitted+startup delay.
	admitted time.Time
	// since is, per container name, when the container entered its current state.
	since map[string]time.Time
	// readyAt is, per container name, when the running instance passes readiness;
	// absent for an instance that never becomes ready.
	readyAt map[string]time.Time
	// deleteSeen is when the deletion was first seen; zero until then.
	deleteSeen time.Time
	// resizeAt is when the kubelet last accepted a resize of the pod, of generation
	// resizeGen; zero when it never did. resizeDelayWarned is set once a bad
	// kroll.dev/resize-delay has been reported.
	resizeAt          time.Time
	resizeGen         int64
	resizeDelayWarned bool
	// runs is, per app container name, the model of its running instance (runs.go);
	// shared, not copied, by clones: a run is the instance's own state, not a value the
	// next status is computed from. noRun is, per container name, the instance known
	// to need no run. podIP is the pod's address, what its probes connect to.
	runs  map[string]*run
	noRun map[string]string
	podIP string
	// backOff is, per container name, its restart back-off (backoff.go).
	backOff map[string]crashBackOff
}

func newPodClock() *podClock {
	return &podClock{since: map[string]time.Time{}, readyAt: map[string]time.Time{}, runs: map[string]*run{}, noRun: map[string]string{}, backOff: map[string]crashBackOff{}}
}

func (c *podClock) clone() *podClock {
	n := &podClock{admitted: c.admitted, deleteSeen: c.deleteSeen, resizeAt: c.resizeAt, resizeGen: c.resizeGen, resizeDelayWarned: c.resizeDelayWarned, podIP: c.podIP,
		since: make(map[string]time.Time, len(c.since)), readyAt: make(map[string]time.Time, len(c.readyAt)),
		runs: make(map[string]*run, len(c.runs)), noRun: make(map[string]string, len(c.noRun)), backOff: make(map[string]crashBackOff, len(c.backOff))}
	for k, v := range c.backOff {
		n.backOff[k] = v
	}
	for k, v := range c.since {
		n.since[k] = v
	}
	for k, v := range c.readyAt {
		n.readyAt[k] = v
	}
	for k, v := range c.runs {
		n.runs[k] = v
	}
	for k, v := range c.noRun {
		n.noRun[k] = v
	}
	return n
}

// dropRuns forgets the models of the pod's containers (the pod is gone or has ended).
func (c *podClock) dropRuns() {
	for name, r := range c.runs {
		r.drop()
		delete(c.runs, name)
	}
}

// addresses are the IPs of a pod: the node's, and the pod's own (the node's for hostNetwork).
type addresses struct {
	hostIP, podIP string
}

// simulator turns a pod's spec and current status into the status a kubelet would
// report next. It is pure: no clients, no clocks of its own.
type simulator struct {
	startupDelay time.Duration
	crashBackOff time.Duration
	faults       *FaultRules
	registry     *Registry
	// onRun, when set, is told of every new container run (runs.go): the kubelet posts
	// its probe events and schedules its probes. When nil, a run's next change is offered
	// to the pod's own wake-up instead (and its events are kept on the run).
	onRun func(pod *corev1.Pod, r *run)
	// config reads the ConfigMaps and Secrets containers get their environment and
	// files from (configfiles.go); its zero value finds none.
	config configLookup
}

// imagePlan is what becomes of one container's image on the node: it pulls and the
// container runs with fault, or it does not pull and waits with pull.Reason.
type imagePlan struct {
	pull  PullResult
	fault Fault
}

// planImage decides, in this order: a malformed reference never pulls
// (InvalidImageName); a fault asked for by the pod's annotation or a rule decides next,
// ImagePullBackOff failing the pull and None pulling whatever the catalogue says; then
// the registry's catalogue decides, and a fault asked for (CrashLoopBackOff, NeverReady,
// ReadyAfter) applies to the container once its image has pulled.
func (s *simulator) planImage(pod *corev1.Pod, image string) imagePlan {
	pull := s.registry.Pull(image)
	if pull.Reason == reasonInvalidImageName {
		return imagePlan{pull: pull}
	}
	f, asked := s.faults.lookup(pod, image)
	switch {
	case f.Kind == FaultImagePull:
		return imagePlan{pull: notFound(normalizeImage(image))}
	case asked && f.Kind == FaultNone:
		return imagePlan{pull: PullResult{OK: true}, fault: f}
	}
	return imagePlan{pull: pull, fault: f}
}

// wake keeps the earliest non-zero instant it is offered.
type wake struct{ at time.Time }

func (w *wake) offer(t time.Time) {
	if !t.IsZero() && (w.at.IsZero() || t.Before(w.at)) {
		w.at = t
	}
}

// podStatus computes the status of pod at now, and the instant at which it would next
// change by itself (zero: only a change of the pod can change it). clk is updated in place.
//
// Each container moves through:
//
//	creating ──delay──▶ running ──(readiness delay)──▶ running+ready
//	   │                  │ CrashLoopBackOff fault: exits after max(delay,1s)
//	   │                  ▼ (the first exit: running again at once, restartCount+1)
//	   │        waiting CrashLoopBackOff ──back-off 10s·2ⁿ⁻¹ (≤5m)──▶ running, restartCount+1
//	   ▼ image does not pull (catalogue, or ImagePullBackOff fault)
//	waiting ErrImagePull ──max(delay,1s)──▶ waiting ImagePullBackOff ──back-off 10s·2ⁿ──▶ ErrImagePull …
//	   (a malformed reference: waiting InvalidImageName, never retried)
//
// and a change of the container's image in the spec restarts it as the kubelet does: the
// running instance ends (lastState terminated, Completed), restartCount+1, the new image is
// reported at once, and the container is not ready for the startup delay.
func (s *simulator) podStatus(pod *corev1.Pod, clk *podClock, ips addresses, now time.Time) (corev1.PodStatus, time.Time) {
	return s.podStatusWith(pod, clk, ips, resizeState{}, now)
}

// podStatusWith is podStatus for a pod whose resize state is rs (resize.go): containers
// report their allocated resources, actuated after the resize delay, and the pod its
// resize conditions.
func (s *simulator) podStatusWith(pod *corev1.Pod, clk *podClock, ips addresses, rs resizeState, now time.Time) (corev1.PodStatus, time.Time) {
	if rs.alloc == nil {
		rs.alloc = allocationOf(pod)
	}
	st := *pod.Status.DeepCopy()
	if isTerminal(st.Phase) {
		return st, time.Time{}
	}
	delay := s.delayFor(pod)
	if st.StartTime == nil {
		st.StartTime = &metav1.Time{Time: now}
	}
	if clk.admitted.IsZero() {
		clk.admitted = st.StartTime.Time
	}
	st.HostIP, st.PodIP = ips.hostIP, ips.podIP
	clk.podIP = ips.podIP
	st.HostIPs = []corev1.HostIP{{IP: ips.hostIP}}
	st.PodIPs = []corev1.PodIP{{IP: ips.podIP}}
	st.ObservedGeneration = pod.Generation

	var w wake
	created := clk.admitted.Add(delay)

	// Init containers run to completion, in order, once the sandbox is created; a
	// restartable one (a sidecar) keeps running instead.
	initDone, initResizing := true, false
	var incomplete, unreadySidecars []string
	initStatuses := make([]corev1.ContainerStatus, 0, len(pod.Spec.InitContainers))
	initialized := initializedOnce(st.ContainerStatuses)
	for _, c := range pod.Spec.InitContainers {
		old := findStatus(st.InitContainerStatuses, c.Name)
		var cs corev1.ContainerStatus
		switch plan := s.planImage(pod, c.Image); {
		case !initDone || now.Before(created):
			cs = waitingStatus(c.Name, c.Image, reasonPodInitializing, "", old)
			if now.Before(created) {
				w.offer(created) // after it, the container before this one brings the pod back
			}
		case !plan.pull.OK:
			cs = s.pullFailure(c, plan.pull, old, clk, now, &w)
		case isSidecar(c):
			cs = s.sidecar(pod, c, old, clk, created, now, &w)
		default:
			cs = s.initContainer(pod, c, old, clk, now, &w)
		}
		// An init container reports its resources as an app container does; a sidecar
		// whose resize asks for a restart is not restarted here (a not-ready sidecar
		// would hold the app containers back as if initialising), it only changes.
		if s.resources(pod, c, findStatus(st.InitContainerStatuses, c.Name), &cs, clk, rs, delay, false, now, &w) {
			initResizing = true
		}
		if isSidecar(c) && !cs.Ready {
			unreadySidecars = append(unreadySidecars, c.Name)
		}
		done := cs.State.Terminated != nil && cs.State.Terminated.ExitCode == 0
		if isSidecar(c) {
			// A sidecar restarting after the pod initialized does not hold the app
			// containers back: they run on.
			done = initialized || (cs.State.Running != nil && (cs.Ready || (cs.Started != nil && *cs.Started)))
		}
		if !done {
			if initDone {
				incomplete = append(incomplete, c.Name)
			}
			initDone = false
		}
		initStatuses = append(initStatuses, cs)
	}
	if len(initStatuses) > 0 {
		st.InitContainerStatuses = initStatuses
	}

	statuses := make([]corev1.ContainerStatus, 0, len(pod.Spec.Containers))
	everRan, allTerminated, anyFailed := false, true, false
	// An unready sidecar makes the pod unready too, listed before the app containers.
	unready := unreadySidecars
	resizing := initResizing
	for _, c := range pod.Spec.Containers {
		old := findStatus(st.ContainerStatuses, c.Name)
		var cs corev1.ContainerStatus
		if initDone {
			cs = s.container(pod, c, old, clk, created, delay, now, &w)
			if s.resources(pod, c, old, &cs, clk, rs, delay, true, now, &w) {
				resizing = true
			}
		} else {
			cs = waitingStatus(c.Name, c.Image, reasonPodInitializing, "", old)
		}
		if !cs.Ready {
			unready = append(unready, c.Name)
		}
		if cs.State.Running != nil || cs.RestartCount > 0 || cs.LastTerminationState.Terminated != nil || cs.State.Terminated != nil {
			everRan = true
		}
		if cs.State.Terminated == nil {
			allTerminated = false
		} else if cs.State.Terminated.ExitCode != 0 {
			anyFailed = true
		}
		statuses = append(statuses, cs)
	}
	st.ContainerStatuses = statuses

	switch {
	case initFailed(pod.Spec.InitContainers, initStatuses):
		st.Phase = corev1.PodFailed
	case !initDone || !everRan:
		st.Phase = corev1.PodPending
	case allTerminated && anyFailed:
		st.Phase = corev1.PodFailed
	case allTerminated:
		st.Phase = corev1.PodSucceeded
	default:
		st.Phase = corev1.PodRunning
	}

	if isTerminal(st.Phase) {
		setEndedConditions(pod, &st, now)
		return st, time.Time{}
	}
	s.setConditions(pod, &st, initDone, incomplete, unready, now)
	setResizeConditions(&st, rs, pod.Generation, resizing, now)
	return st, w.at
}

// resources sets the resources a container that has an instance reports (allocated,
// and actuated: see actuate), restarting it when its actuation asks for that and
// mayRestart. It returns whether the container still waits for its resize to be actuated.
func (s *simulator) resources(pod *corev1.Pod, c corev1.Container, old *corev1.ContainerStatus, cs *corev1.ContainerStatus, clk *podClock, rs resizeState, delay time.Duration, mayRestart bool, now time.Time, w *wake) bool {
	if cs.ContainerID == "" {
		return false // never created: the kubelet reports no resources yet
	}
	if old != nil && old.ContainerID != cs.ContainerID {
		old = nil // a new instance is created with the allocation
	}
	alloc := rs.alloc[c.Name]
	reported, waiting, restart := actuate(c, old, alloc, rs, now)
	if waiting {
		w.offer(rs.acceptedAt.Add(rs.delay))
	}
	if restart && mayRestart {
		next := *cs.DeepCopy()
		next.LastTerminationState = stoppedInstance(cs, now)
		*cs = s.startInstance(pod, c, cs.Image, &next, now, cs.RestartCount+1, s.readinessDelay(s.planImage(pod, c.Image).fault, delay), delay, clk, w)
	}
	cs.AllocatedResources = alloc.Requests.DeepCopy()
	cs.Resources = &reported
	return waiting
}

func (s *simulator) delayFor(pod *corev1.Pod) time.Duration {
	if v, ok := pod.Annotations[AnnotationStartupDelay]; ok {
		if d, err := time.ParseDuration(v); err == nil && d >= 0 {
			return d
		}
	}
	return s.startupDelay
}

func (c *podClock) sinceOr(name string, fallback time.Time) time.Time {
	if t, ok := c.since[name]; ok {
		return t
	}
	return fallback
}
