package manager

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// This file holds the decisions of a dry run (see dryrun.go), as pure functions: which
// workload a write is for, whether that workload's rollout is still in flight, and the
// one line that says why the write is made.

// WorkloadRef names a workload: a Deployment, ReplicaSet, ReplicationController,
// StatefulSet or DaemonSet.
type WorkloadRef struct{ Kind, Namespace, Name string }

func (w WorkloadRef) String() string { return w.Kind + " " + w.Namespace + "/" + w.Name }

// ownersOf returns the owner references of the object kind namespace/name as the
// informer caches hold it; found is false when the caches do not hold it.
type ownersOf func(kind, namespace, name string) (owners []metav1.OwnerReference, found bool)

// attribute finds the workload a write to the object kind namespace/name (whose owner
// references are owners) is for, by following controller references up through the
// caches: a Pod to its ReplicaSet to its Deployment; a ControllerRevision to its
// StatefulSet or DaemonSet. A ReplicaSet a Deployment controls is that Deployment's;
// one without is its own workload. ok is false when no workload owns the object (a
// claim a StatefulSet made without owner references, an orphan).
func attribute(kind, namespace, name string, owners []metav1.OwnerReference, lookup ownersOf) (w WorkloadRef, ok bool) {
	// Four hops at most: Pod → ReplicaSet → Deployment is two; a cycle in broken
	// references must not loop.
	for hop := 0; hop < 4; hop++ {
		ref := metav1.GetControllerOfNoCopy(&metav1.ObjectMeta{OwnerReferences: owners})
		switch kind {
		case "Deployment", "StatefulSet", "DaemonSet":
			return WorkloadRef{kind, namespace, name}, true
		case "ReplicaSet", "ReplicationController":
			if ref == nil || ref.Kind != "Deployment" {
				return WorkloadRef{kind, namespace, name}, true
			}
		}
		if ref == nil {
			return WorkloadRef{}, false
		}
		kind, name = ref.Kind, ref.Name
		if parents, found := lookup(kind, namespace, name); found {
			owners = parents
		} else {
			owners = nil
		}
	}
	return WorkloadRef{}, false
}

// ownersOfWrite are the owner references a write to an existing object is attributed
// by, live being the object's and next what the write leaves: an adoption (a write
// that gives an object without a controller one, as a Deployment claims the orphaned
// ReplicaSet its template matches) is the adopter's first step, so next's; any other
// write, a release included (the controller reference taken off), is for the owner
// the object has now, so live's. Without this, the ReplicaSet a recreated Deployment
// adopts at the switch would count as a bare ReplicaSet written, not as that
// Deployment's rollout.
func ownersOfWrite(live, next []metav1.OwnerReference) []metav1.OwnerReference {
	hasController := func(refs []metav1.OwnerReference) bool {
		return metav1.GetControllerOfNoCopy(&metav1.ObjectMeta{OwnerReferences: refs}) != nil
	}
	if !hasController(live) && hasController(next) {
		return next
	}
	return live
}

// rolloutInFlight tells whether obj's rollout is not complete by its status, so that
// the controllers' next writes for it are the rollout's next steps:
//   - a Deployment whose status does not describe its generation yet, or has fewer
//     updated, more or fewer total, or fewer available replicas than it wants (3
//     wanted, 2 updated: in flight; paused or past its deadline there, still in flight);
//   - a StatefulSet whose current revision is not its update revision (a partition
//     keeps it so), or with fewer replicas updated or ready than it wants;
//   - a DaemonSet with fewer pods updated or available than nodes it should run on.
//
// A ReplicaSet or ReplicationController of its own has no rollout: never in flight.
func rolloutInFlight(obj runtime.Object) bool {
	replicas := func(p *int32) int32 {
		if p == nil {
			return 1
		}
		return *p
	}
	switch o := obj.(type) {
	case *appsv1.Deployment:
		want, s := replicas(o.Spec.Replicas), o.Status
		return s.ObservedGeneration < o.Generation || s.UpdatedReplicas < want || s.Replicas != want || s.AvailableReplicas < want
	case *appsv1.StatefulSet:
		want, s := replicas(o.Spec.Replicas), o.Status
		return s.ObservedGeneration < o.Generation || s.CurrentRevision != s.UpdateRevision ||
			s.UpdatedReplicas < want || s.ReadyReplicas < want || s.Replicas != want
	case *appsv1.DaemonSet:
		want, s := o.Status.DesiredNumberScheduled, o.Status
		return s.ObservedGeneration < o.Generation || s.UpdatedNumberScheduled < want || s.NumberAvailable < want
	}
	return false
}

// fieldChange is one field a write changes: Path as `status.readyReplicas`, From and
// To rendered short ("<none>" for absent).
type fieldChange struct{ Path, From, To string }

func (c fieldChange) String() string { return c.Path + " " + c.From + " → " + c.To }

// ignoredPaths are fields every write carries that say nothing of what it changes:
// the cache drops managedFields, and the server sets the others itself.
var ignoredPaths = []string{"metadata.managedFields", "metadata.resourceVersion", "metadata.generation",
	"metadata.creationTimestamp", "metadata.uid", "kind", "apiVersion"}

// conditionTimes are a condition's timestamps: they move with every retry of the same
// condition, so a write is said (and deduplicated) by the condition's type, status,
// reason and message.
var conditionTimes = []string{"lastTransitionTime", "lastUpdateTime", "lastProbeTime"}

// refusal is the message of the dry run's refusals. A condition that quotes it (a
// ReplicaSet's ReplicaFailure: "pods … is forbidden: kroll controller-manager
// --dry-run sends no writes") reports the dry run itself, not a change kroll would make.
const refusal = "kroll controller-manager --dry-run sends no writes"

// fieldChanges lists the fields next differs in from live, both decoded JSON objects,
// in path order. An object or list item that appears or goes is one change. Lists whose items all carry a "type" (conditions) or a "name"
// (containers) are compared item by item under that key, so a condition's reason shows
// as `status.conditions[Progressing].reason`; other lists as a whole.
func fieldChanges(live, next any) []fieldChange {
	var out []fieldChange
	var walk func(path string, a, b any)
	walk = func(path string, a, b any) {
		if slices.Contains(ignoredPaths, path) || slices.Contains(conditionTimes, path[strings.LastIndex(path, ".")+1:]) ||
			reflect.DeepEqual(a, b) {
			return
		}
		if m, ok := b.(map[string]any); ok {
			if msg, _ := m["message"].(string); strings.Contains(msg, refusal) {
				return
			}
		}
		am, aok := a.(map[string]any)
		bm, bok := b.(map[string]any)
		if aok && bok {
			for _, k := range unionKeys(am, bm) {
				walk(join(path, k), am[k], bm[k])
			}
			return
		}
		al, aok := a.([]any)
		bl, bok := b.([]any)
		if key := itemKey(al, bl); (aok || a == nil) && (bok || b == nil) && key != "" {
			ai, bi := keyed(al, key), keyed(bl, key)
			for _, k := range unionKeys(ai, bi) {
				walk(path+"["+k+"]", ai[k], bi[k])
			}
			return
		}
		out = append(out, fieldChange{path, render(a), render(b)})
	}
	walk("", live, next)
	return out
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// unionKeys are the keys of a and b, sorted, each once.
func unionKeys(a, b map[string]any) []string {
	out := make([]string, 0, len(a)+len(b))
	for k := range a {
		out = append(out, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// itemKey is "type" or "name" when every item of both lists is an object with that
// field as a string, "" otherwise.
func itemKey(lists ...[]any) string {
	for _, key := range []string{"type", "name"} {
		all, some := true, false
		for _, l := range lists {
			for _, item := range l {
				some = true
				m, ok := item.(map[string]any)
				if _, isString := m[key].(string); !ok || !isString {
					all = false
				}
			}
		}
		if all && some {
			return key
		}
	}
	return ""
}

func keyed(l []any, key string) map[string]any {
	out := map[string]any{}
	for _, item := range l {
		out[item.(map[string]any)[key].(string)] = item
	}
	return out
}

// render is v as a short value: a scalar as JSON without quotes around plain strings,
// an object or list as compact JSON cut at 60 characters, "<none>" for absent.
func render(v any) string {
	switch v := v.(type) {
	case nil:
		return "<none>"
	case string:
		if v == "" || strings.ContainsAny(v, " →") {
			return fmt.Sprintf("%q", v)
		}
		return v
	}
	if m, ok := v.(map[string]any); ok {
		short := map[string]any{}
		for k, x := range m {
			if !slices.Contains(conditionTimes, k) {
				short[k] = x
			}
		}
		v = short
	}
	b, _ := json.Marshal(v)
	if s := string(b); len(s) > 60 {
		return s[:57] + "..."
	}
	return string(b)
}

// writeWhy is the one line that says why a write is made:
//   - a create: what is made, for which owner ("Pod solo-… for ReplicaSet dry/solo");
//   - a delete: what goes ("Pod dry/solo-x7k2p");
//   - an update or patch: the fields it changes against the live object, at most
//     three, then how many more ("status.readyReplicas 2 → 3, +1 more field"); one
//     whose effect could not be worked out says so.
func writeWhy(verb, kind, name string, owner *metav1.OwnerReference, namespace string, changes []fieldChange) string {
	switch verb {
	case "create":
		what := kind + " " + name
		if owner != nil {
			what += " for " + owner.Kind + " " + namespace + "/" + owner.Name
		}
		return "new " + what
	case "delete":
		return "remove " + kind + " " + namespace + "/" + name
	}
	if len(changes) == 0 {
		// A write known to change nothing is not recorded (unchangedWrite): here the
		// live object could not be read, or the write not applied to it.
		return "fields not known (the live object could not be read, or the write applied to it)"
	}
	var parts []string
	for i, c := range changes {
		if i == 3 {
			more := len(changes) - 3
			parts = append(parts, fmt.Sprintf("+%d more field%s", more, map[bool]string{true: "s"}[more > 1]))
			break
		}
		parts = append(parts, c.String())
	}
	return strings.Join(parts, ", ")
}

// unchangedWrite tells whether an update or patch would leave its object as it is:
// applied, the write was worked out against the live object, and changes, what it
// changes there, is empty, counting none of the fields every write carries
// (ignoredPaths) nor a condition that only reports the dry run's own refusal. Such a
// write is left out of the dry run's list: it is no step of any rollout and nothing
// to review. A create or delete always changes something.
//
// A Deployment status update that only restates its status, the live object read
// and the update applied: unchanged. The same update with the live object gone
// (applied false): not known to be unchanged, so listed.
func unchangedWrite(verb string, applied bool, changes []fieldChange) bool {
	return (verb == "update" || verb == "patch") && applied && len(changes) == 0
}
