package rolloutview

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kroll-dev/kroll/pkg/configrollout"
	"github.com/kroll-dev/kroll/pkg/failure"
	"github.com/kroll-dev/kroll/pkg/history"
	"github.com/kroll-dev/kroll/pkg/inplace"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// now is the moment every snapshot is taken at.
var now = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from the golden file:\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

// Builders: domain arguments only.

func template(image string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: image}}},
	}
}

func newDeployment(replicas int32, image, revision string) *appsv1.Deployment {
	surge, unavailable := intstr.FromString("25%"), intstr.FromString("25%")
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "d-web", Generation: 2,
			Annotations: map[string]string{history.RevisionAnnotation: revision}},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: template(image),
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: &surge, MaxUnavailable: &unavailable}},
		},
		Status: appsv1.DeploymentStatus{ObservedGeneration: 2},
	}
}

func newReplicaSet(d *appsv1.Deployment, hash, image, revision string, replicas, ready int32, created time.Duration) *appsv1.ReplicaSet {
	t := template(image)
	t.Labels[appsv1.DefaultDeploymentUniqueLabelKey] = hash
	return &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web-" + hash, Namespace: "default", UID: types.UID("rs-" + hash),
			CreationTimestamp: metav1.NewTime(now.Add(-created)),
			Annotations:       map[string]string{history.RevisionAnnotation: revision},
			OwnerReferences:   []metav1.OwnerReference{controllerRef("Deployment", d.Name, d.UID)}},
		Spec:   appsv1.ReplicaSetSpec{Replicas: &replicas, Template: t},
		Status: appsv1.ReplicaSetStatus{Replicas: replicas, ReadyReplicas: ready, AvailableReplicas: ready},
	}
}

func controllerRef(kind, name string, uid types.UID) metav1.OwnerReference {
	yes := true
	return metav1.OwnerReference{APIVersion: "apps/v1", Kind: kind, Name: name, UID: uid, Controller: &yes}
}

// podState is how a test pod is: "ready", "creating", a container waiting reason such
// as "ImagePullBackOff", "unschedulable", or "terminating".
func newPod(name, image string, owner metav1.OwnerReference, state string, age time.Duration) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", CreationTimestamp: metav1.NewTime(now.Add(-age)),
			Labels: map[string]string{"app": "web"}, OwnerReferences: []metav1.OwnerReference{owner}},
		Spec:   corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{Name: "app", Image: image}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
	readyAt := metav1.NewTime(now.Add(-age / 2))
	switch state {
	case "ready", "terminating":
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: readyAt}}
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", Ready: true, RestartCount: 1, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
		if state == "terminating" {
			p.DeletionTimestamp = &readyAt
		}
	case "unschedulable":
		p.Spec.NodeName = ""
		p.Status.Phase = corev1.PodPending
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable", Message: "0/3 nodes are available: 3 Insufficient cpu."}}
	default:
		reason := state
		if state == "creating" {
			reason = "ContainerCreating"
			p.Status.Phase = corev1.PodPending
		}
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: "Back-off pulling image \"" + image + "\""}}}}
	}
	return p
}

// midRollout is a 10-replica Deployment at revision 2 of nginx:bad: 5 old pods serving,
// 5 new of which 3 serve, 1 cannot pull its image and 1 is being created.
func midRollout() Snapshot {
	d := newDeployment(10, "nginx:bad", "2")
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: 2, Replicas: 10, UpdatedReplicas: 5, ReadyReplicas: 8, AvailableReplicas: 8, UnavailableReplicas: 2,
		Conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "ReplicaSetUpdated"}}}
	old := newReplicaSet(d, "5d8f4b", "nginx:1.25", "1", 5, 5, time.Hour)
	cur := newReplicaSet(d, "6f9c7d", "nginx:bad", "2", 5, 3, time.Minute)
	s := Snapshot{Object: d, ReplicaSets: []*appsv1.ReplicaSet{old, cur}, Now: now}
	for i, id := range []string{"abcde", "fghij", "klmno", "pqrst", "uvwxy"} {
		s.Pods = append(s.Pods, newPod("web-5d8f4b-"+id, "nginx:1.25", controllerRef("ReplicaSet", old.Name, old.UID), "ready", time.Hour+time.Duration(i)*time.Minute))
	}
	for i, state := range []string{"ready", "ready", "ready", "ImagePullBackOff", "creating"} {
		s.Pods = append(s.Pods, newPod(fmt.Sprintf("web-6f9c7d-%c%c%c%c%c", 'a'+i, 'b'+i, 'c'+i, 'd'+i, 'e'+i), "nginx:bad", controllerRef("ReplicaSet", cur.Name, cur.UID), state, time.Duration(50-10*i)*time.Second))
	}
	return s
}

// configRollout is a Deployment opted into configuration rollout, halfway through
// the revision an edit of its ConfigMap made: the template is the old revision's but
// for kroll.dev/config-hash, and the new ReplicaSet's change-cause names the ConfigMap.
func configRollout() Snapshot {
	d := newDeployment(10, "nginx:1.25", "2")
	d.Annotations[configrollout.Annotation] = "true"
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: 2, Replicas: 10, UpdatedReplicas: 4, ReadyReplicas: 8, AvailableReplicas: 8, UnavailableReplicas: 2,
		Conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "ReplicaSetUpdated"}}}
	old := newReplicaSet(d, "5d8f4b", "nginx:1.25", "1", 6, 6, time.Hour)
	cur := newReplicaSet(d, "6f9c7d", "nginx:1.25", "2", 4, 2, time.Minute)
	old.Spec.Template.Annotations = map[string]string{configrollout.HashAnnotation: "0123456789abcdef"}
	cur.Spec.Template.Annotations = map[string]string{configrollout.HashAnnotation: "fedcba9876543210"}
	cur.Annotations[history.ChangeCauseAnnotation] = "configmap/app-config changed"
	s := Snapshot{Object: d, ReplicaSets: []*appsv1.ReplicaSet{old, cur}, Now: now}
	for i, id := range []string{"abcde", "fghij", "klmno", "pqrst", "uvwxy", "zabcd"} {
		s.Pods = append(s.Pods, newPod("web-5d8f4b-"+id, "nginx:1.25", controllerRef("ReplicaSet", old.Name, old.UID), "ready", time.Hour+time.Duration(i)*time.Minute))
	}
	for i, state := range []string{"ready", "ready", "creating", "creating"} {
		s.Pods = append(s.Pods, newPod(fmt.Sprintf("web-6f9c7d-%c%c%c%c%c", 'a'+i, 'b'+i, 'c'+i, 'd'+i, 'e'+i), "nginx:1.25", controllerRef("ReplicaSet", cur.Name, cur.UID), state, time.Duration(50-10*i)*time.Second))
	}
	return s
}

// heldByBudget is a rollout of 10 whose new pods are up (one still creating) and whose
// last 3 old pods wait for their PodDisruptionBudget (pkg/disruption's condition).
func heldByBudget() Snapshot {
	d := newDeployment(10, "nginx:1.26", "2")
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: 2, Replicas: 13, UpdatedReplicas: 10, ReadyReplicas: 12, AvailableReplicas: 12, UnavailableReplicas: 0,
		Conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "ReplicaSetUpdated"},
			{Type: "DisruptionBudget", Status: corev1.ConditionFalse, Reason: "BudgetExhausted",
				Message: "waiting for PodDisruptionBudget web-pdb: 3 pods to take down, disruptionsAllowed 0 (12 of 13 pods must stay healthy, 12 are)"}}}
	old := newReplicaSet(d, "5d8f4b", "nginx:1.25", "1", 3, 3, time.Hour)
	cur := newReplicaSet(d, "6f9c7d", "nginx:1.26", "2", 10, 9, time.Minute)
	s := Snapshot{Object: d, ReplicaSets: []*appsv1.ReplicaSet{old, cur}, Now: now}
	for _, id := range []string{"abcde", "fghij", "klmno"} {
		s.Pods = append(s.Pods, newPod("web-5d8f4b-"+id, "nginx:1.25", controllerRef("ReplicaSet", old.Name, old.UID), "ready", time.Hour))
	}
	for i := range 10 {
		state := "ready"
		if i == 9 {
			state = "creating"
		}
		s.Pods = append(s.Pods, newPod(fmt.Sprintf("web-6f9c7d-%c%c%c%c%c", 'a'+i, 'b'+i, 'c'+i, 'd'+i, 'e'+i), "nginx:1.26", controllerRef("ReplicaSet", cur.Name, cur.UID), state, time.Duration(50-4*i)*time.Second))
	}
	return s
}

func complete() Snapshot {
	d := newDeployment(3, "nginx:1.26", "2")
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: 2, Replicas: 3, UpdatedReplicas: 3, ReadyReplicas: 3, AvailableReplicas: 3,
		Conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable"}}}
	rs := newReplicaSet(d, "6f9c7d", "nginx:1.26", "2", 3, 3, time.Hour)
	s := Snapshot{Object: d, ReplicaSets: []*appsv1.ReplicaSet{newReplicaSet(d, "5d8f4b", "nginx:1.25", "1", 0, 0, 2*time.Hour), rs}, Now: now}
	for _, id := range []string{"aaaaa", "bbbbb", "ccccc"} {
		s.Pods = append(s.Pods, newPod("web-6f9c7d-"+id, "nginx:1.26", controllerRef("ReplicaSet", rs.Name, rs.UID), "ready", time.Hour))
	}
	return s
}

// pastDeadline is midRollout after its progress deadline.
func pastDeadline() Snapshot {
	s := midRollout()
	d := s.Object.(*appsv1.Deployment).DeepCopy()
	d.Status.Conditions = []appsv1.DeploymentCondition{{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse, Reason: "ProgressDeadlineExceeded",
		Message: `ReplicaSet "web-6f9c7d" has timed out progressing.`}}
	s.Object = d
	return s
}

func fixedAfterDeadline() Snapshot {
	s := pastDeadline()
	d := s.Object.(*appsv1.Deployment)
	d.Generation = 3
	return s
}

func blockedButDone() Snapshot {
	s := complete()
	d := s.Object.(*appsv1.Deployment)
	d.Status.Conditions = append(d.Status.Conditions, appsv1.DeploymentCondition{Type: inplace.ConditionType, Status: corev1.ConditionFalse, Reason: inplace.ReasonBlocked})
	return s
}

func paused() Snapshot {
	s := midRollout()
	d := s.Object.(*appsv1.Deployment).DeepCopy()
	d.Spec.Paused = true
	s.Object = d
	return s
}

// statefulSetPartition is a 5-replica StatefulSet with partition 2: web-4 updated, web-3
// being replaced (unschedulable), web-0..2 below the partition.
func statefulSetPartition() Snapshot {
	replicas, partition := int32(5), int32(2)
	set := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "sts-web", Generation: 3},
		Spec: appsv1.StatefulSetSpec{Replicas: &replicas, Template: template("nginx:1.26"),
			UpdateStrategy: appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType,
				RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{Partition: &partition}}},
		Status: appsv1.StatefulSetStatus{ObservedGeneration: 3, Replicas: 5, ReadyReplicas: 4, AvailableReplicas: 4, CurrentReplicas: 3, UpdatedReplicas: 1,
			CurrentRevision: "web-7b9d6c5f4", UpdateRevision: "web-86c7f9d5b8"},
	}
	owner := controllerRef("StatefulSet", "web", set.UID)
	s := Snapshot{Object: set, Now: now, Revisions: []*appsv1.ControllerRevision{
		{ObjectMeta: metav1.ObjectMeta{Name: "web-7b9d6c5f4", CreationTimestamp: metav1.NewTime(now.Add(-time.Hour)), OwnerReferences: []metav1.OwnerReference{owner}}, Revision: 1},
		{ObjectMeta: metav1.ObjectMeta{Name: "web-86c7f9d5b8", CreationTimestamp: metav1.NewTime(now.Add(-time.Minute)), OwnerReferences: []metav1.OwnerReference{owner}}, Revision: 2},
	}}
	for i, state := range []string{"ready", "ready", "ready", "unschedulable", "ready"} {
		rev, image := "web-7b9d6c5f4", "nginx:1.25"
		if i >= 3 {
			rev, image = "web-86c7f9d5b8", "nginx:1.26"
		}
		p := newPod(fmt.Sprintf("web-%d", i), image, owner, state, time.Duration(60-10*i)*time.Minute)
		p.Labels[appsv1.ControllerRevisionHashLabelKey] = rev
		s.Pods = append(s.Pods, p)
	}
	return s
}

// daemonSetInPlace is a DaemonSet over 3 nodes updated in place: one pod done, one out
// of service mid-update, one to go.
func daemonSetInPlace() Snapshot {
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: "default", UID: "ds-agent", Generation: 2,
			Annotations: map[string]string{inplace.StrategyAnnotation: string(inplace.IfPossible)}},
		Spec: appsv1.DaemonSetSpec{Template: template("agent:2"), UpdateStrategy: appsv1.DaemonSetUpdateStrategy{Type: appsv1.RollingUpdateDaemonSetStrategyType}},
		Status: appsv1.DaemonSetStatus{ObservedGeneration: 2, DesiredNumberScheduled: 3, CurrentNumberScheduled: 3, UpdatedNumberScheduled: 1, NumberReady: 2, NumberAvailable: 2, NumberUnavailable: 1,
			Conditions: []appsv1.DaemonSetCondition{{Type: inplace.ConditionType, Status: corev1.ConditionTrue, Reason: inplace.ReasonInPlace}}},
	}
	owner := controllerRef("DaemonSet", "agent", ds.UID)
	s := Snapshot{Object: ds, Now: now, Revisions: []*appsv1.ControllerRevision{
		{ObjectMeta: metav1.ObjectMeta{Name: "agent-55f8d9c6b7", Labels: map[string]string{appsv1.DefaultDaemonSetUniqueLabelKey: "55f8d9c6b7"}, OwnerReferences: []metav1.OwnerReference{owner}}, Revision: 1},
		{ObjectMeta: metav1.ObjectMeta{Name: "agent-6c4b8d7f9", Labels: map[string]string{appsv1.DefaultDaemonSetUniqueLabelKey: "6c4b8d7f9"}, OwnerReferences: []metav1.OwnerReference{owner}}, Revision: 2},
	}}
	for i, hash := range []string{"6c4b8d7f9", "55f8d9c6b7", "55f8d9c6b7"} {
		p := newPod(fmt.Sprintf("agent-%c%c%c%c%c", 'k'+i, 'k'+i, 'k'+i, 'k'+i, 'k'+i), "agent:1", owner, "ready", time.Hour)
		p.Labels[appsv1.DefaultDaemonSetUniqueLabelKey] = hash
		if i == 0 {
			p.Spec.Containers[0].Image = "agent:2"
		}
		if i == 1 {
			p.Annotations = map[string]string{inplace.StateAnnotation: inplace.State{Revision: "6c4b8d7f9"}.Encode()}
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse, Message: "corresponding condition of pod readiness gate \"kroll.dev/in-place-update-ready\" does not exist."}}
		}
		s.Pods = append(s.Pods, p)
	}
	return s
}

// rolledBack is midRollout after kroll's controller judged it failed and rolled it
// back: the template of revision 1 restored as revision 3, the bad ReplicaSet of
// revision 2 still scaling down.
func rolledBack() Snapshot {
	s := midRollout()
	d := s.Object.(*appsv1.Deployment).DeepCopy()
	d.Generation, d.Status.ObservedGeneration = 3, 3
	d.Spec.Template = template("nginx:1.25")
	d.Annotations = map[string]string{history.RevisionAnnotation: "3", failure.OnFailureAnnotation: "Rollback", failure.RolledBackFromAnnotation: "2"}
	d.Status.Conditions = append(d.Status.Conditions, appsv1.DeploymentCondition{Type: failure.ConditionRolloutFailed, Status: corev1.ConditionTrue,
		Reason: failure.ReasonPodsFailing, Message: "1 of 5 new pods failed, threshold 1 (web-6f9c7d-defgh: ImagePullBackOff); rolled back from revision 2 to 1"})
	s.Object = d
	s.ReplicaSets[0].Annotations[history.RevisionAnnotation] = "3"
	return s
}

// changedAfterRollback is rolledBack with the user's next change not yet observed:
// the condition still standing is the previous rollout's.
func changedAfterRollback() Snapshot {
	s := rolledBack()
	s.Object.(*appsv1.Deployment).Generation = 4
	return s
}

// pausedOnFailure is midRollout paused by kroll's controller on revision 2.
func pausedOnFailure() Snapshot {
	s := paused()
	d := s.Object.(*appsv1.Deployment)
	d.Annotations[failure.OnFailureAnnotation] = "Pause"
	d.Annotations[failure.PausedOnFailureAnnotation] = "2"
	d.Status.Conditions = append(d.Status.Conditions, appsv1.DeploymentCondition{Type: failure.ConditionRolloutFailed, Status: corev1.ConditionTrue,
		Reason: failure.ReasonPodsFailing, Message: "1 of 5 new pods failed, threshold 1 (web-6f9c7d-defgh: ImagePullBackOff); paused on revision 2"})
	return s
}

// resumedAfterPause is pausedOnFailure resumed by its user: rolling out again.
func resumedAfterPause() Snapshot {
	s := pausedOnFailure()
	s.Object.(*appsv1.Deployment).Spec.Paused = false
	return s
}

// statefulSetPausedOnFailure is statefulSetPartition (partition 0 before) after web-3
// failed: kroll raised the partition to 3 to hold the pods where they are.
func statefulSetPausedOnFailure() Snapshot {
	s := statefulSetPartition()
	set := s.Object.(*appsv1.StatefulSet)
	*set.Spec.UpdateStrategy.RollingUpdate.Partition = 3
	set.Annotations = map[string]string{failure.OnFailureAnnotation: "Pause", failure.PausedOnFailureAnnotation: "web-86c7f9d5b8", failure.PartitionBeforePauseAnnotation: "0"}
	set.Status.Conditions = []appsv1.StatefulSetCondition{{Type: failure.ConditionRolloutFailed, Status: corev1.ConditionTrue,
		Reason: failure.ReasonPodsFailing, Message: "1 of 2 new pods failed, threshold 1 (web-3: CrashLoopBackOff); paused on revision web-86c7f9d5b8"}}
	s.Pods[3] = newPod("web-3", "nginx:1.26", controllerRef("StatefulSet", "web", set.UID), "CrashLoopBackOff", 30*time.Minute)
	s.Pods[3].Labels[appsv1.ControllerRevisionHashLabelKey] = "web-86c7f9d5b8"
	return s
}

// daemonSetInvalidPolicy is daemonSetInPlace with a failure threshold that does not
// parse: its controller reports FailurePolicy False.
func daemonSetInvalidPolicy() Snapshot {
	s := daemonSetInPlace()
	ds := s.Object.(*appsv1.DaemonSet)
	ds.Annotations[failure.OnFailureAnnotation] = "Rollback"
	ds.Annotations[failure.ThresholdAnnotation] = "abc"
	ds.Status.Conditions = append(ds.Status.Conditions, appsv1.DaemonSetCondition{Type: failure.ConditionFailurePolicy, Status: corev1.ConditionFalse,
		Reason: failure.ReasonInvalidAnnotation, Message: failure.PolicyOf(ds.Annotations).Problem()})
	return s
}

var snapshots = []struct {
	name string
	snap func() Snapshot
}{
	{"deployment-mid-rollout", midRollout},
	{"deployment-complete", complete},
	{"deployment-past-deadline", pastDeadline},
	{"deployment-paused", paused},
	{"statefulset-partition", statefulSetPartition},
	{"daemonset-in-place", daemonSetInPlace},
	{"deployment-rolled-back", rolledBack},
	{"deployment-paused-on-failure", pausedOnFailure},
	{"statefulset-paused-on-failure", statefulSetPausedOnFailure},
	{"daemonset-invalid-policy", daemonSetInvalidPolicy},
	{"deployment-in-place-resizing", inPlaceResizing},
	{"deployment-held-by-budget", heldByBudget},
	{"deployment-config-rollout", configRollout},
}

func TestViewsGolden(t *testing.T) {
	for _, tt := range append(snapshots, stagedSnapshots...) {
		t.Run(tt.name, func(t *testing.T) {
			p, err := ProgressOf(tt.snap())
			if err != nil {
				t.Fatal(err)
			}
			// A pace of 2 pods in 10 s, seen before the snapshot.
			p = p.WithETA([]Observation{{At: now.Add(-10 * time.Second), Done: p.DoneCount() - 2}, {At: now, Done: p.DoneCount()}})
			tree := Tree(tt.snap(), p)
			golden(t, tt.name+".bar.txt", Bar(p))
			golden(t, tt.name+".line.txt", Line(p)+"\n")
			golden(t, tt.name+".json", JSON(p)+"\n")
			golden(t, tt.name+".tree.txt", tree)
		})
	}
}

func TestProgress(t *testing.T) {
	tests := []struct {
		name         string
		snap         Snapshot
		wantPhase    Phase
		wantBlocking string
		wantDone     bool
		wantErr      string
	}{
		{"mid-rollout waits on the pod that cannot pull its image, not the one being created", midRollout(), Progressing, "web-6f9c7d-defgh: ImagePullBackOff", false, ""},
		{"complete: nothing blocks", complete(), Complete, "", true, ""},
		{"past its deadline: failed, with kubectl's error", pastDeadline(), Failed, "web-6f9c7d-defgh: ImagePullBackOff", false, `deployment "web" exceeded its progress deadline`},
		{"paused mid-rollout", paused(), Paused, "web-6f9c7d-defgh: ImagePullBackOff", false, ""},
		{"past its deadline, but a fixed template not yet observed: not failed, as kubectl waits", fixedAfterDeadline(), Progressing, "web-6f9c7d-defgh: ImagePullBackOff", false, ""},
		{"an InPlaceOnly block left standing by an undo does not fail a finished rollout", blockedButDone(), Complete, "", true, ""},
		{"StatefulSet partition: web-3 cannot be scheduled", statefulSetPartition(), Progressing, "web-3: Unschedulable", false, ""},
		{"DaemonSet in place: the pod out of service blocks", daemonSetInPlace(), Progressing, "agent-lllll: InPlaceUpdating", false, ""},
		{"rolled back by kroll: failed with the condition's line", rolledBack(), RolledBack, "", false,
			`deployment "web" rollout failed: 1 of 5 new pods failed, threshold 1 (web-6f9c7d-defgh: ImagePullBackOff); rolled back from revision 2 to 1`},
		{"a new change after a rollback, not yet observed: the condition is the last rollout's", changedAfterRollback(), Progressing, "", false, ""},
		{"paused on failure: failed, not merely paused", pausedOnFailure(), PausedOnFailure, "web-6f9c7d-defgh: ImagePullBackOff", false,
			`deployment "web" rollout failed: 1 of 5 new pods failed, threshold 1 (web-6f9c7d-defgh: ImagePullBackOff); paused on revision 2`},
		{"resumed by its user after a pause on failure: rolling out again", resumedAfterPause(), Progressing, "web-6f9c7d-defgh: ImagePullBackOff", false, ""},
		{"StatefulSet paused on failure: kubectl's partitioned rollout is done, kroll's is failed", statefulSetPausedOnFailure(), PausedOnFailure, "web-3: CrashLoopBackOff", false,
			`statefulset "web" rollout failed: 1 of 2 new pods failed, threshold 1 (web-3: CrashLoopBackOff); paused on revision web-86c7f9d5b8`},
		{"an invalid failure policy is a warning, not a failure", daemonSetInvalidPolicy(), Progressing, "agent-lllll: InPlaceUpdating", false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := ProgressOf(tt.snap)
			if err != nil {
				t.Fatal(err)
			}
			if p.Phase != tt.wantPhase || p.Done != tt.wantDone {
				t.Errorf("phase %s done %v, want %s %v", p.Phase, p.Done, tt.wantPhase, tt.wantDone)
			}
			blocking := ""
			if p.Blocking != nil {
				blocking = p.Blocking.String()
			}
			if blocking != tt.wantBlocking {
				t.Errorf("blocking %q, want %q", blocking, tt.wantBlocking)
			}
			if gotErr := fmt.Sprint(p.Err); (p.Err != nil || tt.wantErr != "") && gotErr != tt.wantErr {
				t.Errorf("err %q, want %q", gotErr, tt.wantErr)
			}
		})
	}
}

// A redrawn bar must not move: its rows are newest first by revision number, however
// the ReplicaSets were listed (an informer's store lists them in map order), and its
// header counts are the sums of the rows, however far the Deployment's status lags.
func TestBar_oneOrderAndOneSourceWhateverTheListing(t *testing.T) {
	s := midRollout()
	d := s.Object.(*appsv1.Deployment)
	d.Annotations[history.RevisionAnnotation] = "10"
	s.ReplicaSets[0].Annotations[history.RevisionAnnotation] = "9"
	s.ReplicaSets[1].Annotations[history.RevisionAnnotation] = "10"
	// The status of a sync ago: 2 new pods have become available since.
	d.Status.UpdatedReplicas, d.Status.ReadyReplicas, d.Status.AvailableReplicas = 5, 6, 6
	want := `deployment/web  revision 10  Progressing  5/10 updated  8/10 available
  rev 10  web-6f9c7d  █████████▒▒▒▒▒▒░░░░░░░░░░░░░░░  5 pods, 3 available
  rev 9   web-5d8f4b  ███████████████░░░░░░░░░░░░░░░  5 pods, 5 available
  waiting on web-6f9c7d-defgh: ImagePullBackOff (Back-off pulling image "nginx:bad")
`
	for _, order := range [][]int{{0, 1}, {1, 0}} {
		listed := s
		listed.ReplicaSets = []*appsv1.ReplicaSet{s.ReplicaSets[order[0]], s.ReplicaSets[order[1]]}
		listed.Pods = append([]*corev1.Pod(nil), s.Pods...)
		if order[0] == 1 {
			for i, j := 0, len(listed.Pods)-1; i < j; i, j = i+1, j-1 {
				listed.Pods[i], listed.Pods[j] = listed.Pods[j], listed.Pods[i]
			}
		}
		p, err := ProgressOf(listed)
		if err != nil {
			t.Fatal(err)
		}
		if got := Bar(p); got != want {
			t.Errorf("ReplicaSets listed as %v:\n%s\nwant\n%s", order, got, want)
		}
		if p.Total != 10 || p.Ready != 8 {
			t.Errorf("ReplicaSets listed as %v: total %d, ready %d; want 10, 8 (the pods')", order, p.Total, p.Ready)
		}
	}
}

func TestETA(t *testing.T) {
	p := Progress{Phase: Progressing, Target: 10}
	tests := []struct {
		name string
		obs  []Observation
		want string
	}{
		{"one observation: no pace yet", []Observation{{now, 2}}, "<nil>"},
		{"no progress between observations: no pace", []Observation{{now, 2}, {now.Add(time.Minute), 2}}, "<nil>"},
		{"2 → 6 pods in 20 s: 4 left at 0.2/s is 20 s", []Observation{{now, 2}, {now.Add(20 * time.Second), 6}}, "20"},
		{"a record from a day ago is left out of the pace", []Observation{{now.Add(-24 * time.Hour), 0}, {now, 2}, {now.Add(20 * time.Second), 6}}, "20"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := "<nil>"
			if e := p.WithETA(tt.obs).ETASeconds; e != nil {
				got = fmt.Sprint(*e)
			}
			if got != tt.want {
				t.Errorf("ETA %s, want %s", got, tt.want)
			}
		})
	}
}

func TestSummaryGolden(t *testing.T) {
	var ps []Progress
	for _, tt := range append(snapshots, stagedSnapshots...) {
		p, err := ProgressOf(tt.snap())
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, p)
	}
	golden(t, "summary.txt", Summary(ps, true))
	if n := Failures(ps, nil); n != 4 {
		t.Errorf("%d failures, want 4 (past its deadline, rolled back, and two paused on failure)", n)
	}
}

func TestTemplateDiffGolden(t *testing.T) {
	s := midRollout()
	revs, err := RevisionsOf(s)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(RevisionNumbers(revs)); got != "[1 2]" {
		t.Fatalf("revisions %s, want [1 2]", got)
	}
	diff, err := TemplateDiff(revs[1], revs[2])
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "diff-1-2.txt", diff)
	if strings.Contains(diff, appsv1.DefaultDeploymentUniqueLabelKey) {
		t.Errorf("the diff shows the pod-template-hash label, which differs by construction:\n%s", diff)
	}
	same, err := TemplateDiff(revs[2], revs[2])
	if err != nil || same != "" {
		t.Errorf("a revision against itself: %q, %v", same, err)
	}
}

func TestUnknownObject(t *testing.T) {
	if _, err := ProgressOf(Snapshot{Object: &corev1.Pod{}}); err == nil {
		t.Error("a Pod has no rollout view, but ProgressOf took it")
	}
	var _ runtime.Object = &appsv1.Deployment{}
}
