package rolloutview

import (
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kroll-dev/kroll/pkg/failure"
)

// watchedDone is complete() (3 pods of revision 2, all available) under policy
// (kroll.dev/on-failure; "" for none), its 3 pods Ready since readyAgo, the new
// ReplicaSet marked complete or not, and the status last written by writer ("" for
// no managedFields).
func watchedDone(policy string, readyAgo time.Duration, marked bool, writer string) Snapshot {
	s := complete()
	d := s.Object.(*appsv1.Deployment)
	if policy != "" {
		d.Annotations[failure.OnFailureAnnotation] = policy
	}
	if writer != "" {
		at := metav1.NewTime(now.Add(-time.Minute))
		d.ManagedFields = []metav1.ManagedFieldsEntry{
			{Manager: "kubectl-client-side-apply", Operation: metav1.ManagedFieldsOperationUpdate, Time: &at},
			{Manager: writer, Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status", Time: &at},
		}
	}
	if marked {
		s.ReplicaSets[1].Annotations[failure.CompleteAnnotation] = "true"
	}
	for _, p := range s.Pods {
		p.Status.Conditions[0].LastTransitionTime = metav1.NewTime(now.Add(-readyAgo))
	}
	return s
}

// rolledBackHealthy is a Deployment kroll rolled back from revision 2: now on
// revision 3 (revision 1's ReplicaSet, marked complete when it was rolled back to),
// every pod available.
func rolledBackHealthy(marked bool) Snapshot {
	s := watchedDone("Rollback", time.Hour, marked, "kroll")
	d := s.Object.(*appsv1.Deployment)
	d.Annotations[failure.RolledBackFromAnnotation] = "2"
	d.Annotations["deployment.kubernetes.io/revision"] = "3"
	s.ReplicaSets[1].Annotations["deployment.kubernetes.io/revision"] = "3"
	d.Status.Conditions = append(d.Status.Conditions, appsv1.DeploymentCondition{Type: failure.ConditionRolloutFailed, Status: corev1.ConditionTrue,
		Reason: failure.ReasonPodsFailing, Message: "1 of 3 new pods failed, threshold 1 (web-5d8f4b-aaaaa: CrashLoopBackOff); rolled back from revision 2 to 1"})
	return s
}

// pendingReport is rolledBackHealthy in the instant after the rollback's Update and
// before its report: the record is on the Deployment, the condition not yet written.
func pendingReport() Snapshot {
	s := rolledBackHealthy(true)
	d := s.Object.(*appsv1.Deployment)
	d.Status.Conditions = d.Status.Conditions[:1]
	failure.Report{Action: failure.Rollback, Reason: failure.ReasonPodsFailing, Message: "1 of 3 new pods failed; rolled back from revision 2 to 1"}.Record(d.Annotations)
	return s
}

// statefulSetDone is statefulSetPartition with partition 3 and both pods above it on
// the update revision and Ready since readyAgo: kubectl calls it done.
func statefulSetDone(readyAgo time.Duration) Snapshot {
	s := statefulSetPartition()
	set := s.Object.(*appsv1.StatefulSet)
	*set.Spec.UpdateStrategy.RollingUpdate.Partition = 3
	set.Annotations = map[string]string{failure.OnFailureAnnotation: "Pause"}
	set.Status.UpdatedReplicas, set.Status.ReadyReplicas, set.Status.AvailableReplicas = 2, 5, 5
	s.Pods[3] = newPod("web-3", "nginx:1.26", controllerRef("StatefulSet", "web", set.UID), "ready", time.Minute)
	s.Pods[3].Labels[appsv1.ControllerRevisionHashLabelKey] = "web-86c7f9d5b8"
	for _, p := range s.Pods[3:] {
		p.Status.Conditions[0].LastTransitionTime = metav1.NewTime(now.Add(-readyAgo))
	}
	return s
}

// statefulSetAllDone is statefulSetDone with its partition lowered to 0 and every pod
// on the update revision.
func statefulSetAllDone(readyAgo time.Duration) Snapshot {
	s := statefulSetDone(readyAgo)
	set := s.Object.(*appsv1.StatefulSet)
	*set.Spec.UpdateStrategy.RollingUpdate.Partition = 0
	set.Status.UpdatedReplicas, set.Status.CurrentReplicas, set.Status.CurrentRevision = 5, 5, set.Status.UpdateRevision
	for i, p := range s.Pods {
		p.Labels[appsv1.ControllerRevisionHashLabelKey] = set.Status.UpdateRevision
		p.Status.Conditions[0].LastTransitionTime = metav1.NewTime(now.Add(-readyAgo - time.Duration(i)*time.Second))
	}
	return s
}

func TestVerdictWait(t *testing.T) {
	tests := []struct {
		name      string
		snap      Snapshot
		wantPhase Phase
		wantDone  bool
		// wantLine is in the message (or a warning, for wantWarn); wantLeft the
		// settling's seconds left (-1: no settling).
		wantLine string
		wantLeft float64
		wantWarn bool
	}{
		{"no policy: complete as kubectl says, the moment counts are done", watchedDone("", 2*time.Second, false, "kroll"), Complete, true, "successfully rolled out", -1, false},
		{"policy None: the same", watchedDone("None", 2*time.Second, false, "kroll"), Complete, true, "successfully rolled out", -1, false},
		{"an invalid policy is off: complete", watchedDone("Sometimes", 2*time.Second, false, "kroll"), Complete, true, "successfully rolled out", -1, false},
		{"Rollback, pods Ready 2s ago, unmarked: waits 8 s more and names what it waits for", watchedDone("Rollback", 2*time.Second, false, "kroll"), Progressing, false,
			`Waiting for deployment "web" rollout to finish: all 3 pods updated and available; watching for failures for 8 s more (until ReplicaSet "web-6f9c7d" is marked kroll.dev/complete)...`, 8, false},
		{"Pause, 1.5s Ready: 9 s more (rounded up)", watchedDone("Pause", 1500*time.Millisecond, false, "kroll"), Progressing, false, "for 9 s more", 9, false},
		{"settled but not marked yet: waits for the controller", watchedDone("Rollback", time.Hour, false, "kroll"), Progressing, false,
			`watched for failures 10s, waiting for kroll's controller (until ReplicaSet "web-6f9c7d" is marked kroll.dev/complete)`, 0, false},
		{"marked complete: done", watchedDone("Rollback", 2*time.Second, true, "kroll"), Complete, true, "successfully rolled out", -1, false},
		{"managedFields unknown: waits (nothing says the controller is not kroll's)", watchedDone("Rollback", 2*time.Second, false, ""), Progressing, false, "8 s more", 8, false},
		{"status written by kube-controller-manager: kubectl's semantics, with a warning", watchedDone("Rollback", 2*time.Second, false, "kube-controller-manager"), Complete, true,
			"the status is written by kube-controller-manager, not kroll's controllers", -1, true},
		{"rolled back and healthy on a marked revision: still RolledBack for rollout status", rolledBackHealthy(true), RolledBack, false, "rolled back from revision 2 to 1", -1, false},
		{"the rollback's record before its condition: RolledBack, never Complete", pendingReport(), RolledBack, false, "rolled back from revision 2 to 1", -1, false},
		{"StatefulSet done at its partition: as kubectl says (nothing is marked until every pod is updated)", statefulSetDone(3 * time.Second), Complete, true, "partitioned roll out complete", -1, false},
		{"StatefulSet: waits for its update revision's ControllerRevision", statefulSetAllDone(3 * time.Second), Progressing, false,
			`Waiting for statefulset "web" rollout to finish: all 5 pods updated and available; watching for failures for 7 s more (until ControllerRevision "web-86c7f9d5b8" is marked kroll.dev/complete)...`, 7, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := ProgressOf(tt.snap)
			if err != nil {
				t.Fatal(err)
			}
			if p.Phase != tt.wantPhase || p.Done != tt.wantDone {
				t.Errorf("phase %s done %v, want %s %v (%s)", p.Phase, p.Done, tt.wantPhase, tt.wantDone, p.Message)
			}
			text := p.Message
			if tt.wantWarn {
				text = strings.Join(p.Warnings, "\n")
			}
			if !strings.Contains(text, tt.wantLine) {
				t.Errorf("got %q, want it to contain %q", text, tt.wantLine)
			}
			switch {
			case tt.wantLeft < 0 && p.Settling != nil:
				t.Errorf("settling %+v, want none", *p.Settling)
			case tt.wantLeft >= 0 && (p.Settling == nil || p.Settling.SecondsLeft == nil || *p.Settling.SecondsLeft != tt.wantLeft):
				t.Errorf("settling %+v, want %v s left", p.Settling, tt.wantLeft)
			}
			if tt.wantLeft >= 0 && !strings.Contains(JSON(p), `"phase":"Progressing"`) {
				t.Errorf("json %s, want phase Progressing", JSON(p))
			}
		})
	}
}

func TestAwaitVerdict_podNotReady(t *testing.T) {
	s := watchedDone("Rollback", time.Second, false, "kroll")
	pods := activePods(s.Pods)
	pods[0] = pods[0].DeepCopy()
	pods[0].Status.Conditions[0].Status = corev1.ConditionFalse
	w := awaitVerdict(verdictView{policy: failure.PolicyOf(map[string]string{failure.OnFailureAnnotation: "Rollback"}),
		holder: holder{kind: "ReplicaSet", name: "web-6f9c7d"}, pods: pods, now: now})
	if !w.wait || w.settling.SecondsLeft != nil {
		t.Fatalf("got %+v, want a wait without seconds left", w)
	}
	if w := awaitVerdict(verdictView{policy: failure.PolicyOf(map[string]string{failure.OnFailureAnnotation: "Rollback"}), now: now}); w.wait {
		t.Errorf("no pods (scaled to 0): got a wait, want none")
	}
}

func TestFails(t *testing.T) {
	progress := func(s Snapshot) Progress {
		p, err := ProgressOf(s)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	rollingBack, _ := ParseFailOn(nil)
	strict, err := ParseFailOn([]string{"rolled-back"})
	if err != nil {
		t.Fatal(err)
	}
	gateAll, err := ParseFailOn([]string{"rolled-back", "updating", "paused"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name             string
		p                Progress
		also             FailOn
		want             bool
		wantVerdict      Verdict
		wantRecoveredTag bool
	}{
		{"rolled back, healthy on a complete revision: listed, not failing", progress(rolledBackHealthy(true)), rollingBack, false, Reverted, true},
		{"the same with --fail-on=rolled-back: failing", progress(rolledBackHealthy(true)), strict, true, Reverted, true},
		{"rolled back, the restored revision not marked: failing", progress(rolledBackHealthy(false)), rollingBack, true, Reverted, false},
		{"rolled back, old pods still going: failing", progress(rolledBack()), rollingBack, true, Reverted, false},
		{"the rollback's record before its report: failing", progress(pendingReport()), rollingBack, true, Reverted, false},
		{"paused on failure: always failing", progress(pausedOnFailure()), rollingBack, true, HeldOnFailure, false},
		{"past its deadline: always failing", progress(pastDeadline()), rollingBack, true, Failing, false},
		{"waiting for the verdict: updating, not failing", progress(watchedDone("Rollback", 2*time.Second, false, "kroll")), rollingBack, false, Updating, false},
		{"waiting for the verdict with --fail-on=updating: failing", progress(watchedDone("Rollback", 2*time.Second, false, "kroll")), gateAll, true, Updating, false},
		{"paused by its user with --fail-on=paused: failing", progress(paused()), gateAll, true, Halted, false},
		{"complete: never failing", progress(watchedDone("Rollback", 2*time.Second, true, "kroll")), gateAll, false, Succeeded, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.p.Fails(tt.also); got != tt.want {
				t.Errorf("fails %v, want %v (phase %s, failure %+v)", got, tt.want, tt.p.Phase, tt.p.Failure)
			}
			if v := VerdictOf(tt.p); v != tt.wantVerdict {
				t.Errorf("verdict %s, want %s", v, tt.wantVerdict)
			}
			if got := strings.Contains(detail(tt.p), "healthy since on revision"); got != tt.wantRecoveredTag {
				t.Errorf("detail %q: says healthy %v, want %v", detail(tt.p), got, tt.wantRecoveredTag)
			}
		})
	}
	if _, err := ParseFailOn([]string{"failed"}); err == nil || !strings.Contains(err.Error(), "want one or more of rolled-back, updating, paused") {
		t.Errorf("--fail-on=failed: err %v, want the accepted values", err)
	}
}

func TestKeepStatusWriter(t *testing.T) {
	at := func(m int) *metav1.Time { x := metav1.NewTime(now.Add(time.Duration(m) * time.Minute)); return &x }
	fields := metav1.FieldsV1{Raw: []byte(`{"f:status":{"f:replicas":{}}}`)}
	tests := []struct {
		name   string
		fields []metav1.ManagedFieldsEntry
		want   []metav1.ManagedFieldsEntry
	}{
		{"none: none", nil, nil},
		{"no status write: none (kubectl's and the API server's writes are not read)",
			[]metav1.ManagedFieldsEntry{{Manager: "kubectl-client-side-apply", Operation: "Update", Time: at(-3), FieldsType: "FieldsV1", FieldsV1: &fields}}, nil},
		{"kube-controller-manager wrote the status before kroll: kroll's write, without its fields",
			[]metav1.ManagedFieldsEntry{
				{Manager: "kubectl", Operation: "Update", Time: at(0), FieldsType: "FieldsV1", FieldsV1: &fields},
				{Manager: "kroll", Operation: "Update", Subresource: "status", Time: at(-1), FieldsType: "FieldsV1", FieldsV1: &fields},
				{Manager: "kube-controller-manager", Operation: "Update", Subresource: "status", Time: at(-5), FieldsType: "FieldsV1", FieldsV1: &fields},
			},
			[]metav1.ManagedFieldsEntry{{Manager: "kroll", Operation: "Update", Subresource: "status", Time: at(-1)}}},
		{"a status write without a time is not the newest",
			[]metav1.ManagedFieldsEntry{
				{Manager: "kroll", Operation: "Update", Subresource: "status"},
				{Manager: "kube-controller-manager", Operation: "Update", Subresource: "status", Time: at(-5)},
			},
			[]metav1.ManagedFieldsEntry{{Manager: "kube-controller-manager", Operation: "Update", Subresource: "status", Time: at(-5)}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{ManagedFields: tt.fields}}
			before := statusWriter(d)
			KeepStatusWriter(d)
			if got := statusWriter(d); got != before {
				t.Errorf("the status writer was %q, is %q after trimming", before, got)
			}
			if fmt.Sprint(d.ManagedFields) != fmt.Sprint(tt.want) {
				t.Errorf("managedFields\n got %v\nwant %v", d.ManagedFields, tt.want)
			}
		})
	}
}
