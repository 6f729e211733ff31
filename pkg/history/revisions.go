// Package history keeps workload revisions: the revision annotations of a
// Deployment's ReplicaSets, and the pod-template hash that names them (revisions.go);
// the ControllerRevisions of StatefulSets and DaemonSets: their data, names and hashes
// (controllerrevisions.go), and the revision of an owner's template now, found,
// renumbered or created through a narrow client (current.go).
package history

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"sort"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/dump"
	"k8s.io/apimachinery/pkg/util/rand"

	"github.com/kroll-dev/kroll/pkg/analysis"
	"github.com/kroll-dev/kroll/pkg/configrollout"
	"github.com/kroll-dev/kroll/pkg/failure"
	"github.com/kroll-dev/kroll/pkg/inplace"
	"github.com/kroll-dev/kroll/pkg/staging"
	"github.com/kroll-dev/kroll/pkg/timeline"
)

// Annotations a Deployment and its ReplicaSets carry.
const (
	// RevisionAnnotation is the revision number of a ReplicaSet (and, on the Deployment,
	// of its current ReplicaSet).
	RevisionAnnotation = "deployment.kubernetes.io/revision"
	// RevisionHistoryAnnotation lists, comma-separated, the earlier revisions a ReplicaSet
	// had before a rollback made it current again.
	RevisionHistoryAnnotation = "deployment.kubernetes.io/revision-history"
	// ChangeCauseAnnotation is the user's note of why a revision was made; kubectl
	// rollout history shows it.
	ChangeCauseAnnotation = "kubernetes.io/change-cause"
	// maxRevisionHistoryChars bounds RevisionHistoryAnnotation; the oldest entries go.
	maxRevisionHistoryChars = 2000
)

// notCopiedToReplicaSets are the Deployment annotations its ReplicaSets do not inherit.
var notCopiedToReplicaSets = map[string]bool{
	"kubectl.kubernetes.io/last-applied-configuration": true,
	RevisionAnnotation:                          true,
	RevisionHistoryAnnotation:                   true,
	"deployment.kubernetes.io/desired-replicas": true,
	"deployment.kubernetes.io/max-replicas":     true,
	"deprecated.deployment.rollback.to":         true,
	// The rollout's own record; copied, it would cost a ReplicaSet write per status change.
	timeline.Annotation: true,
	// An in-place hand-over's record belongs to one ReplicaSet; `rollout undo` copies
	// it from that ReplicaSet to the Deployment, where it must stay inert.
	inplace.LeavingAnnotation:  true,
	inplace.ArrivingAnnotation: true,
	// What kroll did on a failed rollout, and which revisions completed: records, not
	// settings.
	failure.RolledBackFromAnnotation:  true,
	failure.PausedOnFailureAnnotation: true,
	failure.CompleteAnnotation:        true,
	failure.RolloutFailedAnnotation:   true,
	// Where a staged rollout is, and a request to abort it: records of the workload.
	staging.StepAnnotation:         true,
	staging.StepRevisionAnnotation: true,
	staging.StepSinceAnnotation:    true,
	staging.AbortAnnotation:        true,
	// An analysis's measurements: a record of the workload, written at each one.
	analysis.StatusAnnotation: true,
	// A ReplicaSet's configuration snapshots, and the pin record of a Deployment an
	// undo pinned to a revision's configuration: records (`rollout undo` copies the
	// former to the Deployment, where it stays inert).
	configrollout.SnapshotsAnnotation: true,
	configrollout.PinnedAtAnnotation:  true,
}

// TemplateHash is the pod-template-hash of template (without that label) and the
// Deployment's collisionCount: FNV-32a over the template's canonical dump, the count
// appended when set, rendered safe for names. Upstream computes the same value, so a
// ReplicaSet is named alike whichever controller made it.
func TemplateHash(template *corev1.PodTemplateSpec, collisionCount *int32) string {
	h := fnv.New32a()
	fmt.Fprintf(h, "%v", dump.ForHash(*template))
	if collisionCount != nil {
		b := make([]byte, 8)
		binary.LittleEndian.PutUint32(b, uint32(*collisionCount))
		h.Write(b)
	}
	return rand.SafeEncodeString(fmt.Sprint(h.Sum32()))
}

// EqualIgnoringHash tells templates that differ at most in their pod-template-hash label.
// A Deployment sync asks it of every ReplicaSet of the Deployment, so it copies nothing:
// the labels are compared apart, the rest through shallow copies without them (nothing
// is written through the copies; a nil and an empty map or slice compare equal, as
// they do in equality.Semantic).
func EqualIgnoringHash(a, b *corev1.PodTemplateSpec) bool {
	if !labelsEqualIgnoringHash(a.Labels, b.Labels) {
		return false
	}
	ac, bc := *a, *b
	ac.Labels, bc.Labels = nil, nil
	return equality.Semantic.DeepEqual(&ac, &bc)
}

// labelsEqualIgnoringHash tells label sets equal once pod-template-hash is left out.
func labelsEqualIgnoringHash(a, b map[string]string) bool {
	counted := 0
	for k, v := range a {
		if k == appsv1.DefaultDeploymentUniqueLabelKey {
			continue
		}
		if w, ok := b[k]; !ok || w != v {
			return false
		}
		counted++
	}
	others := len(b)
	if _, ok := b[appsv1.DefaultDeploymentUniqueLabelKey]; ok {
		others--
	}
	return counted == others
}

// Revision is rs's revision number; 0 when it has none (or an unreadable one).
func Revision(rs *appsv1.ReplicaSet) int64 {
	n, err := strconv.ParseInt(rs.Annotations[RevisionAnnotation], 10, 64)
	if err != nil {
		return 0
	}
	return n
}

// MaxRevision is the highest revision among rss.
func MaxRevision(rss []*appsv1.ReplicaSet) int64 {
	var m int64
	for _, rs := range rss {
		if rs != nil {
			m = max(m, Revision(rs))
		}
	}
	return m
}

// SortByRevision orders rss by revision, oldest first (creation time, then name, on ties).
func SortByRevision(rss []*appsv1.ReplicaSet) {
	sort.SliceStable(rss, func(i, j int) bool {
		ri, rj := Revision(rss[i]), Revision(rss[j])
		if ri != rj {
			return ri < rj
		}
		if !rss[i].CreationTimestamp.Equal(&rss[j].CreationTimestamp) {
			return rss[i].CreationTimestamp.Before(&rss[j].CreationTimestamp)
		}
		return rss[i].Name < rss[j].Name
	})
}

// SetNewReplicaSetAnnotations brings the annotations of d's new ReplicaSet rs up to
// date, in place: the Deployment's own annotations (change-cause among them) are
// copied, and the revision is raised to revision. A ReplicaSet that already had a
// lower revision is one a rollback brought back: its old revision is appended to its
// revision-history, dropping the oldest entries beyond 2000 characters. It reports
// whether anything changed.
func SetNewReplicaSetAnnotations(d *appsv1.Deployment, rs *appsv1.ReplicaSet, revision int64) bool {
	changed := CopyDeploymentAnnotations(d, rs)
	old, had := rs.Annotations[RevisionAnnotation]
	oldRevision, err := strconv.ParseInt(old, 10, 64)
	if err != nil {
		if old != "" {
			return changed // unreadable: leave it to a human
		}
		oldRevision = 0
	}
	if oldRevision >= revision {
		return changed
	}
	rs.Annotations[RevisionAnnotation] = strconv.FormatInt(revision, 10)
	if had {
		rs.Annotations[RevisionHistoryAnnotation] = appendHistory(rs.Annotations[RevisionHistoryAnnotation], old)
	}
	return true
}

// appendHistory appends rev to a comma-separated history, dropping the oldest entries
// while the result would exceed maxRevisionHistoryChars.
func appendHistory(history, rev string) string {
	if history == "" {
		return rev
	}
	entries := strings.Split(history, ",")
	total := len(history) + len(rev) + 1
	start := 0
	for total > maxRevisionHistoryChars && start < len(entries) {
		total -= len(entries[start]) + 1
		start++
	}
	if total > maxRevisionHistoryChars {
		return history
	}
	return strings.Join(append(entries[start:], rev), ",")
}

// CopyDeploymentAnnotations copies d's annotations onto rs, except the ones that
// belong to the Deployment alone; it reports whether rs changed.
func CopyDeploymentAnnotations(d *appsv1.Deployment, rs *appsv1.ReplicaSet) bool {
	if rs.Annotations == nil {
		rs.Annotations = map[string]string{}
	}
	changed := false
	for k, v := range d.Annotations {
		if notCopiedToReplicaSets[k] {
			continue
		}
		if cur, ok := rs.Annotations[k]; !ok || cur != v {
			rs.Annotations[k] = v
			changed = true
		}
	}
	return changed
}

// settingPrefix marks kroll's own annotations. Those a Deployment is given by its user
// (kroll.dev/update-strategy, kroll.dev/in-place-grace-period, …) are workload
// settings; the records kroll keeps (notCopiedToReplicaSets) are not.
const settingPrefix = "kroll.dev/"

// IsSetting tells a kroll.dev/ workload setting among annotation keys.
func IsSetting(key string) bool {
	return strings.HasPrefix(key, settingPrefix) && !notCopiedToReplicaSets[key]
}

// KeepSettings makes rs carry exactly d's kroll.dev/ workload settings, removing those
// d no longer has, and reports whether rs changed. A setting is a property of the
// workload, not of one revision: `kubectl rollout undo` replaces a Deployment's
// annotations with those of the ReplicaSet it goes back to, so every ReplicaSet of the
// Deployment, old ones included, must hold the settings in force for an undo to keep
// them.
func KeepSettings(d *appsv1.Deployment, rs *appsv1.ReplicaSet) bool {
	if SettingsKept(d, rs) {
		return false
	}
	for k := range rs.Annotations {
		if IsSetting(k) {
			delete(rs.Annotations, k)
		}
	}
	for k, v := range d.Annotations {
		if IsSetting(k) {
			if rs.Annotations == nil {
				rs.Annotations = map[string]string{}
			}
			rs.Annotations[k] = v
		}
	}
	return true
}

// SettingsKept tells whether rs carries exactly d's kroll.dev/ workload settings, so
// that KeepSettings would change nothing. It reads only: a sync asks it of every
// ReplicaSet and copies one only when it is to be written.
func SettingsKept(d *appsv1.Deployment, rs *appsv1.ReplicaSet) bool {
	within := func(from, in map[string]string) bool {
		for k, v := range from {
			if w, ok := in[k]; IsSetting(k) && (!ok || w != v) {
				return false
			}
		}
		return true
	}
	return within(rs.Annotations, d.Annotations) && within(d.Annotations, rs.Annotations)
}

// SetAnnotationsFrom gives d, rolled back to rs, rs's annotations as upstream's
// rollback does (the change-cause among them; so that the Deployment's annotations,
// copied to rs afterwards, do not overwrite the revision's), keeping d's own: those
// never copied to ReplicaSets, and every kroll.dev/ annotation (settings belong to the
// workload; records to the Deployment, or to the ReplicaSet that holds them).
func SetAnnotationsFrom(d *appsv1.Deployment, rs *appsv1.ReplicaSet) {
	next := map[string]string{}
	for k, v := range d.Annotations {
		if notCopiedToReplicaSets[k] || strings.HasPrefix(k, settingPrefix) {
			next[k] = v
		}
	}
	for k, v := range rs.Annotations {
		if !notCopiedToReplicaSets[k] && !strings.HasPrefix(k, settingPrefix) {
			next[k] = v
		}
	}
	d.Annotations = next
}

// LastRevision is the revision before the newest among rss: the one a rollback "to
// revision 0" goes back to; 0 when there is none.
func LastRevision(rss []*appsv1.ReplicaSet) int64 {
	var newest, last int64
	for _, rs := range rss {
		if rs == nil {
			continue
		}
		switch v := Revision(rs); {
		case v >= newest:
			newest, last = v, newest
		case v > last:
			last = v
		}
	}
	return last
}
