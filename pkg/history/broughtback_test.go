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

func TestRevisionBroughtBack(t *testing.T) {
	at := func(sec int, revisionHistory string) *appsv1.ControllerRevision {
		r := &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(time.Unix(int64(sec), 0))}}
		if revisionHistory != "" {
			r.Annotations = map[string]string{ControllerRevisionHistoryAnnotation: revisionHistory}
		}
		return r
	}
	tests := []struct {
		name   string
		newest *appsv1.ControllerRevision
		others []*appsv1.ControllerRevision
		want   bool
	}{
		{"a new template's revision, the newest", at(20, ""), []*appsv1.ControllerRevision{at(10, "")}, false},
		{"undone within the second its successor was made: renumbered, with its history", at(10, "1"), []*appsv1.ControllerRevision{at(10, "")}, true},
		{"renumbered without a record (by upstream's controller), created before another", at(10, ""), []*appsv1.ControllerRevision{at(20, "")}, true},
		{"no revision yet", nil, []*appsv1.ControllerRevision{at(20, "")}, false},
		{"no other revision", at(10, ""), nil, false},
	}
	for _, tt := range tests {
		if got := RevisionBroughtBack(tt.newest, tt.others); got != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}
