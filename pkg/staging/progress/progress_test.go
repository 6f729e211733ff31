package progress

import (
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kroll-dev/kroll/pkg/failure"
	"github.com/kroll-dev/kroll/pkg/history"
	"github.com/kroll-dev/kroll/pkg/staging"
)

var now = time.Date(2026, 3, 4, 12, 0, 0, 0, time.UTC)

// replicaSet is a ReplicaSet of hash created age ago, at spec replicas with status
// replicas and available ones.
func replicaSet(hash string, age time.Duration, spec, status, available int32) *appsv1.ReplicaSet {
	return &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web-" + hash, UID: types.UID("rs-" + hash), CreationTimestamp: metav1.NewTime(now.Add(-age)),
			Labels: map[string]string{appsv1.DefaultDeploymentUniqueLabelKey: hash}},
		Spec:   appsv1.ReplicaSetSpec{Replicas: &spec},
		Status: appsv1.ReplicaSetStatus{Replicas: status, AvailableReplicas: available},
	}
}

// pod is a pod in phase, ready since readyFor ago (never when 0), waiting with reason
// when there is one.
func pod(name string, phase corev1.PodPhase, readyFor time.Duration, reason string, labels map[string]string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, CreationTimestamp: metav1.NewTime(now.Add(-time.Hour))},
		Status: corev1.PodStatus{Phase: phase}}
	if readyFor > 0 {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(now.Add(-readyFor))}}
	}
	if reason != "" {
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason}}}}
	}
	return p
}

func deployment(replicas int32, annotations map[string]string) *appsv1.Deployment {
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Annotations: annotations},
		Spec: appsv1.DeploymentSpec{Replicas: &replicas, Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}}}}}
}

func TestDeployment(t *testing.T) {
	d := deployment(10, map[string]string{failure.ThresholdAnnotation: "1"})
	terminating := pod("web-new-x", corev1.PodRunning, 0, "ImagePullBackOff", nil)
	terminating.DeletionTimestamp = &metav1.Time{Time: now}
	tests := []struct {
		name    string
		newRS   *appsv1.ReplicaSet
		oldRSs  []*appsv1.ReplicaSet
		newPods []*corev1.Pod
		want    staging.Progress
	}{
		{name: "no new ReplicaSet yet: the revision is the hash it will get, every old pod counts",
			oldRSs: []*appsv1.ReplicaSet{replicaSet("old", time.Hour, 10, 10, 10)},
			want:   staging.Progress{Revision: history.TemplateHash(&d.Spec.Template, nil), Desired: 10, Old: 10}},
		{name: "new at 4 (3 available), old scaled to 7 with 8 pods still: counts from the ReplicaSets, old the larger of spec and status",
			newRS:  replicaSet("new", time.Minute, 4, 4, 3),
			oldRSs: []*appsv1.ReplicaSet{replicaSet("old", time.Hour, 7, 8, 8)},
			want:   staging.Progress{Revision: "new", Desired: 10, Updated: 4, UpdatedAvailable: 3, Old: 8}},
		{name: "old scaled down but its controller has not acted yet: spec 6 is not the 9 pods left",
			newRS:  replicaSet("new", time.Minute, 1, 1, 1),
			oldRSs: []*appsv1.ReplicaSet{replicaSet("old", time.Hour, 6, 9, 9), replicaSet("older", 2*time.Hour, 0, 0, 0)},
			want:   staging.Progress{Revision: "new", Desired: 10, Updated: 1, UpdatedAvailable: 1, Old: 9}},
		{name: "old at spec 8 with 7 pods (one being replaced): 8 old, the replacement is still old",
			newRS:  replicaSet("new", time.Minute, 2, 2, 2),
			oldRSs: []*appsv1.ReplicaSet{replicaSet("old", time.Hour, 8, 7, 7)},
			want:   staging.Progress{Revision: "new", Desired: 10, Updated: 2, UpdatedAvailable: 2, Old: 8}},
		{name: "a failing new pod counts Failed; a terminating one does not",
			newRS:   replicaSet("new", time.Minute, 2, 2, 1),
			oldRSs:  []*appsv1.ReplicaSet{replicaSet("old", time.Hour, 8, 8, 8)},
			newPods: []*corev1.Pod{pod("web-new-a", corev1.PodRunning, time.Hour, "", nil), pod("web-new-b", corev1.PodPending, 0, "ImagePullBackOff", nil), terminating},
			want:    staging.Progress{Revision: "new", Desired: 10, Updated: 2, UpdatedAvailable: 1, Failed: 1, Old: 8}},
		{name: "the new ReplicaSet is older than an old one: a rollback",
			newRS:  replicaSet("back", 2*time.Hour, 0, 0, 0),
			oldRSs: []*appsv1.ReplicaSet{replicaSet("bad", time.Minute, 10, 10, 0)},
			want:   staging.Progress{Revision: "back", Rollback: true, Desired: 10, Old: 10}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Deployment(d, tt.newRS, tt.oldRSs, tt.newPods, now); got != tt.want {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestStatefulSet(t *testing.T) {
	replicas := int32(5)
	set := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "web", Annotations: map[string]string{failure.ThresholdAnnotation: "1"}},
		Spec: appsv1.StatefulSetSpec{Replicas: &replicas, MinReadySeconds: 10}}
	rev := func(name string, age time.Duration) *appsv1.ControllerRevision {
		return &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(now.Add(-age))}}
	}
	at := func(name, revision string, phase corev1.PodPhase, readyFor time.Duration, reason string) *corev1.Pod {
		return pod(name, phase, readyFor, reason, map[string]string{appsv1.StatefulSetRevisionLabel: revision})
	}
	gone := at("web-2", "web-b", corev1.PodRunning, time.Hour, "")
	gone.DeletionTimestamp = &metav1.Time{Time: now}
	paused := set.DeepCopy()
	paused.Annotations[failure.PartitionBeforePauseAnnotation] = "3"
	tests := []struct {
		name            string
		set             *appsv1.StatefulSet
		current, update *appsv1.ControllerRevision
		pods            []*corev1.Pod
		want            staging.Progress
	}{
		{name: "web-3, web-4 updated (web-4 ready 5s of minReadySeconds 10), web-0..2 current: 2 updated, 1 available, 3 old",
			set: set, current: rev("web-a", time.Hour), update: rev("web-b", time.Minute),
			pods: []*corev1.Pod{at("web-0", "web-a", corev1.PodRunning, time.Hour, ""), at("web-1", "web-a", corev1.PodRunning, time.Hour, ""), at("web-2", "web-a", corev1.PodRunning, time.Hour, ""),
				at("web-3", "web-b", corev1.PodRunning, time.Hour, ""), at("web-4", "web-b", corev1.PodRunning, 5*time.Second, "")},
			want: staging.Progress{Revision: "web-b", Desired: 5, Updated: 2, UpdatedAvailable: 1, Old: 3}},
		{name: "a pod without a phase (not created yet) and a terminating one count nowhere; a crashing one fails",
			set: set, current: rev("web-a", time.Hour), update: rev("web-b", time.Minute),
			pods: []*corev1.Pod{at("web-0", "web-a", "", 0, ""), gone, at("web-4", "web-b", corev1.PodRunning, 0, "CrashLoopBackOff")},
			want: staging.Progress{Revision: "web-b", Desired: 5, Updated: 1, Failed: 1}},
		{name: "update revision created before the current one: a rollback; paused on failure",
			set: paused, current: rev("web-b", time.Minute), update: rev("web-a", time.Hour),
			want: staging.Progress{Revision: "web-a", Rollback: true, Desired: 5, Paused: true}},
		{name: "nothing to roll out: update is current",
			set: set, current: rev("web-a", time.Hour), update: rev("web-a", time.Hour),
			want: staging.Progress{Revision: "web-a", Rollback: true, Desired: 5}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := StatefulSet(tt.set, tt.pods, tt.current, tt.update, now); got != tt.want {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestDaemonSet(t *testing.T) {
	ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "agent", Annotations: map[string]string{appsv1.DeprecatedTemplateGeneration: "3"}}}
	rev := func(hash string, age time.Duration) *appsv1.ControllerRevision {
		return &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: "agent-" + hash, CreationTimestamp: metav1.NewTime(now.Add(-age)),
			Labels: map[string]string{appsv1.DefaultDaemonSetUniqueLabelKey: hash}}}
	}
	at := func(node, hash string, readyFor time.Duration) *corev1.Pod {
		return pod(fmt.Sprintf("agent-%s-%s", node, hash), corev1.PodRunning, readyFor, "", map[string]string{appsv1.DefaultDaemonSetUniqueLabelKey: hash})
	}
	byGeneration := pod("agent-c-gen", corev1.PodRunning, time.Hour, "", map[string]string{"pod-template-generation": "3"})
	newRev, oldRev := rev("new", time.Minute), rev("old", time.Hour)
	tests := []struct {
		name     string
		eligible []string
		byNode   map[string][]*corev1.Pod
		newest   *appsv1.ControllerRevision
		want     staging.Progress
	}{
		{name: "a updated, b old, c in a surge (both): 3 nodes, 2 updated, 2 old; the pod on an ineligible node counts nowhere",
			eligible: []string{"a", "b", "c"}, newest: newRev,
			byNode: map[string][]*corev1.Pod{"a": {at("a", "new", time.Hour)}, "b": {at("b", "old", time.Hour)},
				"c": {at("c", "old", time.Hour), at("c", "new", 0)}, "gone": {at("gone", "old", time.Hour)}},
			want: staging.Progress{Revision: "agent-new", Desired: 3, Updated: 2, UpdatedAvailable: 1, Old: 2}},
		{name: "a pod of the template generation counts updated; a node without a pod counts in Desired only",
			eligible: []string{"c", "d"}, newest: newRev,
			byNode: map[string][]*corev1.Pod{"c": {byGeneration}},
			want:   staging.Progress{Revision: "agent-new", Desired: 2, Updated: 1, UpdatedAvailable: 1}},
		{name: "the template's revision is older than one whose pods run: a rollback",
			eligible: []string{"a"}, newest: oldRev,
			byNode: map[string][]*corev1.Pod{"a": {at("a", "new", time.Hour)}},
			want:   staging.Progress{Revision: "agent-old", Rollback: true, Desired: 1, Old: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hash := tt.newest.Labels[appsv1.DefaultDaemonSetUniqueLabelKey]
			got := DaemonSet(ds, tt.eligible, tt.byNode, hash, tt.newest, []*appsv1.ControllerRevision{newRev, oldRev}, now)
			if got != tt.want {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}
