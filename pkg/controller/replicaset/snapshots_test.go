package replicaset

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"

	"github.com/kroll-dev/kroll/pkg/configrollout"
)

func TestSync_podsWaitForTheirConfigurationSnapshots(t *testing.T) {
	rs := newReplicaSet("web", 2)
	rs.Annotations = map[string]string{configrollout.SnapshotsAnnotation: configrollout.Snapshots{
		"configmap/app-config": {Name: "app-config-abc", Hash: "1"}}.String()}
	rs.Spec.Template.Spec.Volumes = []corev1.Volume{{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: "app-config"}}}}}
	f := newFixture(t, rs)
	factory := informers.NewSharedInformerFactory(f.client, 0)
	if err := f.c.WaitForSnapshots(factory.Core().V1().ConfigMaps(), factory.Core().V1().Secrets()); err != nil {
		t.Fatal(err)
	}
	if err := f.c.sync(context.Background(), "default/web"); err != nil {
		t.Fatal(err)
	}
	if len(f.pods.Created) != 0 {
		t.Fatalf("created %d pods before their snapshot exists", len(f.pods.Created))
	}

	snap := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "app-config-abc", Namespace: "default",
		Labels: map[string]string{configrollout.SnapshotOfLabel: "app-config"}}}
	if err := factory.Core().V1().ConfigMaps().Informer().GetIndexer().Add(snap); err != nil {
		t.Fatal(err)
	}
	if err := f.c.sync(context.Background(), "default/web"); err != nil {
		t.Fatal(err)
	}
	if len(f.pods.Created) != 2 {
		t.Fatalf("created %d pods once the snapshot exists, want 2", len(f.pods.Created))
	}
	if got := f.pods.Created[0].Spec.Volumes[0].ConfigMap.Name; got != "app-config-abc" {
		t.Errorf("the pod mounts %q, want the snapshot", got)
	}
}
