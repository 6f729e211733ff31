package inplace

import (
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kroll-dev/kroll/pkg/configrollout"
)

// Mode is a workload's opt-in, from its StrategyAnnotation.
type Mode string

const (
	// Off: the kind's usual update strategy (no annotation).
	Off Mode = ""
	// IfPossible updates in place when only eligible fields change, and falls back to
	// the kind's usual update otherwise.
	IfPossible Mode = "InPlaceIfPossible"
	// Only updates in place, and touches no pod when other fields change.
	Only Mode = "InPlaceOnly"
)

// The annotations a workload opts in with, and the pod condition kroll gates readiness on.
const (
	StrategyAnnotation    = "kroll.dev/update-strategy"
	GracePeriodAnnotation = "kroll.dev/in-place-grace-period"
	ReadinessGate         = corev1.PodConditionType("kroll.dev/in-place-update-ready")
	StateAnnotation       = "kroll.dev/in-place-update-state"
)

// ModeOf reads a workload's annotations; an unknown value is an error naming it.
func ModeOf(annotations map[string]string) (Mode, error) {
	switch m := Mode(annotations[StrategyAnnotation]); m {
	case Off, IfPossible, Only:
		return m, nil
	default:
		return Off, fmt.Errorf("%s=%q is not valid: want %s or %s", StrategyAnnotation, m, IfPossible, Only)
	}
}

// RestartAnnotation is what `kubectl rollout restart` changes in a pod template. Only a
// new pod restarts its containers: the API has no way to restart a running pod's
// containers (an image change restarts one; a label or annotation changes nothing that
// runs), so this change is never made in place.
const RestartAnnotation = "kubectl.kubernetes.io/restartedAt"

// restartField names RestartAnnotation as Diff reports it.
const restartField = "metadata.annotations[" + RestartAnnotation + "]"

// configField names configrollout.HashAnnotation as Diff reports it: a configuration
// change (kroll.dev/config-rollout) needs the revision's snapshots mounted and in the
// environment, and a running pod's volumes and environment cannot change.
const configField = "metadata.annotations[" + configrollout.HashAnnotation + "]"

// Diff compares two pod templates and returns the fields that differ and cannot change
// in a running pod, as JSON paths ("spec.containers[app].env"); none means the change
// can be made in place. Container and init-container images, and the template's labels
// and annotations, can — but for RestartAnnotation, which asks for new containers,
// and configrollout.HashAnnotation, which asks for new configuration snapshots.
// Resources are named here; DiffResize lets the ones pods/resize accepts through.
func Diff(from, to *corev1.PodTemplateSpec) []string {
	return diff(from, to, nil)
}

// diff is Diff, and with resize DiffResize: container resources are then left to
// ResizeFields.
func diff(from, to *corev1.PodTemplateSpec, resize *ResizeRules) []string {
	var fields []string
	fields = append(fields, diffContainers("spec.initContainers", from.Spec.InitContainers, to.Spec.InitContainers, resize != nil)...)
	fields = append(fields, diffContainers("spec.containers", from.Spec.Containers, to.Spec.Containers, resize != nil)...)
	if resize != nil {
		fields = append(fields, ResizeFields(from, to, *resize)...)
	}
	a, b := from.Spec.DeepCopy(), to.Spec.DeepCopy()
	a.Containers, b.Containers, a.InitContainers, b.InitContainers = nil, nil, nil, nil
	fields = append(fields, diffStruct("spec", reflect.ValueOf(*a), reflect.ValueOf(*b))...)
	if !equality.Semantic.DeepEqual(withoutLabelsAndAnnotations(from), withoutLabelsAndAnnotations(to)) {
		fields = append(fields, "metadata")
	}
	if from.Annotations[RestartAnnotation] != to.Annotations[RestartAnnotation] {
		fields = append(fields, restartField)
	}
	if from.Annotations[configrollout.HashAnnotation] != to.Annotations[configrollout.HashAnnotation] {
		fields = append(fields, configField)
	}
	sort.Strings(fields)
	return fields
}

// Images is what an in-place update changes: the image of each container and init
// container, by name.
func Images(t *corev1.PodTemplateSpec) map[string]string {
	out := map[string]string{}
	for _, c := range t.Spec.InitContainers {
		out[c.Name] = c.Image
	}
	for _, c := range t.Spec.Containers {
		out[c.Name] = c.Image
	}
	return out
}

func withoutLabelsAndAnnotations(t *corev1.PodTemplateSpec) *corev1.PodTemplateSpec {
	c := t.DeepCopy()
	c.Labels, c.Annotations, c.Spec = nil, nil, corev1.PodSpec{}
	return c
}

// diffContainers names the fields other than the image (and with resources, other
// than the resources) that differ between two container lists; containers added,
// removed or reordered name the list itself.
func diffContainers(path string, from, to []corev1.Container, resources bool) []string {
	if len(from) != len(to) {
		return []string{path}
	}
	var fields []string
	for i := range from {
		if from[i].Name != to[i].Name {
			return []string{path}
		}
		a, b := from[i].DeepCopy(), to[i].DeepCopy()
		a.Image, b.Image = "", ""
		if resources {
			a.Resources, b.Resources = corev1.ResourceRequirements{}, corev1.ResourceRequirements{}
		}
		fields = append(fields, diffStruct(fmt.Sprintf("%s[%s]", path, from[i].Name), reflect.ValueOf(*a), reflect.ValueOf(*b))...)
	}
	return fields
}

// diffStruct names the fields of two structs of one type that differ, by JSON name.
func diffStruct(path string, a, b reflect.Value) []string {
	var fields []string
	for i := 0; i < a.NumField(); i++ {
		f := a.Type().Field(i)
		if !f.IsExported() {
			continue
		}
		if equality.Semantic.DeepEqual(a.Field(i).Interface(), b.Field(i).Interface()) {
			continue
		}
		name := strings.Split(f.Tag.Get("json"), ",")[0]
		if name == "" {
			name = f.Name
		}
		fields = append(fields, path+"."+name)
	}
	return fields
}

// The status condition kroll reports on an opted-in workload, and its reasons.
const (
	// ConditionType says whether the workload's latest change is made in place.
	ConditionType = "InPlaceUpdate"
	// ReasonInPlace (True): the change is being made in place.
	ReasonInPlace = "InPlaceUpdating"
	// ReasonComplete (True): the latest change was made in place, and every pod that is
	// to have it has it (Progressing's NewReplicaSetAvailable, for the in-place part).
	ReasonComplete = "InPlaceUpdateComplete"
	// ReasonFallback (False): the change cannot be made in place; the kind's usual
	// update makes it instead.
	ReasonFallback = "InPlaceUpdateFallback"
	// ReasonBlocked (False): InPlaceOnly and a change that cannot be made in place; no
	// pod is touched.
	ReasonBlocked = "InPlaceUpdateBlocked"
)

// Verdict is what an opted-in workload does with a change: its condition, and the
// event that announces it.
type Verdict struct {
	Status    corev1.ConditionStatus
	Reason    string
	Message   string
	EventType string
}

// Judge is the verdict on a change under mode, given the fields that forbid making it
// in place (Diff). Off has no verdict.
func Judge(mode Mode, fields []string) (Verdict, bool) {
	why := ""
	if slices.Contains(fields, restartField) {
		why = " (a restart needs new containers, and only a new pod gets them)"
	}
	if slices.Contains(fields, configField) {
		why += " (a configuration change needs its snapshots in the pod's volumes and environment, and only a new pod gets them)"
	}
	switch {
	case mode == Off:
		return Verdict{}, false
	case len(fields) == 0:
		return Verdict{corev1.ConditionTrue, ReasonInPlace, "the pods are updated where they run", corev1.EventTypeNormal}, true
	case mode == Only:
		return Verdict{corev1.ConditionFalse, ReasonBlocked, fmt.Sprintf("the change to %s cannot be made in place%s; %s touches no pod", strings.Join(fields, ", "), why, Only), corev1.EventTypeWarning}, true
	default:
		return Verdict{corev1.ConditionFalse, ReasonFallback, fmt.Sprintf("the change to %s cannot be made in place%s; rolling update instead", strings.Join(fields, ", "), why), corev1.EventTypeNormal}, true
	}
}

// Completed is the InPlaceUpdate condition once a change made in place has reached
// every pod that is to have it. It does not say that no pod was recreated: a pod whose
// node could not fit its resize may have been (each one has a ResizeUnfit event). It is not announced: upstream announces no finished
// rollout either. Only an in-place change completes so (Finish).
var Completed = Verdict{Status: corev1.ConditionTrue, Reason: ReasonComplete, Message: "the pods were updated where they run"}

// Finish is the InPlaceUpdate condition's news once a rollout is over: Completed after
// an in-place change (cur says it is being made), nil (unchanged) otherwise — a
// fallback or a block still describes the latest change.
func Finish(cur *Condition) *Verdict {
	if cur != nil && cur.Reason == ReasonInPlace {
		v := Completed
		return &v
	}
	return nil
}

// Proceeds tells whether pods are updated in place under the verdict.
func (v Verdict) Proceeds() bool { return v.Reason == ReasonInPlace }

// Condition is a workload's InPlaceUpdate condition, whatever the kind's condition type.
type Condition struct {
	Status             corev1.ConditionStatus
	Reason, Message    string
	LastTransitionTime metav1.Time
}

// IsNews tells whether v says something cur does not: it is then announced as an event.
func IsNews(v Verdict, cur *Condition) bool {
	return cur == nil || cur.Reason != v.Reason || cur.Message != v.Message
}

// NextCondition is the InPlaceUpdate condition after verdict (nil: unchanged; no
// reason: removed): the transition time moves only when the status does. changed is
// false when it stays as it is.
func NextCondition(cur *Condition, verdict *Verdict, now time.Time) (next *Condition, changed bool) {
	switch {
	case verdict == nil:
		return cur, false
	case verdict.Reason == "":
		return nil, cur != nil
	case cur != nil && !IsNews(*verdict, cur) && cur.Status == verdict.Status:
		return cur, false
	}
	next = &Condition{Status: verdict.Status, Reason: verdict.Reason, Message: verdict.Message, LastTransitionTime: metav1.NewTime(now)}
	if cur != nil && cur.Status == verdict.Status {
		next.LastTransitionTime = cur.LastTransitionTime
	}
	return next, true
}

// Conditions is a kind's list of status conditions seen through two functions: view
// reads one condition (its type, and as a Condition), make builds the InPlaceUpdate one.
type Conditions[C any] struct {
	View func(C) (string, Condition)
	Make func(Condition) C
}

// Current is the InPlaceUpdate condition in conds, if any.
func (k Conditions[C]) Current(conds []C) *Condition {
	for _, c := range conds {
		if t, cond := k.View(c); t == ConditionType {
			return &cond
		}
	}
	return nil
}

// With returns conds with the InPlaceUpdate condition as verdict says (see
// NextCondition); conds itself when that changes nothing.
func (k Conditions[C]) With(conds []C, verdict *Verdict, now time.Time) []C {
	next, changed := NextCondition(k.Current(conds), verdict, now)
	if !changed {
		return conds
	}
	var out []C
	for _, c := range conds {
		if t, _ := k.View(c); t != ConditionType {
			out = append(out, c)
		}
	}
	if next != nil {
		out = append(out, k.Make(*next))
	}
	return out
}
