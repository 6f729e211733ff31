package rollout

// DaemonNode is one node of a DaemonSet's rolling update, as the update reads it: the
// oldest pod of the old revisions and the oldest updated pod on it, if any.
type DaemonNode struct {
	Name string
	// Extra: the node has two pods of one kind; the placement step removes one first,
	// and meanwhile the node counts as without an available pod.
	Extra bool
	// HasOld and HasUpdated: the node runs an old pod, an updated one; OldAvailable and
	// UpdatedAvailable: that pod is available.
	HasOld, OldAvailable, HasUpdated, UpdatedAvailable bool
	// ShouldRun: the DaemonSet still places pods on the node (its template fits it).
	ShouldRun bool
	// Held: a partition keeps the node on its old pod (see DaemonSetHeld): the update
	// neither deletes it nor starts an updated pod beside it.
	Held bool
}

// DaemonSetHeld tells which nodes a DaemonSet's partition keeps on their old pods:
// the first partition of the eligible nodes (those it should run on) sorted by name,
// as a StatefulSet keeps the ordinals below its partition. With 10 nodes node-0..9 and
// partition 7, node-0..6 keep their old pods and node-7..9 update. eligible must be
// sorted by name.
func DaemonSetHeld(eligible []string, partition int32) map[string]bool {
	held := map[string]bool{}
	for _, n := range eligible[:min(int(max(partition, 0)), len(eligible))] {
		held[n] = true
	}
	return held
}

// DaemonSetStep is one step of a DaemonSet's rolling update: the nodes whose old pod
// is deleted (the placement step then creates its replacement), and the nodes that get
// an updated pod beside the old one (surge). Both are in the nodes' order; either may
// be empty.
type DaemonSetStep struct {
	DeleteOld, Surge []string
}

// DaemonSetUpdate is the next step of a DaemonSet's rolling update over nodes (those
// with daemon pods, sorted by name), with maxUnavailable and maxSurge resolved
// (DaemonSetFenceposts).
//
// Without surge, old pods are deleted — never more than maxUnavailable nodes without an
// available pod: a node with two pods of a kind, with both kinds, or with an updated
// pod not yet available counts as unavailable; an old pod that is not available is
// replaced at once (it serves nothing); available old pods go while room is left, in
// node order. With 3 nodes and maxUnavailable 1: one old pod goes per step, the next
// once its replacement is available.
//
// With surge, an updated pod is started next to the old one first — on at most
// maxSurge nodes at a time (nodes whose old pod is not available do not wait) — and
// the old pod is deleted once the updated one is available. No updated pod goes where
// the DaemonSet no longer places pods (a taint added since); an old pod there that
// serves nothing goes.
//
// A held node (a partition) with an old pod and no updated one is left as it is: not
// a candidate, and without surge it counts as unavailable when its old pod is not
// available (it stays so until the partition lets it go). A held node that has an
// updated pod already keeps it: a partition never takes updated pods back.
func DaemonSetUpdate(nodes []DaemonNode, maxUnavailable, maxSurge int) DaemonSetStep {
	var step DaemonSetStep
	if maxSurge == 0 {
		unavailable := 0
		var candidates []string
		for _, n := range nodes {
			switch {
			case n.Held && n.HasOld && !n.HasUpdated:
				if !n.OldAvailable {
					unavailable++
				}
			case n.Extra, !n.HasOld && !n.HasUpdated, n.HasOld && n.HasUpdated:
				unavailable++
			case n.HasUpdated:
				if !n.UpdatedAvailable {
					unavailable++
				}
			case !n.OldAvailable:
				step.DeleteOld = append(step.DeleteOld, n.Name)
				unavailable++
			case unavailable < maxUnavailable:
				candidates = append(candidates, n.Name)
			}
		}
		room := min(max(maxUnavailable-unavailable, 0), len(candidates))
		step.DeleteOld = append(step.DeleteOld, candidates[:room]...)
		return step
	}
	surging := 0
	var candidates []string
	for _, n := range nodes {
		switch {
		case n.Extra:
			surging++
		case !n.HasUpdated && !n.HasOld, n.Held && !n.HasUpdated:
		case !n.HasUpdated && !n.ShouldRun:
			if !n.OldAvailable {
				step.DeleteOld = append(step.DeleteOld, n.Name)
			}
		case !n.HasUpdated && !n.OldAvailable:
			step.Surge = append(step.Surge, n.Name)
		case !n.HasUpdated:
			if surging < maxSurge {
				candidates = append(candidates, n.Name)
			}
		case !n.UpdatedAvailable:
			surging++
		case n.HasOld:
			step.DeleteOld = append(step.DeleteOld, n.Name)
		}
	}
	room := min(max(maxSurge-surging, 0), len(candidates))
	step.Surge = append(step.Surge, candidates[:room]...)
	return step
}
