package controller

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
)

// AdoptPatch is the strategic-merge patch that makes owner (of kind gvk) the controller
// of the object with uid; the uid guards against an object of the same name made since.
func AdoptPatch(owner metav1.Object, gvk schema.GroupVersionKind, uid types.UID) []byte {
	b, _ := json.Marshal(map[string]any{"metadata": map[string]any{
		"ownerReferences": []metav1.OwnerReference{*metav1.NewControllerRef(owner, gvk)},
		"uid":             uid,
	}})
	return b
}

// ReleasePatch is the strategic-merge patch that removes the owner with ownerUID from
// the object with uid.
func ReleasePatch(ownerUID, uid types.UID) []byte {
	return fmt.Appendf(nil, `{"metadata":{"ownerReferences":[{"$patch":"delete","uid":%q}],"uid":%q}}`, ownerUID, uid)
}

// PodClaim is how an owner claims its pods: those it controls that it still selects,
// plus the orphans it selects, which it adopts; pods it controls but no longer selects
// are released.
type PodClaim struct {
	// Owner and Kind are the claiming object; Selects says whether it selects a pod.
	Owner   metav1.Object
	Kind    schema.GroupVersionKind
	Selects func(*corev1.Pod) bool
	// Fresh reads the owner from the API server (not the cache), once, before the first
	// adoption: an owner just deleted or replaced must not take pods.
	Fresh func(ctx context.Context) (metav1.Object, error)
	// Patch applies a strategic-merge patch to a pod of the owner's namespace.
	Patch func(ctx context.Context, name string, patch []byte) error
}

// Claim returns the pods of c.Owner among the owner's pods and its namespace's orphans
// in indexer (see PodControllerIndex), adopting and releasing as it goes. An owner
// being deleted neither adopts nor releases.
func (c PodClaim) Claim(ctx context.Context, indexer cache.Indexer) ([]*corev1.Pod, error) {
	var out []*corev1.Pod
	var adoptable error
	checked := false
	deleting := c.Owner.GetDeletionTimestamp() != nil
	for _, key := range []string{string(c.Owner.GetUID()), OrphanIndexKey(c.Owner.GetNamespace())} {
		objs, err := indexer.ByIndex(PodControllerIndex, key)
		if err != nil {
			return nil, err
		}
		for _, o := range objs {
			pod, ok := o.(*corev1.Pod)
			if !ok || pod.Namespace != c.Owner.GetNamespace() {
				continue
			}
			selected := c.Selects(pod)
			owned := metav1.IsControlledBy(pod, c.Owner)
			switch {
			case owned && selected:
				out = append(out, pod)
			case owned && !deleting:
				if err := c.Patch(ctx, pod.Name, ReleasePatch(c.Owner.GetUID(), pod.UID)); err != nil && !apierrors.IsNotFound(err) {
					return nil, err
				}
			case !owned && selected && !deleting && pod.DeletionTimestamp == nil:
				if !checked {
					fresh, err := c.Fresh(ctx)
					adoptable, checked = CheckAdoptable(c.Owner, fresh, err, c.Kind.Kind), true
				}
				if adoptable != nil {
					continue
				}
				if err := c.Patch(ctx, pod.Name, AdoptPatch(c.Owner, c.Kind, pod.UID)); err != nil {
					if apierrors.IsNotFound(err) {
						continue
					}
					return nil, err
				}
				out = append(out, pod)
			}
		}
	}
	return out, nil
}

// Selector is a label selector as a pod predicate.
func Selector(s labels.Selector) func(*corev1.Pod) bool {
	return func(p *corev1.Pod) bool { return s.Matches(labels.Set(p.Labels)) }
}
