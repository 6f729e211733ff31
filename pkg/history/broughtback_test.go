package history

import (
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestBroughtBack(t *testing.T) {
	at := func(sec int, revisionHistory string) *appsv1.ReplicaSet {
		rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(time.Unix(int64(sec), 0)), Annotations: map[string]string{}}}
		if revisionHistory != "" {
			rs.Annotations[RevisionHistoryAnnotation] = revisionHistory
		}
		return rs
	}
	tests := []struct {
		name  string
		newRS *appsv1.ReplicaSet
		old   []*appsv1.ReplicaSet
		want  bool
	}{
		{"a new template's ReplicaSet, the newest", at(20, ""), []*appsv1.ReplicaSet{at(10, "")}, false},
		{"an older ReplicaSet made current again, reused with its history", at(10, "1"), []*appsv1.ReplicaSet{at(10, "")}, true},
		{"created before an old one", at(10, ""), []*appsv1.ReplicaSet{at(20, "")}, true},
		{"no ReplicaSet yet", nil, []*appsv1.ReplicaSet{at(20, "")}, false},
	}
	for _, tt := range tests {
		if got := BroughtBack(tt.newRS, tt.old); got != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}
