package history

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Given revisions of a StatefulSet's templates, when Templates applies one, then the
// set is what ApplyRevision makes of it, for revisions of TemplatePatch's form (decoded
// once) and of any other (applied by ApplyRevision itself).
func TestTemplatesApplyAsApplyRevision(t *testing.T) {
	set := func(image string) *appsv1.StatefulSet {
		return &appsv1.StatefulSet{
			ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "set-uid", Generation: 3, Annotations: map[string]string{"a": "b"}},
			Spec: appsv1.StatefulSetSpec{
				Replicas: ptrTo(int32(3)),
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}, Annotations: map[string]string{"x": "y"}},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: image,
						Ports:          []corev1.ContainerPort{{ContainerPort: 80}},
						ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromInt32(80)}}}}},
						NodeSelector: map[string]string{"disk": "ssd"}},
				},
				UpdateStrategy: appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType},
			},
			Status: appsv1.StatefulSetStatus{Replicas: 3, CurrentRevision: "web-1"},
		}
	}
	old, now := set("nginx:1.14.2"), set("nginx:1.16.1")
	data, err := TemplatePatch(old)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name    string
		data    []byte
		decoded bool
	}{
		{"TemplatePatch's form", data, true},
		{"another form: a replicas change too", []byte(`{"spec":{"replicas":5,"template":{"$patch":"replace","spec":{"containers":[{"name":"web","image":"nginx:1.15"}]}}}}`), false},
		{"a merge of the template, not a replacement", []byte(`{"spec":{"template":{"spec":{"nodeSelector":{"zone":"a"}}}}}`), false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rev := &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: "web-1", UID: "rev-uid"}, Data: runtime.RawExtension{Raw: tt.data}}
			want, err := ApplyRevision(now, rev)
			if err != nil {
				t.Fatal(err)
			}
			var templates Templates
			for range 2 { // decoded, then from what was kept
				got, err := templates.ApplyToStatefulSet(now, rev)
				if err != nil {
					t.Fatal(err)
				}
				if !equality.Semantic.DeepEqual(got, want) {
					t.Errorf("got  %+v\nwant %+v", got.Spec, want.Spec)
				}
			}
			if decoded := templates.template(rev) != nil; decoded != tt.decoded {
				t.Errorf("decoded %v, want %v", decoded, tt.decoded)
			}
			if now.Spec.Template.Spec.Containers[0].Image != "nginx:1.16.1" {
				t.Errorf("the set given was changed: %s", now.Spec.Template.Spec.Containers[0].Image)
			}
		})
	}
}

func ptrTo[T any](v T) *T { return &v }
