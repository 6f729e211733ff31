package rolloutview

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/kroll-dev/kroll/pkg/history"
	"github.com/kroll-dev/kroll/pkg/rollout"
)

// Tree is `kroll rollout watch`'s view: the workload, then each revision, newest first,
// with the ReplicaSet or ControllerRevision holding it and that revision's pods.
//
//	deployment/web  Progressing  revision 2  5/10 updated  8/10 available
//	NAME                       KIND        READY  STATUS            RESTARTS  AGE  IMAGE
//	revision 2 (latest)
//	└─ web-6f9c7d              ReplicaSet  4/5
//	   ├─ web-6f9c7d-abcde     Pod         1/1    Running           0         30s  nginx:1.26
//	   └─ web-6f9c7d-fghij     Pod         0/1    ImagePullBackOff  0         10s  nginx:bad
//
// p is ProgressOf(s), which the caller has at hand.
func Tree(s Snapshot, p Progress) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s/%s  %s  revision %s  %d/%d updated  %d/%d available\n", p.Kind, p.Name, p.Phase, shortRevision(p.Revision), p.Updated, p.Target, p.Available, p.Desired)
	b.WriteString(p.Staged.Lines())
	b.WriteString(p.Analysis.Lines())
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "NAME\tKIND\tREADY\tSTATUS\tRESTARTS\tAGE\tIMAGE")
	for _, g := range groups(s, p) {
		heading := "revision " + g.revision
		if g.latest {
			heading += " (latest)"
		}
		fmt.Fprintf(w, "%s\t\t\t\t\t\t\n", heading)
		fmt.Fprintf(w, "└─ %s\t%s\t%s\t\t\t%s\t\n", g.name, g.kind, g.ready, age(s, g.created))
		for i, pod := range g.pods {
			branch := "├─"
			if i == len(g.pods)-1 {
				branch = "└─"
			}
			fmt.Fprintf(w, "   %s %s\tPod\t%s\t%s\t%d\t%s\t%s\n", branch, pod.Name, containersReady(pod), PodStatus(pod), restarts(pod), age(s, pod.CreationTimestamp.Time), images(pod))
		}
	}
	w.Flush() // a strings.Builder does not fail
	text := b.String()
	b.Reset()
	// tabwriter pads every cell, the empty last ones too.
	for _, line := range strings.SplitAfter(text, "\n") {
		b.WriteString(strings.TrimRight(line, " \n"))
		if strings.HasSuffix(line, "\n") {
			b.WriteByte('\n')
		}
	}
	b.WriteString(p.Resizing.Lines())
	if p.Blocking != nil {
		fmt.Fprintf(&b, "waiting on %s\n", p.Blocking)
	}
	return b.String()
}

// group is one revision's holder and pods.
type group struct {
	revision, name, kind, ready string
	latest                      bool
	created                     time.Time
	pods                        []*corev1.Pod
}

// age is kubectl's AGE: how long before the snapshot t was.
func age(s Snapshot, t time.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(s.Now.Sub(t))
}

func groups(s Snapshot, p Progress) []group {
	latest := map[string]bool{}
	for _, r := range p.Revisions {
		latest[r.Name] = r.Latest
	}
	var out []group
	if _, ok := s.Object.(*appsv1.Deployment); ok {
		rss := append([]*appsv1.ReplicaSet(nil), s.ReplicaSets...)
		history.SortByRevision(rss)
		for i := len(rss) - 1; i >= 0; i-- {
			rs := rss[i]
			pods := ownedBy(s.Pods, rs.UID)
			if _, listed := latest[rs.Name]; !listed {
				continue
			}
			out = append(out, group{
				revision: strconv.FormatInt(history.Revision(rs), 10), name: rs.Name, kind: "ReplicaSet",
				ready: fmt.Sprintf("%d/%d", rs.Status.ReadyReplicas, rollout.Replicas(rs.Spec.Replicas)), latest: latest[rs.Name],
				created: rs.CreationTimestamp.Time, pods: sortedPods(pods),
			})
		}
		return out
	}
	for _, r := range p.Revisions {
		var rev *appsv1.ControllerRevision
		for _, cr := range s.Revisions {
			if cr.Name == r.Name {
				rev = cr
			}
		}
		if rev == nil {
			continue
		}
		out = append(out, group{
			revision: r.Revision, name: r.Name, kind: "ControllerRevision", ready: fmt.Sprintf("%d/%d", r.Ready, r.Pods),
			latest: r.Latest, created: rev.CreationTimestamp.Time, pods: sortedPods(podsOfRevision(s.Pods, rev)),
		})
	}
	return out
}

func sortedPods(pods []*corev1.Pod) []*corev1.Pod {
	out := append([]*corev1.Pod(nil), pods...)
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func containersReady(p *corev1.Pod) string {
	ready := 0
	for _, c := range p.Status.ContainerStatuses {
		if c.Ready {
			ready++
		}
	}
	return fmt.Sprintf("%d/%d", ready, len(p.Spec.Containers))
}

func restarts(p *corev1.Pod) int32 {
	var n int32
	for _, c := range p.Status.ContainerStatuses {
		n += c.RestartCount
	}
	return n
}

func images(p *corev1.Pod) string {
	out := make([]string, len(p.Spec.Containers))
	for i, c := range p.Spec.Containers {
		out[i] = c.Image
	}
	return strings.Join(out, ",")
}
