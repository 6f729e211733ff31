package manager

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/kroll-dev/kroll/pkg/failure"
	"github.com/kroll-dev/kroll/pkg/inplace"
	"github.com/kroll-dev/kroll/pkg/placement"
	"github.com/kroll-dev/kroll/pkg/rollout"
)

func TestSlimDropsManagedFieldsAndKeepsTheRest(t *testing.T) {
	rs := &corev1.ReplicationController{ObjectMeta: metav1.ObjectMeta{
		Name: "web", Labels: map[string]string{"app": "web"},
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kroll", Operation: metav1.ManagedFieldsOperationUpdate}},
	}, Spec: corev1.ReplicationControllerSpec{Selector: map[string]string{"app": "web"}}}
	got, err := newSlimmer().slim(rs)
	if err != nil {
		t.Fatal(err)
	}
	rc := got.(*corev1.ReplicationController)
	if rc.ManagedFields != nil {
		t.Errorf("managedFields kept: %v", rc.ManagedFields)
	}
	if rc.Name != "web" || rc.Labels["app"] != "web" || rc.Spec.Selector["app"] != "web" {
		t.Errorf("the rest changed: %+v", rc)
	}
	// A tombstone has no metadata of its own; it passes through as it is.
	tomb := cache.DeletedFinalStateUnknown{Key: "default/web-0", Obj: rs}
	if got, err := newSlimmer().slim(tomb); err != nil || got != any(tomb) {
		t.Errorf("tombstone: got %v, %v", got, err)
	}
}

// fullPod is a running pod as the API server returns it, with every field a kubelet
// and the defaults fill in, mid-way through an in-place update.
func fullPod() *corev1.Pod {
	ready := metav1.NewTime(time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC))
	grace := int64(30)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "web-7d4b9c-x2x4z", Namespace: "default", UID: "u1", ResourceVersion: "42",
			Labels:          map[string]string{"app": "web", "pod-template-hash": "7d4b9c"},
			Annotations:     map[string]string{rollout.PodDeletionCostAnnotation: "5", inplace.StateAnnotation: `{"revision":"7d4b9c","images":{"app":"nginx:1.17"},"outOfServiceSince":"2026-01-01T10:00:00.000000Z"}`},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-7d4b9c", UID: "rs1", Controller: new(true)}},
			ManagedFields:   []metav1.ManagedFieldsEntry{{Manager: "kubelet"}},
		},
		Spec: corev1.PodSpec{
			NodeName: "node-1",
			Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"node-1"}}}}}}}},
			ReadinessGates: []corev1.PodReadinessGate{{ConditionType: inplace.ReadinessGate}},
			Containers: []corev1.Container{{Name: "app", Image: "nginx:1.16", Env: []corev1.EnvVar{{Name: "A", Value: "1"}},
				VolumeMounts: []corev1.VolumeMount{{Name: "kube-api-access", MountPath: "/var/run/secrets"}}, TerminationMessagePath: "/dev/termination-log"}},
			Volumes: []corev1.Volume{
				{Name: "kube-api-access", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{}}},
				{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data-web-0"}}},
			},
			Tolerations:                   []corev1.Toleration{{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists}},
			TerminationGracePeriodSeconds: &grace,
		},
		Status: corev1.PodStatus{
			Phase: corev1.PodRunning, HostIP: "10.0.0.1", PodIP: "10.1.0.7", QOSClass: corev1.PodQOSBestEffort,
			Conditions: []corev1.PodCondition{
				{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: ready, Reason: "r", Message: "m"},
				{Type: inplace.ReadinessGate, Status: corev1.ConditionFalse, LastTransitionTime: ready},
			},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "app", Image: "nginx:1.16", ImageID: "id-nginx:1.16", Ready: true, RestartCount: 2,
				ContainerID: "containerd://abc", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: ready}}}},
		},
	}
}

func TestSlimPodKeepsWhatTheControllersRead(t *testing.T) {
	full := fullPod()
	got, err := newSlimmer().slim(full.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	p := got.(*corev1.Pod)

	if p.ManagedFields != nil || p.Spec.Tolerations != nil || p.Status.PodIP != "" || p.Spec.Containers[0].Env != nil || len(p.Spec.Volumes) != 1 {
		t.Errorf("dropped fields kept: %+v", p)
	}
	wantMeta := full.ObjectMeta
	wantMeta.ManagedFields = nil
	if !equality.Semantic.DeepEqual(p.ObjectMeta, wantMeta) {
		t.Errorf("metadata: got %+v, want %+v", p.ObjectMeta, wantMeta)
	}
	if p.Spec.Volumes[0].PersistentVolumeClaim.ClaimName != "data-web-0" {
		t.Errorf("claim volume lost: %+v", p.Spec.Volumes)
	}

	// What the controllers decide from a pod is the same on either.
	now := time.Date(2026, 1, 1, 11, 0, 0, 0, time.UTC)
	cheaper := fullPod()
	cheaper.UID, cheaper.Annotations = "u2", nil
	target := map[string]string{"app": "nginx:1.17"}
	for name, ask := range map[string]func(*corev1.Pod) any{
		"available":  func(p *corev1.Pod) any { return rollout.IsPodAvailable(p, 10, now) },
		"active":     func(p *corev1.Pod) any { return rollout.IsPodActive(p) },
		"node":       func(p *corev1.Pod) any { return placement.TargetNode(p) },
		"gate":       func(p *corev1.Pod) any { return inplace.GateStatus(p) },
		"state":      func(p *corev1.Pod) any { s, ok := inplace.StateOf(p); return [2]any{s.Revision, ok} },
		"next step":  func(p *corev1.Pod) any { s, _ := inplace.NextStep(p, inplace.Want{Images: target}, 0, now); return s },
		"out of svc": func(p *corev1.Pod) any { return inplace.OutOfService(p, "r", target, now).PreviousImageIDs["app"] },
		"put back": func(p *corev1.Pod) any {
			s, _ := inplace.NextStep(p, inplace.Want{Images: map[string]string{"app": "nginx:1.16"}}, 0, now)
			return s
		},
		"delete rank": func(p *corev1.Pod) any { return rollout.PodsToDelete([]*corev1.Pod{p, cheaper}, nil, 1, now)[0].UID },
		"failed":      func(p *corev1.Pod) any { return failure.PodFailure(p, failure.PolicyOf(nil), now) },
	} {
		if a, b := ask(full), ask(p); a != b {
			t.Errorf("%s: %v on the full pod, %v on the slim one", name, a, b)
		}
	}
	// A pod of zero grace is gone when the request deleting it returns, bound or not.
	zero := fullPod()
	*zero.Spec.TerminationGracePeriodSeconds = 0
	if got, _ := newSlimmer().slim(zero.DeepCopy()); !rollout.RemovedOnDelete(got.(*corev1.Pod)) || rollout.RemovedOnDelete(p) {
		t.Errorf("removed on delete: the slim pod of zero grace says %v, of 30 s %v; want true, false",
			rollout.RemovedOnDelete(got.(*corev1.Pod)), rollout.RemovedOnDelete(p))
	}
}

// A rollout watched for failure is judged from the slim pods: a waiting reason stays.
func TestSlimPodKeepsWhyAContainerWaits(t *testing.T) {
	full := fullPod()
	full.Status.ContainerStatuses[0].State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off 10s restarting failed container"}}
	got, err := newSlimmer().slim(full)
	if err != nil {
		t.Fatal(err)
	}
	if why := failure.PodFailure(got.(*corev1.Pod), failure.PolicyOf(nil), time.Now()); why != "CrashLoopBackOff" {
		t.Errorf("PodFailure of the slim pod = %q, want CrashLoopBackOff", why)
	}
}

func TestSlimPodsShareWhatTheyHaveAlike(t *testing.T) {
	s := newSlimmer()
	pod := func(name, hash string) *corev1.Pod {
		p := fullPod()
		p.Name = name
		p.Labels = map[string]string{"app": "web", "pod-template-hash": hash}
		p.Spec.Containers = []corev1.Container{{Name: "app", Image: "nginx:" + hash}}
		return p
	}
	slimmed := func(p *corev1.Pod) *corev1.Pod {
		got, err := s.slim(p)
		if err != nil {
			t.Fatal(err)
		}
		return got.(*corev1.Pod)
	}
	a, b, c := slimmed(pod("a", "1")), slimmed(pod("b", "1")), slimmed(pod("c", "2"))
	same := func(x, y any) bool { return fmt.Sprintf("%p", x) == fmt.Sprintf("%p", y) }
	if !same(a.Labels, b.Labels) || !same(a.Spec.Containers, b.Spec.Containers) || !same(a.OwnerReferences, b.OwnerReferences) {
		t.Error("pods alike hold copies of their own")
	}
	if same(a.Labels, c.Labels) || same(a.Spec.Containers, c.Spec.Containers) {
		t.Error("pods unlike share")
	}
	if c.Labels["pod-template-hash"] != "2" || c.Spec.Containers[0].Image != "nginx:2" || a.Spec.Containers[0].Image != "nginx:1" {
		t.Errorf("shared values mixed up: %v %v", c.Labels, c.Spec.Containers)
	}
	// A full table is emptied, and sharing starts again.
	for i := range maxShared + 1 {
		slimmed(pod("p", strconv.Itoa(i+10)))
	}
	if d, e := slimmed(pod("d", "x")), slimmed(pod("e", "x")); !same(d.Labels, e.Labels) || len(s.labels) > maxShared {
		t.Errorf("after emptying: shared %v, table of %d", same(d.Labels, e.Labels), len(s.labels))
	}
}
