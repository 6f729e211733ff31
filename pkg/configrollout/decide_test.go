package configrollout

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// tmpl is a template of one container running image, with HashAnnotation hash ("" for none).
func tmpl(image, hash string) *corev1.PodTemplateSpec {
	t := &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: image}}}}
	if hash != "" {
		t.Annotations = map[string]string{HashAnnotation: hash}
	}
	return t
}

func TestDecide(t *testing.T) {
	found := Resolved{Fingerprint: "C"}
	missing := Resolved{Missing: []Ref{{Kind: ConfigMap, Name: "app-config"}}}
	revs := []Revision{{1, tmpl("v1", "A")}, {2, tmpl("v1", "B")}, {3, tmpl("v0", "B")}}
	// A revision made without configuration rollout (upstream's controllers ran the
	// workload, or it opted in since) is adopted, not rolled: its pods read the live
	// objects. kroll ran 2 (B, on snapshots); upstream's controllers rolled once to 3,
	// the plain template.
	live := Resolved{Fingerprint: "B"}
	handedBack := []Revision{{1, tmpl("v1", "A")}, {2, tmpl("v1", "B")}, {3, tmpl("v1", "")}}
	cases := []struct {
		name        string
		t           *corev1.PodTemplateSpec
		r           Resolved
		rec         string
		revisions   []Revision
		want        *corev1.PodTemplateSpec
		record      string
		write, hold bool
	}{
		{"live data C: the user's template with C", tmpl("v1", ""), found, "", revs, tmpl("v1", "C"), "", false, false},
		{"configmap missing: the newest revision of the template stays (2, B), nothing rolls", tmpl("v1", ""), missing, "", revs, tmpl("v1", "B"), "", false, false},
		{"configmap missing, no revision of the template (a new image): hold", tmpl("v2", ""), missing, "", revs, tmpl("v2", ""), "", false, true},
		{"undo pinned to A, revision 1 kept: A", tmpl("v1", "A"), found, "A:C", revs, tmpl("v1", "A"), "A:C", false, false},
		{"undo pinned to A, revision 1 pruned: the live data C rolls", tmpl("v1", "A"), found, "A:C", revs[1:], tmpl("v1", "C"), "A:C", false, false},
		{"taken over again, live data B: revision 3 stays (not 2 scaled up again), B recorded", tmpl("v1", ""), live, "", handedBack, tmpl("v1", ""), ":B", true, false},
		{"record written, data still B: revision 3 stays, nothing written", tmpl("v1", ""), live, ":B", handedBack, tmpl("v1", ""), ":B", false, false},
		{"edited since the record (C): C rolls forward", tmpl("v1", ""), found, ":B", handedBack, tmpl("v1", "C"), ":B", false, false},
		{"an older undo's record: recorded anew", tmpl("v1", ""), live, "A:B", handedBack, tmpl("v1", ""), ":B", true, false},
		{"opted in after its first rollout: revision 1 adopted", tmpl("v1", ""), live, "", []Revision{{1, tmpl("v1", "")}}, tmpl("v1", ""), ":B", true, false},
		{"the rolled-forward revision is the newest: the record goes", tmpl("v1", ""), found, ":B",
			append(handedBack, Revision{4, tmpl("v1", "C")}), tmpl("v1", "C"), "", true, false},
		{"a new image under kroll after a plain revision: it rolls with the live data", tmpl("v2", ""), live, ":B", handedBack, tmpl("v2", "B"), "", true, false},
		{"pinned by an undo under upstream: the pin decides, not the plain revision", tmpl("v1", "A"), live, "", handedBack, tmpl("v1", "A"), "A:B", true, false},
		{"configmap missing: the plain revision stays, nothing written", tmpl("v1", ""), missing, "", handedBack, tmpl("v1", ""), "", false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := Decide(tc.t, tc.r, tc.rec, tc.revisions, func(a, b *corev1.PodTemplateSpec) bool { return reflect.DeepEqual(a, b) })
			if !reflect.DeepEqual(d.Template, tc.want) || d.Hold != tc.hold || d.Record != tc.record || d.Write != tc.write {
				t.Errorf("Decide = %v hold %v record %q write %v, want %v hold %v record %q write %v",
					d.Template.Annotations, d.Hold, d.Record, d.Write, tc.want.Annotations, tc.hold, tc.record, tc.write)
			}
		})
	}
}
