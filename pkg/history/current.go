package history

import (
	"context"
	"fmt"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/retry"
)

// RevisionClient is what CurrentRevision writes through: the ControllerRevisions of the
// owner's namespace (client-go's ControllerRevisionInterface is one).
type RevisionClient interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*appsv1.ControllerRevision, error)
	Create(ctx context.Context, rev *appsv1.ControllerRevision, opts metav1.CreateOptions) (*appsv1.ControllerRevision, error)
	Update(ctx context.Context, rev *appsv1.ControllerRevision, opts metav1.UpdateOptions) (*appsv1.ControllerRevision, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
}

// Owner is a kind whose history is kept in ControllerRevisions.
type Owner interface {
	*appsv1.StatefulSet | *appsv1.DaemonSet
}

// CollisionError says that every name CurrentRevision tried for a new revision was
// taken by a revision of other data; Collisions is the collision count to go on with.
type CollisionError struct {
	Owner      string
	Attempts   int
	Collisions int32
}

func (e *CollisionError) Error() string {
	return fmt.Sprintf("no free name for a revision of %s after %d collisions", e.Owner, e.Attempts)
}

// CurrentRevision returns owner's revision of its pod template now, given the revisions
// it controls (owned, sorted oldest first: SortRevisions), and the collision count that
// revision's name was found under (the owner's status count, or more).
//
//   - A revision recording the template (TemplatePatch, byte for byte) is reused; if it
//     is not the newest, it is renumbered to be (one above the others), so that
//     `kubectl rollout undo` makes no new revision. With revisions 1 (v1), 2 (v2) and
//     3 (v1), undo to v2 renumbers 2 to 4. On a tie of numbers the kinds differ as
//     upstream's do: a StatefulSet's revision that sorts last (by creation time, then
//     name) is the newest; a DaemonSet's is renumbered.
//   - Otherwise a revision is created, numbered one above the others and named by the
//     kind's hash under the collision count. A name held by a revision of other data
//     is a collision: the count goes up and a new name is tried — at once for a
//     StatefulSet (up to 100 names), and for a DaemonSet only once the count is in its
//     status (CollisionError, with the count to write), as upstream's controllers do.
//
// The two kinds differ where upstream's controllers differ, as kubectl and users see
// them: names, hash labels and hashes; a DaemonSet also deletes the older revisions of
// the same template it made itself (ownNamed); a StatefulSet also takes its newest revision as the template
// when it differs only in how an older Kubernetes serialized it.
func CurrentRevision[O Owner](ctx context.Context, client RevisionClient, owner O, owned []*appsv1.ControllerRevision) (*appsv1.ControllerRevision, int32, error) {
	data, err := TemplatePatch(owner)
	if err != nil {
		return nil, 0, err
	}
	k := kindOf(owner, data)
	count := k.collisions
	var same []*appsv1.ControllerRevision
	var newestOther int64
	for _, r := range owned {
		if string(r.Data.Raw) == string(data) {
			same = append(same, r)
		} else {
			newestOther = max(newestOther, r.Revision)
		}
	}
	if len(same) == 0 {
		if k.reencoded != nil && len(owned) > 0 && k.reencoded(owned[len(owned)-1]) {
			return owned[len(owned)-1], deref(count), nil
		}
		hash := k.hash(count)
		rev := newRevision(k.owner, k.kind, k.templateLabels, data, newestOther+1, k.hashLabel, hash, k.name(hash))
		return createRevision(ctx, client, k, rev, count)
	}
	cur := same[len(same)-1]
	if k.dropDuplicates {
		// Only the controller's own duplicates go, the newest of them kept: a revision
		// a client made of the same template (upstream's Conformance spec makes one,
		// then deletes the older) is the client's to delete. Upstream's controller
		// deletes it too when it syncs then, but it rarely syncs a settled DaemonSet;
		// kroll's looks again to judge a rollout complete.
		own := ownNamed(same, k)
		if len(own) > 0 {
			cur = own[len(own)-1]
		}
		for i := len(own) - 2; i >= 0; i-- {
			if err := client.Delete(ctx, own[i].Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				return nil, deref(count), err
			}
		}
	}
	if k.stale(cur, owned, newestOther) {
		cur, err = renumber(ctx, client, cur, newestOther+1)
	}
	return cur, deref(count), err
}

// ownNamed are the revisions among revs (all of the owner's template now) that the
// controller made: labelled with the template's hash under a collision count up to
// the owner's, and named by it. A client's copy of the template's data under another
// template's hash (upstream's ControllerRevision Conformance spec makes one) is not.
// maxCountsTried bounds the collision counts ownNamed hashes under.
const maxCountsTried = 100

func ownNamed(revs []*appsv1.ControllerRevision, k revisionKind) []*appsv1.ControllerRevision {
	hashes := map[string]bool{k.hash(nil): true}
	for c := int32(0); c <= min(deref(k.collisions), maxCountsTried); c++ {
		hashes[k.hash(&c)] = true
	}
	var own []*appsv1.ControllerRevision
	for _, r := range revs {
		if h := r.Labels[k.hashLabel]; hashes[h] && r.Name == k.name(h) {
			own = append(own, r)
		}
	}
	return own
}

// revisionKind is how upstream's controller for one kind names and keeps its
// ControllerRevisions.
type revisionKind struct {
	owner          metav1.Object
	kind           schema.GroupVersionKind
	templateLabels map[string]string
	// hashLabel holds a revision's hash; hash is the hash of the owner's revision under a
	// collision count (nil: none counted yet); name is the revision's name by its hash.
	hashLabel string
	hash      func(collisions *int32) string
	name      func(hash string) string
	// collisions is the owner's status count.
	collisions *int32
	// attempts is how many names one call tries for a new revision.
	attempts int
	// dropDuplicates: older revisions of the same template are deleted.
	dropDuplicates bool
	// reencoded, when set, tells whether a revision of other bytes records the template
	// all the same (written by an older serializer).
	reencoded func(*appsv1.ControllerRevision) bool
	// stale tells whether cur, the newest revision of the template among owned (sorted),
	// must be renumbered to be the newest of all. Upstream's two controllers ask it
	// differently, and they differ on a tie: a StatefulSet's is stale unless it sorts
	// last (a tie broken by creation time and name leaves it alone), a DaemonSet's unless
	// its number is above every other revision's.
	stale func(cur *appsv1.ControllerRevision, owned []*appsv1.ControllerRevision, newestOther int64) bool
}

// kindOf is owner's revisionKind, its revisions recording data.
func kindOf[O Owner](owner O, data []byte) revisionKind {
	switch o := any(owner).(type) {
	case *appsv1.StatefulSet:
		// Named "<set>-<hash of the data and the count>" (the set's name cut to fit),
		// labelled controller.kubernetes.io/hash.
		return revisionKind{
			owner: o, kind: appsv1.SchemeGroupVersion.WithKind("StatefulSet"), templateLabels: o.Spec.Template.Labels,
			hashLabel:  ControllerRevisionHashLabel,
			hash:       func(c *int32) string { return RevisionHash(data, deref(c)) },
			name:       func(hash string) string { return RevisionName(o.Name, hash) },
			collisions: o.Status.CollisionCount, attempts: 100,
			// The latest revision differs only in how an older version serialized it
			// (Kubernetes ≤ 1.33 wrote "creationTimestamp":null): it is still the template.
			reencoded: func(r *appsv1.ControllerRevision) bool { return sameOnceReencoded(o, r, data) },
			stale: func(cur *appsv1.ControllerRevision, owned []*appsv1.ControllerRevision, _ int64) bool {
				return owned[len(owned)-1] != cur
			},
		}
	case *appsv1.DaemonSet:
		// Named "<ds>-<pod-template hash>", as its pods are labelled
		// controller-revision-hash.
		return revisionKind{
			owner: o, kind: appsv1.SchemeGroupVersion.WithKind("DaemonSet"), templateLabels: o.Spec.Template.Labels,
			hashLabel:  appsv1.DefaultDaemonSetUniqueLabelKey,
			hash:       func(c *int32) string { return TemplateHash(&o.Spec.Template, c) },
			name:       func(hash string) string { return o.Name + "-" + hash },
			collisions: o.Status.CollisionCount, attempts: 1, dropDuplicates: true,
			stale: func(cur *appsv1.ControllerRevision, _ []*appsv1.ControllerRevision, newestOther int64) bool {
				return cur.Revision <= newestOther
			},
		}
	}
	panic(fmt.Sprintf("no revisions for %T", owner))
}

// createRevision creates rev, or returns the revision of that name if it holds the same
// data; a name taken by other data raises the collision count and renames rev (its
// hash label stays, as upstream leaves it), k.attempts names in all.
func createRevision(ctx context.Context, client RevisionClient, k revisionKind, rev *appsv1.ControllerRevision, count *int32) (*appsv1.ControllerRevision, int32, error) {
	for range k.attempts {
		created, err := client.Create(ctx, rev, metav1.CreateOptions{})
		if err == nil {
			return created, deref(count), nil
		}
		if !apierrors.IsAlreadyExists(err) {
			return nil, deref(count), err
		}
		existing, err := client.Get(ctx, rev.Name, metav1.GetOptions{})
		if err != nil {
			return nil, deref(count), err
		}
		if SameData(existing, rev) {
			return existing, deref(count), nil
		}
		n := deref(count) + 1
		count = &n
		rev = rev.DeepCopy()
		rev.Name = k.name(k.hash(count))
	}
	return nil, deref(count), &CollisionError{Owner: k.owner.GetName(), Attempts: k.attempts, Collisions: deref(count)}
}

// renumber gives rev the number to, on the revision as stored, and appends the number
// it had to its ControllerRevisionHistoryAnnotation in the same Update (see
// RevisionBroughtBack).
func renumber(ctx context.Context, client RevisionClient, rev *appsv1.ControllerRevision, to int64) (*appsv1.ControllerRevision, error) {
	var out *appsv1.ControllerRevision
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		fresh, err := client.Get(ctx, rev.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if fresh.Revision == to {
			out = fresh
			return nil
		}
		if fresh.Revision > 0 {
			if fresh.Annotations == nil {
				fresh.Annotations = map[string]string{}
			}
			h := fresh.Annotations[ControllerRevisionHistoryAnnotation]
			fresh.Annotations[ControllerRevisionHistoryAnnotation] = appendHistory(h, strconv.FormatInt(fresh.Revision, 10))
		}
		fresh.Revision = to
		out, err = client.Update(ctx, fresh, metav1.UpdateOptions{})
		return err
	})
	return out, err
}

// sameOnceReencoded tells whether rev, applied to owner, defaulted and recorded again,
// gives data: the revision holds owner's template, written by another serializer (or
// by an apiserver that defaulted fewer fields).
func sameOnceReencoded[T any](owner *T, rev *appsv1.ControllerRevision, data []byte) bool {
	applied, err := ApplyRevision(owner, rev)
	if err != nil {
		return false
	}
	// The revision's template has only the defaults of the apiserver that wrote it;
	// today's defaults are on the owner's template.
	if set, ok := any(applied).(*appsv1.StatefulSet); ok {
		DefaultPodTemplate(&set.Spec.Template)
	}
	again, err := TemplatePatch(applied)
	return err == nil && string(again) == string(data)
}

func deref(n *int32) int32 {
	if n == nil {
		return 0
	}
	return *n
}
