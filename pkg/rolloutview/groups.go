package rolloutview

// PodGroup is one revision's holder and its pods, as `kroll rollout watch`'s tree
// groups them, newest revision first: what the dashboard's workload page lists.
type PodGroup struct {
	// Revision is the revision number (a DaemonSet's: its ControllerRevision's);
	// Name and Kind the ReplicaSet or ControllerRevision holding it; Ready its
	// "ready/desired".
	Revision, Name, Kind, Ready string
	Latest                      bool
	Pods                        []PodRow
}

// PodRow is one pod of a group, with the tree's columns.
type PodRow struct {
	Name, Ready, Status, Age, Images string
	Restarts                         int32
}

// PodGroups are the tree's groups of s; p is ProgressOf(s).
func PodGroups(s Snapshot, p Progress) []PodGroup {
	var out []PodGroup
	for _, g := range groups(s, p) {
		pg := PodGroup{Revision: g.revision, Name: g.name, Kind: g.kind, Ready: g.ready, Latest: g.latest}
		for _, pod := range g.pods {
			pg.Pods = append(pg.Pods, PodRow{Name: pod.Name, Ready: containersReady(pod), Status: PodStatus(pod),
				Age: age(s, pod.CreationTimestamp.Time), Images: images(pod), Restarts: restarts(pod)})
		}
		out = append(out, pg)
	}
	return out
}
