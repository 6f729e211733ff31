package kubelet

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/flowcontrol"
)

// Event reasons of the kubelet's container lifecycle, as it posts them (its
// pkg/kubelet/events). Failed is the reason of a failed pull and of a container that
// could not be created; BackOff of a pull and of a restart held back.
const (
	eventPulling      = "Pulling"
	eventPulled       = "Pulled"
	eventFailed       = "Failed"
	eventInspect      = "InspectFailed"
	eventBackOff      = "BackOff"
	eventCreated      = "Created"
	eventStarted      = "Started"
	eventKilling      = "Killing"
	messageCreated    = "Container created"
	messageStarted    = "Container started"
	messagePresentFmt = "Container image %q already present on machine and can be accessed by the pod"
)

// podEvent is one event the kubelet posts about a container of a pod.
type podEvent struct {
	ref                   corev1.ObjectReference
	kind, reason, message string
}

// transitionEvents are the events a kubelet posts for pod as its status moves from old
// to cur, in the order it posts them: per container (init containers first, in spec
// order), what happened to it in between. They are a function of the two statuses, so
// a status that does not change posts nothing: a pod at rest costs no event.
//
// present is the node's image store, the normalized references it holds: an instance
// that starts pulls its image unless it is there and its imagePullPolicy is not
// Always; a pull that succeeds adds it. pullTook is how long a pull took (the pod's
// creation delay: the simulated node pulls while it creates the sandbox).
//
// For each container:
//   - a running instance replaced by another because its image changed: Killing
//     "Container c definition changed, will be restarted"; because its resize asked
//     for a restart: Killing "Container c resize requires restart";
//   - a pull attempt that failed (now ErrImagePull, or ImagePullBackOff straight from a
//     state that made no attempt): Pulling, Failed "Failed to pull image …: <the
//     registry's error>", Failed "Error: ErrImagePull"; ImagePullBackOff entered:
//     BackOff "Back-off pulling image …", Failed "Error: ImagePullBackOff"; an invalid
//     reference: InspectFailed with the parse error, Failed "Error: InvalidImageName";
//   - an environment the kubelet cannot build (CreateContainerConfigError entered): the
//     pull's events as below, then Failed "Error: <why>" (a kubelet posts it again on
//     each retry; here once, as a status that does not change posts nothing);
//   - a new instance (a containerID not seen before: the first start, a restart):
//     Pulling and Pulled "Successfully pulled image … in …", or Pulled "Container image
//     … already present on machine …"; Created; Started;
//   - a restart held back (CrashLoopBackOff entered, or entered again after a new
//     instance): BackOff "Back-off restarting failed container c in pod p_ns(uid)".
//
// The Killing of a failed liveness or startup probe is the prober's (runs.go), and
// the Killing of a deleted pod's containers is stopEvents'.
func transitionEvents(pod *corev1.Pod, old, cur corev1.PodStatus, present map[string]bool, pullTook time.Duration) []podEvent {
	var out []podEvent
	for _, list := range []struct {
		specs      []corev1.Container
		old, cur   []corev1.ContainerStatus
		init       bool
		fieldsPath string
	}{
		{pod.Spec.InitContainers, old.InitContainerStatuses, cur.InitContainerStatuses, true, "spec.initContainers"},
		{pod.Spec.Containers, old.ContainerStatuses, cur.ContainerStatuses, false, "spec.containers"},
	} {
		for i := range list.specs {
			c := &list.specs[i]
			now := findStatus(list.cur, c.Name)
			if now == nil {
				continue
			}
			ref := containerRef(pod, list.fieldsPath, c.Name)
			for _, e := range containerEvents(pod, c, findStatus(list.old, c.Name), now, present, pullTook) {
				e.ref = ref
				out = append(out, e)
			}
		}
	}
	return out
}

// containerEvents are the events of one container's transition from old (nil: no
// status yet) to cur; see transitionEvents.
func containerEvents(pod *corev1.Pod, c *corev1.Container, old, cur *corev1.ContainerStatus, present map[string]bool, pullTook time.Duration) []podEvent {
	var out []podEvent
	add := func(kind, reason, message string) {
		out = append(out, podEvent{kind: kind, reason: reason, message: message})
	}
	var was corev1.ContainerStatus
	if old != nil {
		was = *old
	}
	image := withDefaultTag(c.Image)
	newInstance := cur.ContainerID != "" && cur.ContainerID != was.ContainerID

	if was.State.Running != nil && (newInstance || cur.State.Running == nil) && cur.State.Terminated == nil {
		switch {
		case normalizeImage(was.Image) != normalizeImage(c.Image):
			add(corev1.EventTypeNormal, eventKilling, fmt.Sprintf("Container %s definition changed, will be restarted", c.Name))
		case newInstance && cur.State.Running != nil && !apiequality.Semantic.DeepEqual(was.Resources, cur.Resources):
			// A new instance with the old one's resources is a restart after an exit
			// (the first is at once), not the kubelet's stop.
			add(corev1.EventTypeNormal, eventKilling, fmt.Sprintf("Container %s resize requires restart", c.Name))
		}
	}

	switch waiting, before := waitingReason(cur), waitingReason(&was); {
	case waiting == reasonInvalidImageName && before != reasonInvalidImageName:
		add(corev1.EventTypeWarning, eventInspect, cur.State.Waiting.Message)
		add(corev1.EventTypeWarning, eventFailed, "Error: "+reasonInvalidImageName)
	case waiting == reasonErrImagePull && before != reasonErrImagePull,
		waiting == reasonImagePullBackOff && before != reasonErrImagePull && before != reasonImagePullBackOff:
		add(corev1.EventTypeNormal, eventPulling, fmt.Sprintf("Pulling image %q", image))
		add(corev1.EventTypeWarning, eventFailed, fmt.Sprintf("Failed to pull image %q: %s", image, pullError(cur)))
		add(corev1.EventTypeWarning, eventFailed, "Error: "+reasonErrImagePull)
		if waiting == reasonImagePullBackOff {
			add(corev1.EventTypeNormal, eventBackOff, fmt.Sprintf("Back-off pulling image %q", image))
			add(corev1.EventTypeWarning, eventFailed, "Error: "+reasonImagePullBackOff)
		}
	case waiting == reasonImagePullBackOff && before != reasonImagePullBackOff:
		add(corev1.EventTypeNormal, eventBackOff, fmt.Sprintf("Back-off pulling image %q", image))
		add(corev1.EventTypeWarning, eventFailed, "Error: "+reasonImagePullBackOff)
	}

	// pulled: the image pulled (or found present) for an instance about to be created.
	pulled := func() {
		normalized := normalizeImage(c.Image)
		if present[normalized] && pullPolicy(c) != corev1.PullAlways {
			add(corev1.EventTypeNormal, eventPulled, fmt.Sprintf(messagePresentFmt, c.Image))
			return
		}
		took := pullTook.Truncate(time.Millisecond)
		add(corev1.EventTypeNormal, eventPulling, fmt.Sprintf("Pulling image %q", image))
		add(corev1.EventTypeNormal, eventPulled, fmt.Sprintf("Successfully pulled image %q in %v (%v including waiting). Image size: %d bytes.",
			image, took, took, imageSize(normalized)))
		if present != nil {
			present[normalized] = true
		}
	}
	if waiting := waitingReason(cur); waiting == reasonCreateContainerConfigError && waitingReason(&was) != waiting {
		pulled()
		add(corev1.EventTypeWarning, eventFailed, "Error: "+cur.State.Waiting.Message)
	}

	if newInstance {
		pulled()
		add(corev1.EventTypeNormal, eventCreated, messageCreated)
		add(corev1.EventTypeNormal, eventStarted, messageStarted)
	}

	if waitingReason(cur) == reasonCrashLoopBackOff && (waitingReason(&was) != reasonCrashLoopBackOff || newInstance || was.RestartCount != cur.RestartCount) {
		add(corev1.EventTypeWarning, eventBackOff, fmt.Sprintf("Back-off restarting failed container %s in pod %s_%s(%s)", c.Name, pod.Name, pod.Namespace, pod.UID))
	}
	return out
}

// stopEvents are the Killing events the kubelet posts when it stops a deleted pod's
// running containers (sidecars and app containers), one per container, in spec order.
func stopEvents(pod *corev1.Pod) []podEvent {
	var out []podEvent
	for _, list := range []struct {
		specs    []corev1.Container
		statuses []corev1.ContainerStatus
		path     string
	}{
		{pod.Spec.InitContainers, pod.Status.InitContainerStatuses, "spec.initContainers"},
		{pod.Spec.Containers, pod.Status.ContainerStatuses, "spec.containers"},
	} {
		for _, c := range list.specs {
			if cs := findStatus(list.statuses, c.Name); cs != nil && cs.State.Running != nil {
				out = append(out, podEvent{ref: containerRef(pod, list.path, c.Name), kind: corev1.EventTypeNormal,
					reason: eventKilling, message: fmt.Sprintf("Stopping container %s", c.Name)})
			}
		}
	}
	return out
}

func waitingReason(cs *corev1.ContainerStatus) string {
	if cs == nil || cs.State.Waiting == nil {
		return ""
	}
	return cs.State.Waiting.Reason
}

// pullError is the registry's error a container waiting on a failed pull shows: its
// whole message for ErrImagePull, the part after "Back-off pulling image …:
// ErrImagePull: " for ImagePullBackOff.
func pullError(cs *corev1.ContainerStatus) string {
	msg := cs.State.Waiting.Message
	if cs.State.Waiting.Reason == reasonImagePullBackOff {
		if _, rest, ok := strings.Cut(msg, reasonErrImagePull+": "); ok {
			return rest
		}
	}
	return msg
}

// pullPolicy is c's imagePullPolicy, defaulted as the API server does when unset:
// Always for an image tagged latest or untagged, IfNotPresent otherwise.
func pullPolicy(c *corev1.Container) corev1.PullPolicy {
	if c.ImagePullPolicy != "" {
		return c.ImagePullPolicy
	}
	if withDefaultTag(c.Image) != c.Image || strings.HasSuffix(c.Image, ":latest") {
		return corev1.PullAlways
	}
	return corev1.PullIfNotPresent
}

// imageSize is a stable stand-in for an image's size in the registry, 2 MiB to about
// 200 MiB: the simulated registry holds no layers.
func imageSize(normalized string) int64 {
	sum := sha256.Sum256([]byte(normalized))
	return 2<<20 + int64(binary.BigEndian.Uint32(sum[:4])%(198<<20))
}

// containerRef is the reference of container name of pod, as events name it.
func containerRef(pod *corev1.Pod, path, name string) corev1.ObjectReference {
	return corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID,
		FieldPath: fmt.Sprintf("%s{%s}", path, name)}
}

// nodeImages is, per node, the images it holds: what its kubelet pulled since the
// simulator started.
type nodeImages struct {
	mu    sync.Mutex
	nodes map[string]map[string]bool
}

// postTransition posts the events of pod's status moving from old to cur on its node.
func (k *Kubelet) postTransition(pod *corev1.Pod, old, cur corev1.PodStatus) {
	k.images.mu.Lock()
	if k.images.nodes == nil {
		k.images.nodes = map[string]map[string]bool{}
	}
	present := k.images.nodes[pod.Spec.NodeName]
	if present == nil {
		present = map[string]bool{}
		k.images.nodes[pod.Spec.NodeName] = present
	}
	events := transitionEvents(pod, old, cur, present, k.sim.delayFor(pod))
	k.images.mu.Unlock()
	k.post(pod.Spec.NodeName, events)
}

func (k *Kubelet) post(node string, events []podEvent) {
	rec, ok := k.recorders[node]
	if !ok {
		return
	}
	for i := range events {
		rec.Event(&events[i].ref, events[i].kind, events[i].reason, events[i].message)
	}
}

// eventQPS and eventBurst bound the events the simulated nodes write, together, to
// what one kubelet may write by default (its eventRecordQPS and eventBurst): a burst
// of pod creations (1,000 pods post about 3,000 events) then costs the API server
// 50 writes a second, not as many as the pods' own writes. Events beyond what the
// broadcaster queues meanwhile (1,000) are dropped, as a real kubelet's are.
const (
	eventQPS   = 50
	eventBurst = 100
)

// limitedSink writes events through sink no faster than limiter allows.
type limitedSink struct {
	sink    record.EventSink
	limiter flowcontrol.RateLimiter
}

func newLimitedSink(sink record.EventSink) limitedSink {
	return limitedSink{sink: sink, limiter: flowcontrol.NewTokenBucketRateLimiter(eventQPS, eventBurst)}
}

func (s limitedSink) Create(e *corev1.Event) (*corev1.Event, error) {
	s.limiter.Accept()
	return s.sink.Create(e)
}

func (s limitedSink) Update(e *corev1.Event) (*corev1.Event, error) {
	s.limiter.Accept()
	return s.sink.Update(e)
}

func (s limitedSink) Patch(e *corev1.Event, data []byte) (*corev1.Event, error) {
	s.limiter.Accept()
	return s.sink.Patch(e, data)
}
