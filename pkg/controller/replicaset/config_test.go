package replicaset

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/kroll-dev/kroll/pkg/configrollout"
)

// A ReplicaSet of a configuration rollout names its snapshots in a record; its pods
// reference them, its template keeps the user's names (what an undo copies back).
func TestPodsOfAConfigRevisionReadItsSnapshots(t *testing.T) {
	rs := newReplicaSet("web-5d8f", 1)
	rs.Spec.Template.Spec.Volumes = []corev1.Volume{{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: "app-config"}}}}}
	rs.Annotations = map[string]string{configrollout.SnapshotsAnnotation: configrollout.Snapshots{
		"configmap/app-config": {Name: "app-config-5d8f", Hash: "h"}}.String()}
	pod := podFromTemplate(rs, rsControllerRef(rs))
	if got := pod.Spec.Volumes[0].ConfigMap.Name; got != "app-config-5d8f" {
		t.Errorf("the pod reads %q, want the snapshot app-config-5d8f", got)
	}
	if got := rs.Spec.Template.Spec.Volumes[0].ConfigMap.Name; got != "app-config" {
		t.Errorf("the template was changed to %q", got)
	}
	plain := newReplicaSet("web-1", 1)
	plain.Spec.Template.Spec.Volumes = rs.Spec.Template.Spec.Volumes
	if got := podFromTemplate(plain, rsControllerRef(plain)).Spec.Volumes[0].ConfigMap.Name; got != "app-config" {
		t.Errorf("a ReplicaSet without the record: the pod reads %q", got)
	}
}
