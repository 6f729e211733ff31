package replicaset

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/record"

	"github.com/kroll-dev/kroll/pkg/controller"
	"github.com/kroll-dev/kroll/pkg/gates"
	"github.com/kroll-dev/kroll/pkg/inplace"
)

func TestSlowStartBatch(t *testing.T) {
	tests := []struct {
		name          string
		count, failAt int // failAt: the call number (1-based) from which calls fail; 0 never
		wantOK, calls int
	}{
		{"10 creates in batches 1, 2, 4, 3", 10, 0, 10, 10},
		{"a failure in the first batch stops at once", 10, 1, 0, 1},
		{"a failure in the third batch (calls 4–7) ends after it", 10, 5, 4, 7},
		{"nothing to do", 0, 0, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			calls := 0
			mu := make(chan struct{}, 1)
			ok, err := controller.SlowStartBatch(tt.count, 1, func() error {
				mu <- struct{}{}
				calls++
				n := calls
				<-mu
				if tt.failAt > 0 && n >= tt.failAt {
					return errors.New("quota exceeded")
				}
				return nil
			})
			if ok != tt.wantOK || calls != tt.calls || (err != nil) != (tt.failAt > 0) {
				t.Errorf("succeeded %d of %d calls (err %v), want %d of %d", ok, calls, err, tt.wantOK, tt.calls)
			}
		})
	}
}

// newReplicaSet is a ReplicaSet selecting app=web.
func newReplicaSet(name string, replicas int32) *appsv1.ReplicaSet {
	return &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(name + "-uid"), Generation: 1},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx"}}},
			},
		},
	}
}

// ownedPod is a Running, Ready pod of rs.
func ownedPod(rs *appsv1.ReplicaSet, name string) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(name), Labels: map[string]string{"app": "web"},
			OwnerReferences: []metav1.OwnerReference{rsControllerRef(rs)}, CreationTimestamp: metav1.Now()},
		Spec: corev1.PodSpec{NodeName: "n1"},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
			{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(time.Now().Add(-time.Hour))}}},
	}
	return p
}

// fixture is a controller on a fake clientset with seeded informers and a fake pod control.
type fixture struct {
	c      *Controller
	client *fake.Clientset
	pods   *controller.FakePodControl
}

func newFixture(t *testing.T, objects ...any) *fixture {
	t.Helper()
	client := fake.NewClientset()
	factory := informers.NewSharedInformerFactory(client, 0)
	rsInformer, podInformer := factory.Apps().V1().ReplicaSets(), factory.Core().V1().Pods()
	c, err := New(client, rsInformer, podInformer, record.NewFakeRecorder(100))
	if err != nil {
		t.Fatal(err)
	}
	pods := &controller.FakePodControl{}
	c.podControl = pods
	for _, o := range objects {
		switch o := o.(type) {
		case *appsv1.ReplicaSet:
			if err := rsInformer.Informer().GetIndexer().Add(o); err != nil {
				t.Fatal(err)
			}
			if _, err := client.AppsV1().ReplicaSets(o.Namespace).Create(context.Background(), o, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		case *corev1.Pod:
			if err := podInformer.Informer().GetIndexer().Add(o); err != nil {
				t.Fatal(err)
			}
		}
	}
	return &fixture{c: c, client: client, pods: pods}
}

func TestSync_createsMissingPodsOnceUntilObserved(t *testing.T) {
	rs := newReplicaSet("web", 3)
	f := newFixture(t, rs, ownedPod(rs, "web-a"))
	if err := f.c.sync(context.Background(), "default/web"); err != nil {
		t.Fatal(err)
	}
	if len(f.pods.Created) != 2 {
		t.Fatalf("created %d pods, want 2", len(f.pods.Created))
	}
	p := f.pods.Created[0]
	if p.GenerateName != "web-" || p.Labels["app"] != "web" || !metav1.IsControlledBy(p, rs) {
		t.Errorf("created pod: generateName %q labels %v owners %v", p.GenerateName, p.Labels, p.OwnerReferences)
	}
	// The cache has not seen the creates: a second sync must not create again.
	if err := f.c.sync(context.Background(), "default/web"); err != nil {
		t.Fatal(err)
	}
	if len(f.pods.Created) != 2 {
		t.Errorf("a stale cache made the controller create %d pods in all, want 2", len(f.pods.Created))
	}
}

func TestSync_deletesTheMostExpendablePods(t *testing.T) {
	rs := newReplicaSet("web", 1)
	ready := ownedPod(rs, "web-ready")
	notReady := ownedPod(rs, "web-not-ready")
	notReady.Status.Conditions[0].Status = corev1.ConditionFalse
	pending := ownedPod(rs, "web-pending")
	pending.Status.Phase = corev1.PodPending
	f := newFixture(t, rs, ready, notReady, pending)
	if err := f.c.sync(context.Background(), "default/web"); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(f.pods.Deleted) != "[web-pending web-not-ready]" && fmt.Sprint(f.pods.Deleted) != "[web-not-ready web-pending]" {
		t.Errorf("deleted %v, want the pending and the not-ready pod", f.pods.Deleted)
	}
}

// With the DeploymentReplicaSetTerminatingReplicas gate off the status leaves
// terminatingReplicas out, as upstream's does: the API server drops the field then,
// and a controller writing 1 would see nil and write again at every sync.
func TestSync_terminatingReplicasGateOff(t *testing.T) {
	rs := newReplicaSet("web", 1)
	rs.Generation = 2
	rs.Status = appsv1.ReplicaSetStatus{Replicas: 2, FullyLabeledReplicas: 2, ReadyReplicas: 2, AvailableReplicas: 2, ObservedGeneration: 1}
	thirty := int64(30)
	graceful := ownedPod(rs, "web-graceful")
	graceful.Spec.TerminationGracePeriodSeconds = &thirty
	f := newFixture(t, rs, graceful, ownedPod(rs, "web-kept"))
	f.c.SetFeatureGates(gates.Gates{DeploymentReplicaSetTerminatingReplicas: false})
	if err := f.c.sync(context.Background(), "default/web"); err != nil {
		t.Fatal(err)
	}
	got, err := f.client.AppsV1().ReplicaSets("default").Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if st := got.Status; st.Replicas != 1 || st.ObservedGeneration != 2 || st.TerminatingReplicas != nil {
		t.Errorf("status %+v (terminating %v); want 1 replica, observedGeneration 2, terminatingReplicas left out", st, ptrValue(st.TerminatingReplicas))
	}
}

// The sync that deletes pods reports them gone in its own status write: the write the
// cache's sight of the deletes would make is saved. A pod with a grace period is
// terminating until its kubelet removes it; one with none was removed by the delete.
func TestSync_deletedPodsLeaveTheStatusAtOnce(t *testing.T) {
	rs := newReplicaSet("web", 1)
	rs.Generation = 2
	rs.Status = appsv1.ReplicaSetStatus{Replicas: 3, FullyLabeledReplicas: 3, ReadyReplicas: 1, AvailableReplicas: 1, ObservedGeneration: 1}
	zero, thirty := int64(0), int64(30)
	removed, graceful := ownedPod(rs, "web-removed"), ownedPod(rs, "web-graceful")
	for _, p := range []*corev1.Pod{removed, graceful} {
		p.Status.Conditions[0].Status = corev1.ConditionFalse // deleted before a ready pod
	}
	removed.Spec.TerminationGracePeriodSeconds = &zero
	graceful.Spec.TerminationGracePeriodSeconds = &thirty
	f := newFixture(t, rs, removed, graceful, ownedPod(rs, "web-kept"))
	if err := f.c.sync(context.Background(), "default/web"); err != nil {
		t.Fatal(err)
	}
	if deleted := sets.New(f.pods.Deleted...); !deleted.Equal(sets.New("web-removed", "web-graceful")) {
		t.Fatalf("deleted %v, want web-removed and web-graceful", f.pods.Deleted)
	}
	got, err := f.client.AppsV1().ReplicaSets("default").Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	st := got.Status
	if st.Replicas != 1 || st.ReadyReplicas != 1 || st.AvailableReplicas != 1 || st.ObservedGeneration != 2 ||
		st.TerminatingReplicas == nil || *st.TerminatingReplicas != 1 {
		t.Errorf("status %+v (terminating %v); want 1 replica ready and available, 1 terminating, observedGeneration 2", st, ptrValue(st.TerminatingReplicas))
	}
}

// The hand-off rule of in-place updates (see the Deployment package doc): a pod with
// an in-place State counts towards enough pods, never towards too many.
func TestSync_podsMidInPlaceUpdateAreNeitherReplacedNorSurplus(t *testing.T) {
	mid := func(p *corev1.Pod) *corev1.Pod {
		p.Annotations = map[string]string{inplace.StateAnnotation: `{"revision":"b"}`}
		return p
	}
	tests := []struct {
		name             string
		replicas         int32
		settled, leaving int
		created, deleted int
	}{
		{"shrunk past the leaving pods: nothing to do", 2, 2, 1, 0, 0},
		{"not yet shrunk: nothing to do", 3, 2, 1, 0, 0},
		{"pods arrived before the size grew: nothing to do", 1, 1, 2, 0, 0},
		{"settled pods beyond the size: only those are deleted", 1, 3, 1, 0, 2},
		{"fewer pods than replicas, mid-update ones included: create", 5, 2, 1, 2, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rs := newReplicaSet("web", tt.replicas)
			objects := []any{rs}
			for i := 0; i < tt.settled; i++ {
				objects = append(objects, ownedPod(rs, fmt.Sprintf("settled-%d", i)))
			}
			for i := 0; i < tt.leaving; i++ {
				objects = append(objects, mid(ownedPod(rs, fmt.Sprintf("mid-%d", i))))
			}
			f := newFixture(t, objects...)
			if err := f.c.sync(context.Background(), "default/web"); err != nil {
				t.Fatal(err)
			}
			if len(f.pods.Created) != tt.created || len(f.pods.Deleted) != tt.deleted {
				t.Errorf("created %d, deleted %v; want %d created, %d deleted", len(f.pods.Created), f.pods.Deleted, tt.created, tt.deleted)
			}
			for _, name := range f.pods.Deleted {
				if strings.HasPrefix(name, "mid-") {
					t.Errorf("deleted %s, a pod mid-update", name)
				}
			}
		})
	}
}

// siblings are two ReplicaSets of the Deployment web, "old" and "new", of the given
// sizes: those between which pods are handed over.
func siblings(oldReplicas, newReplicas int32) (old, taker *appsv1.ReplicaSet) {
	deployment := metav1.OwnerReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", UID: "web-uid", Controller: ptr(true)}
	old, taker = newReplicaSet("old", oldReplicas), newReplicaSet("new", newReplicas)
	old.OwnerReferences, taker.OwnerReferences = []metav1.OwnerReference{deployment}, []metav1.OwnerReference{deployment}
	return old, taker
}

// The hand-over records of in-place updates (see the Deployment package doc): a pod
// its ReplicaSet names leaving, or one another names arriving, counts towards enough
// pods and never towards too many; the taking ReplicaSet takes over each arriving pod
// whose ReplicaSet names it leaving, in one write, and counts only those.
func TestSync_handOverRecords(t *testing.T) {
	names := func(n ...string) sets.Set[string] { return sets.New(n...) }
	tests := []struct {
		name               string
		giverReplicas      int32
		giverPods          []string
		leaving            sets.Set[string]
		takerReplicas      int32
		takerPods          []string
		arriving           sets.Set[string]
		sync               string
		created, takenOver int
		deleted            int
	}{
		{"giver shrunk past its leaving pods: keeps them", 2, []string{"a", "b", "c"}, names("c"), 0, nil, nil, "old", 0, 0, 0},
		{"giver shrunk past more than its leaving pods: deletes only others", 1, []string{"a", "b", "c"}, names("c"), 0, nil, nil, "old", 0, 0, 1},
		{"taker grown for arriving pods: takes them over, creates none", 3, []string{"a", "b", "c"}, names("b", "c"), 3, []string{"x"}, names("b", "c"), "new", 0, 2, 0},
		{"arriving pod not named leaving by its ReplicaSet: created instead", 3, []string{"a", "b", "c"}, names("b"), 3, []string{"x"}, names("b", "c"), "new", 1, 1, 0},
		{"arrived pods still named: never surplus", 2, []string{"a"}, nil, 1, []string{"x", "b", "c"}, names("b", "c"), "new", 0, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old, taker := siblings(tt.giverReplicas, tt.takerReplicas)
			inplace.SetNames(old, inplace.LeavingAnnotation, tt.leaving)
			inplace.SetNames(taker, inplace.ArrivingAnnotation, tt.arriving)
			objects := []any{old, taker}
			for _, n := range tt.giverPods {
				objects = append(objects, ownedPod(old, n))
			}
			for _, n := range tt.takerPods {
				objects = append(objects, ownedPod(taker, n))
			}
			f := newFixture(t, objects...)
			if err := f.c.sync(context.Background(), "default/"+tt.sync); err != nil {
				t.Fatal(err)
			}
			if len(f.pods.Created) != tt.created || len(f.pods.Patched) != tt.takenOver || len(f.pods.Deleted) != tt.deleted {
				t.Errorf("created %d, took over %v, deleted %v; want %d created, %d taken over, %d deleted",
					len(f.pods.Created), f.pods.Patched, f.pods.Deleted, tt.created, tt.takenOver, tt.deleted)
			}
			for _, name := range f.pods.Deleted {
				if tt.leaving.Has(name) || tt.arriving.Has(name) {
					t.Errorf("deleted %s, a pod being handed over", name)
				}
			}
		})
	}
}

// Given a pod handed over from old to new, when the cache shows its take-over between
// the sync's read of the arrivals and its read of its own pods, then the pod is counted
// once: nothing is created for it, and it is not taken over again.
func TestSync_takeOverSeenMidSync(t *testing.T) {
	old, taker := siblings(0, 2)
	inplace.SetNames(old, inplace.LeavingAnnotation, sets.New("b"))
	inplace.SetNames(taker, inplace.ArrivingAnnotation, sets.New("b"))
	leaving, arrived := ownedPod(old, "b"), ownedPod(taker, "b")
	f := newFixture(t, old, taker, ownedPod(taker, "a"), arrived)
	// The first read of b (the arrivals) sees it as it was; the indexer, read after,
	// shows it taken over.
	f.c.podLister = beforeTakeOver{PodLister: f.c.podLister, pod: leaving}
	if err := f.c.sync(context.Background(), "default/new"); err != nil {
		t.Fatal(err)
	}
	if len(f.pods.Created) != 0 || len(f.pods.Patched) != 0 {
		t.Errorf("created %d, took over %v; want neither: b is new's already", len(f.pods.Created), f.pods.Patched)
	}
}

// Given a pod taken over, when the next sync runs on a cache that does not show the
// take-over yet, then it sends nothing (the patch would fail on its stale
// resourceVersion, a request spent); once the cache shows it, the ReplicaSet syncs.
func TestSync_takeOverNotSentAgainOnAStaleCache(t *testing.T) {
	old, taker := siblings(0, 2)
	inplace.SetNames(old, inplace.LeavingAnnotation, sets.New("b"))
	inplace.SetNames(taker, inplace.ArrivingAnnotation, sets.New("b"))
	f := newFixture(t, old, taker, ownedPod(taker, "a"), ownedPod(old, "b"))
	pods := &storeVersion{rv: "10"}
	f.c.fence = controller.NewFence(map[string]controller.VersionSource{"pods": pods})
	f.pods.PatchedVersion = "11"
	for range 2 {
		if err := f.c.sync(context.Background(), "default/new"); err != nil {
			t.Fatal(err)
		}
	}
	if fmt.Sprint(f.pods.Patched) != "[b]" {
		t.Errorf("patched %v, want b once", f.pods.Patched)
	}
	if !f.c.fence.HoldBack("default/new", f.c.queue) {
		t.Error("the fence does not hold the ReplicaSet back while the cache does not show the take-over")
	}
	pods.rv = "11"
	if f.c.fence.HoldBack("default/new", f.c.queue) {
		t.Error("the fence holds the ReplicaSet back once the cache shows the take-over")
	}
}

// storeVersion is an informer store's newest applied resourceVersion.
type storeVersion struct{ rv string }

func (s *storeVersion) LastStoreSyncResourceVersion() string { return s.rv }

// beforeTakeOver is a pod lister whose Get of pod's name returns pod.
type beforeTakeOver struct {
	corelisters.PodLister
	pod *corev1.Pod
}

func (l beforeTakeOver) Pods(namespace string) corelisters.PodNamespaceLister {
	return beforeTakeOverNS{l.PodLister.Pods(namespace), l.pod}
}

type beforeTakeOverNS struct {
	corelisters.PodNamespaceLister
	pod *corev1.Pod
}

func (l beforeTakeOverNS) Get(name string) (*corev1.Pod, error) {
	if name == l.pod.Name {
		return l.pod, nil
	}
	return l.PodNamespaceLister.Get(name)
}

// Given a ReplicaSet its Deployment resized while it synced (the cache holds the older
// object), then the status is written over the resized spec in one request, with the
// observedGeneration of the spec the sync acted on; and a ReplicaSet deleted and created
// again under its name meanwhile is not written.
func TestSync_statusIsWrittenInOneRequestOverANewerSpec(t *testing.T) {
	for _, replaced := range []bool{false, true} {
		rs := newReplicaSet("web", 2)
		f := newFixture(t, rs, ownedPod(rs, "web-a"), ownedPod(rs, "web-b"))
		resized := rs.DeepCopy()
		resized.Generation, *resized.Spec.Replicas = 2, 1
		if replaced {
			resized.UID = "web-uid-2"
		}
		if _, err := f.client.AppsV1().ReplicaSets("default").Update(context.Background(), resized, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		f.client.ClearActions()
		err := f.c.sync(context.Background(), "default/web")
		got, getErr := f.client.AppsV1().ReplicaSets("default").Get(context.Background(), "web", metav1.GetOptions{})
		if getErr != nil {
			t.Fatal(getErr)
		}
		var writes []string
		for _, a := range f.client.Actions()[:len(f.client.Actions())-1] { // the Get above aside
			writes = append(writes, a.GetVerb()+" "+a.GetResource().Resource+"/"+a.GetSubresource())
		}
		if replaced {
			if err == nil || got.Status.Replicas != 0 {
				t.Errorf("replaced ReplicaSet: sync error %v, status %+v; want an error and no status written", err, got.Status)
			}
			continue
		}
		if err != nil {
			t.Fatalf("sync: %v", err)
		}
		if len(writes) != 1 || writes[0] != "patch replicasets/status" || got.Status.Replicas != 2 || got.Status.ObservedGeneration != 1 || *got.Spec.Replicas != 1 {
			t.Errorf("requests %v, spec %d, status %+v; want one status patch (2 replicas, observedGeneration 1) over the resized spec (1)",
				writes, *got.Spec.Replicas, got.Status)
		}
	}
}

// A ReplicaSet of a Deployment opted in to in-place updates creates pods with the
// readiness gate; other ReplicaSets do not.
func TestSync_inPlaceReadinessGate(t *testing.T) {
	for _, optedIn := range []bool{false, true} {
		rs := newReplicaSet("web", 1)
		rs.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", UID: "d-uid", Controller: ptr(true)}}
		if optedIn {
			rs.Annotations = map[string]string{inplace.StrategyAnnotation: string(inplace.IfPossible)}
		}
		f := newFixture(t, rs)
		if err := f.c.sync(context.Background(), "default/web"); err != nil {
			t.Fatal(err)
		}
		if len(f.pods.Created) != 1 {
			t.Fatalf("created %d pods", len(f.pods.Created))
		}
		if got := inplace.HasGate(f.pods.Created[0]); got != optedIn {
			t.Errorf("opted in %v: pod has the gate %v", optedIn, got)
		}
	}
}

func ptr[T any](v T) *T { return &v }

func TestSync_adoptsOrphansAndReleasesPodsItNoLongerSelects(t *testing.T) {
	rs := newReplicaSet("web", 2)
	orphan := ownedPod(rs, "orphan")
	orphan.OwnerReferences = nil
	strayed := ownedPod(rs, "strayed")
	strayed.Labels = map[string]string{"app": "other"}
	f := newFixture(t, rs, orphan, strayed)
	if err := f.c.sync(context.Background(), "default/web"); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(f.pods.Patched) != "[orphan strayed]" && fmt.Sprint(f.pods.Patched) != "[strayed orphan]" {
		t.Errorf("patched %v, want the orphan adopted and the strayed pod released", f.pods.Patched)
	}
	if len(f.pods.Created) != 1 {
		t.Errorf("created %d pods, want 1 (2 wanted, 1 adopted)", len(f.pods.Created))
	}
}

func TestSync_failedCreatesBecomeReplicaFailure(t *testing.T) {
	rs := newReplicaSet("web", 4)
	f := newFixture(t, rs)
	f.pods.CreateErr, f.pods.FailAfter = errors.New(`pods "web-x" is forbidden: exceeded quota: pods`), 1
	if err := f.c.sync(context.Background(), "default/web"); err == nil {
		t.Fatal("a failing create was not reported")
	}
	got, err := f.client.AppsV1().ReplicaSets("default").Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := condition(&got.Status, appsv1.ReplicaSetReplicaFailure)
	if c == nil || c.Reason != "FailedCreate" || c.Status != corev1.ConditionTrue {
		t.Fatalf("ReplicaFailure condition: %+v", c)
	}
	if len(f.pods.Created) != 1 {
		t.Errorf("created %d pods; slow start should stop after the batch that failed (1 ok, then a batch of 2 failing)", len(f.pods.Created))
	}
}

func TestCalculateStatus(t *testing.T) {
	rs := newReplicaSet("web", 3)
	rs.Spec.MinReadySeconds = 30
	ready := ownedPod(rs, "a") // ready for an hour
	fresh := ownedPod(rs, "b") // ready for 10s
	fresh.Status.Conditions[0].LastTransitionTime = metav1.NewTime(time.Now().Add(-10 * time.Second))
	unlabelled := ownedPod(rs, "c")
	unlabelled.Labels = map[string]string{"app": "web", "extra": "x"}
	rs.Spec.Template.Labels = map[string]string{"app": "web", "tier": "front"}
	terminating := ownedPod(rs, "d")
	// Taken over by an in-place update: still ready on the old image, about to restart.
	restarting := ownedPod(rs, "e")
	restarting.Spec.Containers = []corev1.Container{{Name: "app", Image: "nginx:2"}}
	restarting.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", Image: "docker.io/library/nginx:1", Ready: true}}
	status := CalculateStatus(rs, []*corev1.Pod{ready, fresh, unlabelled, restarting}, []*corev1.Pod{terminating}, nil, time.Now())
	if status.Replicas != 4 || status.ReadyReplicas != 4 || status.AvailableReplicas != 2 || status.FullyLabeledReplicas != 0 ||
		status.TerminatingReplicas == nil || *status.TerminatingReplicas != 1 {
		t.Errorf("status %+v: want 4 replicas, 4 ready, 2 available (minReadySeconds 30; one about to restart), 0 fully labelled, 1 terminating", status)
	}
}

func rsControllerRef(rs *appsv1.ReplicaSet) metav1.OwnerReference {
	return (&kind{name: "ReplicaSet", apiVersion: "apps/v1"}).controllerRef(rs)
}

// The ReplicationController controller is the same code on the core/v1 kind: its pods
// name the RC as controller, its status goes to the RC, its selector is a plain map.
func TestSync_replicationController(t *testing.T) {
	client := fake.NewClientset()
	factory := informers.NewSharedInformerFactory(client, 0)
	rcInformer, podInformer := factory.Core().V1().ReplicationControllers(), factory.Core().V1().Pods()
	c, err := NewForReplicationControllers(client, rcInformer, podInformer, record.NewFakeRecorder(100))
	if err != nil {
		t.Fatal(err)
	}
	pods := &controller.FakePodControl{}
	c.podControl = pods
	replicas := int32(3)
	rc := &corev1.ReplicationController{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "web-uid", Generation: 2},
		Spec: corev1.ReplicationControllerSpec{
			Replicas: &replicas,
			Selector: map[string]string{"app": "web"},
			Template: &corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx"}}},
			},
		},
	}
	if _, err := client.CoreV1().ReplicationControllers("default").Create(context.Background(), rc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := rcInformer.Informer().GetIndexer().Add(rc); err != nil {
		t.Fatal(err)
	}
	orphan := ownedPod(newReplicaSet("x", 1), "orphan")
	orphan.OwnerReferences = nil
	other := ownedPod(newReplicaSet("x", 1), "other")
	other.Labels = map[string]string{"app": "db"}
	other.OwnerReferences = nil
	for _, p := range []*corev1.Pod{orphan, other} {
		if err := podInformer.Informer().GetIndexer().Add(p); err != nil {
			t.Fatal(err)
		}
	}

	if err := c.sync(context.Background(), "default/web"); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(pods.Patched) != "[orphan]" {
		t.Errorf("patched %v, want the orphan matching app=web adopted", pods.Patched)
	}
	if len(pods.Created) != 2 {
		t.Fatalf("created %d pods, want 2 (3 wanted, 1 adopted)", len(pods.Created))
	}
	ref := metav1.GetControllerOf(pods.Created[0])
	if ref == nil || ref.APIVersion != "v1" || ref.Kind != "ReplicationController" || ref.UID != rc.UID || pods.Created[0].GenerateName != "web-" {
		t.Errorf("created pod generateName %q controller %+v, want web- owned by ReplicationController web", pods.Created[0].GenerateName, ref)
	}
	got, err := client.CoreV1().ReplicationControllers("default").Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The two pods just created count at once (the API server has them), not ready yet.
	if got.Status.Replicas != 3 || got.Status.FullyLabeledReplicas != 3 || got.Status.ReadyReplicas != 1 || got.Status.AvailableReplicas != 1 || got.Status.ObservedGeneration != 2 {
		t.Errorf("RC status %+v: want 3 replicas (the adopted one ready and available, the 2 created not yet), generation 2 observed", got.Status)
	}
}

// A pod of an in-place Deployment's ReplicaSet counts as available only once the
// kubelet reports its template's cpu and memory: an arrived pod not yet resized, or
// resizing, is Ready but not available; one of a ReplicaSet not opted in is.
func TestCalculateStatus_podsResizing(t *testing.T) {
	cpu := func(q string) corev1.ResourceList {
		return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(q)}
	}
	for _, optedIn := range []bool{true, false} {
		rs := newReplicaSet("web", 3)
		rs.OwnerReferences = []metav1.OwnerReference{{Kind: "Deployment", Name: "web", UID: "d-uid", Controller: ptr(true)}}
		if optedIn {
			rs.Annotations = map[string]string{inplace.StrategyAnnotation: string(inplace.IfPossible)}
		}
		rs.Spec.Template.Spec.Containers = []corev1.Container{{Name: "app", Image: "nginx:1", Resources: corev1.ResourceRequirements{Requests: cpu("200m")}}}
		pod := func(name, spec, reported string) *corev1.Pod {
			p := ownedPod(rs, name)
			p.Spec.Containers = []corev1.Container{{Name: "app", Image: "nginx:1", Resources: corev1.ResourceRequirements{Requests: cpu(spec)}}}
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", Image: "nginx:1", Ready: true,
				Resources: &corev1.ResourceRequirements{Requests: cpu(reported)}}}
			return p
		}
		done, arrived, resizing := pod("a", "200m", "200m"), pod("b", "100m", "100m"), pod("c", "200m", "100m")
		status := CalculateStatus(rs, []*corev1.Pod{done, arrived, resizing}, nil, nil, time.Now())
		want := int32(1)
		if !optedIn {
			want = 3
		}
		if status.ReadyReplicas != 3 || status.AvailableReplicas != want {
			t.Errorf("opted in %v: %d ready, %d available; want 3 ready, %d available", optedIn, status.ReadyReplicas, status.AvailableReplicas, want)
		}
	}
}

// A pod its ReplicaSet names leaving counts among its replicas, not among its ready or
// available ones.
func TestCalculateStatus_podsNamedLeavingAreNeitherReadyNorAvailable(t *testing.T) {
	rs := newReplicaSet("web", 1)
	rs.Annotations = map[string]string{inplace.LeavingAnnotation: "web-a"}
	got := CalculateStatus(rs, []*corev1.Pod{ownedPod(rs, "web-a"), ownedPod(rs, "web-b")}, nil, nil, time.Now())
	if got.Replicas != 2 || got.FullyLabeledReplicas != 2 || got.ReadyReplicas != 1 || got.AvailableReplicas != 1 {
		t.Errorf("status %+v; want 2 replicas, 2 fully labeled, 1 ready, 1 available", got)
	}
}

func TestPutOff(t *testing.T) {
	written := appsv1.ReplicaSetStatus{Replicas: 3, FullyLabeledReplicas: 3, ReadyReplicas: 1, AvailableReplicas: 1, ObservedGeneration: 2}
	tests := []struct {
		name    string
		leaving string // the record's names: leaving, or arriving after a +
		pods    []string
		change  func(*appsv1.ReplicaSetStatus)
		want    statusWait
	}{
		{"web-b left, web-c named leaving is still here: only replicas and fullyLabeledReplicas fell, the write waits", "web-b,web-c", []string{"web-a", "web-c"},
			func(s *appsv1.ReplicaSetStatus) { s.Replicas, s.FullyLabeledReplicas = 2, 2 }, whileLeaving},
		{"the last pod named leaving has left: the write waits for the record's next write", "web-b,web-c", []string{"web-a"},
			func(s *appsv1.ReplicaSetStatus) { s.Replicas, s.FullyLabeledReplicas = 1, 1 }, forRecord},
		{"no hand-over: written", "", []string{"web-a", "web-c"},
			func(s *appsv1.ReplicaSetStatus) { s.Replicas, s.FullyLabeledReplicas = 2, 2 }, writeNow},
		{"a pod became unavailable too: written", "web-b,web-c", []string{"web-a", "web-c"},
			func(s *appsv1.ReplicaSetStatus) { s.Replicas, s.FullyLabeledReplicas, s.AvailableReplicas = 2, 2, 0 }, writeNow},
		{"a new spec observed: written", "web-b,web-c", []string{"web-a", "web-c"},
			func(s *appsv1.ReplicaSetStatus) { s.Replicas, s.FullyLabeledReplicas, s.ObservedGeneration = 2, 2, 3 }, writeNow},
		{"the next pick observed after the last pod left: written", "web-a", []string{"web-a"},
			func(s *appsv1.ReplicaSetStatus) { s.Replicas, s.FullyLabeledReplicas, s.ObservedGeneration = 1, 1, 3 }, writeNow},
		{"more replicas: written", "web-c", []string{"web-a", "web-b", "web-c", "web-d"},
			func(s *appsv1.ReplicaSetStatus) { s.Replicas, s.FullyLabeledReplicas = 4, 4 }, writeNow},
		{"web-d taken over, still restarting onto its new image: the write waits", "+web-d", []string{"web-a", "web-b", "web-c", "web-d*"},
			func(s *appsv1.ReplicaSetStatus) { s.Replicas, s.FullyLabeledReplicas, s.ReadyReplicas = 4, 4, 3 }, forRestarts},
		{"web-d taken over, running its new image: written", "+web-d", []string{"web-a", "web-b", "web-c", "web-d"},
			func(s *appsv1.ReplicaSetStatus) { s.Replicas, s.FullyLabeledReplicas, s.ReadyReplicas = 4, 4, 4 }, writeNow},
		{"web-c restarting, not named arriving: written", "+web-d", []string{"web-a", "web-b", "web-c*", "web-d"},
			func(s *appsv1.ReplicaSetStatus) { s.Replicas, s.FullyLabeledReplicas, s.ReadyReplicas = 4, 4, 3 }, writeNow},
		{"web-d taken over and restarting, no more replicas: written", "+web-d", []string{"web-a", "web-b", "web-d*"},
			func(s *appsv1.ReplicaSetStatus) { s.ReadyReplicas = 2 }, writeNow},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rs := newReplicaSet("web", 1)
			rs.Spec.Template.Spec.Containers[0].Image = "nginx:2"
			rs.Status = written
			rs.Annotations = map[string]string{}
			// A record of names starting with + names them arriving.
			if arriving, ok := strings.CutPrefix(tt.leaving, "+"); ok {
				rs.Annotations[inplace.ArrivingAnnotation] = arriving
			} else if tt.leaving != "" {
				rs.Annotations[inplace.LeavingAnnotation] = tt.leaving
			}
			var active []*corev1.Pod
			for _, name := range tt.pods {
				// A name ending in * is a pod still running the image it had before its
				// take-over set nginx:2.
				restarting := strings.HasSuffix(name, "*")
				p := ownedPod(rs, strings.TrimSuffix(name, "*"))
				p.Spec.Containers = []corev1.Container{{Name: "app", Image: "nginx:2"}}
				p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", Image: "nginx:2", Ready: true,
					State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
				if restarting {
					p.Status.ContainerStatuses[0].Image = "nginx:1"
				}
				active = append(active, p)
			}
			status := written
			tt.change(&status)
			if got := putOff(rs, status, active); got != tt.want {
				t.Errorf("putOff = %v, want %v", got, tt.want)
			}
		})
	}
}

// A status write put off waits maxPutOff from its first wait for the same thing at the
// same generation, whatever the syncs between; another wait, or a new generation,
// starts afresh.
func TestStatusWaits(t *testing.T) {
	var w statusWaits
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	steps := []struct {
		wait       statusWait
		generation int64
		at         time.Duration
		want       time.Duration
	}{
		{forRecord, 2, 0, maxPutOff},
		{forRecord, 2, 300 * time.Millisecond, maxPutOff - 300*time.Millisecond},
		{forRecord, 2, maxPutOff, 0},
		{forRecord, 2, maxPutOff + time.Second, -time.Second},
		{forRecord, 3, maxPutOff + time.Second, maxPutOff},
		{forRestarts, 3, maxPutOff + 2*time.Second, maxPutOff},
	}
	for i, s := range steps {
		if got := w.left("ns/web", s.wait, s.generation, start.Add(s.at)); got != s.want {
			t.Errorf("step %d: left %v, want %v", i, got, s.want)
		}
	}
	if got := w.left("ns/other", forRecord, 3, start); got != maxPutOff {
		t.Errorf("another ReplicaSet: left %v, want %v", got, maxPutOff)
	}
	w.forget("ns/web")
	if got := w.left("ns/web", forRestarts, 3, start.Add(time.Hour)); got != maxPutOff {
		t.Errorf("after forget: left %v, want %v", got, maxPutOff)
	}
}

// Given a ReplicaSet whose pods named leaving have all left, when it syncs, then its
// status write waits for the record's next write, and is made once maxPutOff has
// passed without one; a record rewritten (a new generation) is written at once.
func TestSync_departuresWaitForTheRecord(t *testing.T) {
	for _, rewritten := range []bool{false, true} {
		rs := newReplicaSet("old", 1)
		inplace.SetNames(rs, inplace.LeavingAnnotation, sets.New("web-b"))
		rs.Status = appsv1.ReplicaSetStatus{Replicas: 2, FullyLabeledReplicas: 2, ReadyReplicas: 1, AvailableReplicas: 1, ObservedGeneration: 1,
			TerminatingReplicas: ptr(int32(0))}
		f := newFixture(t, rs, ownedPod(rs, "web-a"))
		now := f.frozenClock()
		if got := f.syncedReplicas(t, "old"); got != 2 {
			t.Fatalf("rewritten %v: status counts %d replicas right after web-b left; want 2, the write waiting", rewritten, got)
		}
		if rewritten {
			next := rs.DeepCopy()
			next.Generation = 2
			if err := f.c.kind.informer.GetIndexer().Update(next); err != nil {
				t.Fatal(err)
			}
			*now = now.Add(maxPutOff / 10)
		} else {
			*now = now.Add(maxPutOff)
		}
		if got := f.syncedReplicas(t, "old"); got != 1 {
			t.Errorf("rewritten %v: status counts %d replicas; want 1", rewritten, got)
		}
	}
}

// Given an in-place Deployment's ReplicaSet that counts a pod taken over, still
// restarting onto its new image, when it syncs, then its status write waits for the
// restart, and is made once the pod runs the image, or once maxPutOff has passed.
func TestSync_takenOverPodsRestartingPutTheReportOff(t *testing.T) {
	for _, restarted := range []bool{true, false} {
		rs := newReplicaSet("new", 2)
		rs.OwnerReferences = []metav1.OwnerReference{{Kind: "Deployment", Name: "web", UID: "d-uid", Controller: ptr(true)}}
		rs.Annotations = map[string]string{inplace.StrategyAnnotation: string(inplace.IfPossible), inplace.ArrivingAnnotation: "web-b"}
		rs.Status = appsv1.ReplicaSetStatus{Replicas: 1, FullyLabeledReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1, ObservedGeneration: 1,
			TerminatingReplicas: ptr(int32(0))}
		pod := func(name, running string) *corev1.Pod {
			p := ownedPod(rs, name)
			p.Spec.Containers = []corev1.Container{{Name: "app", Image: "nginx"}}
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", Image: running, Ready: true,
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
			return p
		}
		takenOver := pod("web-b", "nginx:old")
		f := newFixture(t, rs, pod("web-a", "nginx"), takenOver)
		now := f.frozenClock()
		if got := f.syncedReplicas(t, "new"); got != 1 {
			t.Fatalf("restarted %v: status counts %d replicas while web-b restarts; want 1, the write waiting", restarted, got)
		}
		if restarted {
			if err := f.c.podIndexer.Update(pod("web-b", "nginx")); err != nil {
				t.Fatal(err)
			}
		} else {
			*now = now.Add(maxPutOff)
		}
		if got := f.syncedReplicas(t, "new"); got != 2 {
			t.Errorf("restarted %v: status counts %d replicas; want 2", restarted, got)
		}
	}
}

// frozenClock stops the controller's clock at now, and returns it to move on.
func (f *fixture) frozenClock() *time.Time {
	now := time.Now()
	f.c.now = func() time.Time { return now }
	return &now
}

// syncedReplicas syncs the ReplicaSet name and returns the replicas its status, as the
// API server holds it, counts.
func (f *fixture) syncedReplicas(t *testing.T, name string) int32 {
	t.Helper()
	if err := f.c.sync(context.Background(), "default/"+name); err != nil {
		t.Fatal(err)
	}
	got, err := f.client.AppsV1().ReplicaSets("default").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return got.Status.Replicas
}

// ptrValue is what p points to, or "nil".
func ptrValue[T any](p *T) any {
	if p == nil {
		return "nil"
	}
	return *p
}
