package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
)

// claimFixture is a Deployment "web" claiming ReplicaSets: a patch of a name in fail
// fails with that error; every patch is recorded as "adopt <name>" or "release <name>".
type claimFixture struct {
	owner   *appsv1.Deployment
	fresh   error
	fail    map[string]error
	patches []string
}

func newClaimFixture() *claimFixture {
	return &claimFixture{owner: &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "web-uid"}}, fail: map[string]error{}}
}

func (f *claimFixture) claim(keepGoing bool) Claim[*appsv1.ReplicaSet] {
	return Claim[*appsv1.ReplicaSet]{
		Owner: f.owner, Kind: appsv1.SchemeGroupVersion.WithKind("Deployment"),
		Selects: func(rs *appsv1.ReplicaSet) bool { return rs.Labels["app"] == "web" },
		Fresh: func(context.Context) (metav1.Object, error) {
			if f.fresh != nil {
				return nil, f.fresh
			}
			return f.owner, nil
		},
		Patch: func(_ context.Context, rs *appsv1.ReplicaSet, patch []byte) (*appsv1.ReplicaSet, error) {
			verb := "release"
			if strings.Contains(string(patch), `"controller":true`) {
				verb = "adopt"
			}
			f.patches = append(f.patches, verb+" "+rs.Name)
			if err := f.fail[rs.Name]; err != nil {
				return nil, err
			}
			out := rs.DeepCopy()
			out.Annotations = map[string]string{"patched": "yes"}
			return out, nil
		},
		KeepGoing: keepGoing,
	}
}

// rs is a ReplicaSet labelled app=app, controlled by the owner with uid ("" for none).
func rs(name, app string, uid types.UID) *appsv1.ReplicaSet {
	r := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(name + "-uid"), Labels: map[string]string{"app": app}}}
	if uid != "" {
		r.OwnerReferences = []metav1.OwnerReference{{Kind: "Deployment", Name: "x", UID: uid, Controller: new(bool)}}
		*r.OwnerReferences[0].Controller = true
	}
	return r
}

func names(rss []*appsv1.ReplicaSet) string {
	var out []string
	for _, r := range rss {
		out = append(out, r.Name+"/"+r.Annotations["patched"])
	}
	return strings.Join(out, ",")
}

func TestClaimAdoptsReleasesAndKeeps(t *testing.T) {
	f := newClaimFixture()
	candidates := []*appsv1.ReplicaSet{
		rs("mine", "web", "web-uid"), rs("strayed", "db", "web-uid"), rs("orphan", "web", ""),
		rs("other-orphan", "db", ""), rs("someone-elses", "web", "other-uid"),
	}
	got, err := f.claim(false).Claim(context.Background(), candidates)
	if err != nil {
		t.Fatal(err)
	}
	// The adopted ReplicaSet is the one the patch returned.
	if names(got) != "mine/,orphan/yes" || fmt.Sprint(f.patches) != "[release strayed adopt orphan]" {
		t.Errorf("claimed %s after patches %v; want mine and the adopted orphan, after releasing strayed", names(got), f.patches)
	}

	deleting := newClaimFixture()
	deleting.owner.DeletionTimestamp = &metav1.Time{}
	got, _ = deleting.claim(true).Claim(context.Background(), candidates)
	if names(got) != "mine/" || len(deleting.patches) != 0 {
		t.Errorf("an owner being deleted claimed %s with patches %v; want only what it has, no patch", names(got), deleting.patches)
	}
}

func TestClaimErrors(t *testing.T) {
	boom := errors.New("boom")
	invalid := apierrors.NewInvalid(schema.GroupKind{Group: "apps", Kind: "ReplicaSet"}, "strayed", nil)
	notFound := apierrors.NewNotFound(schema.GroupResource{Group: "apps", Resource: "replicasets"}, "x")
	candidates := func() []*appsv1.ReplicaSet {
		return []*appsv1.ReplicaSet{rs("strayed", "db", "web-uid"), rs("orphan-1", "web", ""), rs("orphan-2", "web", ""), rs("mine", "web", "web-uid")}
	}
	for _, tt := range []struct {
		name      string
		keepGoing bool
		fresh     error
		fail      map[string]error
		want      string // claimed
		wantErr   string // "" for none
		patches   string
	}{
		{"stopping: a failed release stops the claim", false, nil, map[string]error{"strayed": boom}, "", "boom", "[release strayed]"},
		{"stopping: even as Invalid", false, nil, map[string]error{"strayed": invalid}, "", "is invalid", "[release strayed]"},
		{"stopping: a gone object is passed over", false, nil, map[string]error{"strayed": notFound, "orphan-1": notFound}, "orphan-2/yes,mine/", "", "[release strayed adopt orphan-1 adopt orphan-2]"},
		{"stopping: an owner that may not adopt leaves orphans alone, silently", false, boom, nil, "mine/", "", "[release strayed]"},
		{"stopping: a failed adoption stops the claim", false, nil, map[string]error{"orphan-1": boom}, "", "boom", "[release strayed adopt orphan-1]"},
		{"going on: a failed release is reported, the rest claimed", true, nil, map[string]error{"strayed": boom}, "orphan-1/yes,orphan-2/yes,mine/", "boom", "[release strayed adopt orphan-1 adopt orphan-2]"},
		{"going on: a release refused as Invalid is done", true, nil, map[string]error{"strayed": invalid}, "orphan-1/yes,orphan-2/yes,mine/", "", "[release strayed adopt orphan-1 adopt orphan-2]"},
		{"going on: an owner that may not adopt says so for each orphan", true, boom, nil, "mine/", "boom", "[release strayed]"},
		{"going on: a failed adoption is reported", true, nil, map[string]error{"orphan-1": boom}, "orphan-2/yes,mine/", "boom", "[release strayed adopt orphan-1 adopt orphan-2]"},
	} {
		f := newClaimFixture()
		f.fresh, f.fail = tt.fresh, tt.fail
		got, err := f.claim(tt.keepGoing).Claim(context.Background(), candidates())
		gotErr := ""
		if err != nil {
			gotErr = err.Error()
		}
		if names(got) != tt.want || !strings.Contains(gotErr, tt.wantErr) || (tt.wantErr == "") != (err == nil) || fmt.Sprint(f.patches) != tt.patches {
			t.Errorf("%s: claimed %q, error %q, patches %v; want %q, %q, %s", tt.name, names(got), gotErr, f.patches, tt.want, tt.wantErr, tt.patches)
		}
		if agg, ok := err.(utilerrors.Aggregate); ok && tt.keepGoing && tt.fresh != nil && len(agg.Errors()) != 2 {
			t.Errorf("%s: %d errors, want one for each of the 2 orphans", tt.name, len(agg.Errors()))
		}
	}
}
