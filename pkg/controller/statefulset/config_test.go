package statefulset

import (
	"context"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"

	"github.com/kroll-dev/kroll/pkg/configrollout"
	"github.com/kroll-dev/kroll/pkg/controller/controllertest"
	"github.com/kroll-dev/kroll/pkg/history"
)

// configSet is web (2 replicas) opted into configuration rollout, reading app-config
// through a volume and an environment variable.
func configSet(optIn string) *appsv1.StatefulSet {
	two := int32(2)
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "set-uid", Annotations: map[string]string{configrollout.Annotation: optIn}},
		Spec: appsv1.StatefulSetSpec{Replicas: &two, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			UpdateStrategy: appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}}, Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: "app", Image: "busybox", Env: []corev1.EnvVar{{Name: "G", ValueFrom: &corev1.EnvVarSource{
					ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "app-config"}, Key: "greeting"}}}}}},
				Volumes: []corev1.Volume{{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
					LocalObjectReference: corev1.LocalObjectReference{Name: "app-config"}}}}},
			}}},
	}
}

func appConfig(greeting string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "app-config", Namespace: "default"}, Data: map[string]string{"greeting": greeting}}
}

// configSync runs one sync of web against a cache holding objects (configuration
// rollout watched) and returns the client, to read what it wrote, and the events.
func configSync(t *testing.T, objects ...runtime.Object) (*fake.Clientset, *record.FakeRecorder) {
	t.Helper()
	return syncOnce(t, func(c *Controller, _ *fake.Clientset, factory informers.SharedInformerFactory) error {
		return c.WatchConfig(factory.Apps().V1().StatefulSets().Informer(), factory.Core().V1().ConfigMaps(), factory.Core().V1().Secrets())
	}, objects...)
}

// syncOnce runs one sync of web against a cache holding objects, the controller set
// up by setup first, and returns the client and the events.
func syncOnce(t *testing.T, setup func(*Controller, *fake.Clientset, informers.SharedInformerFactory) error, objects ...runtime.Object) (*fake.Clientset, *record.FakeRecorder) {
	t.Helper()
	client := fake.NewClientset(objects...)
	factory := informers.NewSharedInformerFactory(client, 0)
	recorder := record.NewFakeRecorder(20)
	c, err := New(client, factory.Apps().V1().StatefulSets(), factory.Core().V1().Pods(), factory.Core().V1().Nodes(),
		factory.Apps().V1().ControllerRevisions(), factory.Core().V1().PersistentVolumeClaims(), recorder)
	if err != nil {
		t.Fatal(err)
	}
	if err := setup(c, client, factory); err != nil {
		t.Fatal(err)
	}
	controllertest.Seed(t, factory, objects...)
	if err := c.sync(context.Background(), "default/web"); err != nil {
		t.Fatalf("sync: %v", err)
	}
	return client, recorder
}

func revisionsOf(t *testing.T, client *fake.Clientset) []appsv1.ControllerRevision {
	t.Helper()
	list, err := client.AppsV1().ControllerRevisions("default").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return list.Items
}

func TestSync_configRolloutMakesARevisionWithItsSnapshotAndPodsNameIt(t *testing.T) {
	set := configSet("true")
	client, _ := configSync(t, set, appConfig("v1"))
	revs := revisionsOf(t, client)
	if len(revs) != 1 {
		t.Fatalf("%d revisions", len(revs))
	}
	rev := revs[0]
	if !strings.Contains(string(rev.Data.Raw), configrollout.HashAnnotation) {
		t.Errorf("the revision's template has no %s: the configuration is not part of the revision hash", configrollout.HashAnnotation)
	}
	plain, _ := history.TemplatePatch(set)
	if rev.Name == history.RevisionName("web", history.RevisionHash(plain, 0)) {
		t.Errorf("revision %s is named by the template without its configuration", rev.Name)
	}
	snaps := configrollout.SnapshotsOf(rev.Annotations)
	hash := rev.Name[strings.LastIndex(rev.Name, "-")+1:]
	if snaps["configmap/app-config"].Name != "app-config-"+hash {
		t.Fatalf("snapshots recorded %v", snaps)
	}
	snap, err := client.CoreV1().ConfigMaps("default").Get(context.Background(), "app-config-"+hash, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("no snapshot: %v", err)
	}
	if ref := metav1.GetControllerOf(snap); snap.Immutable == nil || !*snap.Immutable || ref == nil || ref.Kind != "ControllerRevision" || ref.Name != rev.Name || snap.Data["greeting"] != "v1" {
		t.Errorf("snapshot immutable %v owner %v data %v", snap.Immutable, ref, snap.Data)
	}
	pod, err := client.CoreV1().Pods("default").Get(context.Background(), "web-0", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("no pod: %v", err)
	}
	if v, e := pod.Spec.Volumes[0].ConfigMap.Name, pod.Spec.Containers[0].Env[0].ValueFrom.ConfigMapKeyRef.Name; v != snap.Name || e != snap.Name {
		t.Errorf("pod names volume %q and env %q, want the snapshot %q", v, e, snap.Name)
	}
	live, err := client.AppsV1().StatefulSets("default").Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := live.Spec.Template.Spec.Volumes[0].ConfigMap.Name; got != "app-config" || live.Spec.Template.Annotations[configrollout.HashAnnotation] != "" {
		t.Errorf("the set's spec was rewritten: volume %q, annotations %v", got, live.Spec.Template.Annotations)
	}

	// The ConfigMap's data changes: a new revision, named for what changed.
	set.Status.UpdateRevision, set.Status.CurrentRevision = rev.Name, rev.Name
	client, _ = configSync(t, set, &rev, appConfig("v2"))
	var next *appsv1.ControllerRevision
	for _, r := range revisionsOf(t, client) {
		if r.Name != rev.Name {
			next = r.DeepCopy()
		}
	}
	if next == nil {
		t.Fatal("no new revision for the changed data")
	}
	if cause := next.Annotations[history.ChangeCauseAnnotation]; cause != "configmap/app-config changed" || next.Revision != 2 {
		t.Errorf("revision %d, change-cause %q", next.Revision, cause)
	}
}

func TestSync_configRolloutUndoPinsTheRevisionsConfiguration(t *testing.T) {
	// Revision 1 ran v1, revision 2 runs v2; `kubectl rollout undo` put revision 1's
	// template (its fingerprint) back into the set while app-config holds v2.
	set := configSet("true")
	client, _ := configSync(t, set, appConfig("v1"))
	rev1 := revisionsOf(t, client)[0]
	applied, err := history.ApplyRevision(set, &rev1)
	if err != nil {
		t.Fatal(err)
	}
	undone := set.DeepCopy()
	undone.Spec.Template = applied.Spec.Template
	client, _ = configSync(t, undone, &rev1, appConfig("v2"))
	live, err := client.AppsV1().StatefulSets("default").Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rec := live.Annotations[configrollout.PinnedAtAnnotation]; !strings.HasPrefix(rec, applied.Spec.Template.Annotations[configrollout.HashAnnotation]+":") {
		t.Fatalf("pin record %q", rec)
	}
	// With the record, the sync keeps revision 1 and makes no new one.
	undone.Annotations = live.Annotations
	client, _ = configSync(t, undone, &rev1, appConfig("v2"))
	if revs := revisionsOf(t, client); len(revs) != 1 || revs[0].Name != rev1.Name {
		t.Errorf("pinned, the revisions are %v, want %s alone", len(revs), rev1.Name)
	}
}

func TestSync_configRolloutHoldsForAMissingConfigMapAndSaysWhy(t *testing.T) {
	set := configSet("true")
	client, _ := configSync(t, set, appConfig("v1"))
	rev1 := revisionsOf(t, client)[0]
	set.Status.UpdateRevision, set.Status.CurrentRevision = rev1.Name, rev1.Name
	set.Spec.Template.Spec.Containers[0].Image = "busybox:2" // with a new image, app-config is gone
	client, events := configSync(t, set, &rev1)
	if revs := revisionsOf(t, client); len(revs) != 1 {
		t.Errorf("%d revisions: a revision was made without its ConfigMap", len(revs))
	}
	if ev := strings.Join(controllertest.Drain(events), "\n"); !strings.Contains(ev, "Warning "+configrollout.ReasonMissing+" referenced configmap/app-config not found") {
		t.Errorf("events %q", ev)
	}
	live, err := client.AppsV1().StatefulSets("default").Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, c := range live.Status.Conditions {
		found = found || (string(c.Type) == configrollout.ConditionType && c.Status == corev1.ConditionFalse && c.Reason == configrollout.ReasonMissing)
	}
	if !found {
		t.Errorf("conditions %v: no ConfigRollout False/%s", live.Status.Conditions, configrollout.ReasonMissing)
	}
}

func TestSync_invalidConfigOptInRollsAsWithoutIt(t *testing.T) {
	client, events := configSync(t, configSet("yes"), appConfig("v1"))
	rev := revisionsOf(t, client)[0]
	if strings.Contains(string(rev.Data.Raw), configrollout.HashAnnotation) || rev.Annotations[configrollout.SnapshotsAnnotation] != "" {
		t.Errorf("an invalid opt-in rolled configuration: %s %v", rev.Data.Raw, rev.Annotations)
	}
	if ev := strings.Join(controllertest.Drain(events), "\n"); !strings.Contains(ev, `Warning InvalidAnnotation kroll.dev/config-rollout="yes" is not valid`) {
		t.Errorf("events %q", ev)
	}
}
