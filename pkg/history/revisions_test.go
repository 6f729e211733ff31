package history

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func rsWith(annotations map[string]string) *appsv1.ReplicaSet {
	return &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Annotations: annotations}}
}

func TestSetNewReplicaSetAnnotations(t *testing.T) {
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{
		ChangeCauseAnnotation: "image updated", RevisionAnnotation: "7",
		"kubectl.kubernetes.io/last-applied-configuration": "{}",
	}}}
	fresh := rsWith(nil)
	if !SetNewReplicaSetAnnotations(d, fresh, 3) || fresh.Annotations[RevisionAnnotation] != "3" || fresh.Annotations[ChangeCauseAnnotation] != "image updated" {
		t.Errorf("a new ReplicaSet got %v", fresh.Annotations)
	}
	if _, copied := fresh.Annotations["kubectl.kubernetes.io/last-applied-configuration"]; copied {
		t.Error("last-applied-configuration was copied to the ReplicaSet")
	}
	if _, has := fresh.Annotations[RevisionHistoryAnnotation]; has {
		t.Error("a new ReplicaSet got a revision history")
	}
	rolledBack := rsWith(map[string]string{RevisionAnnotation: "1", ChangeCauseAnnotation: "image updated"})
	SetNewReplicaSetAnnotations(d, rolledBack, 4)
	if rolledBack.Annotations[RevisionAnnotation] != "4" || rolledBack.Annotations[RevisionHistoryAnnotation] != "1" {
		t.Errorf("a ReplicaSet brought back by a rollback: %v, want revision 4 with history 1", rolledBack.Annotations)
	}
	SetNewReplicaSetAnnotations(d, rolledBack, 6)
	if rolledBack.Annotations[RevisionHistoryAnnotation] != "1,4" {
		t.Errorf("second rollback: history %q, want 1,4", rolledBack.Annotations[RevisionHistoryAnnotation])
	}
	if SetNewReplicaSetAnnotations(d, rolledBack, 5) || rolledBack.Annotations[RevisionAnnotation] != "6" {
		t.Error("a lower revision replaced a higher one")
	}
}

func TestAppendHistoryDropsTheOldestBeyondTheLimit(t *testing.T) {
	long := strings.TrimSuffix(strings.Repeat("1234,", 400), ",") // 1999 characters
	// 1999 + ",99" is 2002 characters: the oldest entry (5 with its comma) goes.
	if got, want := appendHistory(long, "99"), strings.Repeat("1234,", 399)+"99"; got != want {
		t.Errorf("history of %d chars, want %d: the oldest entry dropped and 99 appended", len(got), len(want))
	}
	if got := appendHistory("", "3"); got != "3" {
		t.Errorf("empty history + 3 = %q", got)
	}
}

func TestTemplateHash(t *testing.T) {
	tmpl := &corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx:1.14.2"}}}}
	other := tmpl.DeepCopy()
	other.Spec.Containers[0].Image = "nginx:1.16.1"
	one := int32(1)
	h := TemplateHash(tmpl, nil)
	if h != TemplateHash(tmpl.DeepCopy(), nil) {
		t.Error("the same template hashed differently")
	}
	if h == TemplateHash(other, nil) || h == TemplateHash(tmpl, &one) {
		t.Error("a different template or collision count gave the same hash")
	}
	if strings.ContainsAny(h, "aeiou") {
		t.Errorf("hash %q has vowels; names avoid them", h)
	}
	labelled := tmpl.DeepCopy()
	labelled.Labels[appsv1.DefaultDeploymentUniqueLabelKey] = h
	if !EqualIgnoringHash(tmpl, labelled) || EqualIgnoringHash(tmpl, other) {
		t.Error("EqualIgnoringHash is wrong")
	}
}
