package daemonset

import (
	"context"
	"fmt"
	"sort"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kroll-dev/kroll/pkg/controller"
	"github.com/kroll-dev/kroll/pkg/history"
)

// constructHistory finds or creates the ControllerRevision of ds's template and gives
// it the newest number; it returns the template's hash. A revision is named
// "<ds>-<hash>" with the pod-template hash (as a Deployment's ReplicaSets are) and
// holds the template patch kubectl applies on undo.
func (c *Controller) constructHistory(ctx context.Context, ds *appsv1.DaemonSet, selector labels.Selector) (string, error) {
	all, err := c.revisions.ControllerRevisions(ds.Namespace).List(selector)
	if err != nil {
		return "", err
	}
	data, err := history.TemplatePatch(ds)
	if err != nil {
		return "", err
	}
	var current []*appsv1.ControllerRevision
	var maxOld int64
	var adoptable error
	checked := false
	for _, r := range all {
		ref := metav1.GetControllerOf(r)
		if ref == nil {
			// An orphan (its DaemonSet was deleted with --cascade=orphan and made again):
			// adopt it, so that history and undo see it.
			if !checked {
				fresh, err := c.client.AppsV1().DaemonSets(ds.Namespace).Get(ctx, ds.Name, metav1.GetOptions{})
				adoptable, checked = controller.CheckAdoptable(ds, fresh, err, "DaemonSet"), true
			}
			if adoptable != nil {
				continue
			}
			adopted, err := c.client.AppsV1().ControllerRevisions(r.Namespace).Patch(ctx, r.Name, types.StrategicMergePatchType,
				controller.AdoptPatch(ds, controllerKind, r.UID), metav1.PatchOptions{})
			if err != nil {
				if apierrors.IsNotFound(err) {
					continue
				}
				return "", err
			}
			r, ref = adopted, metav1.GetControllerOf(adopted)
		}
		if ref == nil || ref.UID != ds.UID {
			continue
		}
		if string(r.Data.Raw) == string(data) {
			current = append(current, r)
		} else {
			maxOld = max(maxOld, r.Revision)
		}
	}
	hash := history.TemplateHash(&ds.Spec.Template, ds.Status.CollisionCount)
	revisions := c.client.AppsV1().ControllerRevisions(ds.Namespace)
	var cur *appsv1.ControllerRevision
	switch {
	case len(current) == 0:
		labels := map[string]string{}
		for k, v := range ds.Spec.Template.Labels {
			labels[k] = v
		}
		labels[RevisionLabel] = hash
		rev := &appsv1.ControllerRevision{
			ObjectMeta: metav1.ObjectMeta{Name: ds.Name + "-" + hash, Namespace: ds.Namespace, Labels: labels,
				Annotations: history.RevisionAnnotations(ds.Annotations), OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(ds, controllerKind)}},
			Data:     runtime.RawExtension{Raw: data},
			Revision: maxOld + 1,
		}
		cur, err = revisions.Create(ctx, rev, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			existing, gerr := revisions.Get(ctx, rev.Name, metav1.GetOptions{})
			if gerr != nil {
				return "", gerr
			}
			if string(existing.Data.Raw) == string(data) {
				return hash, nil
			}
			// Another template took the name: count a collision, and try again with it.
			next := ds.DeepCopy()
			n := int32(0)
			if next.Status.CollisionCount != nil {
				n = *next.Status.CollisionCount
			}
			n++
			next.Status.CollisionCount = &n
			if _, err := c.client.AppsV1().DaemonSets(ds.Namespace).UpdateStatus(ctx, next, metav1.UpdateOptions{}); err != nil {
				return "", err
			}
			return "", fmt.Errorf("found a hash collision for DaemonSet %q; collision count is now %d", ds.Name, n)
		}
		if err != nil {
			return "", err
		}
	default:
		sort.Slice(current, func(i, j int) bool { return current[i].Revision > current[j].Revision })
		cur = current[0]
		for _, dup := range current[1:] {
			if err := revisions.Delete(ctx, dup.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				return "", err
			}
		}
		if cur.Revision < maxOld+1 {
			next := cur.DeepCopy()
			next.Revision = maxOld + 1
			if _, err := revisions.Update(ctx, next, metav1.UpdateOptions{}); err != nil {
				return "", err
			}
		}
	}
	if h := cur.Labels[RevisionLabel]; h != "" {
		hash = h
	}
	return hash, nil
}

// cleanupHistory deletes the oldest revisions beyond revisionHistoryLimit that no pod
// runs.
func (c *Controller) cleanupHistory(ctx context.Context, ds *appsv1.DaemonSet, pods []*corev1.Pod, hash string) error {
	selector, err := metav1.LabelSelectorAsSelector(ds.Spec.Selector)
	if err != nil {
		return nil
	}
	all, err := c.revisions.ControllerRevisions(ds.Namespace).List(selector)
	if err != nil {
		return err
	}
	live := map[string]bool{}
	for _, p := range pods {
		live[p.Labels[RevisionLabel]] = true
	}
	var owned []*appsv1.ControllerRevision
	for _, r := range all {
		if metav1.IsControlledBy(r, ds) {
			if r.Labels[RevisionLabel] == hash || live[r.Labels[RevisionLabel]] {
				continue
			}
			owned = append(owned, r)
		}
	}
	history.SortRevisions(owned)
	return controller.DeleteStaleRevisions(ctx, c.client, owned, nil, ds.Spec.RevisionHistoryLimit)
}
