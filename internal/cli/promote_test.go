package cli

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kroll-dev/kroll/pkg/staging"
)

var stepsNow = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

// stagedWeb is a 4-replica Deployment rolling out revision 2 (hash "new") with steps
// "25%, pause, 100%": old pods on revision 1, updated ones on revision 2, all ready.
// record is kroll.dev/rollout-step for revision "new" ("" for none).
func stagedWeb(annotations map[string]string, old, updated int, record string) []runtime.Object {
	replicas := int32(4)
	labels := map[string]string{"app": "web"}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "d-web", Generation: 2,
			Annotations: map[string]string{"deployment.kubernetes.io/revision": "2"}},
		Spec: appsv1.DeploymentSpec{Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1.26"}}}}},
		Status: appsv1.DeploymentStatus{ObservedGeneration: 2},
	}
	for k, v := range annotations {
		d.Annotations[k] = v
	}
	if record != "" {
		(staging.Record{Revision: "new", Since: stepsNow.Add(-time.Minute)}).Set(d.Annotations)
		d.Annotations[staging.StepAnnotation] = record
	}
	objs := []runtime.Object{d}
	for _, rs := range []struct {
		hash, revision, image string
		pods                  int
		age                   time.Duration
	}{{"old", "1", "nginx:1.25", old, time.Hour}, {"new", "2", "nginx:1.26", updated, time.Minute}} {
		t := *d.Spec.Template.DeepCopy()
		t.Spec.Containers[0].Image = rs.image
		t.Labels = map[string]string{"app": "web", appsv1.DefaultDeploymentUniqueLabelKey: rs.hash}
		n := int32(rs.pods)
		yes := true
		owner := metav1.OwnerReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", UID: d.UID, Controller: &yes}
		set := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web-" + rs.hash, Namespace: "default", UID: types.UID("rs-" + rs.hash), Labels: t.Labels,
			CreationTimestamp: metav1.NewTime(stepsNow.Add(-rs.age)), Annotations: map[string]string{"deployment.kubernetes.io/revision": rs.revision},
			OwnerReferences: []metav1.OwnerReference{owner}}, Spec: appsv1.ReplicaSetSpec{Replicas: &n, Template: t},
			// Its controller has seen its pods, all ready for an hour.
			Status: appsv1.ReplicaSetStatus{Replicas: n, ReadyReplicas: n, AvailableReplicas: n}}
		objs = append(objs, set)
		for i := range rs.pods {
			podOwner := metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: set.Name, UID: set.UID, Controller: &yes}
			objs = append(objs, &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", set.Name, i), Namespace: "default", Labels: t.Labels, OwnerReferences: []metav1.OwnerReference{podOwner}},
				Spec:       t.Spec,
				Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue,
					LastTransitionTime: metav1.NewTime(stepsNow.Add(-time.Hour))}}},
			})
		}
	}
	return objs
}

var webRef = workloadRef{kind: kindDeployment, namespace: "default", name: "web"}

func annotationsOfWeb(t *testing.T, client *fake.Clientset) map[string]string {
	t.Helper()
	d, err := client.AppsV1().Deployments("default").Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return d.Annotations
}

func TestPromote(t *testing.T) {
	steps := map[string]string{staging.StepsAnnotation: "25%, pause, 100%"}
	tests := []struct {
		name    string
		objs    []runtime.Object
		full    bool
		want    string // the record written, or "" when refused
		wantErr string
	}{
		{"at the pause after 25%: on to step 2/3", stagedWeb(steps, 3, 1, "1/3"), false, "2/3", ""},
		{"--full: to the end", stagedWeb(steps, 3, 1, "1/3"), true, "3/3", ""},
		{"steps done: refused", stagedWeb(steps, 0, 4, "3/3"), false, "",
			"deployment/web cannot be promoted: all 3 steps are done already"},
		{"no record yet: refused", stagedWeb(steps, 4, 0, ""), false, "",
			"deployment/web cannot be promoted: no staged rollout has started yet (no kroll.dev/rollout-step)"},
		{"a partition, not steps: the command that lowers it", stagedWeb(map[string]string{staging.PartitionAnnotation: "3"}, 3, 1, ""), false, "",
			"deployment/web cannot be promoted: it is staged by kroll.dev/partition, not by steps; lower the partition instead: kroll annotate deployment/web kroll.dev/partition=0 --overwrite"},
		{"steps that do not parse: the problem, one line", stagedWeb(map[string]string{staging.StepsAnnotation: "25%, soon"}, 3, 1, "1/3"), false, "",
			`deployment/web cannot be promoted: kroll.dev/rollout-steps="25%, soon" is not valid (step 2 "soon" is neither a share of pods (10%, 3) nor a pause nor "analyze"): want a comma-separated list of shares of pods updated (10%, 3), pauses ("pause" until promoted, "pause: 2m") and analyses ("analyze", the checks of kroll.dev/analysis), like "10%, pause, 50%, pause: 5m, 100%" or "10%, analyze, 50%, analyze, 100%"; the rollout is not staged`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client := fake.NewClientset(tt.objs...)
			before := annotationsOfWeb(t, client)
			r, err := promote(context.Background(), client, webRef, tt.full, stepsNow)
			if errString(err) != tt.wantErr {
				t.Fatalf("error %q, want %q", errString(err), tt.wantErr)
			}
			after := annotationsOfWeb(t, client)
			if tt.want == "" {
				if fmt.Sprint(after) != fmt.Sprint(before) {
					t.Errorf("refused, but the annotations changed:\n%v\nto\n%v", before, after)
				}
				return
			}
			if r.String() != tt.want || after[staging.StepAnnotation] != tt.want || after[staging.StepSinceAnnotation] != "2026-11-21T12:00:00Z" || after[staging.StepRevisionAnnotation] != "new" {
				t.Errorf("record %s, annotations %v; want %s since now for revision new", r, after, tt.want)
			}
		})
	}
}

// A record of the template before: kroll's controller has not started this one's
// steps, so moving it on would move nothing.
func TestPromote_recordOfAnotherRevision(t *testing.T) {
	objs := stagedWeb(map[string]string{staging.StepsAnnotation: "25%, pause, 100%"}, 3, 1, "1/3")
	objs[0].(*appsv1.Deployment).Annotations[staging.StepRevisionAnnotation] = "older"
	client := fake.NewClientset(objs...)
	_, err := promote(context.Background(), client, webRef, false, stepsNow)
	want := `deployment/web cannot be promoted: its recorded steps (kroll.dev/rollout-step-revision="older") are not of the revision rolled out now (2); kroll's controller starts its steps at its next sync, try again then`
	if errString(err) != want {
		t.Errorf("error %q, want %q", errString(err), want)
	}
	if got := annotationsOfWeb(t, client)[staging.StepAnnotation]; got != "1/3" {
		t.Errorf("record %s, want 1/3 untouched", got)
	}
}

// A write that conflicts with the controller's is made again on the fresh object.
func TestPromote_conflictIsRetried(t *testing.T) {
	client := fake.NewClientset(stagedWeb(map[string]string{staging.StepsAnnotation: "25%, pause, 100%"}, 3, 1, "1/3")...)
	conflicts := 0
	client.PrependReactor("update", "deployments", func(k8stesting.Action) (bool, runtime.Object, error) {
		if conflicts == 0 {
			conflicts++
			return true, nil, apierrors.NewConflict(schema.GroupResource{Group: "apps", Resource: "deployments"}, "web", fmt.Errorf("the object has been modified"))
		}
		return false, nil, nil
	})
	if _, err := promote(context.Background(), client, webRef, false, stepsNow); err != nil {
		t.Fatal(err)
	}
	if got := annotationsOfWeb(t, client)[staging.StepAnnotation]; conflicts != 1 || got != "2/3" {
		t.Errorf("conflicts %d, record %s; want 1 conflict, then 2/3", conflicts, got)
	}
}

func TestAbort(t *testing.T) {
	steps := map[string]string{staging.StepsAnnotation: "25%, pause, 100%"}
	tests := []struct {
		name    string
		objs    []runtime.Object
		want    string
		wantErr string
	}{
		{"held at a step: the revision number is the request", stagedWeb(steps, 3, 1, "1/3"), "2", ""},
		{"complete: nothing to abort", complete(stagedWeb(nil, 0, 4, "")), "",
			"deployment/web has no rollout in progress to abort (revision 2 is Complete)"},
		{"not found: one line", nil, "", `deployment/web not found in namespace "default"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client := fake.NewClientset(tt.objs...)
			rev, err := abort(context.Background(), client, webRef)
			if errString(err) != tt.wantErr || rev != tt.want {
				t.Fatalf("revision %q error %q, want %q %q", rev, errString(err), tt.want, tt.wantErr)
			}
			if tt.want != "" {
				if got := annotationsOfWeb(t, client)[staging.AbortAnnotation]; got != tt.want {
					t.Errorf("%s=%q, want %q", staging.AbortAnnotation, got, tt.want)
				}
			} else if tt.objs != nil {
				if _, ok := annotationsOfWeb(t, client)[staging.AbortAnnotation]; ok {
					t.Errorf("refused, but %s was written", staging.AbortAnnotation)
				}
			}
		})
	}
}

// complete sets the Deployment's status to a finished rollout of its 4 updated pods.
func complete(objs []runtime.Object) []runtime.Object {
	d := objs[0].(*appsv1.Deployment)
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: 2, Replicas: 4, UpdatedReplicas: 4, ReadyReplicas: 4, AvailableReplicas: 4,
		Conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable"}}}
	return objs
}

// A StatefulSet held at its first step: kubectl calls a rollout at its partition
// complete, but the staged rollout is not, so abort takes it (revision web-2).
func TestAbort_statefulSetHeldAtAStep(t *testing.T) {
	replicas, partition := int32(5), int32(4)
	yes := true
	set := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "default", UID: "sts-db", Generation: 2, Annotations: map[string]string{staging.StepsAnnotation: "20%, pause, 100%"}},
		Spec: appsv1.StatefulSetSpec{Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}},
			UpdateStrategy: appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType, RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{Partition: &partition}}},
		Status: appsv1.StatefulSetStatus{ObservedGeneration: 2, Replicas: 5, ReadyReplicas: 5, AvailableReplicas: 5, CurrentReplicas: 4, UpdatedReplicas: 1,
			CurrentRevision: "db-1", UpdateRevision: "db-2"},
	}
	(staging.Record{Done: 1, Total: 3, Revision: "db-2", Since: stepsNow}).Set(set.Annotations)
	owner := metav1.OwnerReference{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "db", UID: set.UID, Controller: &yes}
	objs := []runtime.Object{set}
	for i, name := range []string{"db-1", "db-2"} {
		objs = append(objs, &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{"app": "db"},
			CreationTimestamp: metav1.NewTime(stepsNow.Add(time.Duration(i-2) * time.Hour)), OwnerReferences: []metav1.OwnerReference{owner}}, Revision: int64(i + 1)})
	}
	for i := range 5 {
		rev := "db-1"
		if i == 4 {
			rev = "db-2"
		}
		objs = append(objs, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("db-%d", i), Namespace: "default",
			Labels: map[string]string{"app": "db", appsv1.ControllerRevisionHashLabelKey: rev}, OwnerReferences: []metav1.OwnerReference{owner}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}})
	}
	client := fake.NewClientset(objs...)
	rev, err := abort(context.Background(), client, workloadRef{kind: kindStatefulSet, namespace: "default", name: "db"})
	if err != nil || rev != "db-2" {
		t.Fatalf("revision %q, error %v; want db-2 requested", rev, err)
	}
	got, err := client.AppsV1().StatefulSets("default").Get(context.Background(), "db", metav1.GetOptions{})
	if err != nil || got.Annotations[staging.AbortAnnotation] != "db-2" {
		t.Errorf("%s=%q (%v), want db-2", staging.AbortAnnotation, got.Annotations[staging.AbortAnnotation], err)
	}
}
