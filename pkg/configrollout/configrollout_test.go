package configrollout

import (
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func cmVolume(name string, optional bool) corev1.Volume {
	return corev1.Volume{Name: "v-" + name, VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: name}, Optional: &optional}}}
}

func cmKey(name string, optional *bool) corev1.EnvVar {
	return corev1.EnvVar{Name: "K", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: "k", Optional: optional}}}
}

func TestRefs(t *testing.T) {
	yes := true
	always := corev1.ContainerRestartPolicyAlways
	cases := []struct {
		name string
		spec corev1.PodSpec
		want []Ref
	}{
		{"no configuration: nothing referenced", corev1.PodSpec{Containers: []corev1.Container{{Name: "a", Env: []corev1.EnvVar{{Name: "X", Value: "1"}}}}}, nil},
		{"configmap volume and secret volume, sorted by kind then name",
			corev1.PodSpec{Volumes: []corev1.Volume{cmVolume("zeta", false),
				{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "creds"}}}, cmVolume("alpha", false)}},
			[]Ref{{ConfigMap, "alpha", false}, {ConfigMap, "zeta", false}, {Secret, "creds", false}}},
		{"projected sources count, an empty projected source does not",
			corev1.PodSpec{Volumes: []corev1.Volume{{Name: "p", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
				{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "pc"}}},
				{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "ps"}, Optional: &yes}},
				{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}},
			}}}}}},
			[]Ref{{ConfigMap, "pc", false}, {Secret, "ps", true}}},
		{"envFrom and valueFrom of init (sidecar), app and ephemeral containers",
			corev1.PodSpec{
				InitContainers: []corev1.Container{{Name: "side", RestartPolicy: &always, EnvFrom: []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "side-secret"}}}}}},
				Containers:     []corev1.Container{{Name: "app", Env: []corev1.EnvVar{cmKey("app-config", nil), {Name: "S", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "app-secret"}, Key: "k"}}}}}},
				EphemeralContainers: []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "dbg",
					EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "dbg-config"}}}}}}},
			},
			[]Ref{{ConfigMap, "app-config", false}, {ConfigMap, "dbg-config", false}, {Secret, "app-secret", false}, {Secret, "side-secret", false}}},
		{"referenced twice, optional once: required",
			corev1.PodSpec{Volumes: []corev1.Volume{cmVolume("cfg", true)}, Containers: []corev1.Container{{Name: "a", Env: []corev1.EnvVar{cmKey("cfg", nil)}}}},
			[]Ref{{ConfigMap, "cfg", false}}},
		{"referenced twice, optional both times: optional",
			corev1.PodSpec{Volumes: []corev1.Volume{cmVolume("cfg", true)}, Containers: []corev1.Container{{Name: "a", Env: []corev1.EnvVar{cmKey("cfg", &yes)}}}},
			[]Ref{{ConfigMap, "cfg", true}}},
		{"a ConfigMap and a Secret of one name are two objects",
			corev1.PodSpec{Volumes: []corev1.Volume{cmVolume("same", false), {Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "same"}}}}},
			[]Ref{{ConfigMap, "same", false}, {Secret, "same", false}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Refs(&tc.spec); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Refs = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestSubstituteRenamesEveryReferenceItKnows(t *testing.T) {
	yes := true
	spec := corev1.PodSpec{
		Volumes: []corev1.Volume{cmVolume("cfg", false),
			{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "creds"}}},
			{Name: "p", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
				{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}},
				{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "creds"}}}}}}}},
		InitContainers: []corev1.Container{{Name: "i", EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}}}}},
		Containers: []corev1.Container{{Name: "a", Env: []corev1.EnvVar{cmKey("cfg", nil), cmKey("other", &yes),
			{Name: "S", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "creds"}, Key: "k"}}}},
			EnvFrom: []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "creds"}}}}}},
	}
	Substitute(&spec, Snapshots{"configmap/cfg": {Name: "cfg-abc"}, "secret/creds": {Name: "creds-abc"}})
	got := Refs(&spec)
	want := []Ref{{ConfigMap, "cfg-abc", false}, {ConfigMap, "other", true}, {Secret, "creds-abc", false}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("after Substitute, Refs = %+v, want %+v (every place renamed, unknown ones kept)", got, want)
	}
}

func TestResolve(t *testing.T) {
	refs := []Ref{{ConfigMap, "cfg", false}, {Secret, "opt", true}}
	found := func(m map[string]string) func(Ref) (string, bool) {
		return func(r Ref) (string, bool) { h, ok := m[r.Key()]; return h, ok }
	}
	a := Resolve(refs, found(map[string]string{"configmap/cfg": "h1"}))
	b := Resolve(refs, found(map[string]string{"configmap/cfg": "h2"}))
	c := Resolve(refs, found(map[string]string{"configmap/cfg": "h1", "secret/opt": "h3"}))
	missing := Resolve(refs, found(map[string]string{"secret/opt": "h3"}))
	if a.Fingerprint == "" || a.Fingerprint == b.Fingerprint {
		t.Errorf("a data change must change the fingerprint: %q vs %q", a.Fingerprint, b.Fingerprint)
	}
	if a.Fingerprint == c.Fingerprint {
		t.Errorf("an optional object appearing must change the fingerprint")
	}
	if a2 := Resolve(refs, found(map[string]string{"configmap/cfg": "h1"})); a2.Fingerprint != a.Fingerprint {
		t.Errorf("fingerprint not stable: %q vs %q", a2.Fingerprint, a.Fingerprint)
	}
	if missing.Fingerprint != "" || !reflect.DeepEqual(missing.Missing, []Ref{{ConfigMap, "cfg", false}}) {
		t.Errorf("a missing required object: fingerprint %q, missing %+v", missing.Fingerprint, missing.Missing)
	}
	if len(a.Missing) != 0 {
		t.Errorf("a missing optional object is not missing: %+v", a.Missing)
	}
	if msg := MissingMessage(missing.Missing); !strings.Contains(msg, "configmap/cfg") {
		t.Errorf("message does not name the object: %q", msg)
	}
	if p := Plan(a, "5d8f"); !reflect.DeepEqual(p, Snapshots{"configmap/cfg": {Name: "cfg-5d8f", Hash: "h1"}}) {
		t.Errorf("Plan = %+v: one snapshot per found object", p)
	}
}

func TestHashesSeeDataOnly(t *testing.T) {
	cm := &corev1.ConfigMap{Data: map[string]string{"a": "1", "b": "2"}}
	relabelled := cm.DeepCopy()
	relabelled.Labels = map[string]string{"x": "y"}
	if ConfigMapHash(cm) != ConfigMapHash(relabelled) {
		t.Error("metadata changed the hash")
	}
	edited := cm.DeepCopy()
	edited.Data["b"] = "3"
	// "a=1;b=2" and "a=1b;=2" must differ: keys and values are length-prefixed.
	shifted := &corev1.ConfigMap{Data: map[string]string{"a": "1b", "": "2"}}
	binary := &corev1.ConfigMap{Data: map[string]string{"a": "1"}, BinaryData: map[string][]byte{"b": {0, 1, 2}}}
	for name, other := range map[string]*corev1.ConfigMap{"edited": edited, "shifted": shifted, "binary": binary} {
		if ConfigMapHash(other) == ConfigMapHash(cm) {
			t.Errorf("%s: same hash as the original", name)
		}
	}
	s1 := &corev1.Secret{Data: map[string][]byte{"k": []byte("v")}}
	s2 := &corev1.Secret{Data: map[string][]byte{"k": []byte("w")}}
	if SecretHash(s1) == SecretHash(s2) {
		t.Error("secret data change kept the hash")
	}
}

func TestEffective(t *testing.T) {
	user := &corev1.PodTemplateSpec{}
	pinnedA := &corev1.PodTemplateSpec{}
	pinnedA.Annotations = map[string]string{HashAnnotation: "A"}
	cases := []struct {
		name      string
		t         *corev1.PodTemplateSpec
		live, rec string
		wantHash  string
		pinned    bool
		record    string
		write     bool
	}{
		{"user's template: the live fingerprint", user, "B", "", "B", false, "", false},
		{"user's template again after a pin: the record goes", user, "B", "A:B", "B", false, "", true},
		{"undo to revision A: pinned, record written", pinnedA, "B", "", "A", true, "A:B", true},
		{"pinned, live unchanged: stays pinned", pinnedA, "B", "A:B", "A", true, "A:B", false},
		{"pinned, then the ConfigMap edited again: rolls forward", pinnedA, "C", "A:B", "C", false, "A:B", false},
		{"a newer undo to A over an old record of another pin", pinnedA, "C", "X:B", "A", true, "A:C", true},
		{"pinned to the live data itself: nothing pinned", pinnedA, "A", "", "A", false, "", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := Effective(tc.t, tc.live, tc.rec)
			if got := d.Template.Annotations[HashAnnotation]; got != tc.wantHash || d.Pinned != tc.pinned || d.Record != tc.record || d.Write != tc.write {
				t.Errorf("Effective = hash %q pinned %v record %q write %v, want %q %v %q %v", got, d.Pinned, d.Record, d.Write, tc.wantHash, tc.pinned, tc.record, tc.write)
			}
			if tc.t.Annotations[HashAnnotation] != map[bool]string{true: "A", false: ""}[tc.t == pinnedA] {
				t.Errorf("Effective changed the workload's template")
			}
		})
	}
}

func TestChangeCause(t *testing.T) {
	prev := Snapshots{"configmap/app-config": {Hash: "1"}, "secret/creds": {Hash: "2"}, "configmap/old": {Hash: "3"}}
	cur := Snapshots{"configmap/app-config": {Hash: "9"}, "secret/creds": {Hash: "2"}, "configmap/new": {Hash: "4"}}
	if got, want := ChangeCause(prev, cur), "configmap/app-config changed, configmap/new changed, configmap/old removed"; got != want {
		t.Errorf("ChangeCause = %q, want %q", got, want)
	}
	if got := ChangeCause(prev, prev); got != "" {
		t.Errorf("nothing changed: %q", got)
	}
	if got := ChangeCause(nil, cur); got != "" {
		t.Errorf("first revision: %q", got)
	}
}

func TestSnapshotNameAndRecord(t *testing.T) {
	if got := SnapshotName("app-config", "5d8f7c9b6"); got != "app-config-5d8f7c9b6" {
		t.Errorf("SnapshotName = %q", got)
	}
	long := strings.Repeat("a", 250) + "-b"
	if got := SnapshotName(long, "5d8f7c9b6"); len(got) > 253 || !strings.HasSuffix(got, "-5d8f7c9b6") || strings.Contains(got, "--") {
		t.Errorf("long name %q (%d)", got, len(got))
	}
	s := Snapshots{"configmap/a": {Name: "a-1", Hash: "h"}}
	if got := SnapshotsOf(map[string]string{SnapshotsAnnotation: s.String()}); !reflect.DeepEqual(got, s) {
		t.Errorf("round trip: %+v", got)
	}
	if got := SnapshotsOf(map[string]string{SnapshotsAnnotation: "{"}); got != nil {
		t.Errorf("unreadable: %+v", got)
	}
}

func TestEnabled(t *testing.T) {
	for v, want := range map[string]bool{"true": true, "false": false, "1": true} {
		if on, problem := Enabled(map[string]string{Annotation: v}); on != want || problem != "" {
			t.Errorf("%q: on %v problem %q", v, on, problem)
		}
	}
	if on, problem := Enabled(map[string]string{Annotation: "yes"}); on || !strings.Contains(problem, `kroll.dev/config-rollout="yes"`) {
		t.Errorf("invalid: on %v problem %q", on, problem)
	}
	if on, problem := Enabled(nil); on || problem != "" {
		t.Errorf("absent: on %v problem %q", on, problem)
	}
}

// TestDecideOverRevisions: Decide over revisions numbered in order (a set's
// ControllerRevisions, oldest first).
func TestDecideOverRevisions(t *testing.T) {
	equal := func(a, b *corev1.PodTemplateSpec) bool { return reflect.DeepEqual(a, b) }
	image := func(img, hash string) *corev1.PodTemplateSpec {
		t := &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: img}}}}
		if hash != "" {
			t = WithHash(t, hash)
		}
		return t
	}
	found := Resolved{Fingerprint: "B"}
	missing := Resolved{Missing: []Ref{{ConfigMap, "cfg", false}}}
	cases := []struct {
		name      string
		t         *corev1.PodTemplateSpec
		r         Resolved
		revisions []*corev1.PodTemplateSpec
		want      *corev1.PodTemplateSpec
		hold      bool
	}{
		{"the user's template: the live fingerprint", image("v1", ""), found, nil, image("v1", "B"), false},
		{"missing: the newest revision of the template (revision 2, B) stays", image("v1", ""), missing,
			[]*corev1.PodTemplateSpec{image("v1", "A"), image("v2", "A"), image("v1", "B")}, image("v1", "B"), false},
		{"missing, and no revision of the template: hold (the template as it is)", image("v3", ""), missing,
			[]*corev1.PodTemplateSpec{image("v1", "A")}, image("v3", ""), true},
		{"undo to A, revision A kept: pinned", image("v1", "A"), found,
			[]*corev1.PodTemplateSpec{image("v1", "A"), image("v1", "B")}, image("v1", "A"), false},
		{"undo to A, revision A pruned: the live configuration instead", image("v1", "A"), found,
			[]*corev1.PodTemplateSpec{image("v1", "B")}, image("v1", "B"), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			revisions := make([]Revision, len(tc.revisions))
			for i, r := range tc.revisions {
				revisions[i] = Revision{Number: int64(i + 1), Template: r}
			}
			d := Decide(tc.t, tc.r, "", revisions, equal)
			if !reflect.DeepEqual(d.Template, tc.want) || d.Hold != tc.hold {
				t.Errorf("Decide = %+v hold %v, want %+v hold %v", d.Template, d.Hold, tc.want, tc.hold)
			}
		})
	}
}

func TestCause(t *testing.T) {
	equal := func(a, b *corev1.PodTemplateSpec) bool { return reflect.DeepEqual(a, b) }
	v1 := &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "v1"}}}}
	v2 := &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "v2"}}}}
	prev, cur := Snapshots{"configmap/cfg": {Hash: "1"}}, Snapshots{"configmap/cfg": {Hash: "2"}}
	if got := Cause(WithHash(v1, "A"), WithHash(v1, "B"), prev, cur, equal); got != "configmap/cfg changed" {
		t.Errorf("configuration alone changed: %q", got)
	}
	if got := Cause(WithHash(v1, "A"), WithHash(v2, "B"), prev, cur, equal); got != "" {
		t.Errorf("the image changed too: %q, want the user's own cause", got)
	}
	if got := Cause(nil, WithHash(v1, "B"), nil, cur, equal); got != "" {
		t.Errorf("first revision: %q", got)
	}
}
