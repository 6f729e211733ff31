package rolloutplan

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kroll-dev/kroll/pkg/history"
	"github.com/kroll-dev/kroll/pkg/inplace"
	"github.com/kroll-dev/kroll/pkg/rollout"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// now is the tests' clock; pods were created two hours before and ready for one.
var now = time.Date(2026, 3, 4, 12, 0, 0, 0, time.UTC)

// template is a one-container pod template labelled app=name.
func template(name, image string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: image}}},
	}
}

// withResources gives t's first container cpu 100m/500m and memory 64Mi/128Mi
// (requests/limits: Burstable), resized without a restart for cpu and with one for
// memory.
func withResources(t *corev1.PodTemplateSpec) {
	c := &t.Spec.Containers[0]
	c.Resources = corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
	}
	c.ResizePolicy = []corev1.ContainerResizePolicy{
		{ResourceName: corev1.ResourceCPU, RestartPolicy: corev1.NotRequired},
		{ResourceName: corev1.ResourceMemory, RestartPolicy: corev1.RestartContainer},
	}
}

// newDeployment is Deployment name at revision 1, image nginx:1.25, RollingUpdate with
// maxSurge and maxUnavailable ("25%", "1"); "" for either means Recreate.
func newDeployment(name string, replicas int32, maxSurge, maxUnavailable string) *appsv1.Deployment {
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(name + "-uid"),
			Annotations: map[string]string{history.RevisionAnnotation: "1"}},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: template(name, "nginx:1.25"),
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType},
		},
	}
	if maxSurge != "" && maxUnavailable != "" {
		s, u := intstr.Parse(maxSurge), intstr.Parse(maxUnavailable)
		d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
			RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: &s, MaxUnavailable: &u}}
	}
	return d
}

// changed is a copy of obj changed by edit: the object as `kubectl apply` would leave it.
func changed[T interface{ DeepCopy() T }](obj T, edit func(T)) T {
	next := obj.DeepCopy()
	edit(next)
	return next
}

func setImage(image string) func(*appsv1.Deployment) {
	return func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = image }
}

func inPlaceMode(mode inplace.Mode) func(*appsv1.Deployment) {
	return func(d *appsv1.Deployment) { d.Annotations[inplace.StrategyAnnotation] = string(mode) }
}

// newReplicaSet is d's ReplicaSet of revision, sized replicas, created revision hours
// ago, annotated as the controller leaves it.
func newReplicaSet(d *appsv1.Deployment, revision int, replicas int32) *appsv1.ReplicaSet {
	hash := history.TemplateHash(&d.Spec.Template, nil)
	t := *d.Spec.Template.DeepCopy()
	t.Labels = map[string]string{"app": d.Name, appsv1.DefaultDeploymentUniqueLabelKey: hash}
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: d.Name + "-" + hash, Namespace: d.Namespace, UID: types.UID(d.Name + "-" + hash + "-uid"),
			Labels:            t.Labels,
			CreationTimestamp: metav1.NewTime(now.Add(time.Duration(revision-100) * time.Hour)),
			OwnerReferences:   []metav1.OwnerReference{*metav1.NewControllerRef(d, appsv1.SchemeGroupVersion.WithKind("Deployment"))},
			Annotations:       map[string]string{history.RevisionAnnotation: strconv.Itoa(revision)}},
		Spec: appsv1.ReplicaSetSpec{Replicas: &replicas, Template: t,
			Selector: &metav1.LabelSelector{MatchLabels: t.Labels}},
	}
	for k, v := range rollout.ReplicasAnnotations(d) {
		rs.Annotations[k] = v
	}
	return rs
}

// suffix is a pod-name suffix like the API server's, fixed for index i.
func suffix(seed string, i int) string {
	const alphabet = "bcdfghjklmnpqrstvwxz2456789"
	h := uint32(2166136261)
	for _, c := range seed + strconv.Itoa(i) {
		h = (h ^ uint32(c)) * 16777619
	}
	var b [5]byte
	for j := range b {
		b[j] = alphabet[h%uint32(len(alphabet))]
		h /= uint32(len(alphabet))
		h += uint32(i*7 + j)
	}
	return string(b[:])
}

// readyPod is a running pod created two hours ago, ready for an hour (or not ready).
func readyPod(name, node string, labels map[string]string, ready bool) *corev1.Pod {
	status := corev1.ConditionTrue
	if !ready {
		status = corev1.ConditionFalse
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(name + "-uid"), Labels: labels,
			CreationTimestamp: metav1.NewTime(now.Add(-2 * time.Hour))},
		Spec: corev1.PodSpec{NodeName: node},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
			{Type: corev1.PodReady, Status: status, LastTransitionTime: metav1.NewTime(now.Add(-time.Hour))}}},
	}
}

// podsOf are n pods of rs, on nodes node-0…node-4; the first notReady are not ready.
func podsOf(rs *appsv1.ReplicaSet, n, notReady int) []*corev1.Pod {
	var pods []*corev1.Pod
	for i := range n {
		p := readyPod(rs.Name+"-"+suffix(rs.Name, i), fmt.Sprintf("node-%d", i%5), rs.Spec.Template.Labels, i >= notReady)
		p.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(rs, appsv1.SchemeGroupVersion.WithKind("ReplicaSet"))}
		pods = append(pods, p)
	}
	return pods
}

// shape is a plan's batches as "+3 -5 ~2" per batch (creates, deletes, in-place), with
// " " between ops of one batch and " | " between batches.
func shape(p Plan) string {
	var out []string
	for _, b := range p.Batches {
		counts := map[Op]int{}
		var order []Op
		for _, op := range b.Ops {
			if counts[op.Op] == 0 {
				order = append(order, op.Op)
			}
			counts[op.Op]++
		}
		var parts []string
		for _, op := range order {
			parts = append(parts, fmt.Sprintf("%s%d", map[Op]string{Create: "+", Delete: "-", InPlace: "~"}[op], counts[op]))
		}
		out = append(out, strings.Join(parts, " "))
	}
	return strings.Join(out, " | ")
}

// opsOf lists a plan's operations per batch as "delete web-4" (with "@node" for a
// DaemonSet), batches separated by " | ".
func opsOf(p Plan) string {
	var out []string
	for _, b := range p.Batches {
		var parts []string
		for _, op := range b.Ops {
			s := string(op.Op) + " " + op.Pod
			if op.Node != "" {
				s = string(op.Op) + "@" + op.Node
			}
			parts = append(parts, s)
		}
		out = append(out, strings.Join(parts, ", "))
	}
	return strings.Join(out, " | ")
}

// replay plays the plan from pods (name → available now), independently of the code
// under test, calling check after each batch's operations (before it completes) with
// the pods then and how many are available; it returns the pods at the end with their
// revisions ("" for pods that existed before and were not touched).
func replay(t *testing.T, p Plan, pods map[string]bool, check func(batch, total, available int)) map[string]string {
	t.Helper()
	available := map[string]bool{}
	revision := map[string]string{}
	for name, a := range pods {
		available[name] = a
		revision[name] = ""
	}
	for i, b := range p.Batches {
		var done []string
		for _, op := range b.Ops {
			switch op.Op {
			case Delete:
				if _, ok := available[op.Pod]; !ok {
					t.Fatalf("batch %d deletes %s, which does not exist", i+1, op.Pod)
				}
				delete(available, op.Pod)
				delete(revision, op.Pod)
			case Create:
				if _, ok := available[op.Pod]; ok {
					t.Fatalf("batch %d creates %s, which exists", i+1, op.Pod)
				}
				available[op.Pod], revision[op.Pod] = false, op.Revision
				done = append(done, op.Pod)
			case InPlace:
				if _, ok := available[op.Pod]; !ok {
					t.Fatalf("batch %d updates %s, which does not exist", i+1, op.Pod)
				}
				available[op.Pod], revision[op.Pod] = false, op.Revision
				done = append(done, op.Pod)
			}
		}
		n := 0
		for _, a := range available {
			if a {
				n++
			}
		}
		check(i+1, len(available), n)
		for _, name := range done {
			available[name] = true
		}
	}
	return revision
}

func availability(pods []*corev1.Pod) map[string]bool {
	out := map[string]bool{}
	for _, p := range pods {
		out[p.Name] = rollout.IsPodAvailable(p, 0, now)
	}
	return out
}

// golden compares got with testdata/name.txt, or writes it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".txt")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to write it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs (go test -update rewrites it)\n--- got\n%s--- want\n%s", path, got, want)
	}
}

// newStatefulSet is StatefulSet name, image nginx:1.25, OrderedReady, RollingUpdate at
// partition with maxUnavailable ("" for none), its status at one revision.
func newStatefulSet(name string, replicas, partition int32, maxUnavailable string) *appsv1.StatefulSet {
	set := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(name + "-uid")},
		Spec: appsv1.StatefulSetSpec{
			Replicas:            &replicas,
			Selector:            &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template:            template(name, "nginx:1.25"),
			PodManagementPolicy: appsv1.OrderedReadyPodManagement,
			UpdateStrategy: appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType,
				RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{Partition: &partition}},
		},
	}
	if maxUnavailable != "" {
		u := intstr.Parse(maxUnavailable)
		set.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = &u
	}
	rev := setRevision(set)
	set.Status.CurrentRevision, set.Status.UpdateRevision = rev, rev
	return set
}

// setRevision is the ControllerRevision name of set's template.
func setRevision(set *appsv1.StatefulSet) string {
	data, err := history.TemplatePatch(set)
	if err != nil {
		panic(err)
	}
	return history.RevisionName(set.Name, history.RevisionHash(data, 0))
}

// setPods are set's pods 0…n−1 at its update revision; the ordinals in notReady are
// not ready.
func setPods(set *appsv1.StatefulSet, n int, notReady ...int) []*corev1.Pod {
	down := map[int]bool{}
	for _, o := range notReady {
		down[o] = true
	}
	var pods []*corev1.Pod
	for o := range n {
		pods = append(pods, readyPod(fmt.Sprintf("%s-%d", set.Name, o), fmt.Sprintf("node-%d", o%3),
			map[string]string{"app": set.Name, appsv1.StatefulSetRevisionLabel: set.Status.UpdateRevision}, !down[o]))
	}
	return pods
}

// newDaemonSet is DaemonSet name, image fluentd:v1, RollingUpdate with maxUnavailable
// and maxSurge ("1", "25%"); "" for both means OnDelete.
func newDaemonSet(name, maxUnavailable, maxSurge string) *appsv1.DaemonSet {
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(name + "-uid")},
		Spec: appsv1.DaemonSetSpec{
			Selector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template:       template(name, "fluentd:v1"),
			UpdateStrategy: appsv1.DaemonSetUpdateStrategy{Type: appsv1.OnDeleteDaemonSetStrategyType},
		},
	}
	if maxUnavailable != "" || maxSurge != "" {
		u, s := intstr.Parse(maxUnavailable), intstr.Parse(maxSurge)
		ds.Spec.UpdateStrategy = appsv1.DaemonSetUpdateStrategy{Type: appsv1.RollingUpdateDaemonSetStrategyType,
			RollingUpdate: &appsv1.RollingUpdateDaemonSet{MaxUnavailable: &u, MaxSurge: &s}}
	}
	return ds
}

func newNodes(names ...string) []*corev1.Node {
	var nodes []*corev1.Node
	for _, n := range names {
		nodes = append(nodes, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n, Labels: map[string]string{"kubernetes.io/hostname": n}}})
	}
	return nodes
}

// daemonPods are ds's pods, one on each of nodes, at its template's revision; those on
// the nodes in notReady are not ready.
func daemonPods(ds *appsv1.DaemonSet, nodes []string, notReady ...string) []*corev1.Pod {
	down := map[string]bool{}
	for _, n := range notReady {
		down[n] = true
	}
	hash := history.TemplateHash(&ds.Spec.Template, nil)
	var pods []*corev1.Pod
	for i, n := range nodes {
		pods = append(pods, readyPod(ds.Name+"-"+suffix(ds.Name, i), n,
			map[string]string{"app": ds.Name, appsv1.DefaultDaemonSetUniqueLabelKey: hash}, !down[n]))
	}
	return pods
}
