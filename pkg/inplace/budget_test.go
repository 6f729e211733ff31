package inplace

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// allowing is a Disrupt that lets the first n restarting pods restart, recording
// what it was asked.
func allowing(n int, asked *[]string) func([]*corev1.Pod) []*corev1.Pod {
	return func(restarting []*corev1.Pod) []*corev1.Pod {
		for _, p := range restarting {
			*asked = append(*asked, p.Name)
		}
		return restarting[:min(n, len(restarting))]
	}
}

func TestPlanHandOverUnderBudget(t *testing.T) {
	for _, tc := range []struct {
		name    string
		allowed int
		want    string
	}{
		{"maxUnavailable 2, the budget allows 1: A gives away a1 alone", 1,
			"a: 3 replicas, leaving [a1], arriving [] (gives away a1)"},
		{"the budget allows none: nothing is picked, nothing written", 0, ""},
		{"the budget allows both: as without one", 2,
			"a: 2 replicas, leaving [a1,a2], arriving [] (gives away a1,a2)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			A := rsOf("a", "nginx:1", 4, 4, true)
			v := view(ReplicaSetPods{RS: rsOf("b", "nginx:2", 0, 0, true)}, ReplicaSetPods{RS: A, Pods: pods(A, podState{}, "a1", "a2", "a3", "a4")})
			v.MaxUnavailable = 2
			var asked []string
			v.Disrupt = allowing(tc.allowed, &asked)
			if got := describe(PlanHandOver(v)); got != tc.want {
				t.Errorf("plan:\n%s\nwant:\n%s", got, tc.want)
			}
			if strings.Join(asked, ",") != "a1,a2" {
				t.Errorf("the budgets were asked for %v, want the two pods maxUnavailable picks, a1,a2", asked)
			}
		})
	}
}

func TestBudgeted(t *testing.T) {
	A := rsOf("a", "nginx:1", 3, 3, true)
	picked := pods(A, podState{}, "a1", "a2", "a3")
	var asked []string
	// a2 already runs nginx:2 (a label-only change for it): it restarts nothing.
	picked[1].Spec.Containers[0].Image = "nginx:2"
	got := Budgeted(picked, &rsOf("b", "nginx:2", 0, 0, true).Spec.Template, allowing(1, &asked))
	var names []string
	for _, p := range got {
		names = append(names, p.Name)
	}
	if strings.Join(names, ",") != "a1,a2" || strings.Join(asked, ",") != "a1,a3" {
		t.Errorf("Budgeted = %v (asked for %v), want a1,a2: a2 restarts nothing and is not asked for, a3 waits", names, asked)
	}
	if got := Budgeted(picked, &A.Spec.Template, nil); len(got) != 3 {
		t.Errorf("Budgeted without budgets kept %d pods, want all 3", len(got))
	}
}

func TestRestarted(t *testing.T) {
	pod := func(name, spec, reported string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "nginx", Image: spec}}}}
		if reported != "" {
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "nginx", Image: reported}}
		}
		return p
	}
	for _, tc := range []struct {
		name string
		pods []*corev1.Pod
		want string
	}{
		{"patched to nginx:2, the kubelet still reporting nginx:1: restarting, left out",
			[]*corev1.Pod{pod("web-0", "nginx:2", "nginx:1")}, ""},
		{"running nginx:2 (reported with the registry prefix): restarted",
			[]*corev1.Pod{pod("web-0", "nginx:2", "docker.io/library/nginx:2")}, "web-0"},
		{"no container status yet: nothing reports an old image, kept (Over judges its readiness)",
			[]*corev1.Pod{pod("web-0", "nginx:2", "")}, "web-0"},
		{"order kept, the restarting one dropped",
			[]*corev1.Pod{pod("web-2", "nginx:2", "nginx:2"), pod("web-1", "nginx:2", "nginx:1"), pod("web-0", "nginx:2", "nginx:2")}, "web-2,web-0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var names []string
			for _, p := range Restarted(tc.pods) {
				names = append(names, p.Name)
			}
			if got := strings.Join(names, ","); got != tc.want {
				t.Errorf("Restarted = %q, want %q", got, tc.want)
			}
		})
	}
}
