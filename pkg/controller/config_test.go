package controller

import (
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A workload is indexed by the ConfigMaps and Secrets its template references only
// when it is opted into configuration rollout, and by the ConfigMap of its analysis
// checks whether or not it is, so that either's change wakes it.
func TestConfigRefs(t *testing.T) {
	spec := corev1.PodSpec{Containers: []corev1.Container{{Name: "app",
		EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "app-config"}}}},
		Env: []corev1.EnvVar{{Name: "TOKEN", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: "token"}, Key: "t"}}}},
	}}}
	for _, tc := range []struct {
		name        string
		annotations map[string]string
		want        []string
	}{
		{"neither", nil, nil},
		{"opted in", map[string]string{"kroll.dev/config-rollout": "true"}, []string{"ns/configmap/app-config", "ns/secret/token"}},
		{"opted out", map[string]string{"kroll.dev/config-rollout": "false"}, nil},
		{"analysis only", map[string]string{"kroll.dev/analysis": "web-checks"}, []string{"ns/configmap/web-checks"}},
		{"both", map[string]string{"kroll.dev/config-rollout": "true", "kroll.dev/analysis": "web-checks"},
			[]string{"ns/configmap/app-config", "ns/configmap/web-checks", "ns/secret/token"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			meta := metav1.ObjectMeta{Name: "web", Namespace: "ns", Annotations: tc.annotations}
			for _, obj := range []any{
				&appsv1.Deployment{ObjectMeta: meta, Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{Spec: spec}}},
				&appsv1.StatefulSet{ObjectMeta: meta, Spec: appsv1.StatefulSetSpec{Template: corev1.PodTemplateSpec{Spec: spec}}},
				&appsv1.DaemonSet{ObjectMeta: meta, Spec: appsv1.DaemonSetSpec{Template: corev1.PodTemplateSpec{Spec: spec}}},
			} {
				got, err := ConfigRefs(obj)
				if err != nil {
					t.Fatal(err)
				}
				slices.Sort(got)
				if !slices.Equal(got, tc.want) {
					t.Errorf("%T: ConfigRefs = %q, want %q", obj, got, tc.want)
				}
			}
		})
	}
	if got, _ := ConfigRefs(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{"kroll.dev/analysis": "x"}}}); got != nil {
		t.Errorf("a pod is indexed by %q, want nothing", got)
	}
}
