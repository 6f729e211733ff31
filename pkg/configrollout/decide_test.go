package configrollout

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestDecide(t *testing.T) {
	tmpl := func(image, hash string) *corev1.PodTemplateSpec {
		t := &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: image}}}}
		if hash != "" {
			t.Annotations = map[string]string{HashAnnotation: hash}
		}
		return t
	}
	found := Resolved{Fingerprint: "C"}
	missing := Resolved{Missing: []Ref{{Kind: ConfigMap, Name: "app-config"}}}
	revs := []Revision{{1, tmpl("v1", "A")}, {2, tmpl("v1", "B")}, {3, tmpl("v0", "B")}}
	cases := []struct {
		name      string
		t         *corev1.PodTemplateSpec
		r         Resolved
		rec       string
		revisions []Revision
		want      *corev1.PodTemplateSpec
		hold      bool
	}{
		{"live data C: the user's template with C", tmpl("v1", ""), found, "", revs, tmpl("v1", "C"), false},
		{"configmap missing: the newest revision of the template stays (2, B), nothing rolls", tmpl("v1", ""), missing, "", revs, tmpl("v1", "B"), false},
		{"configmap missing, no revision of the template (a new image): hold", tmpl("v2", ""), missing, "", revs, tmpl("v2", ""), true},
		{"undo pinned to A, revision 1 kept: A", tmpl("v1", "A"), found, "A:C", revs, tmpl("v1", "A"), false},
		{"undo pinned to A, revision 1 pruned: the live data C rolls", tmpl("v1", "A"), found, "A:C", revs[1:], tmpl("v1", "C"), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := Decide(tc.t, tc.r, tc.rec, tc.revisions, func(a, b *corev1.PodTemplateSpec) bool { return reflect.DeepEqual(a, b) })
			if !reflect.DeepEqual(d.Template, tc.want) || d.Hold != tc.hold {
				t.Errorf("Decide = %v hold %v, want %v hold %v", d.Template.Annotations, d.Hold, tc.want.Annotations, tc.hold)
			}
		})
	}
}
