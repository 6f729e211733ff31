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
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
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

// Claim is how an owner claims the objects of one kind it may control (pods,
// ReplicaSets, ControllerRevisions): those it controls that it still selects, plus the
// orphans it selects, which it adopts; those it controls but no longer selects are
// released. An owner being deleted neither adopts nor releases, and an object being
// deleted is not adopted.
type Claim[T metav1.Object] struct {
	// Owner and Kind are the claiming object; Selects says whether it selects an object.
	Owner   metav1.Object
	Kind    schema.GroupVersionKind
	Selects func(T) bool
	// Fresh reads the owner from the API server (not the cache), once, before the first
	// adoption: an owner just deleted or replaced must not take objects.
	Fresh func(ctx context.Context) (metav1.Object, error)
	// Patch applies a strategic-merge patch to obj (in the owner's namespace) and
	// returns the object to keep: the patched one, or obj where the write returns none.
	Patch func(ctx context.Context, obj T, patch []byte) (T, error)
	// Gone tells whether a patch failed because the object is gone: it is passed over,
	// not reported. Nil: NotFound.
	Gone func(error) bool
	// KeepGoing makes the claim go on past errors and return them together with what it
	// claimed, as the ReplicaSet and Deployment controllers claim (after upstream): a
	// release refused as Invalid counts as done (the object has lost the reference
	// already, or was made again), and an owner that may not adopt reports so for each
	// orphan it selects, through Unadoptable (nil: the error as it is). Without it, the
	// first error stops the claim, and an owner that may not adopt leaves the orphans
	// alone without a word (the StatefulSet and DaemonSet controllers' claims).
	KeepGoing   bool
	Unadoptable func(obj T, err error) error
}

// Claim returns the objects of c.Owner among candidates (objects of its namespace: its
// own and the orphans it might adopt; others' are passed over), adopting and releasing
// as it goes, in the order of candidates.
func (c Claim[T]) Claim(ctx context.Context, candidates []T) ([]T, error) {
	gone := c.Gone
	if gone == nil {
		gone = apierrors.IsNotFound
	}
	var out []T
	var errs []error
	var adoptable error
	checked := false
	deleting := c.Owner.GetDeletionTimestamp() != nil
	for _, obj := range candidates {
		ref := metav1.GetControllerOfNoCopy(obj)
		if ref != nil && ref.UID != c.Owner.GetUID() {
			continue
		}
		selected := c.Selects(obj)
		switch owned := ref != nil; {
		case owned && selected:
			out = append(out, obj)
		case owned && !deleting:
			_, err := c.Patch(ctx, obj, ReleasePatch(c.Owner.GetUID(), obj.GetUID()))
			if err == nil || gone(err) || (c.KeepGoing && apierrors.IsInvalid(err)) {
				continue
			}
			if !c.KeepGoing {
				return nil, err
			}
			errs = append(errs, err)
		case !owned && selected && !deleting && obj.GetDeletionTimestamp() == nil:
			if !checked {
				fresh, err := c.Fresh(ctx)
				adoptable, checked = CheckAdoptable(c.Owner, fresh, err, c.Kind.Kind), true
			}
			if adoptable != nil {
				if c.KeepGoing {
					errs = append(errs, c.unadoptable(obj, adoptable))
				}
				continue
			}
			adopted, err := c.Patch(ctx, obj, AdoptPatch(c.Owner, c.Kind, obj.GetUID()))
			if err != nil {
				if gone(err) {
					continue
				}
				if !c.KeepGoing {
					return nil, err
				}
				errs = append(errs, err)
				continue
			}
			out = append(out, adopted)
		}
	}
	return out, utilerrors.NewAggregate(errs)
}

func (c Claim[T]) unadoptable(obj T, err error) error {
	if c.Unadoptable == nil {
		return err
	}
	return c.Unadoptable(obj, err)
}

// PodClaim is how an owner claims its pods (see Claim), read from a pod indexer.
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
// in indexer (see PodControllerIndex), adopting and releasing as it goes; the first
// error stops it.
func (c PodClaim) Claim(ctx context.Context, indexer cache.Indexer) ([]*corev1.Pod, error) {
	candidates, err := ClaimCandidates(indexer, c.Owner)
	if err != nil {
		return nil, err
	}
	return Claim[*corev1.Pod]{
		Owner: c.Owner, Kind: c.Kind, Selects: c.Selects, Fresh: c.Fresh,
		Patch: func(ctx context.Context, pod *corev1.Pod, patch []byte) (*corev1.Pod, error) {
			return pod, c.Patch(ctx, pod.Name, patch)
		},
	}.Claim(ctx, candidates)
}

// ClaimCandidates are the pods owner may claim, from indexer (see PodControllerIndex):
// those it controls, then its namespace's orphans.
func ClaimCandidates(indexer cache.Indexer, owner metav1.Object) ([]*corev1.Pod, error) {
	return Candidates[*corev1.Pod](indexer, owner)
}

// Candidates are the objects of type T owner may claim, from indexer (see
// ControllerIndex): those it controls, then its namespace's orphans.
func Candidates[T metav1.Object](indexer cache.Indexer, owner metav1.Object) ([]T, error) {
	var out []T
	for _, key := range []string{string(owner.GetUID()), OrphanIndexKey(owner.GetNamespace())} {
		objs, err := indexer.ByIndex(ControllerIndex, key)
		if err != nil {
			return nil, err
		}
		for _, o := range objs {
			if t, ok := o.(T); ok && t.GetNamespace() == owner.GetNamespace() {
				out = append(out, t)
			}
		}
	}
	return out, nil
}

// Selector is a label selector as a pod predicate.
func Selector(s labels.Selector) func(*corev1.Pod) bool { return Matching[*corev1.Pod](s) }

// Matching is a label selector as a predicate on objects of any kind.
func Matching[T metav1.Object](s labels.Selector) func(T) bool {
	return func(o T) bool { return s.Matches(labels.Set(o.GetLabels())) }
}
