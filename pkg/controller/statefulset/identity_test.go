package statefulset

import (
	"context"
	"fmt"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"

	"github.com/kroll-dev/kroll/pkg/controller"
)

// newSet is StatefulSet web with replicas, service nginx and a claim template www.
func newSet(replicas int32, whenDeleted, whenScaled appsv1.PersistentVolumeClaimRetentionPolicyType) *appsv1.StatefulSet {
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "set-uid"},
		Spec: appsv1.StatefulSetSpec{
			Replicas:    &replicas,
			ServiceName: "nginx",
			Selector:    &metav1.LabelSelector{MatchLabels: map[string]string{"app": "nginx"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "nginx"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "nginx", Image: "nginx"}},
					Volumes: []corev1.Volume{{Name: "www"}, {Name: "config"}}},
			},
			VolumeClaimTemplates:                 []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "www", Labels: map[string]string{"tier": "data"}}}},
			PersistentVolumeClaimRetentionPolicy: &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{WhenDeleted: whenDeleted, WhenScaled: whenScaled},
		},
	}
}

func TestNewPod(t *testing.T) {
	set := newSet(3, appsv1.RetainPersistentVolumeClaimRetentionPolicyType, appsv1.RetainPersistentVolumeClaimRetentionPolicyType)
	pod := newPod(set, set, "web-6b9c", 2)
	if pod.Name != "web-2" || pod.Spec.Hostname != "web-2" || pod.Spec.Subdomain != "nginx" {
		t.Errorf("name %s hostname %s subdomain %s, want web-2, web-2, nginx", pod.Name, pod.Spec.Hostname, pod.Spec.Subdomain)
	}
	want := map[string]string{"app": "nginx", PodNameLabel: "web-2", PodIndexLabel: "2", RevisionLabel: "web-6b9c"}
	if fmt.Sprint(pod.Labels) != fmt.Sprint(want) {
		t.Errorf("labels %v, want %v", pod.Labels, want)
	}
	if len(pod.Spec.Volumes) != 2 || pod.Spec.Volumes[0].PersistentVolumeClaim == nil || pod.Spec.Volumes[0].PersistentVolumeClaim.ClaimName != "www-web-2" || pod.Spec.Volumes[1].Name != "config" {
		t.Errorf("volumes %+v, want www from claim www-web-2 (replacing the template's), then config", pod.Spec.Volumes)
	}
	if !metav1.IsControlledBy(pod, set) || !hasIdentity(set, pod) || !hasStorage(set, pod, 2) {
		t.Error("the new pod is not the set's, or fails its own identity or storage check")
	}
	if set.Spec.Template.Labels[RevisionLabel] != "" {
		t.Error("the set's template was modified")
	}
	claim := newClaim(set, &set.Spec.VolumeClaimTemplates[0], 2)
	if claim.Name != "www-web-2" || claim.Labels["tier"] != "data" || claim.Labels["app"] != "nginx" {
		t.Errorf("claim %s labels %v, want www-web-2 with the template's labels and the selector's", claim.Name, claim.Labels)
	}
}

// The identity fix writes back the pod as the API server has it, not the cached copy
// (which the informers keep without most of the spec): the write keeps the rest.
func TestIdentityFixUpdatesThePodAsStored(t *testing.T) {
	set := newSet(1, appsv1.RetainPersistentVolumeClaimRetentionPolicyType, appsv1.RetainPersistentVolumeClaimRetentionPolicyType)
	stored := newPod(set, set, "rev1", 0)
	stored.UID = "u1"
	delete(stored.Labels, PodNameLabel)
	stored.Spec.Tolerations = []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpExists}}
	client := fake.NewClientset(stored)
	w := controller.NewPodControl(client, record.NewFakeRecorder(10), controller.StatefulSetEvents)

	cached := &corev1.Pod{ObjectMeta: *stored.ObjectMeta.DeepCopy()} // what the cache keeps
	if err := w.UpdatePod(context.Background(), set, cached, func(p *corev1.Pod) { setIdentity(set, p, 0) }); err != nil {
		t.Fatal(err)
	}
	got, err := client.CoreV1().Pods(set.Namespace).Get(context.Background(), stored.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Labels[PodNameLabel] != stored.Name || len(got.Spec.Tolerations) != 1 || len(got.Spec.Containers) == 0 {
		t.Errorf("updated pod lost its spec or missed the fix: labels %v, spec %+v", got.Labels, got.Spec)
	}

	// A pod replaced since it was cached is not written.
	cached.UID = "u0"
	if err := w.UpdatePod(context.Background(), set, cached, func(p *corev1.Pod) { p.Labels["x"] = "y" }); err == nil {
		t.Error("a replaced pod was updated")
	}
}
