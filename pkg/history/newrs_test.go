package history

import (
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestNewReplicaSet(t *testing.T) {
	at := time.Date(2026, 3, 4, 12, 0, 0, 0, time.UTC)
	d := &appsv1.Deployment{Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1.26"}}}}}}
	// rs is a ReplicaSet named name, created age ago, running image (labelled with
	// its hash, as the controller makes them).
	rs := func(name string, age time.Duration, image string) *appsv1.ReplicaSet {
		t := *d.Spec.Template.DeepCopy()
		t.Spec.Containers[0].Image = image
		t.Labels = map[string]string{"app": "web", appsv1.DefaultDeploymentUniqueLabelKey: name}
		return &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(at.Add(-age))}, Spec: appsv1.ReplicaSetSpec{Template: t}}
	}
	names := func(rss []*appsv1.ReplicaSet) string {
		var out []string
		for _, r := range rss {
			out = append(out, r.Name)
		}
		return strings.Join(out, ",")
	}
	tests := []struct {
		name     string
		rss      []*appsv1.ReplicaSet
		wantNew  string
		wantOlds string
	}{
		{"none has the template: no new one, the others oldest first",
			[]*appsv1.ReplicaSet{rs("b", time.Minute, "nginx:1.25"), rs("a", time.Hour, "nginx:1.24")}, "", "a,b"},
		{"the one with the template, whatever its hash label",
			[]*appsv1.ReplicaSet{rs("old", time.Hour, "nginx:1.25"), rs("new", time.Minute, "nginx:1.26")}, "new", "old"},
		{"two with the template: the older is new, the younger old",
			[]*appsv1.ReplicaSet{rs("young", time.Minute, "nginx:1.26"), rs("elder", time.Hour, "nginx:1.26"), rs("other", 2*time.Hour, "nginx:1.25")}, "elder", "other,young"},
		{"two with the template created in the same second: by name",
			[]*appsv1.ReplicaSet{rs("web-b", time.Minute, "nginx:1.26"), rs("web-a", time.Minute, "nginx:1.26")}, "web-a", "web-b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			newRS, old := NewReplicaSet(d, tt.rss)
			got := ""
			if newRS != nil {
				got = newRS.Name
			}
			if got != tt.wantNew || names(old) != tt.wantOlds {
				t.Errorf("new %q, old %q; want %q, %q", got, names(old), tt.wantNew, tt.wantOlds)
			}
		})
	}
}
