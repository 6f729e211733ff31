package manager

import (
	"bytes"
	"math/rand"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/apitesting/fuzzer"
	"k8s.io/apimachinery/pkg/api/resource"
	metafuzzer "k8s.io/apimachinery/pkg/apis/meta/fuzzer"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/client-go/kubernetes/scheme"
)

// randomPods are n pods with every field filled at random (some left empty), the same
// for every run.
func randomPods(t *testing.T, n int) []corev1.Pod {
	t.Helper()
	f := fuzzer.FuzzerFor(metafuzzer.Funcs, rand.NewSource(25), scheme.Codecs).NilChance(0.2).NumElements(0, 3)
	pods := make([]corev1.Pod, n)
	for i := range pods {
		f.Fill(&pods[i])
		// Conditions of the types slimPod keeps, among others of random types.
		for j, t := range []corev1.PodConditionType{corev1.PodReady, corev1.PodResizePending} {
			if c := pods[i].Status.Conditions; (i+j)%3 != 0 && len(c) > j {
				c[j].Type = t
			}
		}
	}
	return pods
}

// A thin pod is as good as the whole one to the controllers: slimPod makes the same
// pod of both. Were a field slimPod keeps skipped on the wire, this would fail.
func TestThinPodSlimsAsTheWholePod(t *testing.T) {
	for i, pod := range randomPods(t, 500) {
		b, err := pod.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		var whole, thin corev1.Pod
		if err := whole.Unmarshal(b); err != nil {
			t.Fatal(err)
		}
		if err := decodeThinPod(b, &thin); err != nil {
			t.Fatalf("pod %d: %v", i, err)
		}
		want, got := newSlimmer().slimPod(&whole), newSlimmer().slimPod(&thin)
		if !reflect.DeepEqual(want, got) {
			t.Fatalf("pod %d: slim of the thin pod differs from slim of the whole (-whole +thin):\n%s", i, diff.Diff(want, got))
		}
	}
}

// What the wire skips is not decoded: a pod's managedFields, its token volume, its
// containers' environment, its statuses' last state and the conditions slimPod drops
// are left out.
func TestThinPodSkipsWhatNoControllerReads(t *testing.T) {
	grace := int64(0)
	pod := corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-1", Labels: map[string]string{"app": "web"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubelet"}}},
		Spec: corev1.PodSpec{
			NodeName: "node-1", TerminationGracePeriodSeconds: &grace,
			Volumes: []corev1.Volume{
				{Name: "token", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{}}},
				{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data-web-1"}}},
			},
			Containers: []corev1.Container{{Name: "c", Image: "nginx:1.27", Env: []corev1.EnvVar{{Name: "A", Value: "b"}},
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}}},
			Tolerations: []corev1.Toleration{{Key: "k"}},
		},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.1",
			Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue},
				{Type: corev1.PodReady, Status: corev1.ConditionTrue, Reason: "r"}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "c", Ready: true, ContainerID: "x",
				LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1}}}}},
	}
	b, err := pod.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	var thin corev1.Pod
	if err := decodeThinPod(b, &thin); err != nil {
		t.Fatal(err)
	}
	want := corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-1", Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{
			NodeName: "node-1", TerminationGracePeriodSeconds: &grace,
			Volumes: pod.Spec.Volumes[1:],
			Containers: []corev1.Container{{Name: "c", Image: "nginx:1.27",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}}},
		},
		Status: corev1.PodStatus{Phase: corev1.PodRunning,
			Conditions:        []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, Reason: "r"}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "c", Ready: true}}},
	}
	if !reflect.DeepEqual(want, thin) {
		t.Errorf("thin pod (-want +got):\n%s", diff.Diff(want, thin))
	}
}

// The decoder reads Pods and PodLists from their protobuf envelope, into a new object
// or a given one, and leaves every other object and encoding to the codec it wraps.
func TestThinPodDecoder(t *testing.T) {
	proto := protobuf.NewSerializer(scheme.Scheme, scheme.Scheme)
	d := thinPodDecoder{proto}
	encode := func(obj runtime.Object) []byte {
		var buf bytes.Buffer
		enc := scheme.Codecs.EncoderForVersion(proto, corev1.SchemeGroupVersion)
		if err := enc.Encode(obj, &buf); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	pods := randomPods(t, 3)
	// want is slim of pod as the wrapped codec decodes it: a round trip through
	// protobuf makes an empty list nil.
	want := func(p *corev1.Pod) *corev1.Pod {
		whole, _, err := proto.Decode(encode(p), nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		slim := newSlimmer().slimPod(whole.(*corev1.Pod))
		slim.TypeMeta = p.TypeMeta
		return slim
	}
	slim := func(p *corev1.Pod) *corev1.Pod { return newSlimmer().slimPod(p) }

	pod := pods[0].DeepCopy()
	pod.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}
	pod.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubelet"}}
	for _, into := range []runtime.Object{nil, &corev1.Pod{Spec: corev1.PodSpec{NodeName: "stale"}}} {
		obj, gvk, err := d.Decode(encode(pod), nil, into)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := obj.(*corev1.Pod)
		if !ok || gvk.Kind != "Pod" || (into != nil && got != into) {
			t.Fatalf("decoded %T %v into %T", obj, gvk, into)
		}
		if got.ManagedFields != nil {
			t.Errorf("managedFields decoded: %v", got.ManagedFields)
		}
		if w, g := want(pod), slim(got); !reflect.DeepEqual(w, g) {
			t.Errorf("pod decoded into %T (-want +got):\n%s", into, diff.Diff(w, g))
		}
	}

	list := &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "42"}, Items: pods}
	obj, _, err := d.Decode(encode(list), nil, &corev1.PodList{})
	if err != nil {
		t.Fatal(err)
	}
	got := obj.(*corev1.PodList)
	if got.ResourceVersion != "42" || len(got.Items) != len(pods) {
		t.Fatalf("list decoded with resourceVersion %q and %d items", got.ResourceVersion, len(got.Items))
	}
	for i := range pods {
		if w, g := want(&pods[i]), slim(&got.Items[i]); !reflect.DeepEqual(w, g) {
			t.Errorf("item %d (-want +got):\n%s", i, diff.Diff(w, g))
		}
	}

	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubelet"}}}}
	obj, _, err = d.Decode(encode(node), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := obj.(*corev1.Node); n.Name != "n" || len(n.ManagedFields) != 1 {
		t.Errorf("a node is decoded whole by the wrapped codec, got %+v", n.ObjectMeta)
	}
}

// Cut anywhere, an encoding is an error or a pod, never a panic or a loop.
func TestThinPodTruncated(t *testing.T) {
	b, err := randomPods(t, 1)[0].Marshal()
	if err != nil {
		t.Fatal(err)
	}
	for n := range len(b) {
		var pod corev1.Pod
		_ = decodeThinPod(b[:n], &pod)
	}
	if err := eachField([]byte{0x0a, 0x05, 0x01}, func(int32, int, int, []byte) error { return nil }); err == nil {
		t.Error("a length past the end is not an error")
	}
}
