package rolloutplan

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kroll-dev/kroll/pkg/gates"
	"github.com/kroll-dev/kroll/pkg/inplace"
)

func setImageOf(image string) func(*appsv1.StatefulSet) {
	return func(s *appsv1.StatefulSet) { s.Spec.Template.Spec.Containers[0].Image = image }
}

func TestStatefulSet(t *testing.T) {
	both := func(edits ...func(*appsv1.StatefulSet)) func(*appsv1.StatefulSet) {
		return func(s *appsv1.StatefulSet) {
			for _, e := range edits {
				e(s)
			}
		}
	}
	scaleTo := func(n int32) func(*appsv1.StatefulSet) {
		return func(s *appsv1.StatefulSet) { s.Spec.Replicas = &n }
	}
	tests := []struct {
		name     string
		cur      *appsv1.StatefulSet
		pods     int
		notReady []int
		edit     func(*appsv1.StatefulSet)
		// gateOff: the controller runs with MaxUnavailableStatefulSet off.
		gateOff bool
		// ops: per batch (see opsOf); note: part of a note.
		ops, note string
	}{
		{name: "one at a time from the highest ordinal: web-2, web-1, web-0",
			cur: newStatefulSet("web", 3, 0, ""), pods: 3, edit: setImageOf("nginx:1.26"),
			ops: "delete web-2, create web-2 | delete web-1, create web-1 | delete web-0, create web-0"},
		{name: "partition 2 of 5: web-4, web-3, web-2 replaced, web-0 and web-1 stay",
			cur: newStatefulSet("web", 5, 2, ""), pods: 5, edit: setImageOf("nginx:1.26"),
			ops:  "delete web-4, create web-4 | delete web-3, create web-3 | delete web-2, create web-2",
			note: "web-0, web-1 stay at their revision: below partition 2"},
		{name: "steps 40%, pause, 100% over 5: web-4 and web-3, paused until promoted, then the rest",
			cur: newStatefulSet("web", 5, 0, ""), pods: 5, edit: both(setImageOf("nginx:1.26"), func(s *appsv1.StatefulSet) {
				s.Annotations = map[string]string{"kroll.dev/rollout-steps": "40%, pause, 100%"}
			}),
			ops:  "delete web-4, create web-4 | delete web-3, create web-3 | delete web-2, create web-2 | delete web-1, create web-1 | delete web-0, create web-0",
			note: "step 1/3: 40%: batches 1–2 (2 of 5 updated), then paused until promoted (kroll rollout promote)\nstep 3/3: 100%: batches 3–5 (5 of 5 updated)"},
		{name: "kroll.dev/partition on a StatefulSet: a note naming the field; the rollout is not held",
			cur: newStatefulSet("web", 2, 0, ""), pods: 2, edit: both(setImageOf("nginx:1.26"), func(s *appsv1.StatefulSet) {
				s.Annotations = map[string]string{"kroll.dev/partition": "1"}
			}),
			ops:  "delete web-1, create web-1 | delete web-0, create web-0",
			note: "with spec.updateStrategy.rollingUpdate.partition; set that field and remove the annotation"},
		{name: "maxUnavailable 2 of 5: two at a time, highest first",
			cur: newStatefulSet("web", 5, 0, "2"), pods: 5, edit: setImageOf("nginx:1.26"),
			ops: "delete web-4, create web-4, delete web-3, create web-3 | delete web-2, create web-2, delete web-1, create web-1 | delete web-0, create web-0"},
		{name: "maxUnavailable 2 of 5 with MaxUnavailableStatefulSet off: one at a time, as upstream's controller then does",
			cur: newStatefulSet("web", 5, 0, "2"), pods: 5, edit: setImageOf("nginx:1.26"), gateOff: true,
			ops: "delete web-4, create web-4 | delete web-3, create web-3 | delete web-2, create web-2 | delete web-1, create web-1 | delete web-0, create web-0"},
		{name: "maxUnavailable 2, Parallel, web-1 down: web-1 takes one of the 2 until it is reached, and then goes free with web-2",
			cur:  changedSet(newStatefulSet("web", 5, 0, "2"), func(s *appsv1.StatefulSet) { s.Spec.PodManagementPolicy = appsv1.ParallelPodManagement }),
			pods: 5, notReady: []int{1}, edit: setImageOf("nginx:1.26"),
			ops: "delete web-4, create web-4 | delete web-3, create web-3 | delete web-2, create web-2, delete web-1, create web-1 | delete web-0, create web-0"},
		{name: "OnDelete: no batches, a note",
			cur: changedSet(newStatefulSet("web", 3, 0, ""), func(s *appsv1.StatefulSet) {
				s.Spec.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType}
			}), pods: 3, edit: setImageOf("nginx:1.26"),
			ops: "", note: "OnDelete: pods change only when you delete them"},
		{name: "scale 3 → 5 OrderedReady: web-3, then web-4",
			cur: newStatefulSet("web", 3, 0, ""), pods: 3, edit: scaleTo(5),
			ops: "create web-3 | create web-4"},
		{name: "scale 3 → 5 Parallel: web-3 and web-4 at once",
			cur:  changedSet(newStatefulSet("web", 3, 0, ""), func(s *appsv1.StatefulSet) { s.Spec.PodManagementPolicy = appsv1.ParallelPodManagement }),
			pods: 3, edit: scaleTo(5),
			ops: "create web-3, create web-4"},
		{name: "scale 5 → 3: web-4, then web-3",
			cur: newStatefulSet("web", 5, 0, ""), pods: 5, edit: scaleTo(3),
			ops: "delete web-4 | delete web-3"},
		{name: "scale 2 → 3 and a new image: web-2 is created new, then web-1 and web-0 replaced",
			cur: newStatefulSet("web", 2, 0, ""), pods: 2, edit: both(scaleTo(3), setImageOf("nginx:1.26")),
			ops: "create web-2 | delete web-1, create web-1 | delete web-0, create web-0"},
		{name: "in place: images updated in place, highest first",
			cur: newStatefulSet("web", 3, 0, ""), pods: 3,
			edit: both(setImageOf("nginx:1.26"), func(s *appsv1.StatefulSet) {
				s.Annotations = map[string]string{inplace.StrategyAnnotation: string(inplace.IfPossible)}
			}),
			ops: "in-place web-2 | in-place web-1 | in-place web-0"},
		{name: "InPlaceOnly with an env change: blocked, no batches",
			cur: newStatefulSet("web", 3, 0, ""), pods: 3,
			edit: func(s *appsv1.StatefulSet) {
				s.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "X", Value: "1"}}
				s.Annotations = map[string]string{inplace.StrategyAnnotation: string(inplace.Only)}
			},
			ops: ""},
		{name: "OrderedReady waits for web-1, which is not available: the plan stops",
			cur: newStatefulSet("web", 3, 0, ""), pods: 3, notReady: []int{1}, edit: setImageOf("nginx:1.26"),
			ops: "", note: "web-1 is not available: OrderedReady waits for it"},
		{name: "nothing changes",
			cur: newStatefulSet("web", 3, 0, ""), pods: 3, edit: func(*appsv1.StatefulSet) {},
			ops: "", note: "no pod changes"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pods := setPods(tc.cur, tc.pods, tc.notReady...)
			next := changedSet(tc.cur, tc.edit)
			g := gates.Defaults()
			g.MaxUnavailableStatefulSet = !tc.gateOff
			plan, err := StatefulSetWithGates(tc.cur, pods, nil, next, g, now)
			if err != nil {
				t.Fatal(err)
			}
			if got := opsOf(plan); got != tc.ops {
				t.Errorf("batches\n%s\nwant\n%s\n%s", got, tc.ops, plan.Text())
			}
			if tc.note != "" && !strings.Contains(strings.Join(plan.Notes, "\n"), tc.note) {
				t.Errorf("notes %q, want one with %q", plan.Notes, tc.note)
			}
			to := plan.To
			for _, b := range plan.Batches {
				for _, op := range b.Ops {
					if op.Op != Delete && op.Revision != to && op.Revision != plan.From {
						t.Errorf("%s %s at %s, neither %s nor %s", op.Op, op.Pod, op.Revision, plan.From, to)
					}
				}
			}
			// Never more pods unavailable at once than maxUnavailable, beyond those down
			// from the start.
			limit := 1
			if ru := next.Spec.UpdateStrategy.RollingUpdate; ru != nil && ru.MaxUnavailable != nil && !tc.gateOff {
				limit = ru.MaxUnavailable.IntValue()
			}
			replay(t, plan, availability(pods), func(batch, total, available int) {
				if down := min(total, int(*tc.cur.Spec.Replicas), int(*next.Spec.Replicas)) - available; down > limit+len(tc.notReady) {
					t.Errorf("after batch %d: %d of %d pods unavailable, more than %d", batch, down, total, limit)
				}
			})
		})
	}
}

func changedSet(set *appsv1.StatefulSet, edit func(*appsv1.StatefulSet)) *appsv1.StatefulSet {
	return changed(set, edit)
}

func TestStatefulSetRevisions(t *testing.T) {
	cur := newStatefulSet("web", 3, 0, "")
	next := changedSet(cur, setImageOf("nginx:1.26"))
	plan, err := StatefulSet(cur, setPods(cur, 3), nil, next, now)
	if err != nil {
		t.Fatal(err)
	}
	if plan.From != cur.Status.CurrentRevision || plan.To != setRevision(next) || plan.From == plan.To {
		t.Errorf("revision %s → %s, want %s → %s (the controller's name for the new template)", plan.From, plan.To, cur.Status.CurrentRevision, setRevision(next))
	}
	if _, err := StatefulSet(cur, nil, nil, changedSet(cur, func(s *appsv1.StatefulSet) {
		s.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}
	}), now); err == nil || !strings.Contains(err.Error(), "statefulset/web: spec.selector cannot change") {
		t.Errorf("a changed selector: %v", err)
	}
	if _, err := StatefulSet(cur, nil, nil, changedSet(cur, func(s *appsv1.StatefulSet) { s.Spec.PodManagementPolicy = "" }), now); err == nil ||
		!strings.Contains(err.Error(), "statefulset/web: the changed object lacks spec.updateStrategy.type, spec.podManagementPolicy") {
		t.Errorf("not as stored (no podManagementPolicy): %v", err)
	}
}
