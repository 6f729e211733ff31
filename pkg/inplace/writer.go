package inplace

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Target is what a pod is updated in place to: the workload's template, the revision
// it records, and the labels that mark a pod of that revision (the revision label).
type Target struct {
	Revision string
	Template *corev1.PodTemplateSpec
	Labels   map[string]string
	// From is the template the pod was made from (or last updated to), when known: the
	// labels and annotations it set that Template does not are removed from the pod.
	From *corev1.PodTemplateSpec
}

// Want is the pod as the update to t leaves it.
func (t Target) Want() Want {
	w := Want{Images: Images(t.Template), Labels: map[string]string{}, Annotations: t.Template.Annotations, Resources: t.Template}
	for k, v := range t.Template.Labels {
		w.Labels[k] = v
	}
	for k, v := range t.Labels {
		w.Labels[k] = v
	}
	if t.From != nil {
		for k := range t.From.Labels {
			if _, kept := w.Labels[k]; !kept {
				w.DropLabels = append(w.DropLabels, k)
			}
		}
		for k := range t.From.Annotations {
			if _, kept := w.Annotations[k]; !kept {
				w.DropAnnotations = append(w.DropAnnotations, k)
			}
		}
		sort.Strings(w.DropLabels)
		sort.Strings(w.DropAnnotations)
	}
	return w
}

// Patcher is what in-place updates write through: patches of a pod, of its status
// subresource and of its resize subresource (controller.PodControl is one).
type Patcher interface {
	PatchPod(ctx context.Context, namespace, name string, patch []byte) (*corev1.Pod, error)
	PatchPodStatus(ctx context.Context, namespace, name string, patch []byte) error
	PatchPodResize(ctx context.Context, namespace, name string, patch []byte) error
}

// Writer makes the writes of in-place updates.
type Writer struct {
	Pods Patcher
}

// Result is what a Step did.
type Result struct {
	// Step is the step taken (Wait and Done write nothing).
	Step Step
	// After is how long until the pod should be looked at again (0: at its next change).
	After time.Duration
	// TookOut: the pod was just taken out of service (the cache does not show it yet).
	TookOut bool
}

// Step makes the next write of p's in-place update to t (see NextStep).
func (w Writer) Step(ctx context.Context, p *corev1.Pod, t Target, grace time.Duration, now time.Time) (Result, error) {
	want := t.Want()
	step, wait := NextStep(p, want, grace, now)
	r := Result{Step: step, After: wait}
	var err error
	switch step {
	case TakeOut:
		r.TookOut, r.After = true, grace
		err = w.TakeOut(ctx, p, OutOfService(p, t.Revision, want.Images, now))
	case Patch:
		// Unless it was out already, a patch of images is what takes the pod out (its
		// containers restart); one of labels and annotations alone restarts nothing. A
		// patch that starts an update with a resize to follow counts the pod against the
		// budget from now too (Resizing): a sync on a cache that does not show the patch
		// yet would see the pod old and serving, and start another.
		r.TookOut = !specHas(p, want.Images) || !PlanResize(p, t.Template).Empty()
		err = w.Patch(ctx, p, UpdatePatch(p, t))
	case WriteResize:
		resize := PlanResize(p, t.Template)
		r.TookOut = resize.Restarting()
		err = w.Resize(ctx, p, resize)
	case PutBack:
		err = w.PutBack(ctx, p)
	}
	return r, err
}

// TakeOut records state on p and, if p has the readiness gate, sets it False: from
// then on Services stop routing to p, and p counts as mid-update. It is one write to
// the pod's status subresource, which also takes metadata: the State and the gate
// change together.
func (w Writer) TakeOut(ctx context.Context, p *corev1.Pod, state State) error {
	patch := map[string]any{"metadata": map[string]any{"annotations": map[string]string{StateAnnotation: state.Encode()}}}
	if HasGate(p) {
		patch["status"] = gatePatch(corev1.ConditionFalse, "InPlaceUpdate", "taken out of service for an in-place update")
	}
	return ignoreNotFound(w.patch(ctx, p, patch, "status"))
}

// PutBack sets p's readiness gate True and removes its State, in one write.
func (w Writer) PutBack(ctx context.Context, p *corev1.Pod) error {
	patch := map[string]any{}
	if _, has := p.Annotations[StateAnnotation]; has {
		patch["metadata"] = map[string]any{"annotations": map[string]any{StateAnnotation: nil}}
	}
	if HasGate(p) && GateStatus(p) != corev1.ConditionTrue {
		patch["status"] = gatePatch(corev1.ConditionTrue, "", "")
	}
	if len(patch) == 0 {
		return nil
	}
	return ignoreNotFound(w.patch(ctx, p, patch, "status"))
}

// UpdatePatch is the strategic merge patch that sets t's images in p's spec and t's
// labels (the template's and the revision's) and annotations on p, and removes those
// only t.From set: after it, p counts as a pod of t.Revision. It fails if p's UID
// changed.
func UpdatePatch(p *corev1.Pod, t Target) map[string]any {
	list := func(cs []corev1.Container) []map[string]any {
		var out []map[string]any
		for _, c := range cs {
			out = append(out, map[string]any{"name": c.Name, "image": c.Image})
		}
		return out
	}
	want := t.Want()
	// A key mapped to nil is removed by a strategic merge patch.
	merge := func(set map[string]string, drop []string) map[string]any {
		out := map[string]any{}
		for k, v := range set {
			out[k] = v
		}
		for _, k := range drop {
			out[k] = nil
		}
		return out
	}
	spec := map[string]any{"containers": list(t.Template.Spec.Containers)}
	if len(t.Template.Spec.InitContainers) > 0 {
		spec["initContainers"] = list(t.Template.Spec.InitContainers)
	}
	meta := map[string]any{"labels": merge(want.Labels, want.DropLabels), "uid": p.UID}
	if annotations := merge(want.Annotations, want.DropAnnotations); len(annotations) > 0 {
		meta["annotations"] = annotations
	}
	return map[string]any{"metadata": meta, "spec": spec}
}

// Resize writes r through p's pods/resize subresource; a pod that is gone is not an
// error.
func (w Writer) Resize(ctx context.Context, p *corev1.Pod, r Resize) error {
	return ignoreNotFound(w.patch(ctx, p, r.Patch(p), "resize"))
}

// Patch applies a strategic merge patch to p; a pod that is gone is not an error.
func (w Writer) Patch(ctx context.Context, p *corev1.Pod, patch map[string]any) error {
	return ignoreNotFound(w.patch(ctx, p, patch, ""))
}

func ignoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

func (w Writer) patch(ctx context.Context, p *corev1.Pod, patch map[string]any, subresource string) error {
	b, _ := json.Marshal(patch)
	switch subresource {
	case "status":
		return w.Pods.PatchPodStatus(ctx, p.Namespace, p.Name, b)
	case "resize":
		return w.Pods.PatchPodResize(ctx, p.Namespace, p.Name, b)
	}
	_, err := w.Pods.PatchPod(ctx, p.Namespace, p.Name, b)
	return err
}

// gatePatch is the status part of a patch that sets the in-place readiness condition.
func gatePatch(status corev1.ConditionStatus, reason, message string) map[string]any {
	cond := map[string]any{"type": string(ReadinessGate), "status": string(status), "lastTransitionTime": metav1.Now(), "reason": reason, "message": message}
	return map[string]any{"conditions": []any{cond}}
}

// ReasonInvalidAnnotation: the InPlaceUpdate condition's reason, and the Warning
// event's, while an in-place setting does not parse.
const ReasonInvalidAnnotation = "InvalidAnnotation"

// Problem is the one line to report about a workload's in-place settings: the first
// that does not parse and what kroll does instead; "" when both parse. A bad
// kroll.dev/update-strategy is as if unset (changes roll out by the workload's own
// strategy); a bad grace period is 0.
func Problem(annotations map[string]string) string {
	if _, err := ModeOf(annotations); err != nil {
		return err.Error() + "; changes roll out as without it"
	}
	if _, err := GracePeriodOf(annotations); err != nil {
		return err.Error() + "; pods are restarted in place without a grace period"
	}
	return ""
}

// GracePeriod reads a workload's GracePeriodAnnotation (seconds; 0 when unset or bad).
func GracePeriod(annotations map[string]string) time.Duration {
	d, _ := GracePeriodOf(annotations)
	return d
}

// GracePeriodOf reads a workload's GracePeriodAnnotation: a whole number of seconds of
// at least 0 that fits in 32 bits ("30", as a pod's terminationGracePeriodSeconds);
// unset is 0, and a bad value is 0 with an error naming the annotation, its value and
// the accepted form.
func GracePeriodOf(annotations map[string]string) (time.Duration, error) {
	v, ok := annotations[GracePeriodAnnotation]
	if !ok {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%s=%q is not valid: want a whole number of seconds of at least 0 (30)", GracePeriodAnnotation, v)
	}
	return time.Duration(n) * time.Second, nil
}
