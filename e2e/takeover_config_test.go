package e2e

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kroll-dev/kroll/pkg/cluster"
	"github.com/kroll-dev/kroll/pkg/cluster/clustertest"
	"github.com/kroll-dev/kroll/pkg/configrollout"
)

// configRefs is what a pod's volume and environment variable name of the ConfigMap
// they read: "app-config" (the user's) or a snapshot's name; "vol≠env" when they differ.
func configRefs(p *corev1.Pod) string {
	vol, env := "", ""
	for _, v := range p.Spec.Volumes {
		if v.ConfigMap != nil {
			vol = v.ConfigMap.Name
		}
	}
	for _, e := range p.Spec.Containers[0].Env {
		if e.ValueFrom != nil && e.ValueFrom.ConfigMapKeyRef != nil {
			env = e.ValueFrom.ConfigMapKeyRef.Name
		}
	}
	if vol != env {
		return vol + "≠" + env
	}
	return vol
}

// configPods is web's pods as "name uid ready refs prints", sorted: what a takeover
// must leave as it is.
func (s *scene) configPods(t *testing.T) []string {
	var out []string
	for _, p := range s.pods(t, "app=web") {
		out = append(out, fmt.Sprintf("%s %s ready=%v deleting=%v refs=%s prints=%s", p.Name, p.UID, isPodReady(p), p.DeletionTimestamp != nil, configRefs(p), s.greetingOf(t, p)))
	}
	sort.Strings(out)
	return out
}

// onSnapshots tells whether n pods of web are Ready, every one reading a snapshot of
// app-config (not app-config itself) and printing value.
func (s *scene) onSnapshots(t *testing.T, n int, value string) (bool, string) {
	pods := s.configPods(t)
	ok := len(pods) == n
	for _, p := range pods {
		ok = ok && strings.Contains(p, " ready=true deleting=false refs=app-config-") && !strings.Contains(p, "≠") && strings.HasSuffix(p, " prints="+value)
	}
	return ok, strings.Join(pods, "\n")
}

// churn are the writes of a ledger that replace pods or revisions: a pod, ReplicaSet
// or ControllerRevision created or deleted, a pod marked for deletion, a ReplicaSet
// resized or its template changed.
func churn(writes []write) []string {
	var out []string
	for _, w := range writes {
		switch {
		case w.kind != "Pod" && w.kind != "ReplicaSet" && w.kind != "ControllerRevision":
		case w.verb != "MODIFIED", strings.Contains(w.parts, "deletion"), w.kind == "ReplicaSet" && strings.Contains(w.parts, "spec"):
			out = append(out, w.String())
		}
	}
	return out
}

// configTakeover runs configuration rollouts across takeovers both ways, on TestTakeover's
// cluster while no controllers run; kroll's run on after it, until top ends.
//
// Given kroll's controllers and a Deployment (4 pods) and a StatefulSet (3 pods),
// opted into configuration rollout, reading app-config through a volume and an
// environment variable, whose edit (v1 → v2) kroll has rolled, so that every pod
// reads its revision's snapshot; when kroll's controllers stop and upstream's start,
// then upstream's controllers do not know kroll.dev/config-hash: each rolls once, to a
// revision of the plain template whose pods read app-config itself (print v2, the
// same data); kroll's revision stays, scaled to 0, with its snapshot. Under upstream
// an edit of app-config (v3) rolls nothing. `kubectl rollout undo` of the StatefulSet
// under upstream goes back to kroll's revision (kroll.dev/config-hash in its
// template), and upstream's pods of it read app-config itself (v3), not its snapshot.
// When upstream's controllers stop and kroll's start, nothing churns: no pod, ReplicaSet
// or ControllerRevision is created or deleted, every pod stays Ready as it was — the
// Deployment's newest ReplicaSet, upstream's, is adopted as the live configuration's,
// the undone StatefulSet is pinned to the revision it went back to. A further edit
// (v4) rolls out through each workload's strategy under the invariant watchers, and
// every pod reads a snapshot again.
func configTakeover(t *testing.T, c *cluster.Cluster, top *testing.T) {
	started := time.Now()
	stopKroll := startKrollControllers(top, c)
	d := newScene(t, c, "takeover-config-deploy", cluster.WorkloadControllersKroll)
	st := newScene(t, c, "takeover-config-sts", cluster.WorkloadControllersKroll)
	scenes := []*scene{d, st}
	edit := func(value string) {
		for _, s := range scenes {
			s.kubectl(t, "patch", "configmap", "app-config", "--type=merge", "-p", fmt.Sprintf(`{"data":{"greeting":%q}}`, value))
		}
	}
	for _, s := range scenes {
		s.kubectl(t, "create", "configmap", "app-config", "--from-literal=greeting=v1")
	}
	d.apply(t, configDeployment(4, "true"))
	st.apply(t, configStatefulSet(3, "  podManagementPolicy: Parallel\n  updateStrategy:\n    rollingUpdate: {maxUnavailable: 2}\n"))
	d.kubectl(t, "rollout", "status", "deployment/web", "--timeout=2m")
	st.kubectl(t, "rollout", "status", "statefulset/web", "--timeout=2m")
	edit("v2")
	d.kubectl(t, "rollout", "status", "deployment/web", "--timeout=2m")
	st.kubectl(t, "rollout", "status", "statefulset/web", "--timeout=2m")
	eventually(t, time.Minute, "every Deployment pod reads its snapshot, v2", func(context.Context) (bool, string) { return d.onSnapshots(t, 4, "v2") })
	eventually(t, time.Minute, "every StatefulSet pod reads its snapshot, v2", func(context.Context) (bool, string) { return st.onSnapshots(t, 3, "v2") })
	krollRS := d.replicaSets(t)
	krollRev := sts(t, st).Status.UpdateRevision
	t.Logf("under kroll (%s):\n%s\n%s", time.Since(started).Round(time.Second), strings.Join(d.configPods(t), "\n"), strings.Join(st.configPods(t), "\n"))

	// kroll → upstream.
	stopKroll()
	ledgers := []*ledger{startLedger(t, c.Client, d.ns), startLedger(t, c.Client, st.ns)}
	// Upstream's bounds are only reported (see scene.verify).
	upstreamD, upstreamS := clustertest.WatchDeployment(t, c.Client, d.ns, "web"), clustertest.WatchStatefulSet(t, c.Client, st.ns, "web")
	stopUpstream := startUpstreamControllers(top, c)
	d.kubectl(t, "rollout", "status", "deployment/web", "--timeout=2m")
	st.kubectl(t, "rollout", "status", "statefulset/web", "--timeout=2m")
	eventually(t, time.Minute, "upstream's Deployment pods", func(context.Context) (bool, string) {
		return d.onLive(t, 4, "v2")
	})
	eventually(t, time.Minute, "upstream's StatefulSet pods", func(context.Context) (bool, string) {
		return st.onLive(t, 3, "v2")
	})
	upstreamD.Report(t)
	upstreamS.Report(t)
	rss := d.replicaSets(t)
	upstreamRS := rss[len(rss)-1]
	if _, hashed := upstreamRS.Spec.Template.Annotations[configrollout.HashAnnotation]; hashed || upstreamRS.Name == krollRS[len(krollRS)-1].Name {
		t.Errorf("upstream's newest ReplicaSet %s: template annotations %v, kroll's was %s", upstreamRS.Name, upstreamRS.Spec.Template.Annotations, krollRS[len(krollRS)-1].Name)
	}
	for _, rs := range rss[:len(rss)-1] {
		if *rs.Spec.Replicas != 0 {
			t.Errorf("ReplicaSet %s still has %d replicas under upstream", rs.Name, *rs.Spec.Replicas)
		}
	}
	if rev := sts(t, st).Status.UpdateRevision; rev == krollRev {
		t.Errorf("upstream's StatefulSet controller kept kroll's revision %s", rev)
	}
	// kroll's revisions keep their snapshots (the revision limit allows one old one).
	if n := len(d.snapshots(t)); n != 1 {
		t.Errorf("%d snapshots of the Deployment's under upstream, want kroll's last one", n)
	}
	// The closing note: what upstream's controllers did with pods on snapshots.
	for i, s := range scenes {
		t.Logf("%s: upstream took over (%s): %s\n%s", s.ns, time.Since(started).Round(time.Second), summarize(ledgers[i].seen()), strings.Join(s.configPods(t), "\n"))
	}

	// An edit under upstream rolls nothing; its pods printed their data at start.
	before := []int{len(ledgers[0].seen()), len(ledgers[1].seen())}
	edit("v3")
	holdsFor(t, 4*time.Second, 250*time.Millisecond, "nothing rolls on an edit under upstream", func(context.Context) (bool, string) {
		w := append(churn(ledgers[0].seen()[before[0]:]), churn(ledgers[1].seen()[before[1]:])...)
		return len(w) == 0, strings.Join(w, "\n")
	})
	// Undo of the StatefulSet under upstream: kroll's revision again, its pods on app-config itself.
	st.kubectl(t, "rollout", "undo", "statefulset/web")
	st.kubectl(t, "rollout", "status", "statefulset/web", "--timeout=2m")
	if rev := sts(t, st).Status.UpdateRevision; rev != krollRev {
		t.Errorf("undo under upstream: update revision %s, want kroll's %s", rev, krollRev)
	}
	eventually(t, time.Minute, "upstream's pods of kroll's revision read app-config itself, v3", func(context.Context) (bool, string) {
		return st.onLive(t, 3, "v3")
	})

	// upstream → kroll: nothing churns.
	stopUpstream()
	time.Sleep(time.Second) // the last writes of upstream's controllers
	podsBefore := [][]string{d.configPods(t), st.configPods(t)}
	before = []int{len(ledgers[0].seen()), len(ledgers[1].seen())}
	wd, ws := clustertest.WatchDeployment(t, c.Client, d.ns, "web"), clustertest.WatchStatefulSet(t, c.Client, st.ns, "web")
	startKrollControllers(top, c)
	time.Sleep(8 * time.Second) // every workload synced at least once
	for i, s := range scenes {
		if w := churn(ledgers[i].seen()[before[i]:]); len(w) > 0 {
			t.Errorf("%s: kroll taking over churned:\n%s", s.ns, strings.Join(w, "\n"))
		}
		if now := s.configPods(t); strings.Join(now, "\n") != strings.Join(podsBefore[i], "\n") {
			t.Errorf("%s: pods changed when kroll took over:\nbefore\n%s\nafter\n%s", s.ns, strings.Join(podsBefore[i], "\n"), strings.Join(now, "\n"))
		}
		t.Logf("%s: kroll took over (%s): %s", s.ns, time.Since(started).Round(time.Second), summarize(ledgers[i].seen()[before[i]:]))
	}

	// A further edit rolls out under kroll, through each strategy, onto snapshots.
	edit("v4")
	d.kubectl(t, "rollout", "status", "deployment/web", "--timeout=2m")
	st.kubectl(t, "rollout", "status", "statefulset/web", "--timeout=2m")
	eventually(t, time.Minute, "every Deployment pod reads its snapshot, v4", func(context.Context) (bool, string) { return d.onSnapshots(t, 4, "v4") })
	eventually(t, time.Minute, "every StatefulSet pod reads its snapshot, v4", func(context.Context) (bool, string) { return st.onSnapshots(t, 3, "v4") })
	wd.Verify(t, 4)
	ws.Verify(t, 3)
	for _, l := range ledgers {
		l.stop()
	}
	t.Logf("configuration takeover scene: %s", time.Since(started).Round(time.Second))
}

// onLive tells whether n pods of web are Ready, every one reading app-config itself and
// printing value.
func (s *scene) onLive(t *testing.T, n int, value string) (bool, string) {
	pods := s.configPods(t)
	ok := len(pods) == n
	for _, p := range pods {
		ok = ok && strings.Contains(p, " ready=true deleting=false refs=app-config prints=") && strings.HasSuffix(p, " prints="+value)
	}
	return ok, strings.Join(pods, "\n")
}

// sts is the scene's StatefulSet web.
func sts(t *testing.T, s *scene) *appsv1.StatefulSet {
	return must(s.c.Client.AppsV1().StatefulSets(s.ns).Get(context.Background(), "web", metav1.GetOptions{}))
}
