package cli

import (
	"encoding/json"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kroll-dev/kroll/pkg/failure"
	"github.com/kroll-dev/kroll/pkg/history"
)

// undoDeployment is Deployment web at revision rev, paused or not, with annotations
// ("key=value").
func undoDeployment(rev string, paused bool, annotations ...string) *appsv1.Deployment {
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "d-uid", ResourceVersion: "42",
		Annotations: map[string]string{history.RevisionAnnotation: rev}}}
	d.Spec.Paused = paused
	d.Spec.Template.Spec.Containers = []corev1.Container{{Name: "app", Image: "app:crash"}}
	for _, a := range annotations {
		k, v, _ := strings.Cut(a, "=")
		d.Annotations[k] = v
	}
	return d
}

// undoReplicaSet is a ReplicaSet of revision rev of image, controlled by owner's UID.
func undoReplicaSet(rev, image string, owner types.UID) appsv1.ReplicaSet {
	yes := true
	rs := appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web-" + rev, Annotations: map[string]string{history.RevisionAnnotation: rev},
		OwnerReferences: []metav1.OwnerReference{{UID: owner, Controller: &yes, Kind: "Deployment", Name: "web"}}}}
	rs.Spec.Template.Labels = map[string]string{"app": "web", appsv1.DefaultDeploymentUniqueLabelKey: "h" + rev}
	rs.Spec.Template.Spec.Containers = []corev1.Container{{Name: "app", Image: image}}
	return rs
}

func TestPausedOnFailure(t *testing.T) {
	tests := []struct {
		name string
		d    *appsv1.Deployment
		want bool
	}{
		{"paused by on-failure: Pause on revision 2, still on it: kroll's pause", undoDeployment("2", true, failure.PausedOnFailureAnnotation+"=2"), true},
		{"paused by its user, no record of a failure: the user's pause", undoDeployment("2", true), false},
		{"resumed after the pause on failure of 2, then moved on to 3 and paused by its user", undoDeployment("3", true, failure.PausedOnFailureAnnotation+"=2"), false},
		{"resumed after the pause on failure: not paused", undoDeployment("2", false, failure.PausedOnFailureAnnotation+"=2"), false},
		{"an empty record is no record", undoDeployment("2", true, failure.PausedOnFailureAnnotation+"="), false},
	}
	for _, tt := range tests {
		if got := pausedOnFailure(tt.d); got != tt.want {
			t.Errorf("%s: got %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestUndoTarget(t *testing.T) {
	d := undoDeployment("3", true, failure.PausedOnFailureAnnotation+"=3")
	sets := []appsv1.ReplicaSet{undoReplicaSet("3", "app:crash", "d-uid"), undoReplicaSet("1", "app:1", "d-uid"), undoReplicaSet("2", "app:2", "d-uid"), undoReplicaSet("9", "other:1", "other-uid")}
	tests := []struct {
		name       string
		sets       []appsv1.ReplicaSet
		toRevision int64
		want, err  string
	}{
		{"undo goes to the newest revision below the current one (another owner's 9 is not in the history)", sets, 0, "web-2", ""},
		{"--to-revision=1 goes to revision 1", sets, 1, "web-1", ""},
		{"--to-revision of another owner's ReplicaSet: not in the history", sets, 9, "", "unable to find specified revision 9 in history"},
		{"the first revision has no last one", sets[:1], 0, "", "no last revision to roll back to"},
		{"a negative revision", sets, -1, "", "unable to find specified revision -1 in history"},
	}
	for _, tt := range tests {
		got, err := undoTarget(d, tt.sets, tt.toRevision)
		switch {
		case tt.err != "" && (err == nil || err.Error() != tt.err):
			t.Errorf("%s: error %v, want %q", tt.name, err, tt.err)
		case tt.err == "" && err != nil:
			t.Errorf("%s: %v", tt.name, err)
		case tt.err == "" && got.Name != tt.want:
			t.Errorf("%s: got %s, want %s", tt.name, got.Name, tt.want)
		}
	}
}

func TestUndoAndResumePatch(t *testing.T) {
	d := undoDeployment("2", true, failure.PausedOnFailureAnnotation+"=2", "kroll.dev/on-failure=Pause", history.RevisionHistoryAnnotation+"=1")
	rs := undoReplicaSet("1", "app:1", "d-uid")
	rs.Annotations["kroll.dev/on-failure"] = "Pause"
	data, err := undoAndResumePatch(d, &rs)
	if err != nil {
		t.Fatal(err)
	}
	var ops []struct {
		Op    string          `json:"op"`
		Path  string          `json:"path"`
		Value json.RawMessage `json:"value"`
	}
	if err := json.Unmarshal(data, &ops); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, o := range ops {
		got[o.Op+" "+o.Path] = string(o.Value)
	}
	want := map[string]string{
		// Applies only to the Deployment read: a change in between makes it fail.
		"test /metadata/resourceVersion": `"42"`,
		// The previous revision's template, without its pod-template-hash.
		"replace /spec/template": `{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"name":"app","image":"app:1","resources":{}}]}}`,
		// The revision's annotations, the Deployment's own revision records kept, the
		// record of the pause gone.
		"replace /metadata/annotations": `{"deployment.kubernetes.io/revision":"2","deployment.kubernetes.io/revision-history":"1","kroll.dev/on-failure":"Pause"}`,
		// Resumed in the same write.
		"replace /spec/paused": `false`,
	}
	if len(got) != len(want) || len(ops) != len(want) {
		t.Errorf("patch %s: want exactly the operations %v", data, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: got %s, want %s", k, got[k], v)
		}
	}
}
