package daemonset

import (
	"context"
	"errors"
	"sort"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/kroll-dev/kroll/pkg/controller"
	"github.com/kroll-dev/kroll/pkg/history"
	"github.com/kroll-dev/kroll/pkg/inplace"
	"github.com/kroll-dev/kroll/pkg/placement"
	"github.com/kroll-dev/kroll/pkg/rollout"
)

// inPlace carries out the in-place update of an opted-in DaemonSet (see pkg/inplace):
// every pod that is mid-update (or whose resize is due or not yet made) moves on a
// step, and old pods start one — unavailable ones first — while no more than
// maxUnavailable nodes are without an available pod; old pods on the nodes a partition
// holds (held) are left as they are. A pod whose node cannot make its resize is left
// as it is too: a daemon pod cannot move to another node, so it is named in the
// InPlaceUpdate condition (resizeBlocked) and the other nodes go on.
// A fresh pod of an opted-in DaemonSet is put in service the same way once its
// containers are ready. handled is false when the change cannot be made in place and
// the mode allows the usual rolling update instead; verdict is what the InPlaceUpdate
// condition becomes (nil: unchanged, no reason: removed). Under budget (a DaemonSet
// that respects its budgets) the old pods picked whose update restarts a container
// take their disruptions first; those a budget refuses stay as they are this sync
// (recorded in the sync's takes).
func (c *Controller) inPlace(ctx context.Context, ds *appsv1.DaemonSet, pods []*corev1.Pod, hash string, maxUnavailable int, held map[string]bool, budget *controller.InPlaceBudget) (handled bool, verdict *inplace.Verdict, err error) {
	mode, _ := inplace.ModeOf(ds.Annotations)
	now := c.now()
	grace := inplace.GracePeriod(ds.Annotations)
	var old []*corev1.Pod
	var unfit []string
	unavailable, holding := 0, false
	for _, p := range pods {
		if p.DeletionTimestamp != nil {
			continue
		}
		if !c.serving(ds, p, hash, now) {
			unavailable++
		}
		_, midUpdate := inplace.StateOf(p)
		updated := isUpdated(ds, p, hash)
		if (updated && inplace.HasGate(p)) || (midUpdate && mode != inplace.Off) || (updated && mode != inplace.Off && inplace.Resizing(p, &ds.Spec.Template)) {
			if why := c.resizeFit(ds, p); why != "" && mode != inplace.Off {
				unfit = append(unfit, why)
				if err := c.leave(ctx, p); err != nil {
					return true, nil, err
				}
				continue
			}
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
		if v, ok := resizeBlocked(mode, unfit); ok {
			return true, c.announce(ds, v), nil
		}
		if holding {
			return true, nil, nil // not finished while a partition holds old pods
		}
		for _, p := range pods {
			if p.DeletionTimestamp == nil && !c.serving(ds, p, hash, now) {
				return true, nil, nil
			}
		}
		return true, inplace.Finish(conditions.Current(ds.Status.Conditions)), nil
	}
	v, _ := inplace.Judge(mode, c.ineligible(ds, old))
	if !v.Proceeds() {
		return v.Reason == inplace.ReasonBlocked, c.announce(ds, v), nil
	}
	// Old pods whose node cannot make their resize are left, and cost no budget: the
	// other nodes go on.
	var fit []*corev1.Pod
	for _, p := range old {
		if why := c.resizeFit(ds, p); why != "" {
			unfit = append(unfit, why)
			continue
		}
		fit = append(fit, p)
	}
	// Pods not serving first: taking them out of service costs nothing.
	serving := func(p *corev1.Pod) bool { return c.serving(ds, p, hash, now) }
	picked, err := budget.Restart(ctx, inplace.WithinBudget(inplace.NotServingFirst(fit, serving), serving, maxUnavailable, unavailable), &ds.Spec.Template)
	if err != nil {
		return true, &v, err
	}
	for _, p := range picked {
		if err := c.stepPod(ctx, ds, p, hash, grace, now); err != nil {
			return true, &v, err
		}
	}
	if b, ok := resizeBlocked(mode, unfit); ok {
		v = b
	}
	return true, c.announce(ds, v), nil
}

// resizeBlocked is the verdict on an opted-in DaemonSet with pods whose node cannot
// make their resize (messages from inplace.Unfit): InPlaceUpdateBlocked naming them.
// Under InPlaceOnly it is inplace.JudgeInfeasible's; under InPlaceIfPossible too, in
// other words, since a daemon pod cannot be recreated elsewhere: "pod logs-x7k2p: the
// resize cannot be made on node n2: needs memory 3Gi, 1Gi free (3Gi of 4Gi held by
// other pods); a DaemonSet's pod cannot move to another node: left as it is". false:
// none.
func resizeBlocked(mode inplace.Mode, unfit []string) (inplace.Verdict, bool) {
	if len(unfit) == 0 || mode == inplace.Off {
		return inplace.Verdict{}, false
	}
	if v, ok := inplace.JudgeInfeasible(mode, unfit); ok {
		return v, true
	}
	sorted := append([]string(nil), unfit...)
	sort.Strings(sorted)
	return inplace.Verdict{Status: corev1.ConditionFalse, Reason: inplace.ReasonBlocked, EventType: corev1.EventTypeWarning,
		Message: strings.Join(sorted, "; ") + "; a DaemonSet's pod cannot move to another node: left as it is"}, true
}

// announce records v as an event when the InPlaceUpdate condition does not say it yet.
func (c *Controller) announce(ds *appsv1.DaemonSet, v inplace.Verdict) *inplace.Verdict {
	if inplace.IsNews(v, conditions.Current(ds.Status.Conditions)) {
		c.recorder.Eventf(ds, v.EventType, v.Reason, "%s", v.Message)
	}
	return &v
}

// resizeFit judges whether p's node can make its resize to ds's template
// (controller.ResizeFit): "" when it can, or nothing is due.
func (c *Controller) resizeFit(ds *appsv1.DaemonSet, p *corev1.Pod) string {
	return controller.ResizeFit(c.nodes, c.podIndex, p, &ds.Spec.Template)
}

// leave puts a pod whose node cannot make its resize back in service if an in-place
// update had taken it out (its node filled up between the take-out and the resize):
// it stays as it is, serving, until its node has room.
func (c *Controller) leave(ctx context.Context, p *corev1.Pod) error {
	if _, mid := inplace.StateOf(p); !mid && inplace.GateStatus(p) != corev1.ConditionFalse {
		return nil
	}
	return inplace.Writer{Pods: c.podControl}.PutBack(ctx, p)
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

// serving tells whether p counts as available: available, not out of service for an
// in-place update (see inplace.TakenOut), and not being resized (resizing).
func (c *Controller) serving(ds *appsv1.DaemonSet, p *corev1.Pod, hash string, now time.Time) bool {
	return !c.takenOut.Out(p, now) && rollout.IsPodAvailable(p, ds.Spec.MinReadySeconds, now) && !resizing(ds, p, hash)
}

// resizing tells whether p of an opted-in DaemonSet is being resized in place: a pod
// of the current template whose resize is due or not yet made, or any pod whose
// written resize is not yet made (inplace.Resizing). It then counts against
// maxUnavailable even when no container restarts and it keeps serving: an application
// may read its limits once at start and go unready or slow under its new cgroup, and
// the budget keeps that to as many nodes as the DaemonSet accepts losing (with
// maxUnavailable 1 over 3 nodes, one node's pod at a time). A resize that restarts a
// container takes the pod out of service as an image change does, and counts as that
// already. Nor does the pod count as updated until the resize is made, so that
// `kubectl rollout status` waits for it.
func resizing(ds *appsv1.DaemonSet, p *corev1.Pod, hash string) bool {
	if mode, _ := inplace.ModeOf(ds.Annotations); mode == inplace.Off || p.DeletionTimestamp != nil {
		return false
	}
	to := &corev1.PodTemplateSpec{Spec: p.Spec} // written and not yet made
	if isUpdated(ds, p, hash) {
		to = &ds.Spec.Template // or due
	}
	return inplace.Resizing(p, to)
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
			diff = inplace.DiffResize(from, &ds.Spec.Template, inplace.ResizeRules{})
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
