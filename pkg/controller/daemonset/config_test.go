package daemonset

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

// configDaemonSet is agent opted into configuration rollout, reading app-config
// through a volume.
func configDaemonSet() *appsv1.DaemonSet {
	return &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: "default", UID: "ds-uid", Annotations: map[string]string{configrollout.Annotation: "true"}},
		Spec: appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "agent"}},
			UpdateStrategy: appsv1.DaemonSetUpdateStrategy{Type: appsv1.RollingUpdateDaemonSetStrategyType},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "agent"}}, Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: "app", Image: "busybox"}},
				Volumes: []corev1.Volume{{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
					LocalObjectReference: corev1.LocalObjectReference{Name: "app-config"}}}}},
			}}},
	}
}

// configSync runs one sync of agent on one node against a cache holding objects
// (configuration rollout watched) and returns the client, to read what it wrote.
func configSync(t *testing.T, objects ...runtime.Object) *fake.Clientset {
	t.Helper()
	return syncOnce(t, "default/agent", func(c *Controller, _ *fake.Clientset, factory informers.SharedInformerFactory) error {
		return c.WatchConfig(factory.Apps().V1().DaemonSets().Informer(), factory.Core().V1().ConfigMaps(), factory.Core().V1().Secrets())
	}, objects...)
}

// syncOnce runs one sync of key on one node against a cache holding objects, the
// controller set up by setup first, and returns the client.
func syncOnce(t *testing.T, key string, setup func(*Controller, *fake.Clientset, informers.SharedInformerFactory) error, objects ...runtime.Object) *fake.Clientset {
	t.Helper()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-0"}, Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}
	objects = append(objects, node)
	client := fake.NewClientset(objects...)
	factory := informers.NewSharedInformerFactory(client, 0)
	c, err := New(client, factory.Apps().V1().DaemonSets(), factory.Core().V1().Pods(), factory.Core().V1().Nodes(),
		factory.Apps().V1().ControllerRevisions(), record.NewFakeRecorder(20))
	if err != nil {
		t.Fatal(err)
	}
	if err := setup(c, client, factory); err != nil {
		t.Fatal(err)
	}
	controllertest.Seed(t, factory, objects...)
	if err := c.sync(context.Background(), key); err != nil {
		t.Fatalf("sync: %v", err)
	}
	return client
}

func TestSync_configRolloutDaemonSetRevisionOwnsItsSnapshotAndThePodNamesIt(t *testing.T) {
	ds := configDaemonSet()
	client := configSync(t, ds, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "app-config", Namespace: "default"}, Data: map[string]string{"greeting": "v1"}})
	revs, err := client.AppsV1().ControllerRevisions("default").List(context.Background(), metav1.ListOptions{})
	if err != nil || len(revs.Items) != 1 {
		t.Fatalf("revisions %v %v", revs, err)
	}
	rev := revs.Items[0]
	hash := rev.Labels[RevisionLabel]
	if hash == history.TemplateHash(&ds.Spec.Template, nil) {
		t.Errorf("the configuration is not part of the revision's hash")
	}
	snaps := configrollout.SnapshotsOf(rev.Annotations)
	want := "app-config-" + hash
	if snaps["configmap/app-config"].Name != want {
		t.Fatalf("snapshots recorded %v, want %s", snaps, want)
	}
	snap, err := client.CoreV1().ConfigMaps("default").Get(context.Background(), want, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("no snapshot: %v", err)
	}
	if ref := metav1.GetControllerOf(snap); snap.Immutable == nil || !*snap.Immutable || ref == nil || ref.Kind != "ControllerRevision" || ref.Name != rev.Name {
		t.Errorf("snapshot immutable %v owner %v", snap.Immutable, ref)
	}
	pods, err := client.CoreV1().Pods("default").List(context.Background(), metav1.ListOptions{})
	if err != nil || len(pods.Items) != 1 {
		t.Fatalf("pods %v %v", pods, err)
	}
	p := pods.Items[0]
	if got := p.Spec.Volumes[0].ConfigMap.Name; got != want || p.Labels[RevisionLabel] != hash || p.Annotations[configrollout.HashAnnotation] == "" {
		t.Errorf("pod volume %q (want %q), revision %q, annotations %v", got, want, p.Labels[RevisionLabel], p.Annotations)
	}
	live, err := client.AppsV1().DaemonSets("default").Get(context.Background(), "agent", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(live.Spec.Template.Spec.Volumes[0].ConfigMap.Name, hash) || live.Spec.Template.Annotations[configrollout.HashAnnotation] != "" {
		t.Errorf("the DaemonSet's spec was rewritten: %+v", live.Spec.Template)
	}
}

func TestSync_configChangeReplacesTheDaemonPodsOfTheSameTemplateGeneration(t *testing.T) {
	// The API server counts template changes in deprecated.daemonset.template.generation;
	// a ConfigMap edit changes none, so the old pod's generation label still matches:
	// only the revision hash may tell it is old.
	ds := configDaemonSet()
	ds.Annotations[appsv1.DeprecatedTemplateGeneration] = "1"
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "app-config", Namespace: "default"}, Data: map[string]string{"greeting": "v1"}}
	client := configSync(t, ds, cm)
	rev := must(client.AppsV1().ControllerRevisions("default").List(context.Background(), metav1.ListOptions{})).Items[0]
	old := must(client.CoreV1().Pods("default").List(context.Background(), metav1.ListOptions{})).Items[0]
	if old.Labels[TemplateGenerationLabel] != "1" {
		t.Fatalf("pod labels %v", old.Labels)
	}
	old.Spec.NodeName = "node-0"
	old.Status = corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
	edited := cm.DeepCopy()
	edited.Data["greeting"] = "v2"
	client = configSync(t, ds, &rev, &old, edited)
	if _, err := client.CoreV1().Pods("default").Get(context.Background(), old.Name, metav1.GetOptions{}); err == nil {
		t.Errorf("the pod of the old configuration was kept: its template generation counted it updated")
	}
	if revs := must(client.AppsV1().ControllerRevisions("default").List(context.Background(), metav1.ListOptions{})).Items; len(revs) != 2 {
		t.Errorf("%d revisions, want the new configuration's beside the old", len(revs))
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
