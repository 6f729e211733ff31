package rollingupdate

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// newRC is a controller called name with 3 replicas selecting app=web, one container
// per image given.
func newRC(name string, images ...string) *corev1.ReplicationController {
	replicas := int32(3)
	rc := &corev1.ReplicationController{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: "uid-" + "name",
			Annotations: map[string]string{"team": "a", NextControllerAnnotation: "stale"}},
		Spec: corev1.ReplicationControllerSpec{
			Replicas: &replicas,
			Selector: map[string]string{"app": "web"},
			Template: &corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}}},
		},
	}
	for i, image := range images {
		rc.Spec.Template.Spec.Containers = append(rc.Spec.Template.Spec.Containers, corev1.Container{Name: fmt.Sprintf("c%d", i), Image: image})
	}
	return rc
}

func TestApplyImage(t *testing.T) {
	tests := []struct {
		name    string
		rc      *corev1.ReplicationController
		change  imageChange
		want    string // image of the changed container, or the error's text
		wantErr bool
	}{
		{"the only container", newRC("web", "nginx:1"), imageChange{image: "nginx:2"}, "nginx:2", false},
		{"same image refused", newRC("web", "nginx:1"), imageChange{image: "nginx:1"}, "is the current image of replicationcontroller/web", true},
		{"same image with a pull policy", newRC("web", "nginx:1"), imageChange{image: "nginx:1", pullPolicy: corev1.PullAlways}, "nginx:1", false},
		{"two containers need --container", newRC("web", "nginx:1", "envoy:1"), imageChange{image: "nginx:2"}, "has 2 containers (c0, c1): name the one", true},
		{"--container picks one", newRC("web", "nginx:1", "envoy:1"), imageChange{image: "envoy:2", container: "c1"}, "envoy:2", false},
		{"unknown container", newRC("web", "nginx:1"), imageChange{image: "nginx:2", container: "side"}, `has no container "side"`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tmpl, err := applyImage(tt.rc, tt.change)
			if tt.wantErr {
				if err == nil || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("err %v, want one saying %q", err, tt.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			idx := 0
			if tt.change.container == "c1" {
				idx = 1
			}
			if got := tmpl.Spec.Containers[idx].Image; got != tt.want {
				t.Errorf("image %s, want %s", got, tt.want)
			}
			if tt.rc.Spec.Template.Spec.Containers[idx].Image == tt.want && tt.want != "nginx:1" {
				t.Error("the old controller's template was modified")
			}
		})
	}
}

func TestNewControllerFor(t *testing.T) {
	old := newRC("web", "nginx:1")
	tmpl, err := applyImage(old, imageChange{image: "nginx:2"})
	if err != nil {
		t.Fatal(err)
	}
	rc := newControllerFor(old, "", tmpl, 3, "deployment")
	hash := TemplateHash(tmpl, "deployment")
	if rc.Name != "web-"+hash || len(hash) != 32 {
		t.Errorf("name %s, want web-<32 hex digits>", rc.Name)
	}
	if rc.Spec.Selector["deployment"] != hash || rc.Spec.Template.Labels["deployment"] != hash || rc.Spec.Selector["app"] != "web" {
		t.Errorf("selector %v, template labels %v: want app=web plus deployment=%s in both", rc.Spec.Selector, rc.Spec.Template.Labels, hash)
	}
	if rc.Annotations["team"] != "a" || rc.Annotations[NextControllerAnnotation] != "" {
		t.Errorf("annotations %v: want the old controller's, without the recovery ones", rc.Annotations)
	}
	if _, has := old.Spec.Selector["deployment"]; has {
		t.Error("the old controller's selector was modified")
	}
	// The hash ignores the deployment label, so labelling does not change the name.
	if again := TemplateHash(rc.Spec.Template, "deployment"); again != hash {
		t.Errorf("hash of the labelled template %s, want %s", again, hash)
	}
	if named := newControllerFor(old, "web-v2", tmpl, 3, "deployment"); named.Name != "web-v2" {
		t.Errorf("a given name became %s", named.Name)
	}
}

func TestDisjoint(t *testing.T) {
	tests := []struct {
		old, new map[string]string
		want     bool
	}{
		{map[string]string{"app": "web", "deployment": "a"}, map[string]string{"app": "web", "deployment": "b"}, true},
		{map[string]string{"app": "web"}, map[string]string{"app": "web", "version": "v2"}, false}, // old matches new's pods
		{map[string]string{"app": "web", "version": "v1"}, map[string]string{"app": "web", "version": "v2"}, true},
		{map[string]string{"app": "web"}, map[string]string{"app": "web"}, false},
		{map[string]string{}, map[string]string{"app": "web"}, false},
	}
	for _, tt := range tests {
		if got := disjoint(tt.old, tt.new); got != tt.want {
			t.Errorf("disjoint(%v, %v) = %v, want %v", tt.old, tt.new, got, tt.want)
		}
	}
}

func TestStandIn(t *testing.T) {
	to := newRC("web-abc", "nginx:2")
	to.Annotations[DesiredReplicasAnnotation] = "5"
	to.Annotations[SourceIDAnnotation] = "web:uid"
	s := standInFor(to, "web")
	if s.Name != "web" || *s.Spec.Replicas != 0 || s.Annotations[DesiredReplicasAnnotation] != "5" || s.Annotations[RenameFromAnnotation] != "web-abc" {
		t.Errorf("stand-in %s, %d replicas, annotations %v: want web at 0, desired 5, renamed from web-abc", s.Name, *s.Spec.Replicas, s.Annotations)
	}
	if s.Spec.Selector[RenamingLabel] != "true" || s.Spec.Template.Labels[RenamingLabel] != "true" {
		t.Errorf("stand-in selector %v / template %v must carry %s so that it selects no pod of web-abc", s.Spec.Selector, s.Spec.Template.Labels, RenamingLabel)
	}
	if _, ok := to.Spec.Selector[RenamingLabel]; ok || s.Annotations[SourceIDAnnotation] != "" {
		t.Errorf("the renamed controller was modified, or its source annotation was copied: %v", s.Annotations)
	}
}

func TestTakeable(t *testing.T) {
	host, _ := os.Hostname()
	now := time.Now()
	lease := func(holder string, renewedAgo time.Duration) *coordinationv1.Lease {
		d := int32(15)
		r := metav1.NewMicroTime(now.Add(-renewedAgo))
		return &coordinationv1.Lease{Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &d, RenewTime: &r}}
	}
	tests := []struct {
		name  string
		lease *coordinationv1.Lease
		want  bool
	}{
		{"held and fresh, by a live process (this one)", lease(fmt.Sprintf("%s/%d/x", host, os.Getppid()), time.Second), false},
		{"held by another machine", lease("elsewhere/1/x", time.Second), false},
		{"expired", lease("elsewhere/1/x", 20*time.Second), true},
		{"its holder on this machine has exited", lease(fmt.Sprintf("%s/%d/x", host, 1<<22+7), time.Second), true},
		{"no holder", lease("", time.Second), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := takeable(tt.lease, now); got != tt.want {
				t.Errorf("takeable = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestLock_refusesASecondClient(t *testing.T) {
	client := fake.NewClientset()
	first, second := newLock(client, "default", "kroll rolling-update web --image=a"), newLock(client, "default", "kroll rolling-update web --image=b")
	ctx := context.Background()
	if err := first.acquire(ctx, "web", "web-next"); err != nil {
		t.Fatal(err)
	}
	var held *HeldError
	if err := second.acquire(ctx, "web"); !errors.As(err, &held) || !strings.Contains(err.Error(), "running: kroll rolling-update web --image=a") {
		t.Fatalf("second client: %v, want refused naming the first one's command", err)
	}
	first.release()
	if err := second.acquire(ctx, "web"); err != nil {
		t.Fatalf("after release: %v", err)
	}
	second.release()
	leases, _ := client.CoordinationV1().Leases("default").List(ctx, metav1.ListOptions{})
	if len(leases.Items) != 0 {
		t.Errorf("%d leases left after release", len(leases.Items))
	}
}
