package controller

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kroll-dev/kroll/pkg/failure"
)

func TestRollbackRevision(t *testing.T) {
	rev := func(n int64, complete bool) *appsv1.ControllerRevision {
		r := &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: "web-" + string(rune('0'+n))}, Revision: n}
		if complete {
			r.Annotations = map[string]string{failure.CompleteAnnotation: "true"}
		}
		return r
	}
	skip := func(names ...string) func(*appsv1.ControllerRevision) bool {
		return func(r *appsv1.ControllerRevision) bool {
			for _, n := range names {
				if r.Name == n {
					return true
				}
			}
			return false
		}
	}
	cases := []struct {
		name string
		revs []*appsv1.ControllerRevision
		skip func(*appsv1.ControllerRevision) bool
		want string
	}{
		// 3 failed after 2, which never completed, after 1, which did: back to 1.
		{name: "the newest complete, over a newer one that never completed", revs: []*appsv1.ControllerRevision{rev(1, true), rev(2, false), rev(3, false)}, skip: skip("web-3"), want: "web-1"},
		{name: "the newest of several complete", revs: []*appsv1.ControllerRevision{rev(1, true), rev(2, true), rev(3, false)}, skip: skip("web-3"), want: "web-2"},
		{name: "none complete: the newest by number", revs: []*appsv1.ControllerRevision{rev(2, false), rev(1, false), rev(3, false)}, skip: skip("web-3"), want: "web-2"},
		{name: "a skipped complete one is not returned to", revs: []*appsv1.ControllerRevision{rev(1, false), rev(2, true), rev(3, false)}, skip: skip("web-3", "web-2"), want: "web-1"},
		{name: "nothing left", revs: []*appsv1.ControllerRevision{rev(3, true)}, skip: skip("web-3"), want: ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := ""
			if r := RollbackRevision(tc.revs, tc.skip); r != nil {
				got = r.Name
			}
			if got != tc.want {
				t.Errorf("RollbackRevision = %q, want %q", got, tc.want)
			}
		})
	}
}
