package inplace

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func template(image string) *corev1.PodTemplateSpec {
	return &corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{{Name: "init", Image: "busybox:1"}},
			Containers:     []corev1.Container{{Name: "app", Image: image}, {Name: "sidecar", Image: "envoy:1"}},
		},
	}
}

func TestDiff(t *testing.T) {
	tests := []struct {
		name string
		edit func(*corev1.PodTemplateSpec)
		want string
	}{
		{"an image", func(t *corev1.PodTemplateSpec) { t.Spec.Containers[0].Image = "nginx:2" }, "[]"},
		{"an init image, labels and annotations", func(t *corev1.PodTemplateSpec) {
			t.Spec.InitContainers[0].Image = "busybox:2"
			t.Labels["tier"] = "front"
			t.Annotations = map[string]string{"note": "v2"}
		}, "[]"},
		{"kubectl rollout restart: only new containers restart", func(t *corev1.PodTemplateSpec) {
			t.Annotations = map[string]string{"kubectl.kubernetes.io/restartedAt": "2026-11-24T10:00:00Z"}
		}, "[metadata.annotations[kubectl.kubernetes.io/restartedAt]]"},
		{"a configuration change (kroll.dev/config-rollout): only new pods mount its snapshots", func(t *corev1.PodTemplateSpec) {
			t.Annotations = map[string]string{"kroll.dev/config-hash": "5d8f7c9b6"}
		}, "[metadata.annotations[kroll.dev/config-hash]]"},
		{"env of one container", func(t *corev1.PodTemplateSpec) {
			t.Spec.Containers[1].Env = []corev1.EnvVar{{Name: "X", Value: "1"}}
		}, "[spec.containers[sidecar].env]"},
		{"command and an image", func(t *corev1.PodTemplateSpec) {
			t.Spec.Containers[0].Command = []string{"sh"}
			t.Spec.Containers[0].Image = "nginx:2"
		}, "[spec.containers[app].command]"},
		{"a container added", func(t *corev1.PodTemplateSpec) {
			t.Spec.Containers = append(t.Spec.Containers, corev1.Container{Name: "x", Image: "x"})
		}, "[spec.containers]"},
		{"volumes and node selector", func(t *corev1.PodTemplateSpec) {
			t.Spec.Volumes = []corev1.Volume{{Name: "v"}}
			t.Spec.NodeSelector = map[string]string{"disk": "ssd"}
		}, "[spec.nodeSelector spec.volumes]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			from := template("nginx:1")
			to := from.DeepCopy()
			tt.edit(to)
			if got := fmt.Sprint(Diff(from, to)); got != tt.want {
				t.Errorf("Diff = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestModeOf(t *testing.T) {
	for v, want := range map[string]Mode{"": Off, "InPlaceIfPossible": IfPossible, "InPlaceOnly": Only} {
		if got, err := ModeOf(map[string]string{StrategyAnnotation: v}); err != nil || got != want {
			t.Errorf("%q: %v %v", v, got, err)
		}
	}
	if _, err := ModeOf(map[string]string{StrategyAnnotation: "Sometimes"}); err == nil {
		t.Error("an unknown mode was accepted")
	}
}

// pod is a running pod of app (image, imageID "id-<image>"), with or without the gate.
func pod(image string, gated bool, gate corev1.ConditionStatus, ready bool) *corev1.Pod {
	p := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: image}}}}
	if gated {
		p.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: ReadinessGate}}
		if gate != "" {
			p.Status.Conditions = []corev1.PodCondition{{Type: ReadinessGate, Status: gate}}
		}
	}
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", Image: image, ImageID: "id-" + image, Ready: ready,
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
	return p
}

func TestJudge(t *testing.T) {
	restart := "metadata.annotations[kubectl.kubernetes.io/restartedAt]"
	tests := []struct {
		name   string
		mode   Mode
		fields []string
		want   string
	}{
		{"not opted in: no verdict", Off, nil, ""},
		{"images and metadata: in place", IfPossible, nil, "True/InPlaceUpdating: the pods are updated where they run"},
		{"env under InPlaceIfPossible: rolling update", IfPossible, []string{"spec.containers[app].env"},
			"False/InPlaceUpdateFallback: the change to spec.containers[app].env cannot be made in place; rolling update instead"},
		{"a restart under InPlaceIfPossible: rolling update, and why", IfPossible, []string{restart},
			"False/InPlaceUpdateFallback: the change to " + restart + " cannot be made in place (a restart needs new containers, and only a new pod gets them); rolling update instead"},
		{"a restart under InPlaceOnly: blocked, naming the field", Only, []string{restart},
			"False/InPlaceUpdateBlocked: the change to " + restart + " cannot be made in place (a restart needs new containers, and only a new pod gets them); InPlaceOnly touches no pod"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ""
			if v, ok := Judge(tt.mode, tt.fields); ok {
				got = fmt.Sprintf("%s/%s: %s", v.Status, v.Reason, v.Message)
			}
			if got != tt.want {
				t.Errorf("Judge = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestFinish(t *testing.T) {
	for _, tt := range []struct {
		cur  *Condition
		want string
	}{
		{nil, "unchanged"},
		{&Condition{Status: corev1.ConditionTrue, Reason: ReasonInPlace}, "True/InPlaceUpdateComplete"},
		{&Condition{Status: corev1.ConditionFalse, Reason: ReasonFallback}, "unchanged"},
		{&Condition{Status: corev1.ConditionFalse, Reason: ReasonBlocked}, "unchanged"},
		{&Condition{Status: corev1.ConditionTrue, Reason: ReasonComplete}, "unchanged"},
	} {
		got := "unchanged"
		if v := Finish(tt.cur); v != nil {
			got = fmt.Sprintf("%s/%s", v.Status, v.Reason)
		}
		if got != tt.want {
			t.Errorf("Finish(%+v) = %s, want %s", tt.cur, got, tt.want)
		}
	}
}

func TestTargetWantAndPatch(t *testing.T) {
	from := template("nginx:1")
	from.Labels["tier"] = "back"
	from.Annotations = map[string]string{"note": "v1", "owner": "team-a"}
	to := template("nginx:1")
	to.Annotations = map[string]string{"note": "v2"}
	target := Target{Template: to, Labels: map[string]string{"controller-revision-hash": "r2"}, From: from}
	want := target.Want()
	if fmt.Sprint(want.Labels) != "map[app:web controller-revision-hash:r2]" || fmt.Sprint(want.DropLabels) != "[tier]" ||
		fmt.Sprint(want.Annotations) != "map[note:v2]" || fmt.Sprint(want.DropAnnotations) != "[owner]" {
		t.Errorf("Want = %+v", want)
	}
	p := pod("nginx:1", false, "", true)
	p.UID = "u1"
	got, err := json.Marshal(UpdatePatch(p, target))
	if err != nil {
		t.Fatal(err)
	}
	patch := `{"metadata":{"annotations":{"note":"v2","owner":null},"labels":{"app":"web","controller-revision-hash":"r2","tier":null},"uid":"u1"},` +
		`"spec":{"containers":[{"image":"nginx:1","name":"app"},{"image":"envoy:1","name":"sidecar"}],"initContainers":[{"image":"busybox:1","name":"init"}]}}`
	if string(got) != patch {
		t.Errorf("UpdatePatch =\n%s\nwant\n%s", got, patch)
	}
}

func TestNextStep(t *testing.T) {
	now := time.Now()
	target := Want{Images: map[string]string{"app": "nginx:2"}}
	withState := func(p *corev1.Pod, since time.Time) *corev1.Pod {
		s := OutOfService(p, "rev2", target.Images, since)
		p.Annotations = map[string]string{StateAnnotation: s.Encode()}
		return p
	}
	relabel := Want{Images: map[string]string{"app": "nginx:1"}, Labels: map[string]string{"rev": "2"}, DropAnnotations: []string{"note"}}
	labelled := func(p *corev1.Pod, rev string) *corev1.Pod { p.Labels = map[string]string{"rev": rev}; return p }
	noted := func(p *corev1.Pod) *corev1.Pod { p.Annotations = map[string]string{"note": "v1"}; return p }
	specPatched := func(p *corev1.Pod) *corev1.Pod { p.Spec.Containers[0].Image = "nginx:2"; return p }
	tests := []struct {
		name  string
		pod   *corev1.Pod
		grace time.Duration
		want  Step
		wait  time.Duration
	}{
		{"serving old pod, grace period: take it out of service", pod("nginx:1", true, corev1.ConditionTrue, true), time.Second, TakeOut, 0},
		{"serving old pod, no grace period: the patch is the one write", pod("nginx:1", true, corev1.ConditionTrue, true), 0, Patch, 0},
		{"out of service, grace period running", withState(pod("nginx:1", true, corev1.ConditionFalse, false), now.Add(-2*time.Second)), 5 * time.Second, Wait, 3 * time.Second},
		{"grace period over: patch", withState(pod("nginx:1", true, corev1.ConditionFalse, false), now.Add(-6*time.Second)), 5 * time.Second, Patch, 0},
		{"patched, the kubelet still reports the old image", specPatched(withState(pod("nginx:1", true, corev1.ConditionFalse, false), now)), 0, Wait, 0},
		{"new image running and ready: put it back", withState(pod("nginx:2", true, corev1.ConditionFalse, true), now), 0, PutBack, 0},
		{"serving the new image: done", pod("nginx:2", true, corev1.ConditionTrue, true), 0, Done, 0},
		{"a pod without the gate is patched directly", pod("nginx:1", false, "", true), 0, Patch, 0},
		{"target went back before the patch (undo): put back", pod("nginx:2", true, corev1.ConditionFalse, true), 0, PutBack, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, wait := NextStep(tt.pod, target, tt.grace, now)
			if got != tt.want || (tt.wait > 0 && (wait < tt.wait-time.Millisecond || wait > tt.wait+time.Millisecond)) {
				t.Errorf("NextStep = %s (wait %s), want %s (wait %s)", got, wait, tt.want, tt.wait)
			}
		})
	}
	// A template change without an image: labels and annotations are patched, and the
	// pod is not taken out of service for it, grace period or not.
	for _, tt := range []struct {
		name  string
		pod   *corev1.Pod
		grace time.Duration
		want  Step
	}{
		{"labels to change, grace period: patched, not taken out", labelled(pod("nginx:1", true, corev1.ConditionTrue, true), "1"), time.Second, Patch},
		{"a label missing, no gate: patched", pod("nginx:1", false, "", true), 0, Patch},
		{"an annotation only the old template set: patched away", noted(labelled(pod("nginx:1", true, corev1.ConditionTrue, true), "2")), time.Second, Patch},
		{"labels and annotations as wanted: done", labelled(pod("nginx:1", true, corev1.ConditionTrue, true), "2"), time.Second, Done},
		{"images and labels to change, grace period: taken out first", labelled(pod("nginx:0", true, corev1.ConditionTrue, true), "1"), time.Second, TakeOut},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got, _ := NextStep(tt.pod, relabel, tt.grace, now); got != tt.want {
				t.Errorf("NextStep = %s, want %s", got, tt.want)
			}
		})
	}
}
