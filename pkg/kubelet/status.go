package kubelet

import (
	"fmt"
	"sort"
	"strings"
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
	reasonCompleted         = "Completed"
	reasonError             = "Error"

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
}

func newPodClock() *podClock {
	return &podClock{since: map[string]time.Time{}, readyAt: map[string]time.Time{}}
}

func (c *podClock) clone() *podClock {
	n := &podClock{admitted: c.admitted, deleteSeen: c.deleteSeen, since: make(map[string]time.Time, len(c.since)), readyAt: make(map[string]time.Time, len(c.readyAt))}
	for k, v := range c.since {
		n.since[k] = v
	}
	for k, v := range c.readyAt {
		n.readyAt[k] = v
	}
	return n
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
//	   │                  ▼
//	   │        waiting CrashLoopBackOff ──back-off 10s·2ⁿ (≤5m)──▶ running, restartCount+1
//	   ▼ image does not pull (catalogue, or ImagePullBackOff fault)
//	waiting ErrImagePull ──max(delay,1s)──▶ waiting ImagePullBackOff ──back-off 10s·2ⁿ──▶ ErrImagePull …
//	   (a malformed reference: waiting InvalidImageName, never retried)
//
// and a change of the container's image in the spec restarts it as the kubelet does: the
// running instance ends (lastState terminated, Completed), restartCount+1, the new image is
// reported at once, and the container is not ready for the startup delay.
func (s *simulator) podStatus(pod *corev1.Pod, clk *podClock, ips addresses, now time.Time) (corev1.PodStatus, time.Time) {
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
	st.HostIPs = []corev1.HostIP{{IP: ips.hostIP}}
	st.PodIPs = []corev1.PodIP{{IP: ips.podIP}}
	st.ObservedGeneration = pod.Generation

	var w wake
	created := clk.admitted.Add(delay)

	// Init containers run to completion, in order, once the sandbox is created; a
	// restartable one (a sidecar) keeps running instead.
	initDone := true
	var incomplete []string
	initStatuses := make([]corev1.ContainerStatus, 0, len(pod.Spec.InitContainers))
	for _, c := range pod.Spec.InitContainers {
		old := findStatus(st.InitContainerStatuses, c.Name)
		image := normalizeImage(c.Image)
		var cs corev1.ContainerStatus
		switch plan := s.planImage(pod, c.Image); {
		case !initDone || now.Before(created):
			cs = waitingStatus(c.Name, c.Image, reasonPodInitializing, "", old)
			w.offer(created)
		case !plan.pull.OK:
			cs = s.pullFailure(c, plan.pull, old, clk, now, &w)
		case c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways:
			cs = runningStatus(pod, c.Name, image, created, true, 0, old)
		default:
			cs = completedStatus(pod, c.Name, image, created, old)
		}
		if cs.State.Terminated == nil && !(cs.State.Running != nil && cs.Ready) {
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
	var unready []string
	for _, c := range pod.Spec.Containers {
		old := findStatus(st.ContainerStatuses, c.Name)
		var cs corev1.ContainerStatus
		if initDone {
			cs = s.container(pod, c, old, clk, created, delay, now, &w)
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
	return st, w.at
}

// container computes one app container's next status; see podStatus for the states.
func (s *simulator) container(pod *corev1.Pod, c corev1.Container, old *corev1.ContainerStatus, clk *podClock, created time.Time, delay time.Duration, now time.Time, w *wake) corev1.ContainerStatus {
	image := normalizeImage(c.Image)
	plan := s.planImage(pod, c.Image)
	fault := plan.fault

	if old != nil && normalizeImage(old.Image) != image && !isFirstCreation(old) {
		// The image changed under a container that exists: kill and start again.
		next := *old.DeepCopy()
		if r := old.State.Running; r != nil {
			next.LastTerminationState = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				ExitCode: 0, Reason: reasonCompleted, StartedAt: r.StartedAt, FinishedAt: metav1.Time{Time: now}, ContainerID: old.ContainerID,
			}}
		}
		if !plan.pull.OK {
			next.ImageID, next.ContainerID, next.Ready, next.Started = "", "", false, ptrBool(false)
			delete(clk.since, c.Name)
			return s.pullFailure(c, plan.pull, &next, clk, now, w)
		}
		if old.State.Running == nil && old.RestartCount == 0 && old.LastTerminationState.Terminated == nil {
			// Never ran (say, stuck pulling a bad image): this is its first creation.
			clk.since[c.Name] = now
			return s.creatingOrStart(pod, c, image, plan, nil, clk, now, delay, w)
		}
		return s.startInstance(pod, c, image, &next, now, next.RestartCount+1, s.readinessDelay(fault, delay), delay, clk, w)
	}

	switch {
	case old == nil || isFirstCreation(old):
		if _, ok := clk.since[c.Name]; !ok {
			clk.since[c.Name] = clk.admitted
		}
		return s.creatingOrStart(pod, c, image, plan, old, clk, now, delay, w)

	case old.State.Running != nil:
		started := clk.sinceOr(c.Name, old.State.Running.StartedAt.Time)
		if fault.Kind == FaultCrashLoop {
			crashAt := started.Add(max(delay, minRunBeforeCrash))
			if !now.Before(crashAt) {
				next := *old.DeepCopy()
				next.LastTerminationState = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
					ExitCode: 1, Reason: reasonError, StartedAt: old.State.Running.StartedAt, FinishedAt: metav1.Time{Time: now}, ContainerID: old.ContainerID,
				}}
				if pod.Spec.RestartPolicy == corev1.RestartPolicyNever {
					next.State = corev1.ContainerState{Terminated: next.LastTerminationState.Terminated}
					next.LastTerminationState = corev1.ContainerState{}
					next.Ready, next.Started = false, ptrBool(false)
					return next
				}
				backOff := s.backOff(old.RestartCount)
				next.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
					Reason:  reasonCrashLoopBackOff,
					Message: fmt.Sprintf("back-off %s restarting failed container=%s pod=%s_%s(%s)", backOff, c.Name, pod.Name, pod.Namespace, pod.UID),
				}}
				next.Ready, next.Started = false, ptrBool(false)
				clk.since[c.Name] = now
				w.offer(now.Add(backOff))
				return next
			}
			w.offer(crashAt)
		}
		readyAt, ok := clk.readyAt[c.Name]
		if !ok && !old.Ready {
			// No memory of this instance (the simulator restarted): derive from the status.
			base := time.Duration(0)
			if t := old.LastTerminationState.Terminated; t != nil && t.Reason == reasonCompleted {
				base = delay // restarted for an image change
			}
			if rd := s.readinessDelay(fault, base); rd >= 0 {
				readyAt, ok = started.Add(rd), true
			}
		}
		ready := fault.Kind != FaultNeverReady && (old.Ready || (ok && !now.Before(readyAt)))
		if !ready && ok && fault.Kind != FaultNeverReady {
			w.offer(readyAt)
		}
		next := *old.DeepCopy()
		next.Ready, next.Started = ready, ptrBool(ready || fault.Kind == FaultNeverReady)
		return next

	case old.State.Waiting != nil && old.State.Waiting.Reason == reasonCrashLoopBackOff:
		finished := now
		if t := old.LastTerminationState.Terminated; t != nil {
			finished = t.FinishedAt.Time
		}
		finished = clk.sinceOr(c.Name, finished)
		restartAt := finished.Add(s.backOff(old.RestartCount))
		if now.Before(restartAt) {
			w.offer(restartAt)
			return *old.DeepCopy()
		}
		return s.startInstance(pod, c, image, old.DeepCopy(), now, old.RestartCount+1, s.readinessDelay(fault, 0), delay, clk, w)

	case old.State.Waiting != nil && !plan.pull.OK:
		return s.pullFailure(c, plan.pull, old, clk, now, w)

	case old.State.Waiting != nil:
		// Waiting on a fault that no longer applies (the rules changed): start.
		return s.startInstance(pod, c, image, old.DeepCopy(), now, old.RestartCount, s.readinessDelay(fault, 0), delay, clk, w)
	}
	return *old.DeepCopy() // terminated for good (restartPolicy Never)
}

// creatingOrStart handles a container's first creation: ContainerCreating until the
// startup delay has passed, then a failed pull or a running first instance.
func (s *simulator) creatingOrStart(pod *corev1.Pod, c corev1.Container, image string, plan imagePlan, old *corev1.ContainerStatus, clk *podClock, now time.Time, delay time.Duration, w *wake) corev1.ContainerStatus {
	due := clk.since[c.Name].Add(delay)
	if now.Before(due) {
		w.offer(due)
		return waitingStatus(c.Name, c.Image, reasonContainerCreating, "", old)
	}
	if !plan.pull.OK {
		clk.since[c.Name] = now
		return s.pullFailure(c, plan.pull, old, clk, now, w)
	}
	return s.startInstance(pod, c, image, &corev1.ContainerStatus{}, now, 0, s.readinessDelay(plan.fault, 0), delay, clk, w)
}

// startInstance reports a new instance of c running since now, with restartCount,
// ready after readyDelay (never, when negative).
func (s *simulator) startInstance(pod *corev1.Pod, c corev1.Container, image string, base *corev1.ContainerStatus, now time.Time, restartCount int32, readyDelay, delay time.Duration, clk *podClock, w *wake) corev1.ContainerStatus {
	clk.since[c.Name] = now
	delete(clk.readyAt, c.Name)
	ready := false
	if readyDelay >= 0 {
		clk.readyAt[c.Name] = now.Add(readyDelay)
		ready = readyDelay == 0
		if !ready {
			w.offer(now.Add(readyDelay))
		}
	}
	fault := s.planImage(pod, c.Image).fault
	if fault.Kind == FaultCrashLoop {
		w.offer(now.Add(max(delay, minRunBeforeCrash)))
	}
	cs := *base
	cs.Name = c.Name
	cs.Image, cs.ImageID = image, imageID(image)
	cs.ContainerID = containerID(string(pod.UID), c.Name, restartCount)
	cs.RestartCount = restartCount
	cs.State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Time{Time: now}}}
	cs.Ready, cs.Started = ready, ptrBool(ready || fault.Kind == FaultNeverReady)
	return cs
}

// pullFailure reports a container whose image does not pull. A malformed reference
// waits InvalidImageName for good. Otherwise the kubelet pulls again and again with the
// back-off it uses for crashes, 10s·2ⁿ up to 5m: after each attempt it shows
// ErrImagePull with the registry's error until its next sync (here max(startup delay,
// 1s), at most half the back-off), then ImagePullBackOff, quoting that error, until the
// next attempt. With the 10s default: ErrImagePull at 0s, ImagePullBackOff at 1s,
// ErrImagePull at 10s, ImagePullBackOff at 11s, ErrImagePull at 30s, 70s, 150s, 310s, …
func (s *simulator) pullFailure(c corev1.Container, pull PullResult, old *corev1.ContainerStatus, clk *podClock, now time.Time, w *wake) corev1.ContainerStatus {
	if pull.Reason == reasonInvalidImageName {
		return waitingStatus(c.Name, c.Image, reasonInvalidImageName, pull.Message, old)
	}
	attempt, ok := clk.since[c.Name]
	if !ok {
		attempt = now
		clk.since[c.Name] = now
	}
	backOff := s.backOff(0)
	for n := int32(1); !now.Before(attempt.Add(backOff)); n++ {
		attempt = attempt.Add(backOff)
		backOff = s.backOff(n)
	}
	if shown := attempt.Add(min(max(s.startupDelay, time.Second), backOff/2)); now.Before(shown) {
		w.offer(shown)
		return waitingStatus(c.Name, c.Image, reasonErrImagePull, pull.Message, old)
	}
	w.offer(attempt.Add(backOff))
	return waitingStatus(c.Name, c.Image, reasonImagePullBackOff,
		fmt.Sprintf("Back-off pulling image %q: %s: %s", withDefaultTag(c.Image), reasonErrImagePull, pull.Message), old)
}

// readinessDelay is how long a fresh instance takes to pass readiness: the fault's own
// delay, otherwise base; negative for an instance that never does.
func (s *simulator) readinessDelay(f Fault, base time.Duration) time.Duration {
	switch f.Kind {
	case FaultNeverReady:
		return -1
	case FaultReadyAfter:
		return f.After
	}
	return base
}

// backOff is the wait before restart number restarts+1: base·2^restarts, at most 5m.
func (s *simulator) backOff(restarts int32) time.Duration {
	d := s.crashBackOff
	for i := int32(0); i < restarts && d < maxCrashLoopBackOff; i++ {
		d *= 2
	}
	return min(d, maxCrashLoopBackOff)
}

func (s *simulator) delayFor(pod *corev1.Pod) time.Duration {
	if v, ok := pod.Annotations[AnnotationStartupDelay]; ok {
		if d, err := time.ParseDuration(v); err == nil && d >= 0 {
			return d
		}
	}
	return s.startupDelay
}

// setConditions sets the conditions the kubelet owns for a pod that is not terminal.
func (s *simulator) setConditions(pod *corev1.Pod, st *corev1.PodStatus, initDone bool, incomplete, unready []string, now time.Time) {
	set := func(t corev1.PodConditionType, ok bool, reason, message string) {
		if ok {
			setCondition(st, pod.Generation, t, corev1.ConditionTrue, "", "", now)
		} else {
			setCondition(st, pod.Generation, t, corev1.ConditionFalse, reason, message, now)
		}
	}
	set(corev1.PodReadyToStartContainers, true, "", "")
	set(corev1.PodInitialized, initDone, "ContainersNotInitialized", fmt.Sprintf("containers with incomplete status: [%s]", strings.Join(incomplete, " ")))
	notReady := fmt.Sprintf("containers with unready status: [%s]", strings.Join(unready, " "))
	set(corev1.ContainersReady, len(unready) == 0, "ContainersNotReady", notReady)
	if len(unready) > 0 {
		set(corev1.PodReady, false, "ContainersNotReady", notReady)
	} else {
		gateOK, gateMsg := readinessGates(pod, st)
		set(corev1.PodReady, gateOK, "ReadinessGatesNotReady", gateMsg)
	}
	sortConditions(st)
}

// setCondition sets condition t of st, keeping its transition time unless its status
// flips. A True condition may carry a reason too (Initialized: PodCompleted).
func setCondition(st *corev1.PodStatus, generation int64, t corev1.PodConditionType, status corev1.ConditionStatus, reason, message string, now time.Time) {
	c := corev1.PodCondition{Type: t, Status: status, Reason: reason, Message: message, ObservedGeneration: generation, LastTransitionTime: metav1.Time{Time: now}}
	for i := range st.Conditions {
		if st.Conditions[i].Type == t {
			if st.Conditions[i].Status == status {
				c.LastTransitionTime = st.Conditions[i].LastTransitionTime
			}
			st.Conditions[i] = c
			return
		}
	}
	st.Conditions = append(st.Conditions, c)
}

// sortConditions orders the kubelet's conditions the way a kubelet lists them.
func sortConditions(st *corev1.PodStatus) {
	sort.SliceStable(st.Conditions, func(i, j int) bool {
		return conditionOrder(st.Conditions[i].Type) < conditionOrder(st.Conditions[j].Type)
	})
}

// readinessGates reports whether every readiness gate's condition is True, and the
// kubelet's message for the first that is not.
func readinessGates(pod *corev1.Pod, st *corev1.PodStatus) (bool, string) {
	for _, g := range pod.Spec.ReadinessGates {
		var found *corev1.PodCondition
		for i := range st.Conditions {
			if st.Conditions[i].Type == g.ConditionType {
				found = &st.Conditions[i]
			}
		}
		if found == nil {
			return false, fmt.Sprintf("corresponding condition of pod readiness gate %q does not exist.", g.ConditionType)
		}
		if found.Status != corev1.ConditionTrue {
			return false, fmt.Sprintf("the status of pod readiness gate %q is not \"True\", but %s", g.ConditionType, found.Status)
		}
	}
	return true, ""
}

// conditionOrder sorts the kubelet's conditions the way a kubelet lists them; others keep their place after.
func conditionOrder(t corev1.PodConditionType) int {
	switch t {
	case corev1.PodReadyToStartContainers:
		return 0
	case corev1.PodInitialized:
		return 1
	case corev1.PodReady:
		return 2
	case corev1.ContainersReady:
		return 3
	case corev1.PodScheduled:
		return 4
	}
	return 5
}

func (c *podClock) sinceOr(name string, fallback time.Time) time.Time {
	if t, ok := c.since[name]; ok {
		return t
	}
	return fallback
}

// isFirstCreation tells a container still waiting for its very first instance.
func isFirstCreation(cs *corev1.ContainerStatus) bool {
	return cs.State.Waiting != nil && cs.State.Waiting.Reason == reasonContainerCreating && cs.RestartCount == 0 && cs.LastTerminationState.Terminated == nil
}

func findStatus(list []corev1.ContainerStatus, name string) *corev1.ContainerStatus {
	for i := range list {
		if list[i].Name == name {
			return &list[i]
		}
	}
	return nil
}

// waitingStatus is a container waiting for reason, keeping what old knew of past instances.
func waitingStatus(name, image, reason, message string, old *corev1.ContainerStatus) corev1.ContainerStatus {
	cs := corev1.ContainerStatus{Name: name}
	if old != nil {
		cs.RestartCount, cs.LastTerminationState = old.RestartCount, *old.LastTerminationState.DeepCopy()
	}
	cs.Image = image
	cs.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: message}}
	cs.Started = ptrBool(false)
	return cs
}

func runningStatus(pod *corev1.Pod, name, image string, since time.Time, ready bool, restarts int32, old *corev1.ContainerStatus) corev1.ContainerStatus {
	if old != nil && old.State.Running != nil && old.Image == image {
		return *old.DeepCopy()
	}
	return corev1.ContainerStatus{
		Name: name, Image: image, ImageID: imageID(image), ContainerID: containerID(string(pod.UID), name, restarts),
		RestartCount: restarts, Ready: ready, Started: ptrBool(true),
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Time{Time: since}}},
	}
}

func completedStatus(pod *corev1.Pod, name, image string, at time.Time, old *corev1.ContainerStatus) corev1.ContainerStatus {
	if old != nil && old.State.Terminated != nil && old.Image == image {
		return *old.DeepCopy()
	}
	id := containerID(string(pod.UID), name, 0)
	return corev1.ContainerStatus{
		Name: name, Image: image, ImageID: imageID(image), ContainerID: id, Started: ptrBool(false),
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ExitCode: 0, Reason: reasonCompleted, StartedAt: metav1.Time{Time: at}, FinishedAt: metav1.Time{Time: at}, ContainerID: id,
		}},
	}
}

func ptrBool(b bool) *bool { return &b }
