package deployment

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kroll-dev/kroll/pkg/configrollout"
	"github.com/kroll-dev/kroll/pkg/history"
)

// configDeployment is web opted into configuration rollout, reading app-config
// through a volume.
func configDeployment(optIn string) *appsv1.Deployment {
	d := newDeployment(4, "nginx:1.25", "0", "1")
	d.Annotations = map[string]string{configrollout.Annotation: optIn}
	d.Spec.Template.Spec.Volumes = []corev1.Volume{{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: "app-config"}}}}}
	return d
}

func appConfig(greeting string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "app-config", Namespace: "default"}, Data: map[string]string{"greeting": greeting}}
}

// newConfigFixture is newFixture with configuration rollout watched.
func newConfigFixture(t *testing.T, objects ...runtime.Object) *fixture {
	t.Helper()
	f := newFixture(t, objects...)
	factory := informers.NewSharedInformerFactory(f.client, 0)
	dInformer := factory.Apps().V1().Deployments().Informer()
	if err := f.c.WatchConfig(dInformer, factory.Core().V1().ConfigMaps(), factory.Core().V1().Secrets()); err != nil {
		t.Fatal(err)
	}
	for _, o := range objects {
		if cm, ok := o.(*corev1.ConfigMap); ok {
			if err := factory.Core().V1().ConfigMaps().Informer().GetIndexer().Add(cm); err != nil {
				t.Fatal(err)
			}
		}
	}
	return f
}

func TestSync_configRolloutCreatesTheRevisionAndItsSnapshot(t *testing.T) {
	d := configDeployment("true")
	f := newConfigFixture(t, d, appConfig("v1"))
	f.sync()
	rs := f.created()
	hash := rs.Labels[appsv1.DefaultDeploymentUniqueLabelKey]
	if rs.Spec.Template.Annotations[configrollout.HashAnnotation] == "" {
		t.Fatalf("the ReplicaSet's template has no %s: %v", configrollout.HashAnnotation, rs.Spec.Template.Annotations)
	}
	if hash == history.TemplateHash(&d.Spec.Template, nil) {
		t.Errorf("the configuration is not part of the pod-template-hash")
	}
	if got := rs.Spec.Template.Spec.Volumes[0].ConfigMap.Name; got != "app-config" {
		t.Errorf("the template names %q: snapshot names belong in pods only", got)
	}
	snaps := configrollout.SnapshotsOf(rs.Annotations)
	if snaps["configmap/app-config"].Name != "app-config-"+hash {
		t.Errorf("snapshots record %v", snaps)
	}
	if w := f.writes(); !slices.Contains(w, "create configmaps app-config-"+hash) {
		t.Fatalf("writes %v: no snapshot created", w)
	}
	snap, err := f.client.CoreV1().ConfigMaps("default").Get(context.Background(), "app-config-"+hash, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ref := metav1.GetControllerOf(snap); snap.Immutable == nil || !*snap.Immutable || ref == nil || ref.Name != rs.Name || snap.Data["greeting"] != "v1" {
		t.Errorf("snapshot immutable %v owner %v data %v", snap.Immutable, ref, snap.Data)
	}
	for _, w := range f.writes() {
		if strings.HasPrefix(w, "update deployments ") {
			t.Errorf("the Deployment's spec was written: %v", f.writes())
		}
	}

	// The ConfigMap's data changes: a new revision, its change-cause naming it.
	rs.Status = appsv1.ReplicaSetStatus{Replicas: 4, ReadyReplicas: 4, AvailableReplicas: 4}
	rs.Annotations[history.RevisionAnnotation] = "1"
	*rs.Spec.Replicas = 4
	d.Annotations[history.RevisionAnnotation] = "1"
	f = newConfigFixture(t, d, rs, appConfig("v2"))
	f.sync()
	next := f.created()
	if next.Name == rs.Name {
		t.Fatalf("no new revision for the changed data")
	}
	if cause := next.Annotations[history.ChangeCauseAnnotation]; cause != "configmap/app-config changed" {
		t.Errorf("change-cause %q", cause)
	}
}

func TestSync_configRolloutHoldsForAMissingConfigMap(t *testing.T) {
	f := newConfigFixture(t, configDeployment("true"))
	f.sync()
	for _, w := range f.writes() {
		if strings.Contains(w, "replicasets") {
			t.Errorf("a ReplicaSet was written without its ConfigMap: %v", f.writes())
		}
	}
	if ev := f.events(); !strings.Contains(ev, "Warning "+configrollout.ReasonMissing+" referenced configmap/app-config not found") {
		t.Errorf("events %q", ev)
	}
	f.expectConfigCondition(configrollout.ReasonMissing)
}

// expectConfigCondition checks that web's status, as written, has the ConfigRollout
// condition False with reason.
func (f *fixture) expectConfigCondition(reason string) {
	f.t.Helper()
	d, err := f.client.AppsV1().Deployments("default").Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	for _, c := range d.Status.Conditions {
		if string(c.Type) == configrollout.ConditionType && c.Status == corev1.ConditionFalse && c.Reason == reason {
			return
		}
	}
	f.t.Errorf("conditions %v: no ConfigRollout False/%s", d.Status.Conditions, reason)
}

func TestSync_invalidConfigOptInRollsAsWithoutIt(t *testing.T) {
	d := configDeployment("yes")
	f := newConfigFixture(t, d, appConfig("v1"))
	f.sync()
	rs := f.created()
	if _, ok := rs.Spec.Template.Annotations[configrollout.HashAnnotation]; ok || rs.Annotations[configrollout.SnapshotsAnnotation] != "" {
		t.Errorf("an invalid opt-in rolled configuration: %v %v", rs.Spec.Template.Annotations, rs.Annotations)
	}
	if ev := f.events(); !strings.Contains(ev, `Warning InvalidAnnotation kroll.dev/config-rollout="yes" is not valid`) {
		t.Errorf("events %q", ev)
	}
}

func TestSync_configSnapshotRefusedHoldsTheRollout(t *testing.T) {
	d := configDeployment("true")
	f := newConfigFixture(t, d, appConfig("v1"))
	f.sync()
	rs := f.created()
	rs.Status = appsv1.ReplicaSetStatus{Replicas: 4, ReadyReplicas: 4, AvailableReplicas: 4}
	rs.Annotations[history.RevisionAnnotation] = "1"
	*rs.Spec.Replicas = 4
	d.Annotations[history.RevisionAnnotation] = "1"
	refuse := func(f *fixture) {
		f.client.PrependReactor("create", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewForbidden(corev1.Resource("configmaps"), "x", errors.New("exceeded quota: q"))
		})
	}

	// The data changes; the new revision's snapshot is refused: the new ReplicaSet is
	// made, nothing else moves.
	f = newConfigFixture(t, d, rs, appConfig("v2"))
	refuse(f)
	f.sync()
	next := f.created()
	for _, w := range f.writes() {
		if strings.HasPrefix(w, "update replicasets "+rs.Name) || strings.HasPrefix(w, "patch replicasets "+rs.Name) {
			t.Errorf("the old ReplicaSet was scaled while the snapshot is missing: %v", f.writes())
		}
	}
	if ev := f.events(); !strings.Contains(ev, "Warning "+configrollout.ReasonSnapshotFailed+" cannot write the snapshot app-config-") || !strings.Contains(ev, "exceeded quota") {
		t.Errorf("events %q", ev)
	}

	// The next pass: the condition, still nothing moves.
	f = newConfigFixture(t, d, rs, next, appConfig("v2"))
	refuse(f)
	f.sync()
	for _, w := range f.writes() {
		if strings.Contains(w, "replicasets "+rs.Name) {
			t.Errorf("the old ReplicaSet was written while the snapshot is missing: %v", f.writes())
		}
	}
	f.expectConfigCondition(configrollout.ReasonSnapshotFailed)

	// The quota lifted: the snapshot is written and the rollout moves on.
	f = newConfigFixture(t, d, rs, next, appConfig("v2"))
	f.sync()
	if w := f.writes(); !slices.Contains(w, "create configmaps app-config-"+next.Labels[appsv1.DefaultDeploymentUniqueLabelKey]) {
		t.Errorf("writes %v: the snapshot is not written", w)
	}
}

// Back from upstream's controllers (or opted in while it runs), a Deployment whose
// newest ReplicaSet is of its plain template is left as it is: its pods read the live
// ConfigMap; the live hash is recorded, and nothing else is written.
func TestSync_configRolloutAdoptsAReplicaSetOfThePlainTemplate(t *testing.T) {
	d := configDeployment("true")
	d.Annotations[history.RevisionAnnotation] = "3"
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 4, UpdatedReplicas: 4, ReadyReplicas: 4, AvailableReplicas: 4}
	rs := replicaSetOf(d, "nginx:1.25", 3, 4, 4, time.Minute)
	rs.Generation, rs.Status.ObservedGeneration = 1, 1
	rs.Annotations[configrollout.Annotation] = "true" // copied by upstream's controller
	f := newConfigFixture(t, d, rs, appConfig("v2"))
	f.sync()
	live := f.c.config.Resolve("default", &d.Spec.Template.Spec).Fingerprint
	if w := f.writes(); !slices.Equal(w, []string{"update deployments web"}) {
		t.Fatalf("writes %v, want the record alone", w)
	}
	written, err := f.client.AppsV1().Deployments("default").Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := written.Annotations[configrollout.PinnedAtAnnotation]; got != ":"+live {
		t.Errorf("record %q, want %q", got, ":"+live)
	}
}
