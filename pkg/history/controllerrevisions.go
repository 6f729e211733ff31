package history

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"sort"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/strategicpatch"

	"github.com/kroll-dev/kroll/pkg/timeline"
)

// ControllerRevisionHashLabel is the label a StatefulSet's ControllerRevisions carry
// with their hash.
const ControllerRevisionHashLabel = "controller.kubernetes.io/hash"

// maxRevisionPrefix bounds the owner-name part of a ControllerRevision name, so that
// "<prefix>-<hash>" stays a valid name.
const maxRevisionPrefix = 223

// TemplatePatch is the data of a ControllerRevision for obj (a StatefulSet or a
// DaemonSet as the API server returned it, so defaulted): its pod template as a
// strategic-merge patch that replaces the template, {"spec":{"template":{"$patch":
// "replace",…}}}, with every object's keys sorted. kubectl's rollout history and undo
// apply exactly these bytes, and upstream's controllers compare revisions by them, so
// they must come out byte for byte as upstream's.
func TemplatePatch(obj any) ([]byte, error) {
	b, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	var whole map[string]any
	if err := json.Unmarshal(b, &whole); err != nil {
		return nil, err
	}
	spec, _ := whole["spec"].(map[string]any)
	template, _ := spec["template"].(map[string]any)
	if template == nil {
		return nil, fmt.Errorf("no spec.template to record")
	}
	template["$patch"] = "replace"
	return json.Marshal(map[string]any{"spec": map[string]any{"template": template}})
}

// RevisionHash is a ControllerRevision's hash: FNV-1 (32 bits) over its data and the
// owner's collision count in decimal, rendered safe for names.
func RevisionHash(data []byte, collisionCount int32) string {
	h := fnv.New32()
	h.Write(data)
	h.Write([]byte(strconv.FormatInt(int64(collisionCount), 10)))
	return rand.SafeEncodeString(fmt.Sprint(h.Sum32()))
}

// RevisionName is "<owner>-<hash>", the owner's name cut to fit.
func RevisionName(owner, hash string) string {
	if len(owner) > maxRevisionPrefix {
		owner = owner[:maxRevisionPrefix]
	}
	return owner + "-" + hash
}

// NewRevision is revision number revision of owner (kind gvk), holding data: named and
// labelled by its hash (hashLabel) under collisionCount, labelled with the pod
// template's labels, annotated with the owner's annotations, controlled by owner.
func NewRevision(owner metav1.Object, gvk schema.GroupVersionKind, templateLabels map[string]string, data []byte, revision int64, collisionCount int32, hashLabel string) *appsv1.ControllerRevision {
	hash := RevisionHash(data, collisionCount)
	return newRevision(owner, gvk, templateLabels, data, revision, hashLabel, hash, RevisionName(owner.GetName(), hash))
}

// newRevision is revision number revision of owner (kind gvk), holding data, named
// name and labelled hashLabel=hash and with the pod template's labels, annotated with
// the owner's annotations, controlled by owner.
func newRevision(owner metav1.Object, gvk schema.GroupVersionKind, templateLabels map[string]string, data []byte, revision int64, hashLabel, hash, name string) *appsv1.ControllerRevision {
	labels := make(map[string]string, len(templateLabels)+1)
	for k, v := range templateLabels {
		labels[k] = v
	}
	labels[hashLabel] = hash
	return &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{
			Name:            name,
			Namespace:       owner.GetNamespace(),
			Labels:          labels,
			Annotations:     RevisionAnnotations(owner.GetAnnotations()),
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(owner, gvk)},
		},
		Data:     runtime.RawExtension{Raw: data},
		Revision: revision,
	}
}

// SameData tells whether two revisions record the same template (their data bytes).
func SameData(a, b *appsv1.ControllerRevision) bool {
	return bytes.Equal(a.Data.Raw, b.Data.Raw)
}

// SortRevisions orders revisions by number, then age, then name: oldest first.
func SortRevisions(revs []*appsv1.ControllerRevision) {
	sort.SliceStable(revs, func(i, j int) bool {
		a, b := revs[i], revs[j]
		if a.Revision != b.Revision {
			return a.Revision < b.Revision
		}
		if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return a.CreationTimestamp.Before(&b.CreationTimestamp)
		}
		return a.Name < b.Name
	})
}

// NextRevision is the number after the highest of revs (1 for none).
func NextRevision(revs []*appsv1.ControllerRevision) int64 {
	var top int64
	for _, r := range revs {
		top = max(top, r.Revision)
	}
	return top + 1
}

// ApplyRevision returns obj (a StatefulSet or DaemonSet, of type T) with revision's
// template patched in: the object the revision describes.
func ApplyRevision[T any](obj *T, revision *appsv1.ControllerRevision) (*T, error) {
	current, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	patched, err := strategicpatch.StrategicMergePatch(current, revision.Data.Raw, obj)
	if err != nil {
		return nil, fmt.Errorf("apply revision %s: %w", revision.Name, err)
	}
	out := new(T)
	if err := json.Unmarshal(patched, out); err != nil {
		return nil, err
	}
	return out, nil
}

// StaleRevisions returns which revisions to delete to keep at most limit of those not
// live (live: names the owner's status or pods still use), oldest first. revs must be
// sorted. A negative limit keeps everything.
func StaleRevisions(revs []*appsv1.ControllerRevision, live map[string]bool, limit int32) []*appsv1.ControllerRevision {
	if limit < 0 {
		return nil
	}
	var dead []*appsv1.ControllerRevision
	for _, r := range revs {
		if !live[r.Name] {
			dead = append(dead, r)
		}
	}
	if n := len(dead) - int(limit); n > 0 {
		return dead[:n]
	}
	return nil
}

// RevisionAnnotations are the owner's annotations a ControllerRevision keeps, as
// upstream copies them, less the owner's rollout timeline: a record of the rollout, not
// of the revision, and a few KiB each revision would keep.
func RevisionAnnotations(owner map[string]string) map[string]string {
	if len(owner) == 0 {
		return nil
	}
	out := make(map[string]string, len(owner))
	for k, v := range owner {
		if k != timeline.Annotation {
			out[k] = v
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}
