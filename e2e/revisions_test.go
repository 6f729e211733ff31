package e2e

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// clientRevisionScenario: given a running DaemonSet, when a client creates a second
// ControllerRevision of the same template (as upstream's Conformance spec
// "should manage the lifecycle of a ControllerRevision" does) and then deletes the
// first, then both calls succeed and, all along, nothing but the client deletes a
// revision: the controller syncs on an owned revision's update or deletion, not on its
// arrival, and so does not take the client's revision for a duplicate to clean up.
var clientRevisionScenario = scenario{name: "a client's second revision of the template is left alone", run: func(t *testing.T, s *scene) string {
	s.apply(t, logDaemonSet)
	s.waitDS(t, onNodes("fluentd:v1", 0, 1, 2, 3, 4))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	revs := s.c.Client.AppsV1().ControllerRevisions(s.ns)
	list, err := revs.List(ctx, metav1.ListOptions{})
	if err != nil || len(list.Items) != 1 {
		t.Fatalf("want the DaemonSet's one revision, got %v (%v)", list, err)
	}
	first := list.Items[0]
	w, err := revs.Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	second := &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{Name: "logs-by-client", Labels: first.Labels, OwnerReferences: first.OwnerReferences},
		Data:       first.Data, Revision: first.Revision + 1,
	}
	if _, err := revs.Create(ctx, second, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating a second revision: %v", err)
	}
	// The window a client works in before its next call (upstream's spec polls for the
	// two revisions once a second): a controller reacting to the arrival acts within it.
	expectNoDeletions(t, w, 2*time.Second, "")
	if err := revs.Delete(ctx, first.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting the first revision %s: %v", first.Name, err)
	}
	// The deletion syncs the DaemonSet: the client's revision is its template's now.
	expectNoDeletions(t, w, 3*time.Second, first.Name)
	return s.dsSummary(t)
}}

// expectNoDeletions watches w for d and fails on the deletion of any revision but
// except (the client's own).
func expectNoDeletions(t *testing.T, w watch.Interface, d time.Duration, except string) {
	t.Helper()
	end := time.After(d)
	for {
		select {
		case <-end:
			return
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatal("the watch of ControllerRevisions ended early")
			}
			if r, isRev := ev.Object.(*appsv1.ControllerRevision); isRev && ev.Type == watch.Deleted && r.Name != except {
				t.Fatalf("revision %s (number %d) was deleted by someone other than the client", r.Name, r.Revision)
			}
		}
	}
}
