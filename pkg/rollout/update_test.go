package rollout

import (
	"fmt"
	"testing"
)

func TestStatefulSetUpdate(t *testing.T) {
	// slots builds ordinals from letters: s stale, S stale and unavailable, u updated but
	// unavailable, . updated and available.
	slots := func(s string) []SetSlot {
		var out []SetSlot
		for _, c := range s {
			out = append(out, SetSlot{Stale: c == 's' || c == 'S', Unavailable: c == 'S' || c == 'u'})
		}
		return out
	}
	two, one := 2, 1
	for _, tt := range []struct {
		name      string
		slots     string
		partition int
		max       *int
		want      string
	}{
		{"one at a time: the highest stale pod", "sssss", 0, nil, "[4]"},
		{"one at a time: an updated pod above that is not available yet is waited for", "sssu.", 0, nil, "[]"},
		{"one at a time: updated pods above, available: the next stale one down", "ss...", 0, nil, "[1]"},
		{"partition 3 of 5: ordinals below it are never touched", "sss..", 3, nil, "[]"},
		{"partition 1: the highest stale pod at or above it", "ssss.", 1, nil, "[3]"},
		{"maxUnavailable 2, all available: the two highest", "sssss", 1, &two, "[4 3]"},
		{"maxUnavailable 2, one updated pod not available yet: one more goes", "sssu.", 0, &two, "[2]"},
		{"maxUnavailable 1, spent: a stale pod that is not available still goes, at no cost", "ssssS", 0, &one, "[4]"},
		{"maxUnavailable 1, budget spent by an unavailable pod below the partition", "us.s.", 2, &one, "[]"},
		{"the walk stops at the first available stale pod the budget cannot pay for: one below waits, available or not", "Ssss.", 0, &one, "[]"},
	} {
		if got := fmt.Sprint(StatefulSetUpdate(slots(tt.slots), tt.partition, tt.max)); got != tt.want {
			t.Errorf("%s: %s, want %s", tt.name, got, tt.want)
		}
	}
}

func TestDaemonSetUpdate(t *testing.T) {
	// nodes builds nodes from pairs: old pod (o available, O not, - none), updated pod
	// (u available, U not, - none); x: two pods of a kind; n: the node no longer fits;
	// h: a partition holds the node.
	nodes := func(specs ...string) []DaemonNode {
		var out []DaemonNode
		for i, s := range specs {
			n := DaemonNode{Name: fmt.Sprintf("n%d", i), ShouldRun: true}
			for _, c := range s {
				switch c {
				case 'o', 'O':
					n.HasOld, n.OldAvailable = true, c == 'o'
				case 'u', 'U':
					n.HasUpdated, n.UpdatedAvailable = true, c == 'u'
				case 'x':
					n.Extra = true
				case 'n':
					n.ShouldRun = false
				case 'h':
					n.Held = true
				}
			}
			out = append(out, n)
		}
		return out
	}
	for _, tt := range []struct {
		name                     string
		nodes                    []DaemonNode
		maxUnavailable, maxSurge int
		want                     string
	}{
		{"maxUnavailable 1 of 3: one old pod goes", nodes("o-", "o-", "o-"), 1, 0, "delete [n0] surge []"},
		{"an updated pod not yet available holds the room", nodes("-U", "o-", "o-"), 1, 0, "delete [] surge []"},
		{"an old pod not available goes at once, at no cost", nodes("O-", "o-", "o-"), 1, 0, "delete [n0] surge []"},
		{"maxUnavailable 2: two go, node order", nodes("-u", "o-", "o-", "o-"), 2, 0, "delete [n1 n2] surge []"},
		{"a node with two pods counts as unavailable", nodes("ox", "o-", "o-"), 1, 0, "delete [] surge []"},
		{"surge 1: an updated pod beside the old one, one node at a time", nodes("o-", "o-"), 0, 1, "delete [] surge [n0]"},
		{"surge 1: the old pod goes once the updated one is available; the next node surges", nodes("ou", "o-"), 0, 1, "delete [n0] surge [n1]"},
		{"surge 1: an updated pod not yet available holds the surge", nodes("oU", "o-"), 0, 1, "delete [] surge []"},
		{"surge: a node whose old pod is not available gets its updated pod at once", nodes("oU", "O-"), 0, 1, "delete [] surge [n1]"},
		{"surge: no updated pod where the DaemonSet no longer places pods; an old one there that serves nothing goes", nodes("On", "on"), 0, 1, "delete [n0] surge []"},
		{"partition 2 of 4: the held nodes keep their old pods, the others update", nodes("o-h", "o-h", "o-", "o-"), 2, 0, "delete [n2 n3] surge []"},
		{"partition: a held node's unavailable old pod stays and uses the room", nodes("O-h", "o-", "o-"), 1, 0, "delete [] surge []"},
		{"partition: a held node that is updated already keeps its updated pod", nodes("-uh", "o-h", "o-"), 1, 0, "delete [n2] surge []"},
		{"partition with surge: no updated pod beside a held node's old one", nodes("o-h", "O-h", "o-"), 0, 2, "delete [] surge [n2]"},
	} {
		step := DaemonSetUpdate(tt.nodes, tt.maxUnavailable, tt.maxSurge)
		if got := fmt.Sprintf("delete %v surge %v", step.DeleteOld, step.Surge); got != tt.want {
			t.Errorf("%s: %s, want %s", tt.name, got, tt.want)
		}
	}
}

func TestDaemonSetHeld(t *testing.T) {
	nodes := []string{"a", "b", "c", "d"}
	for _, tt := range []struct {
		name      string
		partition int32
		want      string
	}{
		{"partition 0 holds none", 0, "map[]"},
		{"partition 3 of 4 holds the first three by name", 3, "map[a:true b:true c:true]"},
		{"a partition above the nodes holds them all", 9, "map[a:true b:true c:true d:true]"},
	} {
		if got := fmt.Sprint(DaemonSetHeld(nodes, tt.partition)); got != tt.want {
			t.Errorf("%s: %s, want %s", tt.name, got, tt.want)
		}
	}
}
