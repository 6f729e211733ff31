package storage

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
)

// fakeWriter records the provisioner's writes.
type fakeWriter struct{ actions []string }

var _ writer = &fakeWriter{}

func (w *fakeWriter) createVolume(_ context.Context, pv *corev1.PersistentVolume) (*corev1.PersistentVolume, error) {
	w.actions = append(w.actions, "create "+pv.Name+" on "+VolumeNode(pv))
	return pv, nil
}

func (w *fakeWriter) deleteVolume(_ context.Context, pv *corev1.PersistentVolume) error {
	w.actions = append(w.actions, "delete "+pv.Name)
	return nil
}

func (w *fakeWriter) unselectNode(_ context.Context, claim *corev1.PersistentVolumeClaim) error {
	w.actions = append(w.actions, "unselect node of "+claim.Name)
	return nil
}

// fixture is a provisioner over informers seeded with objects, writing to a fakeWriter.
type fixture struct {
	p      *Provisioner
	writes *fakeWriter
	events *record.FakeRecorder
}

func newFixture(t *testing.T, objects ...runtime.Object) *fixture {
	t.Helper()
	f := &fixture{writes: &fakeWriter{}, events: record.NewFakeRecorder(20)}
	p, err := newProvisioner(fake.NewClientset(objects...), f.writes, f.events)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); p.factory.Shutdown() })
	p.factory.Start(ctx.Done())
	syncCtx, done := context.WithTimeout(ctx, 10*time.Second)
	defer done()
	if !cache.WaitForCacheSync(syncCtx.Done(), p.synced...) {
		t.Fatal("informers did not sync")
	}
	f.p = p
	return f
}

// drain returns the events recorded so far.
func (f *fixture) drain() []string {
	var out []string
	for {
		select {
		case e := <-f.events.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func standardClass() *storagev1.StorageClass { return DefaultClass() }

func TestProvisioner_provisionsOnceWithTheEventsOfAnExternalProvisioner(t *testing.T) {
	claim := newClaim("data-web-0", DefaultClassName, "kroll-node-1")
	f := newFixture(t, standardClass(), newNode("kroll-node-1", true), claim)
	ctx := context.Background()
	if err := f.p.syncClaim(ctx, "ns", "data-web-0"); err != nil {
		t.Fatal(err)
	}
	// Synced again before the volume informer shows the volume: not created twice.
	if err := f.p.syncClaim(ctx, "ns", "data-web-0"); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(f.writes.actions, "; "); got != "create pvc-uid-data-web-0 on kroll-node-1" {
		t.Errorf("writes: %s", got)
	}
	want := []string{
		`Normal Provisioning External provisioner is provisioning volume for claim "ns/data-web-0"`,
		"Normal ProvisioningSucceeded Successfully provisioned volume pvc-uid-data-web-0",
	}
	if got := f.drain(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("events %q\nwant %q", got, want)
	}
}

func TestProvisioner_afterARestartAnExistingVolumeIsNotMadeAgain(t *testing.T) {
	claim := newClaim("data-web-0", DefaultClassName, "kroll-node-1")
	node := newNode("kroll-node-1", true)
	existing := newVolume(claim, standardClass(), node)
	f := newFixture(t, standardClass(), node, claim, existing)
	if err := f.p.syncClaim(context.Background(), "ns", "data-web-0"); err != nil {
		t.Fatal(err)
	}
	if len(f.writes.actions) != 0 || len(f.drain()) != 0 {
		t.Errorf("writes %v for a claim whose volume exists", f.writes.actions)
	}
}

func TestProvisioner_aSelectedNodeMissingFromTheCacheIsReadFromTheAPI(t *testing.T) {
	claim := newClaim("data-web-0", DefaultClassName, "kroll-node-7")
	f := newFixture(t, standardClass(), claim)
	// The node appears after the informers synced, as a node just added does.
	if _, err := f.p.client.CoreV1().Nodes().Create(context.Background(), newNode("kroll-node-7", true), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.p.nodes = emptyNodes{} // a cache that has not caught up
	if err := f.p.syncClaim(context.Background(), "ns", "data-web-0"); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(f.writes.actions, "; "); got != "create pvc-uid-data-web-0 on kroll-node-7" {
		t.Errorf("writes: %s", got)
	}
}

func TestProvisioner_aGoneNodeSendsTheClaimBackToTheScheduler(t *testing.T) {
	f := newFixture(t, standardClass(), newClaim("data-web-0", DefaultClassName, "kroll-node-9"))
	if err := f.p.syncClaim(context.Background(), "ns", "data-web-0"); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(f.writes.actions, "; "); got != "unselect node of data-web-0" {
		t.Errorf("writes: %s", got)
	}
	if got := f.drain(); len(got) != 1 || got[0] != `Warning ProvisioningFailed failed to get target node: node "kroll-node-9" not found` {
		t.Errorf("events %q", got)
	}
}

func TestProvisioner_deletesReleasedVolumesPerReclaimPolicy(t *testing.T) {
	node := newNode("kroll-node-1", true)
	released := func(name string, reclaim corev1.PersistentVolumeReclaimPolicy) *corev1.PersistentVolume {
		v := newVolume(newClaim(name, DefaultClassName, ""), standardClass(), node)
		v.Spec.PersistentVolumeReclaimPolicy = reclaim
		v.Status.Phase = corev1.VolumeReleased
		return v
	}
	f := newFixture(t, released("a", corev1.PersistentVolumeReclaimDelete), released("b", corev1.PersistentVolumeReclaimRetain))
	for _, name := range []string{"pvc-uid-a", "pvc-uid-b", "pvc-gone"} {
		if err := f.p.syncVolume(context.Background(), name); err != nil {
			t.Fatal(err)
		}
	}
	if got := strings.Join(f.writes.actions, "; "); got != "delete pvc-uid-a" {
		t.Errorf("writes: %s; want only the Delete volume deleted", got)
	}
}

func TestEnsureDefaultClass(t *testing.T) {
	retain := corev1.PersistentVolumeReclaimRetain
	edited := DefaultClass()
	edited.ReclaimPolicy = &retain
	otherDefault := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "fast", Annotations: map[string]string{annotationDefaultClass: "true"}}, Provisioner: "x"}
	tests := []struct {
		name     string
		existing []runtime.Object
		want     string
	}{
		{"a new cluster gets standard, the default", nil, "standard(default, kroll.dev/simulated-local, WaitForFirstConsumer, Delete)"},
		{"a user's edit of standard survives a restart", []runtime.Object{edited}, "standard(default, kroll.dev/simulated-local, WaitForFirstConsumer, Retain)"},
		{"another default class: standard is not brought back beside it", []runtime.Object{otherDefault}, "fast(default, x, <nil>, <nil>)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client := fake.NewClientset(tt.existing...)
			if err := EnsureDefaultClass(context.Background(), client); err != nil {
				t.Fatal(err)
			}
			list, err := client.StorageV1().StorageClasses().List(context.Background(), metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, c := range list.Items {
				mode, reclaim := "<nil>", "<nil>"
				if c.VolumeBindingMode != nil {
					mode = string(*c.VolumeBindingMode)
				}
				if c.ReclaimPolicy != nil {
					reclaim = string(*c.ReclaimPolicy)
				}
				got = append(got, fmt.Sprintf("%s(default, %s, %s, %s)", c.Name, c.Provisioner, mode, reclaim))
				if !isDefault(&c) {
					got[len(got)-1] = strings.Replace(got[len(got)-1], "default", "not default", 1)
				}
			}
			if strings.Join(got, " ") != tt.want {
				t.Errorf("classes %v, want %s", got, tt.want)
			}
		})
	}
}

// emptyNodes is a node cache that has seen no node yet.
type emptyNodes struct{}

func (emptyNodes) List(labels.Selector) ([]*corev1.Node, error) { return nil, nil }
func (emptyNodes) Get(name string) (*corev1.Node, error) {
	return nil, apierrors.NewNotFound(corev1.Resource("nodes"), name)
}
