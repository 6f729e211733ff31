package replicaset

import (
	"context"
	"encoding/json"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	appsinformers "k8s.io/client-go/informers/apps/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// kind is the API kind a Controller serves. The controller's logic is written once, on
// the ReplicaSet form: a ReplicationController is read as the ReplicaSet it is
// equivalent to (its equality-based selector becomes matchLabels) and written back as
// itself. Defaulting an RC's selector from its template labels is the API server's
// job, so an RC the controller sees always has one; one without matches nothing.
type kind struct {
	// name and apiVersion are what the pods' controllerRef says (Kind, APIVersion).
	name, apiVersion string
	// component records the events, queue names the work queue (upstream's names).
	component, queue string
	// hasTerminatingReplicas: the kind's status has terminatingReplicas (RC's has not).
	hasTerminatingReplicas bool

	informer cache.SharedIndexInformer
	// get and list read the informer cache; the objects must not be modified.
	get  func(namespace, name string) (*appsv1.ReplicaSet, error)
	list func(namespace string) ([]*appsv1.ReplicaSet, error)
	// getFresh reads the object from the API server, for the check before adopting.
	getFresh func(ctx context.Context, namespace, name string) (*appsv1.ReplicaSet, error)
	// patchStatus replaces rs's status through the kind's status subresource, whatever
	// its resourceVersion now (see statusPatch).
	patchStatus func(ctx context.Context, rs *appsv1.ReplicaSet, status appsv1.ReplicaSetStatus) (*appsv1.ReplicaSet, error)
	// original is rs as its own kind, the object events are recorded on.
	original func(rs *appsv1.ReplicaSet) runtime.Object
}

// gvk is the kind's group, version and kind.
func (k *kind) gvk() schema.GroupVersionKind {
	return schema.FromAPIVersionAndKind(k.apiVersion, k.name)
}

// controllerRef is the owner reference the pods of rs carry.
func (k *kind) controllerRef(rs *appsv1.ReplicaSet) metav1.OwnerReference {
	return *metav1.NewControllerRef(rs, k.gvk())
}

func replicaSetKind(client kubernetes.Interface, informer appsinformers.ReplicaSetInformer) *kind {
	lister := informer.Lister()
	return &kind{
		name: "ReplicaSet", apiVersion: "apps/v1", component: ControllerName, queue: "replicaset",
		hasTerminatingReplicas: true,
		informer:               informer.Informer(),
		get:                    func(ns, name string) (*appsv1.ReplicaSet, error) { return lister.ReplicaSets(ns).Get(name) },
		list: func(ns string) ([]*appsv1.ReplicaSet, error) {
			return lister.ReplicaSets(ns).List(labels.Everything())
		},
		getFresh: func(ctx context.Context, ns, name string) (*appsv1.ReplicaSet, error) {
			return client.AppsV1().ReplicaSets(ns).Get(ctx, name, metav1.GetOptions{})
		},
		patchStatus: func(ctx context.Context, rs *appsv1.ReplicaSet, status appsv1.ReplicaSetStatus) (*appsv1.ReplicaSet, error) {
			return client.AppsV1().ReplicaSets(rs.Namespace).Patch(ctx, rs.Name, types.JSONPatchType, statusPatch(rs.UID, status), metav1.PatchOptions{}, "status")
		},
		original: func(rs *appsv1.ReplicaSet) runtime.Object { return rs },
	}
}

func replicationControllerKind(client kubernetes.Interface, informer coreinformers.ReplicationControllerInformer) *kind {
	lister := informer.Lister()
	return &kind{
		name: "ReplicationController", apiVersion: "v1", component: RCControllerName, queue: "replicationmanager",
		informer: informer.Informer(),
		get: func(ns, name string) (*appsv1.ReplicaSet, error) {
			rc, err := lister.ReplicationControllers(ns).Get(name)
			if err != nil {
				return nil, err
			}
			return replicaSetFromRC(rc), nil
		},
		list: func(ns string) ([]*appsv1.ReplicaSet, error) {
			rcs, err := lister.ReplicationControllers(ns).List(labels.Everything())
			if err != nil {
				return nil, err
			}
			out := make([]*appsv1.ReplicaSet, len(rcs))
			for i, rc := range rcs {
				out[i] = replicaSetFromRC(rc)
			}
			return out, nil
		},
		getFresh: func(ctx context.Context, ns, name string) (*appsv1.ReplicaSet, error) {
			rc, err := client.CoreV1().ReplicationControllers(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return nil, err
			}
			return replicaSetFromRC(rc), nil
		},
		patchStatus: func(ctx context.Context, rs *appsv1.ReplicaSet, status appsv1.ReplicaSetStatus) (*appsv1.ReplicaSet, error) {
			patch := statusPatch(rs.UID, rcStatus(status))
			rc, err := client.CoreV1().ReplicationControllers(rs.Namespace).Patch(ctx, rs.Name, types.JSONPatchType, patch, metav1.PatchOptions{}, "status")
			if err != nil {
				return nil, err
			}
			return replicaSetFromRC(rc), nil
		},
		original: func(rs *appsv1.ReplicaSet) runtime.Object { return rcFromReplicaSet(rs) },
	}
}

// statusPatch is a JSON patch that replaces an object's status with status, provided
// the object is still the one with uid (one deleted and created again under its name is
// not written). It carries no resourceVersion: the status is this controller's alone,
// computed by a sync that saw the controller's last status write (the Fence), and a
// write of the object's spec or records meanwhile (the Deployment controller resizes
// its ReplicaSets and writes their hand-over records while they sync) leaves it as
// true as it was; observedGeneration says which spec it was computed for. A
// resourceVersion precondition would make such a write fail, to be read afresh and sent
// again: three requests for one on a client that a rollout keeps busy.
func statusPatch(uid types.UID, status any) []byte {
	patch, _ := json.Marshal([]map[string]any{
		{"op": "test", "path": "/metadata/uid", "value": uid},
		{"op": "replace", "path": "/status", "value": status},
	})
	return patch
}

// replicaSetFromRC is rc in ReplicaSet form. It shares rc's maps and slices: read only.
func replicaSetFromRC(rc *corev1.ReplicationController) *appsv1.ReplicaSet {
	rs := &appsv1.ReplicaSet{
		ObjectMeta: rc.ObjectMeta,
		Spec: appsv1.ReplicaSetSpec{
			Replicas:        rc.Spec.Replicas,
			MinReadySeconds: rc.Spec.MinReadySeconds,
		},
		Status: appsv1.ReplicaSetStatus{
			Replicas:             rc.Status.Replicas,
			FullyLabeledReplicas: rc.Status.FullyLabeledReplicas,
			ReadyReplicas:        rc.Status.ReadyReplicas,
			AvailableReplicas:    rc.Status.AvailableReplicas,
			ObservedGeneration:   rc.Status.ObservedGeneration,
		},
	}
	if len(rc.Spec.Selector) > 0 {
		// A nil selector matches nothing; an empty one would match everything.
		rs.Spec.Selector = &metav1.LabelSelector{MatchLabels: rc.Spec.Selector}
	}
	if rc.Spec.Template != nil {
		rs.Spec.Template = *rc.Spec.Template
	}
	for _, c := range rc.Status.Conditions {
		rs.Status.Conditions = append(rs.Status.Conditions, appsv1.ReplicaSetCondition{
			Type: appsv1.ReplicaSetConditionType(c.Type), Status: c.Status,
			LastTransitionTime: c.LastTransitionTime, Reason: c.Reason, Message: c.Message,
		})
	}
	return rs
}

// rcFromReplicaSet is the ReplicationController rs stands for (see replicaSetFromRC).
func rcFromReplicaSet(rs *appsv1.ReplicaSet) *corev1.ReplicationController {
	rc := &corev1.ReplicationController{
		ObjectMeta: *rs.ObjectMeta.DeepCopy(),
		Spec: corev1.ReplicationControllerSpec{
			Replicas:        rs.Spec.Replicas,
			MinReadySeconds: rs.Spec.MinReadySeconds,
			Template:        rs.Spec.Template.DeepCopy(),
		},
		Status: rcStatus(rs.Status),
	}
	if rs.Spec.Selector != nil {
		rc.Spec.Selector = rs.Spec.Selector.MatchLabels
	}
	return rc
}

// rcStatus is status in ReplicationController form (without terminatingReplicas,
// which that kind's status has not).
func rcStatus(status appsv1.ReplicaSetStatus) corev1.ReplicationControllerStatus {
	out := corev1.ReplicationControllerStatus{
		Replicas:             status.Replicas,
		FullyLabeledReplicas: status.FullyLabeledReplicas,
		ReadyReplicas:        status.ReadyReplicas,
		AvailableReplicas:    status.AvailableReplicas,
		ObservedGeneration:   status.ObservedGeneration,
	}
	for _, c := range status.Conditions {
		out.Conditions = append(out.Conditions, corev1.ReplicationControllerCondition{
			Type: corev1.ReplicationControllerConditionType(c.Type), Status: c.Status,
			LastTransitionTime: c.LastTransitionTime, Reason: c.Reason, Message: c.Message,
		})
	}
	return out
}
