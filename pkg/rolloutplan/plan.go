// Package rolloutplan is the dry run behind `kroll rollout plan`: given a workload as it
// is (the object, its ReplicaSets, its pods, and for a DaemonSet the nodes) and as it
// would be after a change (`kubectl apply -f NEW.yaml`, `kubectl set image`), it computes
// the ordered batches of pod operations kroll's controllers would make, and renders them
// as text.
//
// The functions are pure: no client, no clock but the now they are given (it decides
// which pods are available under minReadySeconds, and how pods rank for deletion).
//
// The plan rests on one assumption, printed under every plan: each batch completes
// before the next starts — pods it creates or updates become ready and available, pods it
// deletes are gone. Pods unavailable now stay unavailable (a crash-looping pod does not
// heal by itself); where the controller handles them first (a Deployment's scale-down and
// in-place update, a DaemonSet's rolling update), so does the plan, and where the
// controller waits for them (an OrderedReady StatefulSet), the plan stops and says so.
// A real rollout may merge or split batches (the ReplicaSet controller's slow start, pods
// that become available at different times); the order and the bounds hold.
//
// The changed object must be as the API server would store it (a server-side dry run,
// as `kroll rollout plan -f` makes, or the live object with the change made): the
// plan reads its strategy, bounds and template as the controllers will, with the
// API's own defaults. Nothing here copies that defaulting (a new default in
// Kubernetes would be missed); a changed object without its strategy is refused.
package rolloutplan

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kroll-dev/kroll/pkg/inplace"
	"github.com/kroll-dev/kroll/pkg/rollout"
)

// Op is what a batch does to one pod.
type Op string

const (
	// Create makes a new pod (for a StatefulSet, of an ordinal; for a DaemonSet, on a node).
	Create Op = "create"
	// Delete removes a pod.
	Delete Op = "delete"
	// InPlace updates a running pod without recreating it: its images and metadata,
	// and its containers' cpu and memory through pods/resize.
	InPlace Op = "in-place"
)

// PodOp is one operation on one pod.
type PodOp struct {
	Op Op `json:"op"`
	// Pod names the pod: an existing pod's name; a StatefulSet's ordinal name ("web-2")
	// for a pod it creates; for other new pods a description such as
	// "web-6f9c7d (new 3)", unique within the plan.
	Pod string `json:"pod"`
	// Node is the node of a DaemonSet's pod; empty for the other kinds.
	Node string `json:"node,omitempty"`
	// Revision is the revision the pod runs after the operation (create, in-place) or ran
	// (delete): the ReplicaSet's name for a Deployment, the ControllerRevision's name for
	// a StatefulSet or a DaemonSet.
	Revision string `json:"revision"`
	// Resize is how an in-place operation resizes the pod's containers
	// (inplace.ResizeText): "app: cpu request 100m → 200m (no restart)"; empty when no
	// cpu or memory request or limit changes, and for creates and deletes.
	Resize string `json:"resize,omitempty"`
}

// Batch is what happens at once; the next batch starts when this one has completed.
type Batch struct {
	Ops []PodOp `json:"ops"`
	// Note says what holds the rollout once the batch has completed: a staged
	// rollout's pause ("pause until promoted …", "pause 5s …") or its partition.
	Note string `json:"note,omitempty"`
}

// Plan is what a change to one workload does to its pods.
type Plan struct {
	// Kind is the workload's kind: "Deployment", "StatefulSet" or "DaemonSet".
	Kind string `json:"kind"`
	// Object is the workload as kubectl names it: "deployment/web".
	Object string `json:"object"`
	// Strategy is how the pods change, with the bounds resolved for the changed object:
	// "RollingUpdate (maxSurge 3, maxUnavailable 2)", "Recreate", "OnDelete",
	// "InPlaceIfPossible (maxUnavailable 2)", …
	Strategy string `json:"strategy"`
	// From and To are the revisions before and after: a Deployment's revision numbers
	// ("1", "2"), a StatefulSet's or DaemonSet's ControllerRevision names. Equal when the
	// template does not change; From is empty for a workload without revisions yet.
	From string `json:"from"`
	To   string `json:"to"`
	// Changes says what differs between the object and the changed one, one line each:
	// "image app: nginx:1.25 → nginx:1.26", "replicas: 3 → 5",
	// "spec.containers[app].env changed". Empty when nothing that matters here differs.
	Changes []string `json:"changes"`
	// InPlace is the verdict on an in-place update, when the changed object opts in with
	// kroll.dev/update-strategy: "applies (…): old pods are updated where they run, …",
	// "falls back to RollingUpdate: …",
	// "blocked (InPlaceOnly): …". Empty otherwise, and when no old pod is left to judge.
	InPlace string `json:"inPlace,omitempty"`
	// FailurePolicy is what kroll does when the rollout the change starts fails, as the
	// changed object's kroll.dev/on-failure annotations ask (failure.Policy's String):
	// "Rollback when 1 new pods fail (…) or after 600s without progress", or
	// "none (a failing rollout waits, as upstream's does)".
	FailurePolicy string `json:"failurePolicy"`
	// FailurePolicyProblem is the one line naming the annotations that do not parse
	// (the policy is then off); empty when they all do.
	FailurePolicyProblem string `json:"failurePolicyProblem,omitempty"`
	// Budget is what the PodDisruptionBudgets let the first batch that takes old pods
	// down do now (AccountBudgets): "batch 1: PodDisruptionBudget web-pdb allows 1
	// disruption: the step takes down 1 of 3 old pods now, the rest as the budget
	// allows"; empty when the workload ignores budgets, no batch takes an old pod
	// down, or the budgets were not read.
	Budget string `json:"budget,omitempty"`
	// Batches are the pod operations in order; none when nothing changes, under OnDelete,
	// or when an in-place update is blocked.
	Batches []Batch `json:"batches"`
	// Notes say what the batches do not: why there are none, pods left alone (below a
	// partition), where a rollout stops.
	Notes []string `json:"notes"`
	// MaxPods is the most pods that exist at once during the plan, and MinAvailable the
	// fewest available pods; both counted right after each batch's operations are made
	// (new pods exist but are not yet available, deleted pods are gone, pods updated in
	// place are out of service), before the batch completes. With no batches: the pods
	// now.
	MaxPods      int `json:"maxPods"`
	MinAvailable int `json:"minAvailable"`
}

// Assumption is printed under every plan with batches.
const Assumption = "assuming each batch completes, its new pods ready and available, before the next starts; pods unavailable now stay so"

// Counts are how many operations of each kind the plan makes.
func (p Plan) Counts() (creates, deletes, inPlace int) {
	for _, b := range p.Batches {
		for _, op := range b.Ops {
			switch op.Op {
			case Create:
				creates++
			case Delete:
				deletes++
			case InPlace:
				inPlace++
			}
		}
	}
	return creates, deletes, inPlace
}

// bounds replays batches from pods (name → available now) and sets MaxPods and
// MinAvailable: after each batch's operations a created pod exists and is not yet
// available, an in-place one is out of service, a deleted one is gone; when the batch
// completes, every pod it created or updated is available.
func (p *Plan) bounds(pods map[string]bool) {
	state := make(map[string]bool, len(pods))
	for k, v := range pods {
		state[k] = v
	}
	count := func() (total, available int) {
		for _, a := range state {
			total++
			if a {
				available++
			}
		}
		return total, available
	}
	p.MaxPods, p.MinAvailable = count()
	for _, b := range p.Batches {
		var touched []string
		for _, op := range b.Ops {
			switch op.Op {
			case Delete:
				delete(state, op.Pod)
			case Create, InPlace:
				state[op.Pod] = false
				touched = append(touched, op.Pod)
			}
		}
		total, available := count()
		p.MaxPods, p.MinAvailable = max(p.MaxPods, total), min(p.MinAvailable, available)
		for _, name := range touched {
			if _, ok := state[name]; ok {
				state[name] = true
			}
		}
	}
}

// objectName is "kind/name" as kubectl writes it.
func objectName(kind string, meta metav1.ObjectMeta) string {
	return strings.ToLower(kind) + "/" + meta.Name
}

// notStored refuses a changed workload that is not as the API server stores it: the
// planners read its defaults (strategy, bounds, template fields that the revision
// hash covers) as the controllers will. The API's own defaulting fills them: a
// server-side dry run of the change (as `kroll rollout plan` makes), never a copy of
// it here, which a new default in Kubernetes would leave behind.
func notStored(obj, fields string) error {
	return fmt.Errorf("%s: the changed object lacks %s: plan it as the API server stores it (a server-side dry run of the change fills the defaults)", obj, fields)
}

// checkSame refuses to plan a change that is not one: another object, or a changed
// selector (immutable in apps/v1, for all three kinds).
func checkSame(kind string, cur, next metav1.ObjectMeta, curKind, nextKind string, curSel, nextSel *metav1.LabelSelector) error {
	obj := objectName(kind, cur)
	for _, k := range []string{curKind, nextKind} {
		if k != "" && k != kind {
			return fmt.Errorf("%s: the changed object is a %s, not a %s; plan one object at a time", obj, k, kind)
		}
	}
	if cur.Name != next.Name || (next.Namespace != "" && cur.Namespace != "" && cur.Namespace != next.Namespace) {
		return fmt.Errorf("%s: the changed object is %s in namespace %q, not %s in %q; plan one object at a time",
			obj, objectName(kind, next), next.Namespace, cur.Name, cur.Namespace)
	}
	if !equality.Semantic.DeepEqual(curSel, nextSel) {
		return fmt.Errorf("%s: spec.selector cannot change (it is immutable in apps/v1); keep the selector, or delete the %s and create it again", obj, kind)
	}
	return nil
}

// templateChanges describes how a pod template changes: images by container, then cpu
// and memory requests and limits by container ("resources app: cpu request 100m →
// 200m"), then the fields an in-place update cannot make (inplace.DiffResize, with why
// where pods/resize would refuse them: "… changed (QoS class Burstable → Guaranteed)"),
// then template labels and annotations.
func templateChanges(from, to *corev1.PodTemplateSpec) []string {
	var out []string
	images := func(prefix string, a, b []corev1.Container) {
		old := map[string]string{}
		for _, c := range a {
			old[c.Name] = c.Image
		}
		for _, c := range b {
			if was, ok := old[c.Name]; ok && was != c.Image {
				out = append(out, fmt.Sprintf("%s %s: %s → %s", prefix, c.Name, was, c.Image))
			}
		}
	}
	images("init image", from.Spec.InitContainers, to.Spec.InitContainers)
	images("image", from.Spec.Containers, to.Spec.Containers)
	for _, r := range inplace.ResourceChanges(from, to) {
		out = append(out, "resources "+r)
	}
	for _, f := range inplace.DiffResize(from, to, inplace.ResizeRules{}) {
		if path, why, ok := strings.Cut(f, " ("); ok {
			out = append(out, path+" changed ("+why)
			continue
		}
		out = append(out, f+" changed")
	}
	if !equality.Semantic.DeepEqual(from.Labels, to.Labels) {
		out = append(out, "template labels changed")
	}
	if !equality.Semantic.DeepEqual(from.Annotations, to.Annotations) {
		out = append(out, "template annotations changed")
	}
	return out
}

// replicasChange is "replicas: 3 → 5", or nothing.
func replicasChange(from, to *int32) []string {
	a, b := rollout.Replicas(from), rollout.Replicas(to)
	if a == b {
		return nil
	}
	return []string{fmt.Sprintf("replicas: %d → %d", a, b)}
}

// modeChange is the change of the in-place opt-in annotation, or nothing.
func modeChange(from, to map[string]string) []string {
	a, b := from[inplace.StrategyAnnotation], to[inplace.StrategyAnnotation]
	if a == b {
		return nil
	}
	none := func(s string) string {
		if s == "" {
			return "(none)"
		}
		return s
	}
	return []string{fmt.Sprintf("%s: %s → %s", inplace.StrategyAnnotation, none(a), none(b))}
}

// inPlaceFields are the fields of to that keep a pod running from from being updated
// in place: inplace.DiffResize as the controllers judge it, a cpu or memory change the
// API server's pods/resize accepts being made in place.
func inPlaceFields(from, to *corev1.PodTemplateSpec) []string {
	return inplace.DiffResize(from, to, inplace.ResizeRules{})
}

// verdictText is Plan.InPlace for a verdict judged under mode on fields; resize tells
// a change that resizes the pods' containers too.
func verdictText(mode inplace.Mode, fields []string, fallback string, resize bool) string {
	v, ok := inplace.Judge(mode, fields)
	switch {
	case !ok:
		return ""
	case v.Proceeds() && resize:
		return "applies (only images, pod metadata and container cpu and memory change): old pods are updated where they run, keeping their names, nodes and IPs, their containers resized through pods/resize, instead of being replaced"
	case v.Proceeds():
		// Next to the batches ("update 2 pods in place to …") and the totals: what
		// in place means for the pods, which the batches do not say.
		return "applies (only images and pod metadata change): old pods are updated where they run, keeping their names, nodes and IPs, instead of being replaced"
	case v.Reason == inplace.ReasonBlocked:
		return fmt.Sprintf("blocked (%s): %s cannot change in place; no pod is touched", inplace.Only, strings.Join(fields, ", "))
	default:
		return fmt.Sprintf("falls back to %s: %s cannot change in place", fallback, strings.Join(fields, ", "))
	}
}
