package rolloutview

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/pmezard/go-difflib/difflib"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/kroll-dev/kroll/pkg/configrollout"
	"github.com/kroll-dev/kroll/pkg/history"
	"github.com/kroll-dev/kroll/pkg/inplace"
)

// Revision is one revision of a workload's pod template.
type Revision struct {
	Number int64
	// Name is the ReplicaSet or ControllerRevision that holds it.
	Name string
	// Template is the revision's pod template as the user wrote it: without
	// configuration rollout's kroll.dev/config-hash, whose change Config shows.
	Template corev1.PodTemplateSpec
	// Config is the revision's configuration snapshot record (kroll.dev/config-snapshots
	// on its ReplicaSet or ControllerRevision): what ConfigDiff compares; nil without
	// configuration rollout.
	Config configrollout.Snapshots
}

// RevisionsOf lists the revisions s holds, by number, each with its snapshot record
// (Revision.Config: a ControllerRevision carries it as a ReplicaSet does). A Deployment's come from its
// ReplicaSets (a ReplicaSet rolled back to keeps its former numbers in
// deployment.kubernetes.io/revision-history, and answers to them too); a StatefulSet's
// and DaemonSet's from their ControllerRevisions applied to the object.
func RevisionsOf(s Snapshot) (map[int64]Revision, error) {
	out := map[int64]Revision{}
	switch o := s.Object.(type) {
	case *appsv1.Deployment:
		for _, rs := range s.ReplicaSets {
			t := *configrollout.WithoutHash(&rs.Spec.Template)
			delete(t.Labels, appsv1.DefaultDeploymentUniqueLabelKey)
			config := configrollout.SnapshotsOf(rs.Annotations)
			numbers := []string{strconv.FormatInt(history.Revision(rs), 10)}
			if past := rs.Annotations[history.RevisionHistoryAnnotation]; past != "" {
				numbers = append(numbers, strings.Split(past, ",")...)
			}
			for _, n := range numbers {
				if v, err := strconv.ParseInt(n, 10, 64); err == nil && v > 0 {
					out[v] = Revision{Number: v, Name: rs.Name, Template: t, Config: config}
				}
			}
		}
	case *appsv1.StatefulSet:
		for _, r := range s.Revisions {
			set, err := history.ApplyRevision(o, r)
			if err != nil {
				return nil, err
			}
			out[r.Revision] = Revision{Number: r.Revision, Name: r.Name, Template: *configrollout.WithoutHash(&set.Spec.Template),
				Config: configrollout.SnapshotsOf(r.Annotations)}
		}
	case *appsv1.DaemonSet:
		for _, r := range s.Revisions {
			ds, err := history.ApplyRevision(o, r)
			if err != nil {
				return nil, err
			}
			out[r.Revision] = Revision{Number: r.Revision, Name: r.Name, Template: *configrollout.WithoutHash(&ds.Spec.Template),
				Config: configrollout.SnapshotsOf(r.Annotations)}
		}
	default:
		return nil, fmt.Errorf("no revisions for %T", s.Object)
	}
	return out, nil
}

// RevisionNumbers are the numbers of revs, ascending.
func RevisionNumbers(revs map[int64]Revision) []int64 {
	out := make([]int64, 0, len(revs))
	for n := range revs {
		out = append(out, n)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// TemplateDiff is the unified diff of two revisions' pod templates as YAML; "" when
// they are the same. A change of container cpu or memory requests or limits is said
// first, one line per container ("resources app: cpu request 100m → 200m"): in the
// YAML the changed line may be far from its container's name, and cpu 0.1 → 100m shows
// there as a change that is none.
func TemplateDiff(a, b Revision) (string, error) {
	ya, err := yaml.Marshal(a.Template)
	if err != nil {
		return "", err
	}
	yb, err := yaml.Marshal(b.Template)
	if err != nil {
		return "", err
	}
	diff, err := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A:        difflib.SplitLines(string(ya)),
		B:        difflib.SplitLines(string(yb)),
		FromFile: fmt.Sprintf("revision %d (%s)", a.Number, a.Name),
		ToFile:   fmt.Sprintf("revision %d (%s)", b.Number, b.Name),
		Context:  3,
	})
	if err != nil || diff == "" {
		return diff, err
	}
	var head strings.Builder
	for _, r := range inplace.ResourceChanges(&a.Template, &b.Template) {
		head.WriteString("resources " + r + "\n")
	}
	return head.String() + diff, nil
}
