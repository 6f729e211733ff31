package history

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// fakeRevisions is a namespace's ControllerRevisions; it records its writes.
type fakeRevisions struct {
	stored  map[string]*appsv1.ControllerRevision
	actions []string
}

var _ RevisionClient = &fakeRevisions{}

var revisionsResource = schema.GroupResource{Group: "apps", Resource: "controllerrevisions"}

func newFakeRevisions(revs ...*appsv1.ControllerRevision) *fakeRevisions {
	f := &fakeRevisions{stored: map[string]*appsv1.ControllerRevision{}}
	for _, r := range revs {
		f.stored[r.Name] = r.DeepCopy()
	}
	return f
}

func (f *fakeRevisions) Get(_ context.Context, name string, _ metav1.GetOptions) (*appsv1.ControllerRevision, error) {
	if r, ok := f.stored[name]; ok {
		return r.DeepCopy(), nil
	}
	return nil, apierrors.NewNotFound(revisionsResource, name)
}

func (f *fakeRevisions) Create(_ context.Context, r *appsv1.ControllerRevision, _ metav1.CreateOptions) (*appsv1.ControllerRevision, error) {
	f.actions = append(f.actions, fmt.Sprintf("create %s #%d", r.Name, r.Revision))
	if _, ok := f.stored[r.Name]; ok {
		return nil, apierrors.NewAlreadyExists(revisionsResource, r.Name)
	}
	f.stored[r.Name] = r.DeepCopy()
	return r.DeepCopy(), nil
}

func (f *fakeRevisions) Update(_ context.Context, r *appsv1.ControllerRevision, _ metav1.UpdateOptions) (*appsv1.ControllerRevision, error) {
	f.actions = append(f.actions, fmt.Sprintf("update %s #%d", r.Name, r.Revision))
	f.stored[r.Name] = r.DeepCopy()
	return r.DeepCopy(), nil
}

func (f *fakeRevisions) Delete(_ context.Context, name string, _ metav1.DeleteOptions) error {
	f.actions = append(f.actions, "delete "+name)
	delete(f.stored, name)
	return nil
}

// logsSet is DaemonSet logs with web's template at image.
func logsSet(image string) *appsv1.DaemonSet {
	set := webSet(image)
	return &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "logs", Namespace: "default", UID: "logs-uid"},
		Spec: appsv1.DaemonSetSpec{Selector: set.Spec.Selector, Template: set.Spec.Template}}
}

// revisionOf is owner's revision of its template as CurrentRevision creates it under
// collisions (0: none counted), numbered n.
func revisionOf[O Owner](t *testing.T, owner O, n int64, collisions int32) *appsv1.ControllerRevision {
	t.Helper()
	f := newFakeRevisions()
	switch o := any(owner).(type) {
	case *appsv1.StatefulSet:
		o.Status.CollisionCount = &collisions
	case *appsv1.DaemonSet:
		if collisions != 0 {
			o.Status.CollisionCount = &collisions
		}
	}
	r, _, err := CurrentRevision(context.Background(), f, owner, nil)
	if err != nil {
		t.Fatal(err)
	}
	r.Revision = n
	return r
}

func TestCurrentRevision(t *testing.T) {
	ctx := context.Background()
	web := func(image string) *appsv1.StatefulSet { return webSet(image) }
	v1, v2 := "nginx:1.25", "nginx:1.26"
	for _, tt := range []struct {
		name           string
		run            func(f *fakeRevisions) (*appsv1.ControllerRevision, int32, error)
		stored         []*appsv1.ControllerRevision
		want           string // name #number
		wantCollisions int32
		wantActions    string
		// wantHistory is the revision's ControllerRevisionHistoryAnnotation: the numbers
		// it had before a renumbering.
		wantHistory string
	}{
		{
			name: "StatefulSet, no history: revision 1, named by the hash of its data",
			run: func(f *fakeRevisions) (*appsv1.ControllerRevision, int32, error) {
				return CurrentRevision(ctx, f, web(v1), nil)
			},
			want: "web-677f98675c #1", wantActions: "[create web-677f98675c #1]",
		},
		{
			name:   "StatefulSet, template unchanged: its newest revision, no write",
			stored: []*appsv1.ControllerRevision{revisionOf(t, web(v2), 1, 0), revisionOf(t, web(v1), 2, 0)},
			run: func(f *fakeRevisions) (*appsv1.ControllerRevision, int32, error) {
				return CurrentRevision(ctx, f, web(v1), sorted(f))
			},
			want: "web-677f98675c #2", wantActions: "[]",
		},
		{
			name:   "StatefulSet, undo to revision 1 of 2: renumbered 3, not copied",
			stored: []*appsv1.ControllerRevision{revisionOf(t, web(v1), 1, 0), revisionOf(t, web(v2), 2, 0)},
			run: func(f *fakeRevisions) (*appsv1.ControllerRevision, int32, error) {
				return CurrentRevision(ctx, f, web(v1), sorted(f))
			},
			want: "web-677f98675c #3", wantActions: "[update web-677f98675c #3]", wantHistory: "1",
		},
		{
			name: "StatefulSet, undone again to revision 3 (once 1) of 4: renumbered 5, both earlier numbers kept",
			stored: []*appsv1.ControllerRevision{
				withHistory(revisionOf(t, web(v1), 3, 0), "1"), revisionOf(t, web(v2), 4, 0),
			},
			run: func(f *fakeRevisions) (*appsv1.ControllerRevision, int32, error) {
				return CurrentRevision(ctx, f, web(v1), sorted(f))
			},
			want: "web-677f98675c #5", wantActions: "[update web-677f98675c #5]", wantHistory: "1,3",
		},
		{
			name: "StatefulSet, its name taken by other data: the collision count goes up and the next name is taken at once",
			stored: func() []*appsv1.ControllerRevision {
				squatter := revisionOf(t, web(v2), 7, 0)
				squatter.Name, squatter.OwnerReferences = "web-677f98675c", nil
				return []*appsv1.ControllerRevision{squatter}
			}(),
			run: func(f *fakeRevisions) (*appsv1.ControllerRevision, int32, error) {
				return CurrentRevision(ctx, f, web(v1), nil)
			},
			want: revisionOf(t, web(v1), 1, 1).Name + " #1", wantCollisions: 1,
			wantActions: "[create web-677f98675c #1 create " + revisionOf(t, web(v1), 1, 1).Name + " #1]",
		},
		{
			name: "DaemonSet, no history: revision 1, named by the pod-template hash",
			run: func(f *fakeRevisions) (*appsv1.ControllerRevision, int32, error) {
				return CurrentRevision(ctx, f, logsSet(v1), nil)
			},
			want:        "logs-" + TemplateHash(&logsSet(v1).Spec.Template, nil) + " #1",
			wantActions: "[create logs-" + TemplateHash(&logsSet(v1).Spec.Template, nil) + " #1]",
		},
		{
			name: "DaemonSet, its own older revisions of the same template are deleted, the newest kept",
			stored: []*appsv1.ControllerRevision{
				revisionOf(t, logsSet(v1), 1, 1), revisionOf(t, logsSet(v2), 2, 0), revisionOf(t, logsSet(v1), 3, 0),
			},
			run: func(f *fakeRevisions) (*appsv1.ControllerRevision, int32, error) {
				return CurrentRevision(ctx, f, withCollisions(logsSet(v1), 1), sorted(f))
			},
			want: "logs-" + TemplateHash(&logsSet(v1).Spec.Template, nil) + " #3", wantCollisions: 1,
			wantActions: "[delete " + revisionOf(t, logsSet(v1), 1, 1).Name + "]",
		},
		{
			name: "DaemonSet, a client's newer copy of the template's data, named and labelled by another template's hash (upstream's Conformance spec): not a duplicate, neither deleted",
			stored: []*appsv1.ControllerRevision{
				revisionOf(t, logsSet(v1), 1, 0), relabelled(revisionOf(t, logsSet(v1), 2, 0), revisionOf(t, logsSet(v2), 2, 0)),
			},
			run: func(f *fakeRevisions) (*appsv1.ControllerRevision, int32, error) {
				return CurrentRevision(ctx, f, logsSet(v1), sorted(f))
			},
			want: "logs-" + TemplateHash(&logsSet(v1).Spec.Template, nil) + " #1", wantActions: "[]",
		},
		{
			name: "DaemonSet, a client's older revision of the same template is the client's to delete",
			stored: []*appsv1.ControllerRevision{
				renamed(revisionOf(t, logsSet(v1), 1, 0), "logs-old"), revisionOf(t, logsSet(v2), 2, 0), revisionOf(t, logsSet(v1), 3, 0),
			},
			run: func(f *fakeRevisions) (*appsv1.ControllerRevision, int32, error) {
				return CurrentRevision(ctx, f, logsSet(v1), sorted(f))
			},
			want: "logs-" + TemplateHash(&logsSet(v1).Spec.Template, nil) + " #3", wantActions: "[]",
		},
		{
			name: "DaemonSet, a client's newer revision of the same template: its own stays current, neither deleted",
			stored: []*appsv1.ControllerRevision{
				revisionOf(t, logsSet(v1), 1, 0), renamed(revisionOf(t, logsSet(v1), 2, 0), "logs-by-client"),
			},
			run: func(f *fakeRevisions) (*appsv1.ControllerRevision, int32, error) {
				return CurrentRevision(ctx, f, logsSet(v1), sorted(f))
			},
			want: "logs-" + TemplateHash(&logsSet(v1).Spec.Template, nil) + " #1", wantActions: "[]",
		},
		{
			name: "DaemonSet, only a client's revision of the template: current, kept, no new one",
			stored: []*appsv1.ControllerRevision{
				renamed(revisionOf(t, logsSet(v1), 2, 0), "logs-by-client"),
			},
			run: func(f *fakeRevisions) (*appsv1.ControllerRevision, int32, error) {
				return CurrentRevision(ctx, f, logsSet(v1), sorted(f))
			},
			want: "logs-by-client #2", wantActions: "[]",
		},
		{
			name: "StatefulSet, a tie of numbers and its revision sorts last (created later): the newest already, no write",
			stored: []*appsv1.ControllerRevision{
				createdAt(revisionOf(t, web(v2), 2, 0), 1), createdAt(revisionOf(t, web(v1), 2, 0), 2),
			},
			run: func(f *fakeRevisions) (*appsv1.ControllerRevision, int32, error) {
				return CurrentRevision(ctx, f, web(v1), bySortRevisions(f))
			},
			want: "web-677f98675c #2", wantActions: "[]",
		},
		{
			name: "StatefulSet, a tie of numbers and its revision sorts first: renumbered 3",
			stored: []*appsv1.ControllerRevision{
				createdAt(revisionOf(t, web(v1), 2, 0), 1), createdAt(revisionOf(t, web(v2), 2, 0), 2),
			},
			run: func(f *fakeRevisions) (*appsv1.ControllerRevision, int32, error) {
				return CurrentRevision(ctx, f, web(v1), bySortRevisions(f))
			},
			want: "web-677f98675c #3", wantActions: "[update web-677f98675c #3]", wantHistory: "2",
		},
		{
			name: "DaemonSet, a tie of numbers: renumbered 3 however it sorts",
			stored: []*appsv1.ControllerRevision{
				createdAt(revisionOf(t, logsSet(v2), 2, 0), 1), createdAt(revisionOf(t, logsSet(v1), 2, 0), 2),
			},
			run: func(f *fakeRevisions) (*appsv1.ControllerRevision, int32, error) {
				return CurrentRevision(ctx, f, logsSet(v1), bySortRevisions(f))
			},
			want:        "logs-" + TemplateHash(&logsSet(v1).Spec.Template, nil) + " #3",
			wantActions: "[update logs-" + TemplateHash(&logsSet(v1).Spec.Template, nil) + " #3]", wantHistory: "2",
		},
	} {
		f := newFakeRevisions(tt.stored...)
		got, collisions, err := tt.run(f)
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		if s := fmt.Sprintf("%s #%d", got.Name, got.Revision); s != tt.want || collisions != tt.wantCollisions || fmt.Sprint(f.actions) != tt.wantActions {
			t.Errorf("%s: %s with %d collisions after %v; want %s with %d after %s", tt.name, s, collisions, f.actions, tt.want, tt.wantCollisions, tt.wantActions)
		}
		if h := got.Annotations[ControllerRevisionHistoryAnnotation]; h != tt.wantHistory {
			t.Errorf("%s: revision history %q, want %q", tt.name, h, tt.wantHistory)
		}
	}
}

// A DaemonSet tries one name a sync: the collision goes into its status first.
func TestCurrentRevisionOfADaemonSetReportsACollision(t *testing.T) {
	ds := logsSet("nginx:1.25")
	squatter := revisionOf(t, logsSet("nginx:1.26"), 1, 0)
	squatter.Name = "logs-" + TemplateHash(&ds.Spec.Template, nil)
	f := newFakeRevisions(squatter)
	_, _, err := CurrentRevision(context.Background(), f, ds, nil)
	var collision *CollisionError
	if !errors.As(err, &collision) || collision.Collisions != 1 || len(f.actions) != 1 {
		t.Errorf("got %v after %v; want a collision with count 1 after one create", err, f.actions)
	}
}

// A StatefulSet's newest revision written by Kubernetes ≤ 1.33 is its template still.
func TestCurrentRevisionTakesAnOldSerialization(t *testing.T) {
	set := webSet("nginx:1.25")
	rev := revisionOf(t, set, 4, 0)
	prefix := len(`{"spec":{"template":{"$patch":"replace","metadata":{`)
	rev.Data.Raw = []byte(string(rev.Data.Raw[:prefix]) + `"creationTimestamp":null,` + string(rev.Data.Raw[prefix:]))
	f := newFakeRevisions(rev)
	got, _, err := CurrentRevision(context.Background(), f, set, sorted(f))
	if err != nil || got.Name != rev.Name || len(f.actions) != 0 {
		t.Errorf("got %v (%v) after %v; want %s unchanged", got, err, f.actions, rev.Name)
	}
}

func sorted(f *fakeRevisions) []*appsv1.ControllerRevision {
	var out []*appsv1.ControllerRevision
	for _, r := range f.stored {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	SortRevisions(out)
	return out
}

func renamed(r *appsv1.ControllerRevision, name string) *appsv1.ControllerRevision {
	r.Name = name
	return r
}

// relabelled is r under the name and hash label of as.
func relabelled(r, as *appsv1.ControllerRevision) *appsv1.ControllerRevision {
	r.Name = as.Name
	r.Labels[appsv1.DefaultDaemonSetUniqueLabelKey] = as.Labels[appsv1.DefaultDaemonSetUniqueLabelKey]
	return r
}

// withCollisions is ds with n collisions counted in its status.
func withCollisions(ds *appsv1.DaemonSet, n int32) *appsv1.DaemonSet {
	ds.Status.CollisionCount = &n
	return ds
}

// createdAt gives r a creation time minute m of a fixed hour.
func createdAt(r *appsv1.ControllerRevision, m int) *appsv1.ControllerRevision {
	r.CreationTimestamp = metav1.NewTime(time.Date(2026, 1, 1, 10, m, 0, 0, time.UTC))
	return r
}

// bySortRevisions is f's revisions in the controllers' order (SortRevisions).
func bySortRevisions(f *fakeRevisions) []*appsv1.ControllerRevision {
	out := sorted(f)
	SortRevisions(out)
	return out
}

// withHistory is r with the earlier numbers history.
func withHistory(r *appsv1.ControllerRevision, history string) *appsv1.ControllerRevision {
	if r.Annotations == nil {
		r.Annotations = map[string]string{}
	}
	r.Annotations[ControllerRevisionHistoryAnnotation] = history
	return r
}
