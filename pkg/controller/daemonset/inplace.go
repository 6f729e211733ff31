package daemonset

import (
	"context"
	"errors"
	"sort"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/kroll-dev/kroll/pkg/history"
	"github.com/kroll-dev/kroll/pkg/inplace"
	"github.com/kroll-dev/kroll/pkg/placement"
	"github.com/kroll-dev/kroll/pkg/rollout"
)

// inPlace carries out the in-place update of an opted-in DaemonSet (see pkg/inplace):
// every pod that is mid-update moves on a step, and old pods start one — unavailable
// ones first — while no more than maxUnavailable nodes are without an available pod;
// old pods on the nodes a partition holds (held) are left as they are.
// A fresh pod of an opted-in DaemonSet is put in service the same way once its
// containers are ready. handled is false when the change cannot be made in place and
// the mode allows the usual rolling update instead; verdict is what the InPlaceUpdate
// condition becomes (nil: unchanged, no reason: removed).
func (c *Controller) inPlace(ctx context.Context, ds *appsv1.DaemonSet, pods []*corev1.Pod, hash string, maxUnavailable int, held map[string]bool) (handled bool, verdict *inplace.Verdict, err error) {
	mode, _ := inplace.ModeOf(ds.Annotations)
	now := c.now()
	grace := inplace.GracePeriod(ds.Annotations)
	var old []*corev1.Pod
	unavailable, holding := 0, false
	for _, p := range pods {
		if p.DeletionTimestamp != nil {
			continue
		}
		if !c.serving(ds, p, now) {
			unavailable++
		}
		_, midUpdate := inplace.StateOf(p)
		if (isUpdated(ds, p, hash) && inplace.HasGate(p)) || (midUpdate && mode != inplace.Off) {
			if err := c.stepPod(ctx, ds, p, hash, grace, now); err != nil {
				return true, nil, err
			}
			continue
		}
		if held[placement.TargetNode(p)] {
			holding = true // kept on its old revision by a partition
			continue
		}
		old = append(old, p)
	}
	if mode == inplace.Off {
		// Opted out (perhaps mid-update): pods already updated were still put back in
		// service above; the old ones go the usual way.
		return false, &inplace.Verdict{}, nil
	}
	if len(old) == 0 {
		if holding {
			return true, nil, nil // not finished while a partition holds old pods
		}
		for _, p := range pods {
			if p.DeletionTimestamp == nil && !c.serving(ds, p, now) {
				return true, nil, nil
			}
		}
		return true, inplace.Finish(conditions.Current(ds.Status.Conditions)), nil
	}
	v, _ := inplace.Judge(mode, c.ineligible(ds, old))
	if inplace.IsNews(v, conditions.Current(ds.Status.Conditions)) {
		c.recorder.Eventf(ds, v.EventType, v.Reason, "%s", v.Message)
	}
	if !v.Proceeds() {
		return v.Reason == inplace.ReasonBlocked, &v, nil
	}
	// Pods not serving first: taking them out of service costs nothing.
	serving := func(p *corev1.Pod) bool { return c.serving(ds, p, now) }
	for _, p := range inplace.WithinBudget(inplace.NotServingFirst(old, serving), serving, maxUnavailable, unavailable) {
		if err := c.stepPod(ctx, ds, p, hash, grace, now); err != nil {
			return true, &v, err
		}
	}
	return true, &v, nil
}

// conditions is how in-place updates read and write a DaemonSet's conditions.
var conditions = inplace.Conditions[appsv1.DaemonSetCondition]{
	View: func(c appsv1.DaemonSetCondition) (string, inplace.Condition) {
		return string(c.Type), inplace.Condition{Status: c.Status, Reason: c.Reason, Message: c.Message, LastTransitionTime: c.LastTransitionTime}
	},
	Make: func(c inplace.Condition) appsv1.DaemonSetCondition {
		return appsv1.DaemonSetCondition{Type: inplace.ConditionType, Status: c.Status, Reason: c.Reason, Message: c.Message, LastTransitionTime: c.LastTransitionTime}
	},
}

// serving tells whether p counts as available: available, and not out of service for
// an in-place update (see inplace.TakenOut).
func (c *Controller) serving(ds *appsv1.DaemonSet, p *corev1.Pod, now time.Time) bool {
	return !c.takenOut.Out(p, now) && rollout.IsPodAvailable(p, ds.Spec.MinReadySeconds, now)
}

// ineligible names the fields that keep the templates of the old pods from becoming
// ds's in place (each revision among them judged once).
func (c *Controller) ineligible(ds *appsv1.DaemonSet, old []*corev1.Pod) []string {
	judged, seen := map[string]bool{}, map[string]bool{}
	var fields []string
	for _, p := range old {
		hash := p.Labels[RevisionLabel]
		if judged[hash] {
			continue
		}
		judged[hash] = true
		var diff []string
		if from, err := c.podTemplate(ds, p); err != nil {
			diff = []string{"spec.template (" + err.Error() + ")"}
		} else {
			diff = inplace.Diff(from, &ds.Spec.Template)
		}
		for _, f := range diff {
			if !seen[f] {
				seen[f] = true
				fields = append(fields, f)
			}
		}
	}
	sort.Strings(fields)
	return fields
}

// podTemplate is the template pod was made from (or last updated to): that of the
// ControllerRevision its revision label names.
func (c *Controller) podTemplate(ds *appsv1.DaemonSet, pod *corev1.Pod) (*corev1.PodTemplateSpec, error) {
	revs, err := c.revisions.ControllerRevisions(ds.Namespace).List(labels.SelectorFromSet(labels.Set{RevisionLabel: pod.Labels[RevisionLabel]}))
	var rev *appsv1.ControllerRevision
	for _, r := range revs {
		if metav1.IsControlledBy(r, ds) {
			rev = r
		}
	}
	if err != nil || rev == nil {
		return nil, errors.New("the pod's revision is gone")
	}
	from, err := history.ApplyRevision(ds, rev)
	if err != nil {
		return nil, err
	}
	return &from.Spec.Template, nil
}

// stepPod makes the next write of p's in-place update, or requeues ds for when there
// is one to make.
func (c *Controller) stepPod(ctx context.Context, ds *appsv1.DaemonSet, p *corev1.Pod, hash string, grace time.Duration, now time.Time) error {
	labels := map[string]string{RevisionLabel: hash}
	if gen, ok := ds.Annotations[TemplateGenerationAnnotation]; ok {
		labels[TemplateGenerationLabel] = gen
	}
	target := inplace.Target{Revision: hash, Template: &ds.Spec.Template, Labels: labels}
	if from, err := c.podTemplate(ds, p); err == nil {
		target.From = from
	}
	r, err := inplace.Writer{Pods: c.podControl}.Step(ctx, p, target, grace, now)
	if r.TookOut {
		c.takenOut.Record(p, now)
	}
	if r.After > 0 {
		c.queue.EnqueueAfter(ds, r.After)
	}
	return err
}
