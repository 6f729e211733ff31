package configrollout

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Object is a referenced object as the controller found it.
type Object struct {
	Ref
	// Found is false for an object that does not exist.
	Found bool
	// Hash is DataHash of its data; empty when not found.
	Hash string
}

// ConfigMapHash is the hash of a ConfigMap's data and binaryData: sha256 over the
// sorted keys and their values, 16 hex digits. Metadata (labels, resourceVersion) does
// not count: only a data change rolls.
func ConfigMapHash(cm *corev1.ConfigMap) string {
	h := sha256.New()
	for _, k := range slices.Sorted(maps.Keys(cm.Data)) {
		fmt.Fprintf(h, "d%d:%s=%d:%s;", len(k), k, len(cm.Data[k]), cm.Data[k])
	}
	for _, k := range slices.Sorted(maps.Keys(cm.BinaryData)) {
		fmt.Fprintf(h, "b%d:%s=%d:", len(k), k, len(cm.BinaryData[k]))
		h.Write(cm.BinaryData[k])
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// SecretHash is the hash of a Secret's type and data, as ConfigMapHash.
func SecretHash(s *corev1.Secret) string {
	h := sha256.New()
	fmt.Fprintf(h, "t%d:%s;", len(s.Type), s.Type)
	for _, k := range slices.Sorted(maps.Keys(s.Data)) {
		fmt.Fprintf(h, "d%d:%s=%d:", len(k), k, len(s.Data[k]))
		h.Write(s.Data[k])
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// Resolved is the configuration of a template now.
type Resolved struct {
	// Objects are the referenced objects in Refs' order, found or not.
	Objects []Object
	// Missing are the required objects that do not exist: while any is, nothing rolls
	// out (the condition and a Warning event name them).
	Missing []Ref
	// Fingerprint is the hash of every object's key and data hash (an optional object
	// that is missing counts as absent, so its creation rolls); empty while Missing.
	Fingerprint string
}

// Resolve finds each of refs with hashOf (its data hash; ok false when it does not
// exist) and fingerprints them.
func Resolve(refs []Ref, hashOf func(Ref) (hash string, ok bool)) Resolved {
	var r Resolved
	h := sha256.New()
	for _, ref := range refs {
		hash, ok := hashOf(ref)
		r.Objects = append(r.Objects, Object{Ref: ref, Found: ok, Hash: hash})
		if !ok && !ref.Optional {
			r.Missing = append(r.Missing, ref)
		}
		fmt.Fprintf(h, "%s=%s;", ref.Key(), hash)
	}
	if len(r.Missing) == 0 {
		r.Fingerprint = hex.EncodeToString(h.Sum(nil))[:16]
	}
	return r
}

// MissingMessage is the one line naming the missing objects.
func MissingMessage(missing []Ref) string {
	keys := make([]string, len(missing))
	for i, m := range missing {
		keys[i] = m.Key()
	}
	return fmt.Sprintf("referenced %s not found: the configuration change does not roll out until it exists (or the reference is optional)", strings.Join(keys, ", "))
}

// Snapshot is one object's snapshot in a revision.
type Snapshot struct {
	// Name is the snapshot object's name.
	Name string `json:"name"`
	// Hash is the data hash of the object it copies.
	Hash string `json:"hash"`
}

// Snapshots are a revision's snapshots by Ref.Key ("configmap/app-config"). Optional
// objects that did not exist have none.
type Snapshots map[string]Snapshot

// SnapshotsOf reads a ReplicaSet's kroll.dev/config-snapshots; nil when absent or
// unreadable.
func SnapshotsOf(annotations map[string]string) Snapshots {
	v, ok := annotations[SnapshotsAnnotation]
	if !ok {
		return nil
	}
	var s Snapshots
	if json.Unmarshal([]byte(v), &s) != nil {
		return nil
	}
	return s
}

// String is the annotation's value.
func (s Snapshots) String() string {
	b, _ := json.Marshal(s) // map keys sorted: stable
	return string(b)
}

// maxNameLength is a ConfigMap's and Secret's name limit (a DNS subdomain).
const maxNameLength = 253

// SnapshotName is the name of object's snapshot for the revision whose
// pod-template-hash is hash: "app-config-5d8f7c9b6"; the object's name is shortened
// (and a trailing '-' or '.' dropped) when the whole would exceed 253 characters.
func SnapshotName(object, hash string) string {
	if room := maxNameLength - len(hash) - 1; len(object) > room {
		object = strings.TrimRight(object[:room], "-.")
	}
	return object + "-" + hash
}

// Plan is the Snapshots of a revision whose pod-template-hash is hash, for the found
// objects of r.
func Plan(r Resolved, hash string) Snapshots {
	s := Snapshots{}
	for _, o := range r.Objects {
		if o.Found {
			s[o.Key()] = Snapshot{Name: SnapshotName(o.Name, hash), Hash: o.Hash}
		}
	}
	return s
}

// ChangeCause names what changed from prev to cur: "configmap/app-config changed",
// several joined by ", "; empty when nothing did (or prev is unknown).
func ChangeCause(prev, cur Snapshots) string {
	if prev == nil {
		return ""
	}
	var changed []string
	for _, k := range slices.Sorted(maps.Keys(cur)) {
		if p, ok := prev[k]; !ok || p.Hash != cur[k].Hash {
			changed = append(changed, k+" changed")
		}
	}
	for _, k := range slices.Sorted(maps.Keys(prev)) {
		if _, ok := cur[k]; !ok {
			changed = append(changed, k+" removed")
		}
	}
	return strings.Join(changed, ", ")
}

// snapshotMeta is the metadata of a snapshot of the object name: owned by owner
// (garbage-collected with it), labelled with the object's name.
func snapshotMeta(snapshot, namespace, name string, owner metav1.OwnerReference) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name: snapshot, Namespace: namespace,
		Labels:          map[string]string{SnapshotOfLabel: name},
		OwnerReferences: []metav1.OwnerReference{owner},
	}
}

// ConfigMapSnapshot is the immutable copy of cm named snapshot, owned by owner.
func ConfigMapSnapshot(cm *corev1.ConfigMap, snapshot string, owner metav1.OwnerReference) *corev1.ConfigMap {
	yes := true
	return &corev1.ConfigMap{
		ObjectMeta: snapshotMeta(snapshot, cm.Namespace, cm.Name, owner),
		Immutable:  &yes,
		Data:       maps.Clone(cm.Data), BinaryData: maps.Clone(cm.BinaryData),
	}
}

// SecretSnapshot is the immutable copy of s named snapshot, owned by owner.
func SecretSnapshot(s *corev1.Secret, snapshot string, owner metav1.OwnerReference) *corev1.Secret {
	yes := true
	return &corev1.Secret{
		ObjectMeta: snapshotMeta(snapshot, s.Namespace, s.Name, owner),
		Immutable:  &yes, Type: s.Type,
		Data: maps.Clone(s.Data),
	}
}
