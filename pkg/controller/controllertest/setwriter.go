package controllertest

import (
	"context"
	"errors"
	"fmt"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kroll-dev/kroll/pkg/controller"
	"github.com/kroll-dev/kroll/pkg/failure"
)

// ErrStopped is what a SetWriter's failing write returns: the controller was stopped
// (or the API server refused) at that write.
var ErrStopped = errors.New("stopped at this write")

// SetWriter records a set's writes and returns what it was given: Updates holds each
// Update's object, Statuses each UpdateStatus's, in order. Writes is every write in
// order ("update", "status"). FailAt, when positive, makes the write of that number
// (1 for the first of either kind) fail with ErrStopped, unrecorded.
type SetWriter[T any] struct {
	Updates, Statuses []T
	Writes            []string
	FailAt            int
}

var (
	_ controller.SetWriter[*appsv1.StatefulSet] = &SetWriter[*appsv1.StatefulSet]{}
	_ controller.SetWriter[*appsv1.DaemonSet]   = &SetWriter[*appsv1.DaemonSet]{}
)

func (f *SetWriter[T]) Update(_ context.Context, set T) (T, error) {
	if err := f.write("update"); err != nil {
		var zero T
		return zero, err
	}
	f.Updates = append(f.Updates, set)
	return set, nil
}

func (f *SetWriter[T]) UpdateStatus(_ context.Context, set T) (T, error) {
	if err := f.write("status"); err != nil {
		var zero T
		return zero, err
	}
	f.Statuses = append(f.Statuses, set)
	return set, nil
}

// write counts one write of kind, or fails it.
func (f *SetWriter[T]) write(kind string) error {
	if f.FailAt == len(f.Writes)+1 {
		f.FailAt = 0 // the next pass's writes succeed
		return ErrStopped
	}
	f.Writes = append(f.Writes, kind)
	return nil
}

// CheckActed fails t unless w's writes are one action reported as
// controller.SetFailure.Act makes it: the Update with the report's record
// (kroll.dev/rollout-failed), the status write, and the Update that removes the record.
func CheckActed[T metav1.Object](t testing.TB, w *SetWriter[T]) {
	t.Helper()
	if got := fmt.Sprint(w.Writes); got != "[update status update]" {
		t.Fatalf("writes %s, want [update status update]", got)
	}
	if _, ok := w.Updates[0].GetAnnotations()[failure.RolloutFailedAnnotation]; !ok {
		t.Errorf("the action's Update carries no %s", failure.RolloutFailedAnnotation)
	}
	if _, ok := w.Updates[1].GetAnnotations()[failure.RolloutFailedAnnotation]; ok {
		t.Errorf("%s is still there after the report", failure.RolloutFailedAnnotation)
	}
}
