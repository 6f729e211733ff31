package history

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// webSet is StatefulSet web as the API server returns it after defaulting: nginx:1.25,
// port 80 named web, labels app=nginx.
func webSet(image string) *appsv1.StatefulSet {
	grace := int64(30)
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "web-uid",
			Annotations: map[string]string{ChangeCauseAnnotation: "first"}},
		Spec: appsv1.StatefulSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "nginx"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "nginx"}},
				Spec: corev1.PodSpec{
					Containers: []corev1.Container{{
						Name: "nginx", Image: image, ImagePullPolicy: corev1.PullIfNotPresent,
						Ports:                    []corev1.ContainerPort{{ContainerPort: 80, Name: "web", Protocol: corev1.ProtocolTCP}},
						TerminationMessagePath:   "/dev/termination-log",
						TerminationMessagePolicy: corev1.TerminationMessageReadFile,
					}},
					DNSPolicy: corev1.DNSClusterFirst, RestartPolicy: corev1.RestartPolicyAlways,
					SchedulerName: "default-scheduler", SecurityContext: &corev1.PodSecurityContext{},
					TerminationGracePeriodSeconds: &grace,
				},
			},
			UpdateStrategy: appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType,
				RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{Partition: new(int32)}},
		},
	}
}

func TestTemplatePatchAndRevisionName(t *testing.T) {
	set := webSet("nginx:1.25")
	data, err := TemplatePatch(set)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"spec":{"template":{"$patch":"replace","metadata":{"labels":{"app":"nginx"}},"spec":{"containers":[{"image":"nginx:1.25","imagePullPolicy":"IfNotPresent","name":"nginx","ports":[{"containerPort":80,"name":"web","protocol":"TCP"}],"resources":{},"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File"}],"dnsPolicy":"ClusterFirst","restartPolicy":"Always","schedulerName":"default-scheduler","securityContext":{},"terminationGracePeriodSeconds":30}}}}`
	if string(data) != want {
		t.Fatalf("data\n%s\nwant\n%s", data, want)
	}
	for _, tt := range []struct {
		collisions int32
		want       string
	}{{0, "677f98675c"}, {1, "677f98675b"}} {
		if got := RevisionHash(data, tt.collisions); got != tt.want {
			t.Errorf("hash with %d collisions = %s, want %s", tt.collisions, got, tt.want)
		}
	}
	rev := NewRevision(set, appsv1.SchemeGroupVersion.WithKind("StatefulSet"), set.Spec.Template.Labels, data, 3, 0, ControllerRevisionHashLabel)
	if rev.Name != "web-677f98675c" || rev.Labels[ControllerRevisionHashLabel] != "677f98675c" || rev.Labels["app"] != "nginx" ||
		rev.Annotations[ChangeCauseAnnotation] != "first" || rev.Revision != 3 || !metav1.IsControlledBy(rev, set) {
		t.Errorf("revision %+v", rev.ObjectMeta)
	}
	if long := RevisionName(string(make([]byte, 300)), "h"); len(long) != 225 {
		t.Errorf("a long owner name gives a %d-character revision name, want 223+2", len(long))
	}
}

func TestApplyRevision(t *testing.T) {
	old := webSet("nginx:1.25")
	data, _ := TemplatePatch(old)
	rev := NewRevision(old, appsv1.SchemeGroupVersion.WithKind("StatefulSet"), nil, data, 1, 0, ControllerRevisionHashLabel)
	cur := webSet("nginx:1.26")
	cur.Spec.Replicas = new(int32)
	*cur.Spec.Replicas = 7
	cur.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "X", Value: "1"}}
	got, err := ApplyRevision(cur, rev)
	if err != nil {
		t.Fatal(err)
	}
	if c := got.Spec.Template.Spec.Containers[0]; c.Image != "nginx:1.25" || len(c.Env) != 0 || *got.Spec.Replicas != 7 {
		t.Errorf("applied: image %s env %v replicas %d; want the revision's template (replaced, not merged) and the set's replicas", c.Image, c.Env, *got.Spec.Replicas)
	}
}

func TestStaleRevisions(t *testing.T) {
	var revs []*appsv1.ControllerRevision
	for i, name := range []string{"a", "b", "c", "d", "e"} {
		revs = append(revs, &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: name}, Revision: int64(i + 1)})
	}
	live := map[string]bool{"b": true, "e": true}
	names := func(rs []*appsv1.ControllerRevision) (s string) {
		for _, r := range rs {
			s += r.Name
		}
		return s
	}
	for _, tt := range []struct {
		limit int32
		want  string
	}{{10, ""}, {2, "a"}, {0, "acd"}, {-1, ""}} {
		if got := names(StaleRevisions(revs, live, tt.limit)); got != tt.want {
			t.Errorf("limit %d: delete %q, want %q (b and e are live)", tt.limit, got, tt.want)
		}
	}
}

// A revision written by Kubernetes ≤ 1.33 carries "creationTimestamp":null in its
// template; applied and recorded again, it is the same template as today's data.
func TestOldSerializationReencodes(t *testing.T) {
	set := webSet("nginx:1.25")
	data, _ := TemplatePatch(set)
	old := []byte(string(data[:len(`{"spec":{"template":{"$patch":"replace","metadata":{`)]) + `"creationTimestamp":null,` + string(data[len(`{"spec":{"template":{"$patch":"replace","metadata":{`):]))
	rev := NewRevision(set, appsv1.SchemeGroupVersion.WithKind("StatefulSet"), nil, old, 1, 0, ControllerRevisionHashLabel)
	if string(rev.Data.Raw) == string(data) {
		t.Fatal("the test revision should differ in its bytes")
	}
	applied, err := ApplyRevision(set, rev)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := TemplatePatch(applied)
	if string(again) != string(data) {
		t.Errorf("re-encoded\n%s\nwant\n%s", again, data)
	}
}
