package manager

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

func TestDropManagedFieldsLeavesTheRestOfTheObject(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Name: "web-0", Labels: map[string]string{"app": "web"},
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kroll", Operation: metav1.ManagedFieldsOperationUpdate}},
	}}
	got, err := dropManagedFields(pod)
	if err != nil {
		t.Fatal(err)
	}
	p := got.(*corev1.Pod)
	if p.ManagedFields != nil {
		t.Errorf("managedFields kept: %v", p.ManagedFields)
	}
	if p.Name != "web-0" || p.Labels["app"] != "web" {
		t.Errorf("other metadata changed: %+v", p.ObjectMeta)
	}
	// A tombstone has no metadata of its own; it passes through as it is.
	tomb := cache.DeletedFinalStateUnknown{Key: "default/web-0", Obj: pod}
	if got, err := dropManagedFields(tomb); err != nil || got != any(tomb) {
		t.Errorf("tombstone: got %v, %v", got, err)
	}
}
