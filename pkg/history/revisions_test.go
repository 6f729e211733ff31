package history

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
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

func TestEqualIgnoringHash(t *testing.T) {
	const hash = appsv1.DefaultDeploymentUniqueLabelKey
	template := func(labels map[string]string, image string) *corev1.PodTemplateSpec {
		return &corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: image}}}}
	}
	web := map[string]string{"app": "web"}
	for _, tc := range []struct {
		name string
		a, b *corev1.PodTemplateSpec
		want bool
	}{
		{"the same template", template(web, "nginx:1.14.2"), template(web, "nginx:1.14.2"), true},
		{"a ReplicaSet's template, hash added, against its Deployment's", template(web, "nginx:1.14.2"),
			template(map[string]string{"app": "web", hash: "5d4f7b"}, "nginx:1.14.2"), true},
		{"two ReplicaSets' hashes differ", template(map[string]string{"app": "web", hash: "1"}, "nginx:1.14.2"),
			template(map[string]string{"app": "web", hash: "2"}, "nginx:1.14.2"), true},
		{"no labels against the hash alone", template(nil, "nginx:1.14.2"), template(map[string]string{hash: "1"}, "nginx:1.14.2"), true},
		{"a new image", template(web, "nginx:1.14.2"), template(web, "nginx:1.16.1"), false},
		{"a label's value changed", template(web, "nginx:1.14.2"), template(map[string]string{"app": "api"}, "nginx:1.14.2"), false},
		{"a label added beside the hash", template(map[string]string{"app": "web", hash: "1"}, "nginx:1.14.2"),
			template(map[string]string{"app": "web", "tier": "front"}, "nginx:1.14.2"), false},
		{"the same count of labels, one swapped for the hash", template(map[string]string{"app": "web", "tier": "front"}, "nginx:1.14.2"),
			template(map[string]string{"app": "web", hash: "1"}, "nginx:1.14.2"), false},
		{"an annotation differs", template(web, "nginx:1.14.2"),
			&corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: web, Annotations: map[string]string{"a": "b"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx:1.14.2"}}}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := tc.a.DeepCopy(), tc.b.DeepCopy()
			if got := EqualIgnoringHash(tc.a, tc.b); got != tc.want {
				t.Errorf("EqualIgnoringHash = %v, want %v", got, tc.want)
			}
			if got := EqualIgnoringHash(tc.b, tc.a); got != tc.want {
				t.Errorf("EqualIgnoringHash, arguments swapped = %v, want %v", got, tc.want)
			}
			if !equality.Semantic.DeepEqual(a, tc.a) || !equality.Semantic.DeepEqual(b, tc.b) {
				t.Error("EqualIgnoringHash changed its arguments")
			}
		})
	}
}

func TestSettings(t *testing.T) {
	for key, want := range map[string]bool{
		"kroll.dev/update-strategy":       true,
		"kroll.dev/in-place-grace-period": true,
		"kroll.dev/rollout-timeline":      false, // a record
		"kroll.dev/in-place-leaving":      false, // a ReplicaSet's record
		"kubernetes.io/change-cause":      false,
	} {
		if got := IsSetting(key); got != want {
			t.Errorf("IsSetting(%s) = %v, want %v", key, got, want)
		}
	}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{
		"kroll.dev/update-strategy": "InPlaceOnly", "kroll.dev/rollout-timeline": "{}", RevisionAnnotation: "4", ChangeCauseAnnotation: "v4",
	}}}
	rs := rsWith(map[string]string{"kroll.dev/update-strategy": "InPlaceIfPossible", "kroll.dev/in-place-grace-period": "3",
		"kroll.dev/in-place-leaving": "p1", RevisionAnnotation: "1", ChangeCauseAnnotation: "v1"})
	if !KeepSettings(d, rs) || rs.Annotations["kroll.dev/update-strategy"] != "InPlaceOnly" || len(rs.Annotations) != 4 ||
		rs.Annotations["kroll.dev/in-place-leaving"] != "p1" || rs.Annotations[ChangeCauseAnnotation] != "v1" {
		t.Errorf("KeepSettings left %v; want the Deployment's settings, the grace period gone, the rest as it was", rs.Annotations)
	}
	if KeepSettings(d, rs) || !SettingsKept(d, rs) {
		t.Error("KeepSettings changed a ReplicaSet that already holds the settings, or SettingsKept says it does not")
	}

	SetAnnotationsFrom(d, rs)
	want := "kroll.dev/rollout-timeline={} kroll.dev/update-strategy=InPlaceOnly deployment.kubernetes.io/revision=4 kubernetes.io/change-cause=v1"
	var got []string
	for _, k := range []string{"kroll.dev/rollout-timeline", "kroll.dev/update-strategy", RevisionAnnotation, ChangeCauseAnnotation} {
		got = append(got, k+"="+d.Annotations[k])
	}
	if strings.Join(got, " ") != want || len(d.Annotations) != 4 {
		t.Errorf("after SetAnnotationsFrom: %v, want %s and nothing else (no hand-over record)", d.Annotations, want)
	}
}

func TestSettingsKept(t *testing.T) {
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{
		"kroll.dev/update-strategy": "InPlaceIfPossible", RevisionAnnotation: "3"}}}
	for _, tc := range []struct {
		name        string
		annotations map[string]string
		want        bool
	}{
		{"the Deployment's setting and other annotations", map[string]string{"kroll.dev/update-strategy": "InPlaceIfPossible", RevisionAnnotation: "1", "kroll.dev/in-place-leaving": "p1"}, true},
		{"no annotations at all", nil, false},
		{"the setting at another value", map[string]string{"kroll.dev/update-strategy": "InPlaceOnly"}, false},
		{"a setting the Deployment no longer has", map[string]string{"kroll.dev/update-strategy": "InPlaceIfPossible", "kroll.dev/in-place-grace-period": "3"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rs := rsWith(tc.annotations)
			if got := SettingsKept(d, rs); got != tc.want {
				t.Errorf("SettingsKept = %v, want %v", got, tc.want)
			}
			if changed := KeepSettings(d, rs.DeepCopy()); changed == tc.want {
				t.Errorf("KeepSettings changed the ReplicaSet: %v, but SettingsKept says %v", changed, tc.want)
			}
		})
	}
}

func TestLastRevision(t *testing.T) {
	rev := func(v string) *appsv1.ReplicaSet { return rsWith(map[string]string{RevisionAnnotation: v}) }
	for _, tt := range []struct {
		name string
		rss  []*appsv1.ReplicaSet
		want int64
	}{
		{"one revision: none before it", []*appsv1.ReplicaSet{rev("1")}, 0},
		{"the second newest", []*appsv1.ReplicaSet{rev("3"), rev("5"), rev("1"), nil}, 3},
		{"unreadable revisions count as 0", []*appsv1.ReplicaSet{rev("x"), rev("2")}, 0},
	} {
		if got := LastRevision(tt.rss); got != tt.want {
			t.Errorf("%s: LastRevision = %d, want %d", tt.name, got, tt.want)
		}
	}
}
