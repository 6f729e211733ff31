package rolloutplan

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kroll-dev/kroll/pkg/history"
	"github.com/kroll-dev/kroll/pkg/inplace"
	"github.com/kroll-dev/kroll/pkg/rollout"
)

// deploymentCase is a Deployment with one ReplicaSet per entry of sizes, oldest first:
// revision i+1, its image counting up to cur's nginx:1.25 for the last (with two:
// nginx:1.24, nginx:1.25); notReady pods of the last one are not ready. edit changes it.
type deploymentCase struct {
	name     string
	cur      *appsv1.Deployment
	sizes    []int32
	notReady int
	edit     func(*appsv1.Deployment)
	// want: batch shape (see shape), the in-place verdict's start, revisions, a note's
	// part; the wanted bounds come from the next Deployment's fenceposts.
	shape, inPlace, from, to, note string
	// check, if set, checks more.
	check func(t *testing.T, plan Plan, pods []*corev1.Pod)
}

func (tc deploymentCase) objects() (*appsv1.Deployment, []*appsv1.ReplicaSet, []*corev1.Pod, *appsv1.Deployment) {
	var rss []*appsv1.ReplicaSet
	var pods []*corev1.Pod
	cur := changed(tc.cur, func(d *appsv1.Deployment) { d.Annotations[history.RevisionAnnotation] = strconv.Itoa(len(tc.sizes)) })
	for i, size := range tc.sizes {
		d := changed(cur, setImage(fmt.Sprintf("nginx:1.%d", 25-len(tc.sizes)+1+i)))
		rs := newReplicaSet(d, i+1, size)
		rss = append(rss, rs)
		notReady := 0
		if i == len(tc.sizes)-1 {
			notReady = tc.notReady
		}
		pods = append(pods, podsOf(rs, int(size), notReady)...)
	}
	return cur, rss, pods, changed(cur, tc.edit)
}

func TestDeployment(t *testing.T) {
	web := newDeployment("web", 10, "25%", "25%")
	tests := []deploymentCase{
		{name: "10 replicas at 25%/25% (surge 3, unavailable 2): create 3, delete 5, create 5, delete 5, create 2",
			cur: web, sizes: []int32{10}, edit: setImage("nginx:1.26"),
			shape: "+3 | -5 | +5 | -5 | +2", from: "1", to: "2"},
		{name: "maxSurge 1, maxUnavailable 0: one new pod, then one old pod goes, ten times",
			cur: newDeployment("web", 10, "1", "0"), sizes: []int32{10}, edit: setImage("nginx:1.26"),
			shape: strings.Repeat("+1 | -1 | ", 9) + "+1 | -1", from: "1", to: "2"},
		{name: "2 old pods not available are among the first deleted, at no cost to the budget",
			cur: web, sizes: []int32{10}, notReady: 2, edit: setImage("nginx:1.26"),
			shape: "+3 | -5 | +5 | -5 | +2", from: "1", to: "2",
			check: func(t *testing.T, plan Plan, pods []*corev1.Pod) {
				deleted := opsOf(Plan{Batches: plan.Batches[1:2]})
				for _, p := range pods[:2] {
					if !strings.Contains(deleted, p.Name) {
						t.Errorf("batch 2 deletes %s; want the pods not ready (%s, %s) among them", deleted, pods[0].Name, pods[1].Name)
					}
				}
			}},
		{name: "Recreate: every old pod goes, then the new ones come",
			cur: newDeployment("web", 3, "", ""), sizes: []int32{3}, edit: setImage("nginx:1.26"),
			shape: "-3 | +3", from: "1", to: "2"},
		{name: "replicas 3 → 5 alone: one batch of 2 in the same ReplicaSet",
			cur: newDeployment("web", 3, "25%", "25%"), sizes: []int32{3}, edit: func(d *appsv1.Deployment) { *d.Spec.Replicas = 5 },
			shape: "+2", from: "1", to: "1"},
		{name: "replicas 5 → 3 alone: one batch of 2 deletions",
			cur: newDeployment("web", 5, "25%", "25%"), sizes: []int32{5}, edit: func(d *appsv1.Deployment) { *d.Spec.Replicas = 3 },
			shape: "-2", from: "1", to: "1"},
		{name: "replicas 4 → 8 and a new image: the old ReplicaSet is scaled first, then rolled",
			cur: newDeployment("web", 4, "25%", "25%"), sizes: []int32{4}, edit: func(d *appsv1.Deployment) {
				*d.Spec.Replicas = 8
				setImage("nginx:1.26")(d)
			},
			shape: "+4 | +2 | -4 | +4 | -4 | +2", from: "1", to: "2"},
		{name: "rollback mid-rollout: revision 1's 8 pods count as new, revision 2's 3 broken pods go",
			cur: web, sizes: []int32{8, 3}, notReady: 3, edit: setImage("nginx:1.24"),
			shape: "+2 | -3", from: "2", to: "3"},
		{name: "in place: the 2 pods not available first, then 2 at a time",
			cur: web, sizes: []int32{10}, notReady: 2, edit: func(d *appsv1.Deployment) {
				setImage("nginx:1.26")(d)
				inPlaceMode(inplace.IfPossible)(d)
			},
			shape: "~2 | ~2 | ~2 | ~2 | ~2", inPlace: "applies (only images and pod metadata change)", from: "1", to: "2"},
		{name: "InPlaceIfPossible with an env change falls back to RollingUpdate",
			cur: web, sizes: []int32{10}, edit: func(d *appsv1.Deployment) {
				d.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "MODE", Value: "fast"}}
				inPlaceMode(inplace.IfPossible)(d)
			},
			shape: "+3 | -5 | +5 | -5 | +2", inPlace: "falls back to RollingUpdate: spec.containers[app].env", from: "1", to: "2"},
		{name: "InPlaceOnly with an env change is blocked: no pod is touched",
			cur: web, sizes: []int32{10}, edit: func(d *appsv1.Deployment) {
				d.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "MODE", Value: "fast"}}
				inPlaceMode(inplace.Only)(d)
			},
			shape: "", inPlace: "blocked (InPlaceOnly): spec.containers[app].env", from: "1", to: "2"},
		{name: "nothing changes: no batches",
			cur: web, sizes: []int32{10}, edit: func(*appsv1.Deployment) {},
			shape: "", from: "1", to: "1", note: "no pod changes: the template is the same"},
		{name: "paused: only scaling",
			cur: web, sizes: []int32{10}, edit: func(d *appsv1.Deployment) {
				d.Spec.Paused = true
				*d.Spec.Replicas = 12
				setImage("nginx:1.26")(d)
			},
			shape: "+2", from: "1", to: "2", note: "paused"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cur, rss, pods, next := tc.objects()
			plan, err := Deployment(cur, rss, pods, next, now)
			if err != nil {
				t.Fatal(err)
			}
			if got := shape(plan); got != tc.shape {
				t.Errorf("batches %q, want %q\n%s", got, tc.shape, plan.Text())
			}
			if !strings.HasPrefix(plan.InPlace, tc.inPlace) || (tc.inPlace == "") != (plan.InPlace == "") {
				t.Errorf("in-place verdict %q, want %q…", plan.InPlace, tc.inPlace)
			}
			if plan.From != tc.from || plan.To != tc.to {
				t.Errorf("revision %s → %s, want %s → %s", plan.From, plan.To, tc.from, tc.to)
			}
			if tc.note != "" && !strings.Contains(strings.Join(plan.Notes, "\n"), tc.note) {
				t.Errorf("notes %q, want one with %q", plan.Notes, tc.note)
			}
			checkDeploymentInvariants(t, plan, pods, next)
			if tc.check != nil {
				tc.check(t, plan, pods)
			}
		})
	}
}

// checkDeploymentInvariants replays plan and checks every state between batches: a
// RollingUpdate never runs more than replicas+maxSurge pods nor fewer than
// replicas−maxUnavailable available (beyond the pods not available from the start), an
// in-place update keeps replicas−maxUnavailable serving, and the plan also agrees with
// its own MaxPods and MinAvailable. A finished plan leaves replicas pods, all at the new
// revision.
func checkDeploymentInvariants(t *testing.T, plan Plan, pods []*corev1.Pod, next *appsv1.Deployment) {
	t.Helper()
	initial := availability(pods)
	desired := int(*next.Spec.Replicas)
	f := rollout.DeploymentFenceposts(next)
	startUnavailable := 0
	for _, a := range initial {
		if !a {
			startUnavailable++
		}
	}
	maxTotal, minAvailable := len(initial), len(initial)-startUnavailable
	// Scaling up, the pods added are not available at first: the floor is that of the
	// smaller size.
	floor := min(desired, len(initial)) - int(max(1, f.MaxUnavailable)) - startUnavailable
	end := replay(t, plan, initial, func(batch, total, available int) {
		maxTotal, minAvailable = max(maxTotal, total), min(minAvailable, available)
		if next.Spec.Strategy.Type != appsv1.RollingUpdateDeploymentStrategyType || next.Spec.Paused {
			return
		}
		if total > desired+int(f.MaxSurge) && !strings.HasPrefix(plan.Strategy, "InPlace") {
			t.Errorf("after batch %d: %d pods, more than %d+%d", batch, total, desired, f.MaxSurge)
		}
		if available < floor {
			t.Errorf("after batch %d: %d available, fewer than %d", batch, available, floor)
		}
	})
	if len(plan.Batches) > 0 && (plan.MaxPods != maxTotal || plan.MinAvailable != minAvailable) {
		t.Errorf("plan says at most %d pods, at least %d available; the replay saw %d and %d", plan.MaxPods, plan.MinAvailable, maxTotal, minAvailable)
	}
	if len(plan.Batches) == 0 || strings.Contains(plan.InPlace, "blocked") || next.Spec.Paused {
		return
	}
	if len(end) != desired {
		t.Errorf("%d pods at the end, want %d", len(end), desired)
	}
	hash := history.TemplateHash(&next.Spec.Template, nil)
	labels := map[string]string{}
	for _, p := range pods {
		labels[p.Name] = p.Labels[appsv1.DefaultDeploymentUniqueLabelKey]
	}
	for name, rev := range end {
		if rev != next.Name+"-"+hash && !(rev == "" && labels[name] == hash) {
			t.Errorf("%s ends at %q, not at the new template's ReplicaSet %s-%s", name, rev, next.Name, hash)
		}
	}
}

func TestDeploymentEndsAtTheNewReplicaSet(t *testing.T) {
	cur := newDeployment("web", 10, "25%", "25%")
	rs := newReplicaSet(cur, 1, 10)
	next := changed(cur, setImage("nginx:1.26"))
	plan, err := Deployment(cur, []*appsv1.ReplicaSet{rs}, podsOf(rs, 10, 0), next, now)
	if err != nil {
		t.Fatal(err)
	}
	end := replay(t, plan, availability(podsOf(rs, 10, 0)), func(int, int, int) {})
	newRS := newReplicaSet(next, 2, 0).Name
	for name, rev := range end {
		if rev != newRS {
			t.Errorf("%s ends at %q, want %s", name, rev, newRS)
		}
	}
}

func TestDeploymentRefuses(t *testing.T) {
	cur := newDeployment("web", 3, "25%", "25%")
	tests := []struct {
		name string
		next *appsv1.Deployment
		want string
	}{
		{"another Deployment", newDeployment("api", 3, "25%", "25%"), "deployment/web: the changed object is deployment/api"},
		{"a changed selector", changed(cur, func(d *appsv1.Deployment) {
			d.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web2"}}
		}), "deployment/web: spec.selector cannot change"},
		{"another kind", changed(cur, func(d *appsv1.Deployment) { d.Kind = "StatefulSet" }), "is a StatefulSet, not a Deployment"},
		{"an unknown in-place mode", changed(cur, func(d *appsv1.Deployment) { d.Annotations[inplace.StrategyAnnotation] = "Sometimes" }), "deployment/web: kroll.dev/update-strategy"},
		{"not as stored: no strategy (the API server defaults it)", changed(cur, func(d *appsv1.Deployment) { d.Spec.Strategy = appsv1.DeploymentStrategy{} }),
			"deployment/web: the changed object lacks spec.strategy.type: plan it as the API server stores it"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Deployment(cur, nil, nil, tt.next, now)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want one with %q", err, tt.want)
			}
			if err != nil && strings.Contains(err.Error(), "\n") {
				t.Errorf("error is more than one line: %q", err)
			}
		})
	}
}

func TestDeploymentWithoutReplicaSetsCreatesEveryReplicaAtOnce(t *testing.T) {
	cur := newDeployment("web", 4, "25%", "25%")
	plan, err := Deployment(cur, nil, nil, changed(cur, setImage("nginx:1.26")), now)
	if err != nil {
		t.Fatal(err)
	}
	if got := shape(plan); got != "+4" || plan.From != "1" || plan.To != "2" {
		t.Errorf("batches %q, revision %s → %s; want +4, 1 → 2", got, plan.From, plan.To)
	}
}
