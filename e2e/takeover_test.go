package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/kroll-dev/kroll/pkg/cluster"
	"github.com/kroll-dev/kroll/pkg/cluster/clustertest"
	"github.com/kroll-dev/kroll/pkg/timeline"
)

// takeoverWindow is how long the ledger records after a switch before the in-flight
// rollouts are waited for: long enough for every controller to have synced every
// workload at least once (and a steady one to show a write, if it makes one).
const takeoverWindow = 12 * time.Second

// Given a population of every kind in every state (complete, mid-rollout, paused, past
// its deadline, partitioned, OnDelete with stale pods, an orphan to adopt, a pruning
// due) created and rolled by upstream's controllers, when upstream's controllers stop
// and kroll's start, then kroll writes nothing to a steady workload (no ReplicaSet or
// ControllerRevision, no annotation, no pod, no status), creates nothing for an
// in-flight one that does not last, and every workload ends as it does in an
// all-upstream run of the same population; and the same the other way round, from
// kroll's controllers to upstream's. Before each switch to kroll, `kroll
// controller-manager --dry-run` reports only the in-flight members' next steps and
// sends no write; once a bare ReplicaSet is scaled while no controllers run, it
// reports the pod kroll would create and exits 1. Workloads opted into configuration
// rollout go over both ways too (configTakeover).
func TestTakeover(t *testing.T) {
	t.Parallel()
	c := clustertest.Start(t, clustertest.WithWorkloadControllers(cluster.WorkloadControllersNone), clustertest.WithNodes(3))
	// Controllers outlive the subtest that starts them: they are top's.
	top := t
	ctx := context.Background()
	started := time.Now()

	type direction struct {
		name     string
		ns       string
		pop      *population
		writes   []write
		final    map[string]string
		finished bool
		// known is a difference still open (nil: none).
		known func(write) bool
		// beforeStart runs once the gap's edits are made, before the others start.
		beforeStart func(t *testing.T)
	}
	// switchOver builds pop under the controllers running, stops them (before), runs
	// the gap edits, starts the others (after) and records the ledger until the
	// in-flight rollouts are done.
	switchOver := func(t *testing.T, d *direction, before func(), startAfter func() func()) (after func()) {
		if err := d.pop.setupAll(ctx); err != nil {
			t.Fatalf("population %s: %v", d.ns, err)
		}
		before()
		l := startLedger(t, c.Client, d.ns)
		if err := d.pop.gapAll(ctx); err != nil {
			t.Fatal(err)
		}
		if d.beforeStart != nil {
			seen := len(l.seen())
			d.beforeStart(t)
			// The gap's edits may still arrive; nothing else may.
			for _, w := range l.seen()[seen:] {
				if strings.Contains(w.manager, "kroll") {
					t.Errorf("a write while no controllers ran: %s", w)
				}
			}
		}
		after = startAfter()
		time.Sleep(takeoverWindow)
		if err := d.pop.waitDone(ctx, 90*time.Second); err != nil {
			t.Error(err)
		}
		time.Sleep(2 * time.Second) // the last status writes of the finished rollouts
		d.writes = l.stop()
		state, exists, err := finalState(ctx, c.Client, d.ns)
		if err != nil {
			t.Fatal(err)
		}
		d.final = state
		t.Logf("population %s:\n%s", d.ns, d.pop.table())
		t.Logf("ledger of %s after the switch: %s", d.name, summarize(d.writes))
		checkLedger(t, d.pop, d.writes, exists, d.known)
		d.finished = true
		return after
	}

	dryRun := newTakeoverDryRun(t, c)
	up2kroll := &direction{name: "upstream → kroll", ns: "takeover-u2k", pop: newPopulation(c.Client, "takeover-u2k")}
	// What kroll would do at the switch, asked first: the in-flight members' next
	// steps and nothing else.
	up2kroll.beforeStart = func(t *testing.T) {
		r, report := dryRun.run(t, "before the switch to kroll")
		checkDryRunInFlightOnly(t, up2kroll.pop, r, report)
	}
	// Still open: kroll keeps its rollout timeline as an annotation on the Deployment,
	// and upstream's controller copies every Deployment annotation but its own few to
	// the newest ReplicaSet; kroll leaves the timeline off its ReplicaSets (a write per
	// status change otherwise). Going back to upstream thus costs one ReplicaSet write
	// per Deployment, that annotation alone — no pod, revision or hash changes.
	timelineCopied := func(w write) bool {
		return w.kind == "ReplicaSet" && w.verb == "MODIFIED" && w.parts == "annotations["+timeline.Annotation+"]"
	}
	kroll2up := &direction{name: "kroll → upstream", ns: "takeover-k2u", pop: newPopulation(c.Client, "takeover-k2u"), known: timelineCopied}
	stopUpstream := startUpstreamControllers(t, c)
	var stopKroll func()
	t.Run("upstream to kroll", func(t *testing.T) {
		stopKroll = switchOver(t, up2kroll, stopUpstream, func() func() { return startKrollControllers(top, c) })
	})
	if stopKroll == nil {
		t.Fatal("kroll's controllers did not start")
	}
	t.Run("kroll to upstream", func(t *testing.T) {
		stopUpstream = switchOver(t, kroll2up, stopKroll, func() func() { return startUpstreamControllers(top, c) })
	})
	t.Run("the same end as an all-upstream run", func(t *testing.T) {
		control := newPopulation(c.Client, "takeover-control")
		if err := control.setupAll(ctx); err != nil {
			t.Fatalf("control population: %v", err)
		}
		if err := control.gapAll(ctx); err != nil {
			t.Fatal(err)
		}
		if err := control.waitDone(ctx, 90*time.Second); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Second)
		want, _, err := finalState(ctx, c.Client, control.ns)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range []*direction{up2kroll, kroll2up} {
			if !d.finished {
				t.Errorf("%s did not run to its end", d.name)
				continue
			}
			compareStates(t, d.name, d.final, want)
		}
	})
	t.Run("older serializations are the same revision", func(t *testing.T) {
		stopKroll = olderSerialization(t, c, stopUpstream, func() func() { return startKrollControllers(top, c) }, dryRun)
	})
	t.Run("a real difference is reported", func(t *testing.T) {
		stopKroll()
		realDifference(t, c, up2kroll.pop, dryRun)
	})
	t.Run("configuration rollouts, both ways: upstream rolls once, kroll back churns nothing", func(t *testing.T) {
		configTakeover(t, c, top)
	})
	t.Logf("takeover suite: %s", time.Since(started).Round(time.Second))
}
