package rolloutplan

import (
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kroll-dev/kroll/pkg/history"
	"github.com/kroll-dev/kroll/pkg/inplace"
	"github.com/kroll-dev/kroll/pkg/staging"
)

func dsImage(image string) func(*appsv1.DaemonSet) {
	return func(ds *appsv1.DaemonSet) { ds.Spec.Template.Spec.Containers[0].Image = image }
}

func TestDaemonSet(t *testing.T) {
	four := []string{"node-1", "node-2", "node-3", "node-4"}
	tests := []struct {
		name string
		cur  *appsv1.DaemonSet
		// nodes are the cluster's nodes, podsOn those with a pod, notReady those whose pod
		// is not ready.
		nodes, podsOn, notReady []string
		edit                    func(*appsv1.DaemonSet)
		ops, note               string
		// maxDown is the most nodes without an available pod at once; maxPods the most
		// pods at once.
		maxDown, maxPods int
	}{
		{name: "4 nodes, maxUnavailable 1: one node at a time",
			cur: newDaemonSet("logs", "1", "0"), nodes: four, podsOn: four, edit: dsImage("fluentd:v2"),
			ops:     "delete@node-1, create@node-1 | delete@node-2, create@node-2 | delete@node-3, create@node-3 | delete@node-4, create@node-4",
			maxDown: 1, maxPods: 4},
		{name: "4 nodes, maxUnavailable 50%: two nodes at a time",
			cur: newDaemonSet("logs", "50%", "0"), nodes: four, podsOn: four, edit: dsImage("fluentd:v2"),
			ops:     "delete@node-1, create@node-1, delete@node-2, create@node-2 | delete@node-3, create@node-3, delete@node-4, create@node-4",
			maxDown: 2, maxPods: 4},
		{name: "4 nodes, maxSurge 1: the new pod first, the old one goes in the next batch with the next node's new pod",
			cur: newDaemonSet("logs", "0", "1"), nodes: four, podsOn: four, edit: dsImage("fluentd:v2"),
			ops:     "create@node-1 | delete@node-1, create@node-2 | delete@node-2, create@node-3 | delete@node-3, create@node-4 | delete@node-4",
			maxDown: 0, maxPods: 5},
		{name: "maxUnavailable 1 with node-3's pod not ready: it is replaced at once, with node-1's",
			cur: newDaemonSet("logs", "1", "0"), nodes: four, podsOn: four, notReady: []string{"node-3"}, edit: dsImage("fluentd:v2"),
			ops:     "delete@node-3, create@node-3 | delete@node-1, create@node-1 | delete@node-2, create@node-2 | delete@node-4, create@node-4",
			maxDown: 1, maxPods: 4},
		{name: "a node without a pod gets one first, at the new revision",
			cur: newDaemonSet("logs", "1", "0"), nodes: four, podsOn: four[:3], edit: dsImage("fluentd:v2"),
			ops:     "create@node-4 | delete@node-1, create@node-1 | delete@node-2, create@node-2 | delete@node-3, create@node-3",
			maxDown: 1, maxPods: 4},
		{name: "a nodeSelector that no longer fits node-4: its pod goes first",
			cur: newDaemonSet("logs", "1", "0"), nodes: four, podsOn: four, edit: func(ds *appsv1.DaemonSet) {
				ds.Spec.Template.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
					RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
						MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "kubernetes.io/hostname", Operator: corev1.NodeSelectorOpNotIn, Values: []string{"node-4"}}},
					}}}}}
			},
			ops:  "delete@node-4 | delete@node-1, create@node-1 | delete@node-2, create@node-2 | delete@node-3, create@node-3",
			note: "no pod on node-4", maxDown: 1, maxPods: 4},
		{name: "in place, maxUnavailable 1, node-2 not ready: node-2 first, then one node at a time",
			cur: newDaemonSet("logs", "1", "0"), nodes: four, podsOn: four, notReady: []string{"node-2"},
			edit: func(ds *appsv1.DaemonSet) {
				dsImage("fluentd:v2")(ds)
				ds.Annotations = map[string]string{inplace.StrategyAnnotation: string(inplace.IfPossible)}
			},
			ops:     "in-place@node-2 | in-place@node-1 | in-place@node-3 | in-place@node-4",
			maxDown: 1, maxPods: 4},
		{name: "partition 3 of 4: node-4 updated, the first 3 by name keep their pods",
			cur: newDaemonSet("logs", "1", "0"), nodes: four, podsOn: four, edit: func(ds *appsv1.DaemonSet) {
				dsImage("fluentd:v2")(ds)
				ds.Annotations = map[string]string{"kroll.dev/partition": "75%"}
			},
			ops:  "delete@node-4, create@node-4",
			note: "partition 3: batch 1 (1 of 4 updated), then held at kroll.dev/partition: lower or remove it to go on", maxDown: 1, maxPods: 4},
		{name: "steps 50%, pause: 1m, 100%: the last two nodes, a timed pause, then the first two",
			cur: newDaemonSet("logs", "1", "0"), nodes: four, podsOn: four, edit: func(ds *appsv1.DaemonSet) {
				dsImage("fluentd:v2")(ds)
				ds.Annotations = map[string]string{"kroll.dev/rollout-steps": "50%, pause: 1m, 100%"}
			},
			ops:  "delete@node-3, create@node-3 | delete@node-4, create@node-4 | delete@node-1, create@node-1 | delete@node-2, create@node-2",
			note: "step 1/3: 50%: batches 1–2 (2 of 4 updated), then paused for 1m0s\nstep 3/3: 100%: batches 3–4 (4 of 4 updated)", maxDown: 1, maxPods: 4},
		{name: "in place with partition 2: node-3 and node-4 in place, node-1 and node-2 kept",
			cur: newDaemonSet("logs", "1", "0"), nodes: four, podsOn: four,
			edit: func(ds *appsv1.DaemonSet) {
				dsImage("fluentd:v2")(ds)
				ds.Annotations = map[string]string{inplace.StrategyAnnotation: string(inplace.IfPossible), "kroll.dev/partition": "2"}
			},
			ops: "in-place@node-3 | in-place@node-4", note: "the first 2 nodes by name keep", maxDown: 1, maxPods: 4},
		{name: "OnDelete: no batches, a note",
			cur: newDaemonSet("logs", "", ""), nodes: four, podsOn: four, edit: dsImage("fluentd:v2"),
			ops: "", note: "OnDelete: pods change only when you delete them", maxPods: 4},
		{name: "nothing changes",
			cur: newDaemonSet("logs", "1", "0"), nodes: four, podsOn: four, edit: func(*appsv1.DaemonSet) {},
			ops: "", note: "no pod changes", maxPods: 4},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pods := daemonPods(tc.cur, tc.podsOn, tc.notReady...)
			next := changed(tc.cur, tc.edit)
			plan, err := DaemonSet(tc.cur, newNodes(tc.nodes...), pods, nil, next, now)
			if err != nil {
				t.Fatal(err)
			}
			if got := opsOf(plan); got != tc.ops {
				t.Errorf("batches\n%s\nwant\n%s\n%s", got, tc.ops, plan.Text())
			}
			if tc.note != "" && !strings.Contains(strings.Join(plan.Notes, "\n"), tc.note) {
				t.Errorf("notes %q, want one with %q", plan.Notes, tc.note)
			}
			// Nodes without an available pod, of those that keep one, beyond those down
			// from the start.
			creates, deletes, _ := plan.Counts()
			keep := len(pods) + creates - deletes
			maxPods := len(pods)
			replay(t, plan, availability(pods), func(batch, total, available int) {
				maxPods = max(maxPods, total)
				if down := keep - len(tc.notReady) - available; down > tc.maxDown {
					t.Errorf("after batch %d: %d nodes without an available pod, more than %d", batch, down, tc.maxDown)
				}
			})
			if maxPods != tc.maxPods || plan.MaxPods != tc.maxPods {
				t.Errorf("at most %d pods (the plan says %d), want %d", maxPods, plan.MaxPods, tc.maxPods)
			}
		})
	}
}

// A DaemonSet not as the API server stores it (no updateStrategy.type) is refused:
// the plan reads the defaults as the controller will, from a server-side dry run.
func TestDaemonSetRefusesUndefaulted(t *testing.T) {
	cur := newDaemonSet("agent", "1", "0")
	next := changed(cur, func(ds *appsv1.DaemonSet) { ds.Spec.UpdateStrategy = appsv1.DaemonSetUpdateStrategy{} })
	_, err := DaemonSet(cur, newNodes("node-a"), nil, nil, next, now)
	if want := "daemonset/agent: the changed object lacks spec.updateStrategy.type"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("error %v, want one with %q", err, want)
	}
}

// A staged DaemonSet whose change goes back to a revision that ran before is not
// staged, as its controller tells it (progress.DaemonSet): every node updates, and
// the plan says why. The same change to a revision never seen holds its partition.
func TestDaemonSetRollbackIsNotStaged(t *testing.T) {
	nodes := []string{"node-1", "node-2", "node-3"}
	cur := newDaemonSet("logs", "1", "0")
	cur.Spec.Template.Spec.Containers[0].Image = "fluentd:v2"
	next := changed(cur, func(ds *appsv1.DaemonSet) {
		ds.Spec.Template.Spec.Containers[0].Image = "fluentd:v1"
		ds.Annotations = map[string]string{staging.PartitionAnnotation: "2"}
	})
	revision := func(ds *appsv1.DaemonSet, age time.Duration) *appsv1.ControllerRevision {
		hash := history.TemplateHash(&ds.Spec.Template, nil)
		return &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: history.RevisionName(ds.Name, hash),
			CreationTimestamp: metav1.NewTime(now.Add(-age)), Labels: map[string]string{appsv1.DefaultDaemonSetUniqueLabelKey: hash}}}
	}
	for _, tt := range []struct {
		name      string
		revisions []*appsv1.ControllerRevision
		updated   int
		note      string
	}{
		{"back to v1, which ran before v2: all 3 nodes update", []*appsv1.ControllerRevision{revision(next, 2*time.Hour), revision(cur, time.Hour)}, 3,
			"back to a revision that ran before: a rollback is not staged, every node updates"},
		{"v1 never ran: the partition keeps 2 nodes", []*appsv1.ControllerRevision{revision(cur, time.Hour)}, 1,
			"the first 2 nodes by name keep"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			plan, err := DaemonSet(cur, newNodes(nodes...), daemonPods(cur, nodes), tt.revisions, next, now)
			if err != nil {
				t.Fatal(err)
			}
			if _, _, n := plan.Counts(); n != 0 {
				t.Fatalf("%d in place, want none", n)
			}
			if creates, _, _ := plan.Counts(); creates != tt.updated {
				t.Errorf("%d nodes updated, want %d\n%s", creates, tt.updated, plan.Text())
			}
			if !strings.Contains(strings.Join(plan.Notes, "\n"), tt.note) {
				t.Errorf("notes %q, want one with %q", plan.Notes, tt.note)
			}
		})
	}
}
