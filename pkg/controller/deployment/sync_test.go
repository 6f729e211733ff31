package deployment

import (
	"context"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"

	"github.com/kroll-dev/kroll/pkg/controller/controllertest"
	"github.com/kroll-dev/kroll/pkg/history"
	"github.com/kroll-dev/kroll/pkg/inplace"
	"github.com/kroll-dev/kroll/pkg/rollout"
)

// newDeployment is a RollingUpdate Deployment of app=web with the given image.
func newDeployment(replicas int32, image, maxSurge, maxUnavailable string) *appsv1.Deployment {
	s, u := intstr.Parse(maxSurge), intstr.Parse(maxUnavailable)
	deadline := int32(600)
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "web-uid", Generation: 1},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: image}}},
			},
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: &s, MaxUnavailable: &u}},
			ProgressDeadlineSeconds: &deadline,
		},
	}
}

// replicaSetOf is d's ReplicaSet for image at revision, sized and available as given,
// annotated as the controller leaves it.
func replicaSetOf(d *appsv1.Deployment, image string, revision, replicas, available int32, age time.Duration) *appsv1.ReplicaSet {
	tmpl := d.Spec.Template.DeepCopy()
	tmpl.Spec.Containers[0].Image = image
	hash := history.TemplateHash(tmpl, nil)
	tmpl.Labels = map[string]string{"app": "web", appsv1.DefaultDeploymentUniqueLabelKey: hash}
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{
			Name: d.Name + "-" + hash, Namespace: d.Namespace, UID: types.UID("rs-" + hash), Labels: tmpl.Labels,
			CreationTimestamp: metav1.NewTime(time.Now().Add(-age)),
			OwnerReferences:   []metav1.OwnerReference{*metav1.NewControllerRef(d, appsv1.SchemeGroupVersion.WithKind("Deployment"))},
			Annotations:       map[string]string{history.RevisionAnnotation: fmt.Sprint(revision)},
		},
		Spec: appsv1.ReplicaSetSpec{Replicas: &replicas, Template: *tmpl,
			Selector: &metav1.LabelSelector{MatchLabels: tmpl.Labels}},
		Status: appsv1.ReplicaSetStatus{Replicas: replicas, ReadyReplicas: available, AvailableReplicas: available},
	}
	for k, v := range rollout.ReplicasAnnotations(d) {
		rs.Annotations[k] = v
	}
	return rs
}

// fixture is a controller on a fake clientset whose listers hold objects.
type fixture struct {
	t        *testing.T
	c        *Controller
	client   *fake.Clientset
	recorder *record.FakeRecorder
	factory  informers.SharedInformerFactory
}

func newFixture(t *testing.T, objects ...runtime.Object) *fixture {
	t.Helper()
	client := fake.NewClientset(objects...)
	factory := informers.NewSharedInformerFactory(client, 0)
	recorder := record.NewFakeRecorder(100)
	c, err := New(client, factory.Apps().V1().Deployments(), factory.Apps().V1().ReplicaSets(), factory.Core().V1().Pods(), factory.Core().V1().Nodes(), recorder)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objects {
		var err error
		switch o := o.(type) {
		case *appsv1.Deployment:
			err = factory.Apps().V1().Deployments().Informer().GetIndexer().Add(o)
		case *appsv1.ReplicaSet:
			err = factory.Apps().V1().ReplicaSets().Informer().GetIndexer().Add(o)
		case *corev1.Pod:
			err = factory.Core().V1().Pods().Informer().GetIndexer().Add(o)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	client.ClearActions()
	return &fixture{t: t, c: c, client: client, recorder: recorder, factory: factory}
}

// sync runs one reconcile pass of default/web.
func (f *fixture) sync() {
	f.t.Helper()
	if err := f.c.sync(context.Background(), "default/web"); err != nil {
		f.t.Fatalf("sync: %v", err)
	}
}

// writes lists the write actions as "verb resource[/subresource] name".
func (f *fixture) writes() []string {
	var out []string
	for _, a := range f.client.Actions() {
		if a.GetVerb() == "get" || a.GetVerb() == "list" || a.GetVerb() == "watch" {
			continue
		}
		res := a.GetResource().Resource
		if a.GetSubresource() != "" {
			res += "/" + a.GetSubresource()
		}
		name := ""
		switch a := a.(type) {
		case k8stesting.CreateAction:
			name = a.GetObject().(metav1.Object).GetName()
		case k8stesting.UpdateAction:
			name = a.GetObject().(metav1.Object).GetName()
		case k8stesting.DeleteAction:
			name = a.GetName()
		case k8stesting.PatchAction:
			name = a.GetName()
		}
		out = append(out, fmt.Sprintf("%s %s %s", a.GetVerb(), res, name))
	}
	return out
}

// lastReplicaSetWrite returns the last ReplicaSet created, updated or patched (as the
// patch left it).
func (f *fixture) lastReplicaSetWrite() *appsv1.ReplicaSet {
	f.t.Helper()
	acts := f.client.Actions()
	for i := len(acts) - 1; i >= 0; i-- {
		if o, ok := acts[i].(interface{ GetObject() runtime.Object }); ok {
			if rs, ok := o.GetObject().(*appsv1.ReplicaSet); ok {
				return rs
			}
		}
		if p, ok := acts[i].(k8stesting.PatchAction); ok && p.GetResource().Resource == "replicasets" {
			rs, err := f.client.AppsV1().ReplicaSets(p.GetNamespace()).Get(context.Background(), p.GetName(), metav1.GetOptions{})
			if err != nil {
				f.t.Fatal(err)
			}
			return rs
		}
	}
	f.t.Fatal("no ReplicaSet was written")
	return nil
}

func (f *fixture) events() string {
	return strings.Join(controllertest.Drain(f.recorder), "\n")
}

func TestSync_newDeploymentCreatesItsReplicaSet(t *testing.T) {
	d := newDeployment(3, "nginx:1.14.2", "25%", "25%")
	f := newFixture(t, d)
	f.sync()
	rs := f.lastReplicaSetWrite()
	hash := history.TemplateHash(&d.Spec.Template, nil)
	if rs.Name != "web-"+hash || rs.Labels[appsv1.DefaultDeploymentUniqueLabelKey] != hash || rs.Spec.Selector.MatchLabels[appsv1.DefaultDeploymentUniqueLabelKey] != hash {
		t.Errorf("ReplicaSet %s labels %v selector %v: want web-%s with the hash label on both", rs.Name, rs.Labels, rs.Spec.Selector.MatchLabels, hash)
	}
	if *rs.Spec.Replicas != 3 || rs.Annotations[history.RevisionAnnotation] != "1" ||
		rs.Annotations[rollout.DesiredReplicasAnnotation] != "3" || rs.Annotations[rollout.MaxReplicasAnnotation] != "4" {
		t.Errorf("ReplicaSet replicas %d annotations %v", *rs.Spec.Replicas, rs.Annotations)
	}
	if ev := f.events(); !strings.Contains(ev, "Normal ScalingReplicaSet Scaled up replica set web-"+hash+" from 0 to 3") {
		t.Errorf("events: %q", ev)
	}
	got, _ := f.client.AppsV1().Deployments("default").Get(context.Background(), "web", metav1.GetOptions{})
	if got.Annotations[history.RevisionAnnotation] != "1" {
		t.Errorf("deployment revision %q, want 1", got.Annotations[history.RevisionAnnotation])
	}
	if c := rollout.Condition(&got.Status, appsv1.DeploymentProgressing); c == nil || c.Reason != rollout.ReasonNewReplicaSetCreated {
		t.Errorf("Progressing condition %+v, want NewReplicaSetCreated", c)
	}
}

func TestSync_templateChangeSurgesOneNewPodFirst(t *testing.T) {
	d := newDeployment(3, "nginx:1.16.1", "25%", "25%") // surge 1, unavailable 0
	old := replicaSetOf(d, "nginx:1.14.2", 1, 3, 3, time.Hour)
	f := newFixture(t, d, old)
	f.sync()
	rs := f.lastReplicaSetWrite()
	if rs.Spec.Template.Spec.Containers[0].Image != "nginx:1.16.1" || *rs.Spec.Replicas != 1 || rs.Annotations[history.RevisionAnnotation] != "2" {
		t.Errorf("new ReplicaSet %s image %s replicas %d revision %s: want nginx:1.16.1, 1, 2",
			rs.Name, rs.Spec.Template.Spec.Containers[0].Image, *rs.Spec.Replicas, rs.Annotations[history.RevisionAnnotation])
	}
	for _, w := range f.writes() {
		if strings.HasPrefix(w, "update replicasets "+old.Name) {
			t.Errorf("the old ReplicaSet was scaled in the same pass as the new one was created: %v", f.writes())
		}
	}
}

// A pass that creates the new ReplicaSet gives the Deployment its revision and
// NewReplicaSetCreated. After a template change the pass's status write carries them
// (observedGeneration moves on); a ReplicaSet made again at the same generation (its
// predecessor deleted) has them written at once, and the pass's own status write is
// then made on the version that write returned, not refused as a conflict with it.
func TestSync_newReplicaSetStatusWrites(t *testing.T) {
	for _, tc := range []struct {
		name               string
		observedGeneration int64
		statusWrites       int
	}{
		{"template changed", 1, 1},
		{"new ReplicaSet deleted", 2, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := newDeployment(3, "nginx:1.16.1", "25%", "25%")
			d.Generation, d.Status.ObservedGeneration, d.ResourceVersion = 2, tc.observedGeneration, "1"
			d.Status.Replicas, d.Status.ReadyReplicas, d.Status.AvailableReplicas = 3, 3, 3 // no progress to report
			f := newFixture(t, d, replicaSetOf(d, "nginx:1.14.2", 1, 3, 3, time.Hour))
			f.client.PrependReactor("update", "deployments", optimisticLocking(f.client.Tracker()))
			f.sync()
			var statusWrites int
			for _, w := range f.writes() {
				if w == "update deployments/status web" {
					statusWrites++
				}
			}
			if statusWrites != tc.statusWrites {
				t.Errorf("writes %v; want the Deployment's status written %d times", f.writes(), tc.statusWrites)
			}
			got, _ := f.client.AppsV1().Deployments("default").Get(context.Background(), "web", metav1.GetOptions{})
			cond := rollout.Condition(&got.Status, appsv1.DeploymentProgressing)
			if got.Annotations[history.RevisionAnnotation] != "2" || got.Status.Replicas != 3 || got.Status.ObservedGeneration != 2 ||
				cond == nil || cond.Reason != rollout.ReasonNewReplicaSetCreated {
				t.Errorf("revision %q, replicas %d, observedGeneration %d, Progressing %+v; want 2, 3, 2, NewReplicaSetCreated",
					got.Annotations[history.RevisionAnnotation], got.Status.Replicas, got.Status.ObservedGeneration, cond)
			}
		})
	}
}

// optimisticLocking makes a fake clientset's updates of Deployments (spec or status)
// refuse a resourceVersion that is not the stored one, as the API server does, and
// raise it on success.
func optimisticLocking(tracker k8stesting.ObjectTracker) k8stesting.ReactionFunc {
	return func(action k8stesting.Action) (bool, runtime.Object, error) {
		update := action.(k8stesting.UpdateAction)
		next := update.GetObject().(*appsv1.Deployment).DeepCopy()
		stored, err := tracker.Get(update.GetResource(), next.Namespace, next.Name)
		if err != nil {
			return true, nil, err
		}
		version := stored.(*appsv1.Deployment).ResourceVersion
		if next.ResourceVersion != version {
			return true, nil, apierrors.NewConflict(update.GetResource().GroupResource(), next.Name, fmt.Errorf("the object has been modified"))
		}
		n, _ := strconv.Atoi(version)
		next.ResourceVersion = strconv.Itoa(n + 1)
		return true, next, tracker.Update(update.GetResource(), next, next.Namespace)
	}
}

func TestSync_oldReplicaSetGoesDownAsNewPodsBecomeAvailable(t *testing.T) {
	d := newDeployment(3, "nginx:1.16.1", "25%", "25%")
	old := replicaSetOf(d, "nginx:1.14.2", 1, 3, 3, time.Hour)
	cur := replicaSetOf(d, "nginx:1.16.1", 2, 1, 1, time.Minute)
	f := newFixture(t, d, old, cur)
	f.sync()
	if rs := f.lastReplicaSetWrite(); rs.Name != old.Name || *rs.Spec.Replicas != 2 {
		t.Errorf("wrote %s at %d, want %s scaled down to 2 (4 pods − 3 minimum available − 0 unavailable new)", rs.Name, *rs.Spec.Replicas, old.Name)
	}
	if ev := f.events(); !strings.Contains(ev, "Scaled down replica set "+old.Name+" from 3 to 2") {
		t.Errorf("events: %q", ev)
	}
}

func TestSync_pausedDeploymentStartsNoRollout(t *testing.T) {
	d := newDeployment(3, "nginx:1.16.1", "25%", "25%")
	d.Spec.Paused = true
	old := replicaSetOf(d, "nginx:1.14.2", 1, 3, 3, time.Hour)
	f := newFixture(t, d, old)
	f.sync()
	for _, w := range f.writes() {
		if strings.HasPrefix(w, "create replicasets") {
			t.Errorf("a paused Deployment created a ReplicaSet: %v", f.writes())
		}
	}
	got, _ := f.client.AppsV1().Deployments("default").Get(context.Background(), "web", metav1.GetOptions{})
	if c := rollout.Condition(&got.Status, appsv1.DeploymentProgressing); c == nil || c.Status != corev1.ConditionUnknown || c.Reason != rollout.ReasonDeploymentPaused {
		t.Errorf("Progressing condition %+v, want Unknown/DeploymentPaused", c)
	}
}

func TestSync_scalingOneReplicaSetDeployment(t *testing.T) {
	d := newDeployment(5, "nginx:1.14.2", "25%", "25%")
	rs := replicaSetOf(newDeployment(3, "nginx:1.14.2", "25%", "25%"), "nginx:1.14.2", 1, 3, 3, time.Hour) // sized for 3
	f := newFixture(t, d, rs)
	f.sync()
	if got := f.lastReplicaSetWrite(); *got.Spec.Replicas != 5 || got.Annotations[rollout.DesiredReplicasAnnotation] != "5" {
		t.Errorf("ReplicaSet at %d, desired-replicas %s; want 5 and 5", *got.Spec.Replicas, got.Annotations[rollout.DesiredReplicasAnnotation])
	}
}

func TestSync_recreateScalesOldToZeroBeforeCreatingNew(t *testing.T) {
	d := newDeployment(3, "nginx:1.16.1", "25%", "25%")
	d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
	old := replicaSetOf(d, "nginx:1.14.2", 1, 3, 3, time.Hour)
	f := newFixture(t, d, old)
	f.sync()
	w := f.writes()
	if len(w) == 0 || w[0] != "update replicasets "+old.Name {
		t.Fatalf("writes %v: want the old ReplicaSet updated first", w)
	}
	for _, x := range w {
		if strings.HasPrefix(x, "create replicasets") {
			t.Errorf("Recreate created the new ReplicaSet while old pods exist: %v", w)
		}
	}
	if rs := f.lastReplicaSetWrite(); *rs.Spec.Replicas != 0 {
		t.Errorf("old ReplicaSet at %d, want 0", *rs.Spec.Replicas)
	}
}

func TestSync_selectorOfEverythingIsRefused(t *testing.T) {
	d := newDeployment(3, "nginx:1.14.2", "25%", "25%")
	d.Spec.Selector = &metav1.LabelSelector{}
	f := newFixture(t, d)
	f.sync()
	if ev := f.events(); !strings.Contains(ev, "Warning SelectingAll This deployment is selecting all pods. A non-empty selector is required.") {
		t.Errorf("events: %q", ev)
	}
	for _, w := range f.writes() {
		if strings.Contains(w, "replicasets") {
			t.Errorf("a Deployment selecting everything wrote %v", f.writes())
		}
	}
}

func TestSync_hashCollisionRaisesCollisionCount(t *testing.T) {
	d := newDeployment(3, "nginx:1.14.2", "25%", "25%")
	squatter := replicaSetOf(d, "nginx:1.14.2", 1, 0, 0, time.Hour)
	squatter.Spec.Template.Spec.Containers[0].Image = "someone-else:1" // same name, other template
	f := newFixture(t, d, squatter)
	if err := f.c.sync(context.Background(), "default/web"); err == nil {
		t.Fatal("a collision was not reported for a retry")
	}
	got, _ := f.client.AppsV1().Deployments("default").Get(context.Background(), "web", metav1.GetOptions{})
	if got.Status.CollisionCount == nil || *got.Status.CollisionCount != 1 {
		t.Errorf("collisionCount %v, want 1", got.Status.CollisionCount)
	}
}

func TestSync_completeRolloutTrimsHistory(t *testing.T) {
	d := newDeployment(2, "nginx:1.17.0", "25%", "25%")
	limit := int32(1)
	d.Spec.RevisionHistoryLimit = &limit
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 2, UpdatedReplicas: 2, AvailableReplicas: 2, ReadyReplicas: 2}
	r1 := replicaSetOf(d, "nginx:1.14.2", 1, 0, 0, 3*time.Hour)
	r2 := replicaSetOf(d, "nginx:1.15.0", 2, 0, 0, 2*time.Hour)
	r3 := replicaSetOf(d, "nginx:1.16.0", 3, 0, 0, time.Hour)
	cur := replicaSetOf(d, "nginx:1.17.0", 4, 2, 2, time.Minute)
	f := newFixture(t, d, r1, r2, r3, cur)
	f.sync()
	var deleted []string
	for _, w := range f.writes() {
		if strings.HasPrefix(w, "delete replicasets") {
			deleted = append(deleted, strings.TrimPrefix(w, "delete replicasets "))
		}
	}
	if strings.Join(deleted, ",") != r1.Name+","+r2.Name {
		t.Errorf("deleted %v, want the two oldest revisions %s and %s", deleted, r1.Name, r2.Name)
	}
}

// podOf is a Running, Ready pod of rs, running its image.
func podOf(rs *appsv1.ReplicaSet, name string) *corev1.Pod {
	image := rs.Spec.Template.Spec.Containers[0].Image
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: rs.Namespace, UID: types.UID(name), Labels: rs.Spec.Template.Labels,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(rs, appsv1.SchemeGroupVersion.WithKind("ReplicaSet"))}},
		Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "web", Image: image}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning,
			Conditions:        []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(time.Now().Add(-time.Hour))}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "web", Image: image, Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}},
	}
}

// An in-place rollout without a grace period writes no pod itself: it names pods
// leaving on the old ReplicaSet and shrinks it (within maxUnavailable), and only once
// that is observed names them arriving on the new one and grows it; the new
// ReplicaSet's controller makes each pod's one write.
func TestSync_inPlaceHandOver(t *testing.T) {
	d := newDeployment(4, "nginx:1.16.1", "0", "2")
	d.Annotations = map[string]string{inplace.StrategyAnnotation: string(inplace.IfPossible)}
	old := replicaSetOf(d, "nginx:1.14.2", 1, 4, 4, time.Hour)
	cur := replicaSetOf(d, "nginx:1.16.1", 2, 0, 0, time.Minute)
	for _, rs := range []*appsv1.ReplicaSet{old, cur} {
		rs.Generation, rs.Status.ObservedGeneration = 1, 1
		rs.Annotations[inplace.StrategyAnnotation] = string(inplace.IfPossible) // copied from d
	}
	pods := []runtime.Object{podOf(old, "a"), podOf(old, "b"), podOf(old, "c"), podOf(old, "d")}

	f := newFixture(t, append([]runtime.Object{d, old, cur}, pods...)...)
	f.sync()
	writes := f.writes()
	given := f.lastReplicaSetWrite()
	leaving := inplace.Names(given, inplace.LeavingAnnotation)
	if len(writes) == 0 || given.Name != old.Name || *given.Spec.Replicas != 2 || leaving.Len() != 2 {
		t.Fatalf("first pass wrote %v; want the old ReplicaSet at 2 replicas with 2 pods leaving, got %s at %d leaving %v",
			writes, given.Name, *given.Spec.Replicas, sets.List(leaving))
	}
	for _, w := range writes {
		if strings.Contains(w, "pods") || strings.Contains(w, cur.Name) {
			t.Errorf("first pass wrote %q (all: %v): the new ReplicaSet waits until the old one observed its pods leaving", w, writes)
		}
	}

	given.Generation, given.Status.ObservedGeneration = 2, 2
	f = newFixture(t, append([]runtime.Object{d, given, cur}, pods...)...)
	f.sync()
	taken := f.lastReplicaSetWrite()
	if arriving := inplace.Names(taken, inplace.ArrivingAnnotation); taken.Name != cur.Name || *taken.Spec.Replicas != 2 || !arriving.Equal(leaving) {
		t.Errorf("second pass wrote %s at %d arriving %v; want %s at 2 with %v arriving (writes %v)",
			taken.Name, *taken.Spec.Replicas, sets.List(arriving), cur.Name, sets.List(leaving), f.writes())
	}
	for _, w := range f.writes() {
		if strings.Contains(w, "pods") {
			t.Errorf("second pass wrote %q: the take-over is the ReplicaSet controller's", w)
		}
	}
}

// A hand-over record is written over a status the cache does not show yet (its
// resourceVersion moved on), changing only the size and the annotations it names; a
// spec that moved on (another generation) refuses it.
func TestRecordPatch(t *testing.T) {
	for _, moved := range []bool{false, true} {
		rs := &appsv1.ReplicaSet{
			ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "default", UID: "rs-uid", Generation: 3, ResourceVersion: "7",
				Annotations: map[string]string{inplace.ArrivingAnnotation: "web-a", "team": "blue"}},
			Spec: appsv1.ReplicaSetSpec{Replicas: ptr(int32(4))},
		}
		client := fake.NewClientset(rs)
		live := rs.DeepCopy()
		live.Status.AvailableReplicas = 3 // a status write the cache has not seen
		if moved {
			live.Generation = 4
		}
		if _, err := client.AppsV1().ReplicaSets("default").UpdateStatus(context.Background(), live, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		next := rs.DeepCopy()
		*next.Spec.Replicas = 2
		delete(next.Annotations, inplace.ArrivingAnnotation)
		next.Annotations[inplace.LeavingAnnotation] = "web-b,web-c"
		_, err := client.AppsV1().ReplicaSets("default").Patch(context.Background(), "web-1", types.JSONPatchType, recordPatch(rs, next), metav1.PatchOptions{})
		got, getErr := client.AppsV1().ReplicaSets("default").Get(context.Background(), "web-1", metav1.GetOptions{})
		if getErr != nil {
			t.Fatal(getErr)
		}
		if moved {
			if err == nil || *got.Spec.Replicas != 4 {
				t.Errorf("spec moved on: error %v, replicas %d; want the patch refused", err, *got.Spec.Replicas)
			}
			continue
		}
		want := map[string]string{inplace.LeavingAnnotation: "web-b,web-c", "team": "blue"}
		if err != nil || *got.Spec.Replicas != 2 || !reflect.DeepEqual(got.Annotations, want) || got.Status.AvailableReplicas != 3 {
			t.Errorf("error %v, replicas %d, annotations %v, available %d; want 2 replicas, annotations %v, the status kept",
				err, *got.Spec.Replicas, got.Annotations, got.Status.AvailableReplicas, want)
		}
	}
}
