package controller

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

// Deleted returns the object of an informer delete event as a T, unwrapping the
// tombstone the informer hands over when it missed the deletion itself.
func Deleted[T any](obj any) (T, bool) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	v, ok := obj.(T)
	return v, ok
}

// Resolve returns the object ref names when ref is of kind and get (a lister lookup by
// name) finds it with ref's UID — not a newer object that took the same name.
func Resolve[T metav1.Object](ref *metav1.OwnerReference, kind string, get func(name string) (T, error)) (T, bool) {
	var zero T
	if ref == nil || ref.Kind != kind {
		return zero, false
	}
	obj, err := get(ref.Name)
	if err != nil || obj.GetUID() != ref.UID {
		return zero, false
	}
	return obj, true
}
