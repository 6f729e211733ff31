package rolloutview

import (
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kroll-dev/kroll/pkg/analysis"
	"github.com/kroll-dev/kroll/pkg/failure"
	"github.com/kroll-dev/kroll/pkg/staging"
	"github.com/kroll-dev/kroll/pkg/timeline"
)

const twentySteps = "10%, pause, 50%, pause: 5s, 100%"

// stagedDeployment is a 20-replica Deployment rolling out nginx:1.26 (revision 2) with
// the staging annotations given: old pods on revision 1, updated ones ready for a
// minute. record is the kroll.dev/rollout-step the controller wrote ("" for none).
func stagedDeployment(annotations map[string]string, old, updated int32, record string) Snapshot {
	d := newDeployment(20, "nginx:1.26", "2")
	for k, v := range annotations {
		d.Annotations[k] = v
	}
	if record != "" {
		d.Annotations[staging.StepAnnotation] = record
		d.Annotations[staging.StepRevisionAnnotation] = "6f9c7d"
		d.Annotations[staging.StepSinceAnnotation] = now.Add(-time.Minute).Format(time.RFC3339)
	}
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: 2, Replicas: old + updated, UpdatedReplicas: updated, ReadyReplicas: old + updated, AvailableReplicas: old + updated}
	oldRS := newReplicaSet(d, "5d8f4b", "nginx:1.25", "1", old, old, time.Hour)
	newRS := newReplicaSet(d, "6f9c7d", "nginx:1.26", "2", updated, updated, 2*time.Minute)
	s := Snapshot{Object: d, ReplicaSets: []*appsv1.ReplicaSet{oldRS, newRS}, Now: now}
	for i := range old {
		s.Pods = append(s.Pods, newPod(fmt.Sprintf("web-5d8f4b-%05d", i), "nginx:1.25", controllerRef("ReplicaSet", oldRS.Name, oldRS.UID), "ready", time.Hour))
	}
	for i := range updated {
		s.Pods = append(s.Pods, newPod(fmt.Sprintf("web-6f9c7d-%05d", i), "nginx:1.26", controllerRef("ReplicaSet", newRS.Name, newRS.UID), "ready", time.Minute))
	}
	return s
}

// withStaged adds the Staged condition the controller writes, and a Progressing
// condition reason PartitionReached when held.
func withStaged(s Snapshot, reason staging.Phase, message string) Snapshot {
	d := s.Object.(*appsv1.Deployment)
	d.Status.Conditions = append(d.Status.Conditions, appsv1.DeploymentCondition{Type: staging.ConditionType, Status: corev1.ConditionTrue, Reason: string(reason), Message: message})
	if reason != staging.Progressing {
		d.Status.Conditions = append(d.Status.Conditions, appsv1.DeploymentCondition{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "PartitionReached",
			Message: fmt.Sprintf(`ReplicaSet "web-6f9c7d" reached its partition: %d of 20 pods updated, %d kept on older revisions.`, d.Status.UpdatedReplicas, 20-d.Status.UpdatedReplicas)})
	}
	return s
}

// stepOnePaused is the example at its first pause: 2 of 20 updated.
func stepOnePaused() Snapshot {
	return withStaged(stagedDeployment(map[string]string{staging.StepsAnnotation: twentySteps}, 18, 2, "1/5"),
		staging.StepPaused, "step 1/5: 10% (2 of 20 updated), paused until promoted")
}

// stagedStatefulSet is a 5-replica StatefulSet with steps "20%, pause, 100%" held at
// its first pause: the controller wrote partition 4, web-4 is updated; kubectl calls
// that a finished partitioned rollout.
func stagedStatefulSet() Snapshot {
	s := statefulSetPartition()
	set := s.Object.(*appsv1.StatefulSet)
	*set.Spec.UpdateStrategy.RollingUpdate.Partition = 4
	set.Annotations = map[string]string{staging.StepsAnnotation: "20%, pause, 100%", staging.StepAnnotation: "1/3",
		staging.StepRevisionAnnotation: "web-86c7f9d5b8", staging.StepSinceAnnotation: now.Add(-time.Minute).Format(time.RFC3339)}
	set.Status.UpdatedReplicas, set.Status.CurrentReplicas, set.Status.ReadyReplicas, set.Status.AvailableReplicas = 1, 4, 5, 5
	set.Status.Conditions = []appsv1.StatefulSetCondition{{Type: staging.ConditionType, Status: corev1.ConditionTrue, Reason: string(staging.StepPaused),
		Message: "step 1/3: 20% (1 of 5 updated), paused until promoted"}}
	owner := controllerRef("StatefulSet", "web", set.UID)
	s.Pods[3] = newPod("web-3", "nginx:1.25", owner, "ready", 30*time.Minute)
	s.Pods[3].Labels[appsv1.ControllerRevisionHashLabelKey] = "web-7b9d6c5f4"
	return s
}

// promotedStatefulSet is stagedStatefulSet promoted to 2/3 (100%): the Staged
// condition and the partition field are still those of step 1/3.
func promotedStatefulSet() Snapshot {
	s := stagedStatefulSet()
	s.Object.(*appsv1.StatefulSet).Annotations[staging.StepAnnotation] = "2/3"
	return s
}

// daemonSetAtPartition is a DaemonSet over 10 nodes with kroll.dev/partition 7: the
// first 7 nodes by name keep revision 1, 3 run revision 2.
func daemonSetAtPartition() Snapshot {
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: "default", UID: "ds-agent", Generation: 2,
			Annotations: map[string]string{staging.PartitionAnnotation: "7"}},
		Spec:   appsv1.DaemonSetSpec{Template: template("agent:2"), UpdateStrategy: appsv1.DaemonSetUpdateStrategy{Type: appsv1.RollingUpdateDaemonSetStrategyType}},
		Status: appsv1.DaemonSetStatus{ObservedGeneration: 2, DesiredNumberScheduled: 10, CurrentNumberScheduled: 10, UpdatedNumberScheduled: 3, NumberReady: 10, NumberAvailable: 10},
	}
	owner := controllerRef("DaemonSet", "agent", ds.UID)
	s := Snapshot{Object: ds, Now: now, Revisions: []*appsv1.ControllerRevision{
		{ObjectMeta: metav1.ObjectMeta{Name: "agent-55f8d9c6b7", CreationTimestamp: metav1.NewTime(now.Add(-time.Hour)), Labels: map[string]string{appsv1.DefaultDaemonSetUniqueLabelKey: "55f8d9c6b7"}, OwnerReferences: []metav1.OwnerReference{owner}}, Revision: 1},
		{ObjectMeta: metav1.ObjectMeta{Name: "agent-6c4b8d7f9", CreationTimestamp: metav1.NewTime(now.Add(-time.Minute)), Labels: map[string]string{appsv1.DefaultDaemonSetUniqueLabelKey: "6c4b8d7f9"}, OwnerReferences: []metav1.OwnerReference{owner}}, Revision: 2},
	}}
	for i := range 10 {
		hash, image := "55f8d9c6b7", "agent:1"
		if i >= 7 {
			hash, image = "6c4b8d7f9", "agent:2"
		}
		p := newPod(fmt.Sprintf("agent-node-%02d", i), image, owner, "ready", time.Hour)
		p.Spec.NodeName = fmt.Sprintf("node-%02d", i)
		p.Labels[appsv1.DefaultDaemonSetUniqueLabelKey] = hash
		s.Pods = append(s.Pods, p)
		s.Nodes = append(s.Nodes, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: p.Spec.NodeName}})
	}
	return s
}

// stagedSnapshots have golden views beside the others.
var stagedSnapshots = []struct {
	name string
	snap func() Snapshot
}{
	{"deployment-staged-step-paused", stepOnePaused},
	{"statefulset-staged-step-paused", stagedStatefulSet},
	{"daemonset-partition-reached", daemonSetAtPartition},
}

func TestStaged(t *testing.T) {
	steps := map[string]string{staging.StepsAnnotation: twentySteps}
	tests := []struct {
		name string
		snap Snapshot
		// want is "phase step/total partition=N", or "nil".
		want      string
		wantPhase Phase
		wantDone  bool
		wantLine  string
	}{
		{"at the first bare pause: paused, the line says so and names promote", stepOnePaused(),
			"StepPaused 1/5 partition=18", Paused, false,
			`deployment "web": step 1/5: 10% (2 of 20 updated), paused until promoted; to continue: kroll rollout promote deployment/web`},
		{"no condition yet and no record: Decide gives the controller's answer", stagedDeployment(steps, 18, 2, ""),
			"StepPaused 1/5 partition=18", Paused, false,
			`deployment "web": step 1/5: 10% (2 of 20 updated), paused until promoted; to continue: kroll rollout promote deployment/web`},
		{"promoted to 2/5, 4 of 10 updated: rolling out to 50%, kubectl's shape of line", withStaged(stagedDeployment(steps, 16, 4, "2/5"), staging.Progressing, "step 2/5: rolling out to 50% (4 of 20 updated)"),
			"Progressing 2/5 partition=10", Progressing, false,
			`Waiting for deployment "web" rollout to finish: step 2/5: rolling out to 50% (4 of 20 updated)...`},
		{"a condition of the step before the record is stale: Decide over the pods", withStaged(stagedDeployment(steps, 16, 4, "2/5"), staging.StepPaused, "step 1/5: 10% (2 of 20 updated), paused until promoted"),
			"Progressing 2/5 partition=10", Progressing, false,
			`Waiting for deployment "web" rollout to finish: step 2/5: rolling out to 50% (4 of 20 updated)...`},
		{"a record of another revision: the new template starts again, at step 1 after 2 pods", recordOfAnotherRevision(),
			"StepPaused 1/5 partition=18", Paused, false,
			`deployment "web": step 1/5: 10% (2 of 20 updated), paused until promoted; to continue: kroll rollout promote deployment/web`},
		{"at the timed pause: paused, until the pause ends", withStaged(stagedDeployment(steps, 10, 10, "3/5"), staging.StepWaiting, "step 3/5: 50% (10 of 20 updated), paused for 5s until 2026-11-21T11:59:05Z"),
			"StepWaiting 3/5 partition=10", Paused, false,
			`deployment "web": step 3/5: 50% (10 of 20 updated), paused for 5s until 2026-11-21T11:59:05Z; to continue: kroll rollout promote deployment/web`},
		{"steps done and every pod updated: complete, as kubectl says", withStaged(stagedDeployment(steps, 0, 20, "5/5"), staging.StepsDone, "step 5/5: all steps done (20 of 20 updated)"),
			"StepsDone 5/5 partition=0", Complete, true, `deployment "web" successfully rolled out`},
		{"held at kroll.dev/partition: the command that lowers it", withStaged(stagedDeployment(map[string]string{staging.PartitionAnnotation: "10"}, 10, 10, ""), staging.PartitionReached, "partition 10 reached: 10 of 20 updated, 10 kept on the old revisions"),
			"PartitionReached 0/0 partition=10", Paused, false,
			`deployment "web": partition 10 reached: 10 of 20 updated, 10 kept on the old revisions; to continue: kroll annotate deployment/web kroll.dev/partition=0 --overwrite`},
		{"a rollback (the new ReplicaSet is older than another) is never staged", rolledBackStaged(), "nil", Progressing, false,
			`Waiting for deployment "web" rollout to finish: 2 out of 20 new replicas have been updated...`},
		{"invalid steps: not staged", stagedDeployment(map[string]string{staging.StepsAnnotation: "10%, later"}, 18, 2, ""), "nil", Progressing, false,
			`Waiting for deployment "web" rollout to finish: 2 out of 20 new replicas have been updated...`},
		{"StatefulSet at its step's partition: kubectl is done, kroll waits", stagedStatefulSet(), "StepPaused 1/3 partition=4", Paused, false,
			`statefulset "web": step 1/3: 20% (1 of 5 updated), paused until promoted; to continue: kroll rollout promote statefulset/web`},
		{"StatefulSet promoted to 100% before its controller wrote partition 0: no partition shown", promotedStatefulSet(), "Progressing 2/3 partition=0", Progressing, false,
			`Waiting for statefulset "web" rollout to finish: step 2/3: rolling out to 100% (1 of 5 updated)...`},
		{"DaemonSet partition 7 of 10 nodes: 3 updated, held", daemonSetAtPartition(), "PartitionReached 0/0 partition=7", Paused, false,
			`daemonset "agent": partition 7 reached: 3 of 10 updated, 7 kept on the old revisions; to continue: kroll annotate daemonset/agent kroll.dev/partition=0 --overwrite`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := ProgressOf(tt.snap)
			if err != nil {
				t.Fatal(err)
			}
			got := "nil"
			if st := p.Staged; st != nil {
				got = fmt.Sprintf("%s %d/%d partition=%d", st.Phase, st.Step, st.Total, st.Partition)
			}
			if got != tt.want {
				t.Errorf("staged %s, want %s", got, tt.want)
			}
			if p.Phase != tt.wantPhase || p.Done != tt.wantDone {
				t.Errorf("phase %s done %v, want %s %v", p.Phase, p.Done, tt.wantPhase, tt.wantDone)
			}
			if st := p.Staged; st != nil && st.Phase != staging.StepsDone && (p.Partition == nil) != (st.Partition == 0) {
				t.Errorf("partition %v shown, staged partition %d", p.Partition, st.Partition)
			}
			if line := Line(p); line != tt.wantLine {
				t.Errorf("line\n%s\nwant\n%s", line, tt.wantLine)
			}
		})
	}
}

// kroll.dev/partition on a StatefulSet: its controller does not take it (the
// StatefulSet has its own partition field), so the view neither.
func TestStaged_partitionAnnotationOnAStatefulSet(t *testing.T) {
	s := statefulSetPartition()
	s.Object.(*appsv1.StatefulSet).Annotations = map[string]string{staging.PartitionAnnotation: "3"}
	p, err := ProgressOf(s)
	if err != nil {
		t.Fatal(err)
	}
	want := "kroll.dev/partition is for Deployments and DaemonSets, not used on a StatefulSet: use spec.updateStrategy.rollingUpdate.partition"
	if p.Staged != nil || len(p.Warnings) != 1 || p.Warnings[0] != want {
		t.Errorf("staged %v, warnings %q; want not staged, one warning %q", p.Staged, p.Warnings, want)
	}
}

// Steps that do not parse: not staged, and one warning line naming the annotation.
func TestStaged_invalidAnnotationIsAWarning(t *testing.T) {
	p, err := ProgressOf(stagedDeployment(map[string]string{staging.StepsAnnotation: "10%, later"}, 18, 2, ""))
	if err != nil {
		t.Fatal(err)
	}
	want := `kroll.dev/rollout-steps="10%, later" is not valid (step 2 "later" is neither a share of pods (10%, 3) nor a pause nor "analyze"): want a comma-separated list of shares of pods updated (10%, 3), pauses ("pause" until promoted, "pause: 2m") and analyses ("analyze", the checks of kroll.dev/analysis), like "10%, pause, 50%, pause: 5m, 100%" or "10%, analyze, 50%, analyze, 100%"; the rollout is not staged`
	if p.Staged != nil || len(p.Warnings) != 1 || p.Warnings[0] != want {
		t.Errorf("staged %v, warnings %q; want not staged, one warning %q", p.Staged, p.Warnings, want)
	}
}

// recordOfAnotherRevision is stepOnePaused's pods under a record of steps 3/5 of an
// earlier template.
func recordOfAnotherRevision() Snapshot {
	s := stagedDeployment(map[string]string{staging.StepsAnnotation: twentySteps}, 18, 2, "3/5")
	s.Object.(*appsv1.Deployment).Annotations[staging.StepRevisionAnnotation] = "5d8f4b"
	return s
}

// rolledBackStaged is a staged Deployment rolled back to revision 1's template: its
// ReplicaSet, made an hour ago, is the new one again, with 2 pods so far.
func rolledBackStaged() Snapshot {
	s := stagedDeployment(map[string]string{staging.StepsAnnotation: twentySteps}, 18, 2, "")
	s.ReplicaSets[0].CreationTimestamp = metav1.NewTime(now.Add(-10 * time.Second))
	return s
}

func TestStagedWhere(t *testing.T) {
	tests := []struct {
		s    Staged
		want string
	}{
		{Staged{Phase: staging.StepPaused, Step: 2, Total: 5, Message: "step 2/5: 50% (10 of 20 updated), paused until promoted"}, "paused at step 2/5"},
		{Staged{Phase: staging.StepWaiting, Step: 3, Total: 5, Message: "step 3/5: 50% (10 of 20 updated), paused for 5s until 2026-11-21T12:00:05Z"}, "paused at step 3/5 until 2026-11-21T12:00:05Z"},
		{Staged{Phase: staging.PartitionReached, Partition: 10}, "at partition 10"},
	}
	for _, tt := range tests {
		if got := tt.s.Where(); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.s.Message, got, tt.want)
		}
	}
}

func TestStepChanged(t *testing.T) {
	at := func(step int, phase staging.Phase) *Staged { return &Staged{Phase: phase, Step: step, Total: 5} }
	tests := []struct {
		name      string
		prev, cur *Staged
		want      bool
	}{
		{"the first view is no boundary", nil, at(1, staging.StepPaused), false},
		{"promoted: 1/5 to 2/5", at(1, staging.StepPaused), at(2, staging.Progressing), true},
		{"pods moving within a step", at(2, staging.Progressing), at(2, staging.Progressing), false},
		{"partition reached", &Staged{Phase: staging.Progressing, Partition: 10}, &Staged{Phase: staging.PartitionReached, Partition: 10}, true},
		{"no longer staged (aborted): nothing to mark", at(2, staging.Progressing), nil, false},
	}
	for _, tt := range tests {
		if got := StepChanged(tt.prev, tt.cur); got != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestRolloutMarks(t *testing.T) {
	start := now.Add(-time.Minute)
	tl := timeline.Timeline{Revision: "2", Start: start}
	event := func(reason, message string, at time.Time) corev1.Event {
		return corev1.Event{Reason: reason, Message: message, FirstTimestamp: metav1.NewTime(at), LastTimestamp: metav1.NewTime(at.Add(time.Hour))}
	}
	events := []corev1.Event{
		event(staging.EventReason, "step 2/5: rolling out to 50% (2 of 20 updated)", start.Add(30*time.Second)),
		event(staging.EventReason, "step 1/5: 10% (2 of 20 updated), paused until promoted", start.Add(10*time.Second)),
		event(staging.EventReason, "step 4/5: rolling out to 100% (10 of 20 updated)", start.Add(-time.Hour)), // the rollout before
		event("ScalingReplicaSet", "Scaled up replica set web-6f9c7d from 0 to 2", start.Add(time.Second)),
		event(staging.EventReason, "partition 10 reached: 10 of 20 updated, 10 kept on the old revisions", start.Add(40*time.Second)),
		event(analysis.EventSucceeded, `step 2/5: check "error-ratio" succeeded: 0 is < 0.01 (2 of 2 measurements successful)`, start.Add(25*time.Second)),
		event(analysis.EventHeld, `check "error-ratio" is inconclusive: 0.2 is neither < 0.01 nor > 0.5`, start.Add(45*time.Second)),
		event(failure.EventRolledBack, `check "error-ratio" failed: 0.2 is not < 0.01 (1 failed measurement, limit 0); rolled back from revision 2 to 1`, start.Add(50*time.Second)),
		event(failure.EventRolloutPaused, `check "p99" failed: 0.49 is not < 0.25`, start.Add(55*time.Second)),
		event(failure.EventRolledBack, "pod web-6f9c7d-abcde: CrashLoopBackOff; rolled back from revision 2 to 1", start.Add(56*time.Second)), // the timeline's own rollback mark
	}
	got := fmt.Sprint(RolloutMarks(tl, events))
	if want := "[{10s 1/5} {25s analysis passed} {30s 2/5} {40s partition 10} {45s analysis held} {50s analysis failed} {55s analysis failed}]"; got != want {
		t.Errorf("marks %s, want %s", got, want)
	}
}
