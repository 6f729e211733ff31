package manager

import (
	"slices"
	"strconv"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kroll-dev/kroll/pkg/inplace"
)

// slim is the informers' transform: what they cache is only what the controllers read.
// Every object loses its managedFields (they list every field each writer set; no
// controller reads them, and kube-controller-manager's informers drop them too). A pod
// keeps only the fields below; at ten thousand pods the rest is most of the memory
// the controllers hold. A controller that comes to read another field of a pod adds it
// here, and one that writes a whole pod back reads it from the API server first (see
// the StatefulSet controller's identity fix), never from the cache.
func (s *slimmer) slim(obj any) (any, error) {
	if p, ok := obj.(*corev1.Pod); ok {
		return s.slimPod(p), nil
	}
	if o, err := meta.Accessor(obj); err == nil && o.GetManagedFields() != nil {
		o.SetManagedFields(nil)
	}
	return obj, nil
}

// slimPod is p with what the controllers read of a pod:
//   - all of its metadata but managedFields (selectors match any label; owner
//     references, deletion and creation times, the in-place state and deletion cost
//     annotations);
//   - of its spec, the node it is bound to, its termination grace period (with the
//     node, whether the API server removes it in the request that deletes it), its node
//     affinity (a DaemonSet's pod names its node there until bound), its readiness
//     gates, the names, images, resources and resize policies of its containers (an
//     in-place resize, and what a node's pods hold) and its claims' volumes (a
//     StatefulSet pod's storage);
//   - of its status, the phase and its reason (OutOfcpu: a pod the kubelet rejected),
//     the generation the kubelet observed, the Ready and in-place readiness
//     conditions' type, status and transition time (Ready's is when availability
//     counts from), the resize conditions' type, status, reason and message, and each
//     container's name, image, image ID, readiness, running state, the reason it waits
//     (CrashLoopBackOff: what pkg/failure judges a rollout by), restart count and its
//     allocated and actual resources.
//
// The labels, owner references and containers that pods have alike are shared.
func (s *slimmer) slimPod(p *corev1.Pod) *corev1.Pod {
	out := &corev1.Pod{TypeMeta: p.TypeMeta, ObjectMeta: p.ObjectMeta}
	out.ManagedFields = nil
	s.mu.Lock()
	out.Labels = s.labels.get(p.Labels, labelsKey, identity)
	out.OwnerReferences = s.owners.get(p.OwnerReferences, ownersKey, identity)
	out.Spec = corev1.PodSpec{
		NodeName:                      p.Spec.NodeName,
		TerminationGracePeriodSeconds: s.graces.get(p.Spec.TerminationGracePeriodSeconds, graceKey, identity),
		Affinity:                      p.Spec.Affinity,
		ReadinessGates:                p.Spec.ReadinessGates,
		InitContainers:                s.containers.get(p.Spec.InitContainers, containersKey, slimContainers),
		Containers:                    s.containers.get(p.Spec.Containers, containersKey, slimContainers),
	}
	initStatuses := s.containerStatuses(p.Status.InitContainerStatuses)
	statuses := s.containerStatuses(p.Status.ContainerStatuses)
	s.mu.Unlock()
	for _, v := range p.Spec.Volumes {
		if v.PersistentVolumeClaim != nil {
			out.Spec.Volumes = append(out.Spec.Volumes, corev1.Volume{Name: v.Name,
				VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: v.PersistentVolumeClaim}})
		}
	}
	out.Status = corev1.PodStatus{
		Phase:                 p.Status.Phase,
		Reason:                p.Status.Reason,
		ObservedGeneration:    p.Status.ObservedGeneration,
		InitContainerStatuses: initStatuses,
		ContainerStatuses:     statuses,
	}
	for _, c := range p.Status.Conditions {
		if kept, ok := slimCondition(c); ok {
			out.Status.Conditions = append(out.Status.Conditions, kept)
		}
	}
	return out
}

// slimCondition is what slimPod keeps of a pod condition, and whether it keeps it.
func slimCondition(c corev1.PodCondition) (corev1.PodCondition, bool) {
	switch c.Type {
	case corev1.PodReady, inplace.ReadinessGate:
		return corev1.PodCondition{Type: c.Type, Status: c.Status, LastTransitionTime: c.LastTransitionTime}, true
	case corev1.PodResizePending, corev1.PodResizeInProgress:
		return corev1.PodCondition{Type: c.Type, Status: c.Status, Reason: c.Reason, Message: c.Message}, true
	}
	return corev1.PodCondition{}, false
}

// slimKeepsCondition says whether slimPod keeps a pod condition of type t.
func slimKeepsCondition(t corev1.PodConditionType) bool {
	_, ok := slimCondition(corev1.PodCondition{Type: t})
	return ok
}

// slimmer slims objects for one set of informers (see slim), and keeps the one copy
// of what pods have alike: the pods of a Deployment share their labels, controller
// reference and container list, which would otherwise be held once per pod. Cached
// objects are read-only (the informers' contract: a controller changes a copy), so
// pods may share them.
type slimmer struct {
	mu         sync.Mutex
	labels     sharedValues[map[string]string]
	owners     sharedValues[[]metav1.OwnerReference]
	containers sharedValues[[]corev1.Container]
	// resources are containers' allocated and actual resources, which the pods of one
	// revision report alike.
	resources sharedValues[*corev1.ResourceRequirements]
	// graces are termination grace periods: a handful of values among all pods.
	graces sharedValues[*int64]
}

func newSlimmer() *slimmer { return &slimmer{} }

// maxShared bounds each table; a full one is emptied, which only stops pods seen
// before from sharing with those seen after.
const maxShared = 4096

// sharedValues maps a value's key to the one copy cached pods point to.
type sharedValues[T any] map[string]T

// get is the shared copy of v (made by cp on first sight). An empty v stays as it is.
func (m *sharedValues[T]) get(v T, key func(T) string, cp func(T) T) T {
	k := key(v)
	if k == "" {
		return cp(v)
	}
	if have, ok := (*m)[k]; ok {
		return have
	}
	if *m == nil || len(*m) >= maxShared {
		*m = sharedValues[T]{}
	}
	c := cp(v)
	(*m)[k] = c
	return c
}

func identity[T any](v T) T { return v }

// The keys: every field of the value, each ended by a NUL (which no name holds).
func labelsKey(l map[string]string) string {
	keys := make([]string, 0, len(l))
	for k := range l {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(k + "\x00" + l[k] + "\x00")
	}
	return b.String()
}

func ownersKey(refs []metav1.OwnerReference) string {
	var b strings.Builder
	flag := func(v *bool) string {
		if v == nil {
			return "-"
		}
		return strconv.FormatBool(*v)
	}
	for _, r := range refs {
		b.WriteString(r.APIVersion + "\x00" + r.Kind + "\x00" + r.Name + "\x00" + string(r.UID) + "\x00" +
			flag(r.Controller) + "\x00" + flag(r.BlockOwnerDeletion) + "\x00")
	}
	return b.String()
}

func graceKey(g *int64) string {
	if g == nil {
		return ""
	}
	return strconv.FormatInt(*g, 10)
}

func containersKey(cs []corev1.Container) string {
	var b strings.Builder
	for _, c := range cs {
		b.WriteString(c.Name + "\x00" + c.Image + "\x00" + resourcesKey(&c.Resources))
		for _, p := range c.ResizePolicy {
			b.WriteString(string(p.ResourceName) + "=" + string(p.RestartPolicy) + "\x00")
		}
		if c.RestartPolicy != nil {
			b.WriteString("restart=" + string(*c.RestartPolicy))
		}
		b.WriteString("\x00")
	}
	return b.String()
}

// resourcesKey is r's requests and limits, each list sorted by name.
func resourcesKey(r *corev1.ResourceRequirements) string {
	if r == nil {
		return ""
	}
	var b strings.Builder
	for _, list := range []corev1.ResourceList{r.Requests, r.Limits} {
		names := make([]string, 0, len(list))
		for n := range list {
			names = append(names, string(n))
		}
		slices.Sort(names)
		for _, n := range names {
			q := list[corev1.ResourceName(n)]
			b.WriteString(n + "=" + q.String() + "\x00")
		}
		b.WriteString("\x00")
	}
	return b.String()
}

// slimContainers keeps of each container its name, image, resources and resize policy,
// and its restart policy (a sidecar's).
func slimContainers(cs []corev1.Container) []corev1.Container {
	if len(cs) == 0 {
		return nil
	}
	out := make([]corev1.Container, len(cs))
	for i, c := range cs {
		out[i] = corev1.Container{Name: c.Name, Image: c.Image, Resources: *c.Resources.DeepCopy(),
			ResizePolicy: slices.Clone(c.ResizePolicy), RestartPolicy: c.RestartPolicy}
	}
	return out
}

// containerStatuses slims statuses; s.mu is held.
func (s *slimmer) containerStatuses(cs []corev1.ContainerStatus) []corev1.ContainerStatus {
	if len(cs) == 0 {
		return nil
	}
	share := func(r *corev1.ResourceRequirements) *corev1.ResourceRequirements {
		if r == nil {
			return nil
		}
		return s.resources.get(r, resourcesKey, func(r *corev1.ResourceRequirements) *corev1.ResourceRequirements { return r.DeepCopy() })
	}
	out := make([]corev1.ContainerStatus, len(cs))
	for i, c := range cs {
		out[i] = corev1.ContainerStatus{Name: c.Name, Image: c.Image, ImageID: c.ImageID, Ready: c.Ready,
			RestartCount: c.RestartCount, State: corev1.ContainerState{Running: c.State.Running},
			Resources: share(c.Resources)}
		if c.AllocatedResources != nil {
			out[i].AllocatedResources = share(&corev1.ResourceRequirements{Requests: c.AllocatedResources}).Requests
		}
		if w := c.State.Waiting; w != nil {
			// The reason alone (CrashLoopBackOff, ImagePullBackOff): what the failure
			// policy judges a new pod by; the message can be long and is not read.
			out[i].State.Waiting = &corev1.ContainerStateWaiting{Reason: w.Reason}
		}
	}
	return out
}
