package statefulset

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"

	"github.com/kroll-dev/kroll/pkg/controller"
	"github.com/kroll-dev/kroll/pkg/inplace"
)

func TestUnfitResize(t *testing.T) {
	const why = "pod web-3: the resize cannot be made on node n1: needs cpu 900m, 500m free (1500m of 2 held by other pods)"
	tests := []struct {
		name           string
		mode           inplace.Mode
		unfit          string
		recreate, hold bool
	}{
		{"the node can make it: step the pod", inplace.IfPossible, "", false, false},
		{"InPlaceOnly, the node can make it: step the pod", inplace.Only, "", false, false},
		{"InPlaceIfPossible, the node cannot: recreate the pod where it fits", inplace.IfPossible, why, true, false},
		{"InPlaceOnly, the node cannot: write nothing to it", inplace.Only, why, false, true},
		{"opted out: the set's usual update decides", inplace.Off, why, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if recreate, hold := unfitResize(tt.mode, tt.unfit); recreate != tt.recreate || hold != tt.hold {
				t.Errorf("recreate %v hold %v, want %v %v", recreate, hold, tt.recreate, tt.hold)
			}
		})
	}
}

// resizeSet is a 4-replica set opted in under mode, cpu request cpu (NotRequired),
// with partition (and maxUnavailable when > 0).
func resizeSet(mode inplace.Mode, cpu string, partition int32, maxUnavailable int) *appsv1.StatefulSet {
	set := newSet(4, appsv1.RetainPersistentVolumeClaimRetentionPolicyType, appsv1.RetainPersistentVolumeClaimRetentionPolicyType)
	set.Spec.VolumeClaimTemplates = nil
	set.Annotations = map[string]string{inplace.StrategyAnnotation: string(mode)}
	set.Spec.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType,
		RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{Partition: &partition}}
	if maxUnavailable > 0 {
		mu := intstr.FromInt32(int32(maxUnavailable))
		set.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = &mu
	}
	c := &set.Spec.Template.Spec.Containers[0]
	c.Resources = corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}
	c.ResizePolicy = []corev1.ContainerResizePolicy{{ResourceName: corev1.ResourceCPU, RestartPolicy: corev1.NotRequired}}
	return set
}

// runningPod is set's pod of ordinal at revision on node n1, serving, reporting cpu.
func runningPod(set *appsv1.StatefulSet, ordinal int, revision, cpu string) *corev1.Pod {
	p := setPod(set, ordinal, revision, true)
	p.UID = types.UID(fmt.Sprintf("uid-%d", ordinal))
	p.Spec.NodeName = "n1"
	p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse(cpu)
	r := *p.Spec.Containers[0].Resources.DeepCopy()
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "nginx", Image: "nginx", Ready: true, Resources: &r, AllocatedResources: r.Requests,
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
	p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: inplace.ReadinessGate, Status: corev1.ConditionTrue})
	return p
}

// Given a 4-replica set opted in, its template's cpu request 100m → 200m (revision A →
// B), on one node n1, when the controller syncs once, then it writes what the resize
// rules ask: paced by maxUnavailable, the partition honoured, a pod whose node cannot
// fit its resize recreated (InPlaceIfPossible) or left and named (InPlaceOnly).
func TestUpdateResize(t *testing.T) {
	at := func(revision, cpu string) func(*appsv1.StatefulSet, int) *corev1.Pod {
		return func(s *appsv1.StatefulSet, o int) *corev1.Pod { return runningPod(s, o, revision, cpu) }
	}
	// written: the resize written (spec 200m), the kubelet still reporting 100m.
	written := func(s *appsv1.StatefulSet, o int) *corev1.Pod {
		p := runningPod(s, o, "B", "100m")
		p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("200m")
		return p
	}
	old, done := at("A", "100m"), at("B", "200m")
	tests := []struct {
		name string
		mode inplace.Mode
		// partition, maxUnavailable (0: none, one at a time), n1's cpu.
		partition      int32
		maxUnavailable int
		nodeCPU        string
		pods           []func(*appsv1.StatefulSet, int) *corev1.Pod
		want           string
		// condition is the InPlaceUpdate condition's reason and message, when set.
		condition, event string
	}{
		{"the highest stale pod first: its labels, in place (the resize follows)", inplace.IfPossible, 0, 0, "32",
			[]func(*appsv1.StatefulSet, int) *corev1.Pod{old, old, old, old}, "[patch web-3]", "", ""},
		{"labelled, its resize due: written through pods/resize", inplace.IfPossible, 0, 0, "32",
			[]func(*appsv1.StatefulSet, int) *corev1.Pod{old, old, old, at("B", "100m")}, "[patch web-3/resize]", "", ""},
		{"one at a time: web-3's resize is written, not made, so web-2 waits though web-3 serves", inplace.IfPossible, 0, 0, "32",
			[]func(*appsv1.StatefulSet, int) *corev1.Pod{old, old, old, written}, "[]", "", ""},
		{"maxUnavailable 2: web-3 resizing costs one, web-2 takes the other", inplace.IfPossible, 0, 2, "32",
			[]func(*appsv1.StatefulSet, int) *corev1.Pod{old, old, old, written}, "[patch web-2]", "", ""},
		{"partition 2: web-3 and web-2 resized, web-1 and web-0 keep 100m", inplace.IfPossible, 2, 0, "32",
			[]func(*appsv1.StatefulSet, int) *corev1.Pod{old, old, done, done}, "[]", "", ""},
		{"n1 cannot fit 200m (4 × 100m of 450m held): InPlaceIfPossible recreates web-3", inplace.IfPossible, 0, 0, "450m",
			[]func(*appsv1.StatefulSet, int) *corev1.Pod{old, old, old, old}, "[delete web-3]", "",
			"Warning ResizeUnfit pod web-3: the resize cannot be made on node n1: needs cpu 200m, 150m free (300m of 450m held by other pods); recreating it"},
		{"n1 cannot fit 200m: InPlaceOnly writes nothing and names web-3", inplace.Only, 0, 0, "450m",
			[]func(*appsv1.StatefulSet, int) *corev1.Pod{old, old, old, old}, "[]",
			"InPlaceUpdateBlocked: pod web-0: the resize cannot be made on node n1: needs cpu 200m, 150m free (300m of 450m held by other pods)",
			"Warning InPlaceUpdateBlocked pod web-0"},
		{"a resize Deferred that fits by the count waits", inplace.IfPossible, 0, 0, "32",
			[]func(*appsv1.StatefulSet, int) *corev1.Pod{old, old, old, func(s *appsv1.StatefulSet, o int) *corev1.Pod {
				p := written(s, o)
				p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodResizePending, Status: corev1.ConditionTrue, Reason: corev1.PodReasonDeferred})
				return p
			}}, "[]", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			from, to := resizeSet(tt.mode, "100m", tt.partition, tt.maxUnavailable), resizeSet(tt.mode, "200m", tt.partition, tt.maxUnavailable)
			client := fake.NewClientset()
			factory := informers.NewSharedInformerFactory(client, 0)
			podInf, nodeInf := factory.Core().V1().Pods().Informer(), factory.Core().V1().Nodes().Informer()
			if err := controller.AddPodNodeIndex(podInf); err != nil {
				t.Fatal(err)
			}
			node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(tt.nodeCPU)}}}
			if err := nodeInf.GetIndexer().Add(node); err != nil {
				t.Fatal(err)
			}
			var pods []*corev1.Pod
			for i, make := range tt.pods {
				p := make(to, i)
				pods = append(pods, p)
				if err := podInf.GetIndexer().Add(p); err != nil {
					t.Fatal(err)
				}
			}
			recorder := record.NewFakeRecorder(10)
			fakes := &fakePods{}
			c := &Controller{client: client, recorder: recorder, now: time.Now, pods: fakes,
				nodes: factory.Core().V1().Nodes().Lister(), podIndex: podInf.GetIndexer(), queue: controller.NewQueue("test"),
				claims: newClaimKeeper(client, factory.Core().V1().PersistentVolumeClaims().Lister(), record.NewFakeRecorder(10))}
			revs := revisions{current: rev("A"), update: rev("B"), currentSet: from, updateSet: to}
			status, err := c.update(context.Background(), to, pods, revs, &controller.Takes{}, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			if got := fmt.Sprint(fakes.actions); got != tt.want {
				t.Errorf("actions %s, want %s", got, tt.want)
			}
			cond := conditions.Current(status.Conditions)
			if tt.condition != "" && (cond == nil || !strings.HasPrefix(cond.Reason+": "+cond.Message, tt.condition)) {
				t.Errorf("InPlaceUpdate condition %+v, want %q…", cond, tt.condition)
			}
			var events []string
			for len(recorder.Events) > 0 {
				events = append(events, <-recorder.Events)
			}
			if tt.event != "" && !strings.Contains(strings.Join(events, "\n"), tt.event) {
				t.Errorf("events %q, want one with %q", events, tt.event)
			}
		})
	}
}
