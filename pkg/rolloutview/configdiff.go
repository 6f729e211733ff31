package rolloutview

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/pmezard/go-difflib/difflib"
	corev1 "k8s.io/api/core/v1"

	"github.com/kroll-dev/kroll/pkg/configrollout"
)

// ConfigObjects are the snapshot objects a configuration diff reads, by snapshot name,
// as the caller (the CLI) fetched them for the names two revisions' records give
// (Revision.Config). A name in neither map was not found: pruned with its revision,
// or, when Unreadable names it, not readable (why: "forbidden").
type ConfigObjects struct {
	ConfigMaps map[string]*corev1.ConfigMap
	Secrets    map[string]*corev1.Secret
	Unreadable map[string]string
}

// SnapshotNames are the snapshot objects revs' records name, by kind
// ("configmap", "secret"): what ConfigDiff reads.
func SnapshotNames(revs ...Revision) (configMaps, secrets []string) {
	for _, r := range revs {
		for key, s := range r.Config {
			if strings.HasPrefix(key, string(configrollout.Secret)+"/") {
				secrets = append(secrets, s.Name)
			} else {
				configMaps = append(configMaps, s.Name)
			}
		}
	}
	slices.Sort(configMaps)
	slices.Sort(secrets)
	return slices.Compact(configMaps), slices.Compact(secrets)
}

// ConfigDiff is what changed in the configuration of revision a to revision b, from
// their snapshot records (Revision.Config, written by configuration rollout) and the
// snapshots in objs; "" when neither revision has a record or no object's data
// changed. Per object, in the records' order (kind, then name):
//
//   - a ConfigMap: one unified diff per changed key of data, values as text (one over
//     16 KiB by its size and hash); a key of binaryData by its size and hash, "logo.png: 1024 bytes sha256:1a2b3c4d →
//     2048 bytes sha256:5e6f7a8b";
//   - a Secret: never a value: every key, marked changed, unchanged, added or removed,
//     with the first 8 hex digits of its value's sha256 (enough to compare two
//     revisions by eye, or with a value one holds; not to read the value back);
//   - an object unchanged: one line; one referenced by one revision only: added or
//     removed; a snapshot that is gone (pruned) or unreadable: said, its data unknown.
func ConfigDiff(a, b Revision, objs ConfigObjects) string {
	if a.Config == nil && b.Config == nil {
		return ""
	}
	keys := slices.Sorted(maps.Keys(a.Config))
	for k := range b.Config {
		if _, ok := a.Config[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	var out strings.Builder
	changed := false
	for _, key := range keys {
		sa, inA := a.Config[key]
		sb, inB := b.Config[key]
		switch {
		case !inA:
			changed = true
			fmt.Fprintf(&out, "%s added (revision %d references it)\n", key, b.Number)
			continue
		case !inB:
			changed = true
			fmt.Fprintf(&out, "%s removed (revision %d no longer references it)\n", key, b.Number)
			continue
		case sa.Hash == sb.Hash:
			fmt.Fprintf(&out, "%s unchanged\n", key)
			continue
		}
		changed = true
		fmt.Fprintf(&out, "%s changed (snapshots %s → %s)\n", key, sa.Name, sb.Name)
		if strings.HasPrefix(key, string(configrollout.Secret)+"/") {
			da, errA := secretData(objs, sa.Name, a)
			db, errB := secretData(objs, sb.Name, b)
			if errA != "" || errB != "" {
				out.WriteString(errA + errB)
				continue
			}
			secretDiff(&out, da, db)
			continue
		}
		ca, errA := configMapOf(objs, sa.Name, a)
		cb, errB := configMapOf(objs, sb.Name, b)
		if errA != "" || errB != "" {
			out.WriteString(errA + errB)
			continue
		}
		configMapDiff(&out, key, a, b, ca, cb)
	}
	if !changed {
		return ""
	}
	return fmt.Sprintf("configuration: revision %d (%s) → revision %d (%s)\n", a.Number, a.Name, b.Number, b.Name) + out.String()
}

// missing says why a revision's snapshot cannot be read.
func missing(objs ConfigObjects, name string, r Revision) string {
	if why, ok := objs.Unreadable[name]; ok {
		return fmt.Sprintf("  snapshot %s of revision %d cannot be read (%s): its data is not shown\n", name, r.Number, why)
	}
	return fmt.Sprintf("  snapshot %s of revision %d is gone: its data is not known\n", name, r.Number)
}

func configMapOf(objs ConfigObjects, name string, r Revision) (*corev1.ConfigMap, string) {
	if cm, ok := objs.ConfigMaps[name]; ok && cm != nil {
		return cm, ""
	}
	return nil, missing(objs, name, r)
}

func secretData(objs ConfigObjects, name string, r Revision) (map[string][]byte, string) {
	if s, ok := objs.Secrets[name]; ok && s != nil {
		return s.Data, ""
	}
	return nil, missing(objs, name, r)
}

// shortHash is "sha256:" and the first 8 hex digits of v's sha256.
func shortHash(v []byte) string {
	sum := sha256.Sum256(v)
	return "sha256:" + hex.EncodeToString(sum[:4])
}

// configMapDiff writes the unified diff of each changed data key of ca → cb, then
// each changed binaryData key by size and hash.
func configMapDiff(out *strings.Builder, key string, a, b Revision, ca, cb *corev1.ConfigMap) {
	for _, k := range unionKeys(ca.Data, cb.Data) {
		va, inA := ca.Data[k]
		vb, inB := cb.Data[k]
		if inA && inB && va == vb {
			continue
		}
		if len(va) > maxDiffValue || len(vb) > maxDiffValue {
			fmt.Fprintf(out, "  data %s: %s → %s (too long to show as a diff)\n", k, sizeHash(va, inA), sizeHash(vb, inB))
			continue
		}
		from := fmt.Sprintf("%s %s (revision %d)", key, k, a.Number)
		to := fmt.Sprintf("%s %s (revision %d)", key, k, b.Number)
		if !inA {
			from = fmt.Sprintf("%s %s (revision %d: absent)", key, k, a.Number)
		}
		if !inB {
			to = fmt.Sprintf("%s %s (revision %d: absent)", key, k, b.Number)
		}
		diff, _ := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
			A: lines(va), B: lines(vb), FromFile: from, ToFile: to, Context: 3,
		})
		out.WriteString(diff)
	}
	for _, k := range unionKeys(ca.BinaryData, cb.BinaryData) {
		va, inA := ca.BinaryData[k]
		vb, inB := cb.BinaryData[k]
		switch {
		case !inA:
			fmt.Fprintf(out, "  binaryData %s: added, %d bytes %s\n", k, len(vb), shortHash(vb))
		case !inB:
			fmt.Fprintf(out, "  binaryData %s: removed (was %d bytes %s)\n", k, len(va), shortHash(va))
		case string(va) != string(vb):
			fmt.Fprintf(out, "  binaryData %s: %d bytes %s → %d bytes %s\n", k, len(va), shortHash(va), len(vb), shortHash(vb))
		}
	}
}

// maxDiffValue is the longest data value shown as a diff: a ConfigMap holds up to
// 1 MiB, which no terminal wants as one diff line; longer values are compared by size
// and hash.
const maxDiffValue = 16 << 10

// sizeHash is "1000000 bytes sha256:1a2b3c4d", or "absent".
func sizeHash(v string, present bool) string {
	if !present {
		return "absent"
	}
	return fmt.Sprintf("%d bytes %s", len(v), shortHash([]byte(v)))
}

// lines splits a value into diff lines; a value without a final newline gets one (the
// diff would otherwise run its last line into the next header).
func lines(v string) []string {
	if v == "" {
		return nil
	}
	if !strings.HasSuffix(v, "\n") {
		v += "\n"
	}
	return difflib.SplitLines(v)[:strings.Count(v, "\n")]
}

// secretDiff writes every key of a Secret's data a → b with its mark and hash.
func secretDiff(out *strings.Builder, a, b map[string][]byte) {
	keys := unionKeys(a, b)
	width := 0
	for _, k := range keys {
		width = max(width, len(k))
	}
	for _, k := range keys {
		va, inA := a[k]
		vb, inB := b[k]
		var line string
		switch {
		case !inA:
			line = fmt.Sprintf("added      %s", shortHash(vb))
		case !inB:
			line = fmt.Sprintf("removed    (was %s)", shortHash(va))
		case string(va) == string(vb):
			line = fmt.Sprintf("unchanged  %s", shortHash(va))
		default:
			line = fmt.Sprintf("changed    %s → %s", shortHash(va), shortHash(vb))
		}
		fmt.Fprintf(out, "  %-*s  %s\n", width, k, line)
	}
}

func unionKeys[V any](a, b map[string]V) []string {
	keys := slices.Collect(maps.Keys(a))
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}
