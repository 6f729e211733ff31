package e2e

import (
	"context"
	"strings"
	"testing"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kroll-dev/kroll/pkg/cluster"
)

// takeoverDryRun runs `kroll controller-manager --dry-run` against the takeover
// suite's cluster, as a separate process (its work queues' metrics, by which it knows
// the controllers are idle, are its own), through a counting proxy with a service
// account allowed everything: nothing but the dry run itself keeps it from writing,
// and the proxy sees every request it sends.
type takeoverDryRun struct {
	bin, kubeconfig string
	proxy           *countingProxy
}

// everythingRules are cluster-admin's rules.
var everythingRules = []rbacv1.PolicyRule{
	{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"*"}},
	{NonResourceURLs: []string{"*"}, Verbs: []string{"*"}},
}

func newTakeoverDryRun(t *testing.T, c *cluster.Cluster) *takeoverDryRun {
	bin := krollBinary(t)
	proxy := startCountingProxy(t, c)
	token := readOnlyToken(t, c, "kroll-takeover-dryrun", everythingRules)
	return &takeoverDryRun{bin: bin, proxy: proxy, kubeconfig: tokenKubeconfig(t, proxy.url, proxy.ca, token)}
}

// run runs the dry run to its end with kroll's default options, logs what it printed,
// fails t if any request but a read reached the API server, and returns the report.
func (d *takeoverDryRun) run(t *testing.T, what string) (managerRun, dryRunReport) {
	t.Helper()
	_, before := d.proxy.counts()
	r := runManagerToEnd(t, d.bin, d.kubeconfig, "--dry-run", "--dry-run-timeout=40s")
	_, after := d.proxy.counts()
	t.Logf("dry run %s: exit %d after %.1fs\nstdout:\n%s\nstderr:\n%s", what, r.code, r.took.Seconds(), r.stdout, r.stderr)
	if len(after) != len(before) {
		t.Errorf("dry run %s: requests other than reads reached the API server: %v", what, after[len(before):])
	}
	report := parseDryRunReport(r.stdout)
	checkEveryWriteChanges(t, what, report)
	return r, report
}

// checkEveryWriteChanges asserts that every update and patch a dry run lists names the
// fields it changes ("status.readyReplicas 2 → 3"): a write that would leave its
// object as it is (a status restated, a condition reporting only the dry run's own
// refusal) is left out, not listed.
func checkEveryWriteChanges(t *testing.T, what string, report dryRunReport) {
	t.Helper()
	lines := report.unattributed
	for _, w := range report.workloads {
		lines = append(lines, w.writes...)
	}
	for _, line := range lines {
		if (strings.HasPrefix(line, "update ") || strings.HasPrefix(line, "patch ")) && !strings.Contains(line, " → ") {
			t.Errorf("dry run %s lists a write that changes no field: %q", what, line)
		}
	}
}

// dryRunReport is a dry run's printed report, read back.
type dryRunReport struct {
	workloads []reportedWorkload
	// unattributed are the lines under "owned by no workload".
	unattributed []string
}

// reportedWorkload is one workload of the report and its write lines
// ("create Pod ns/web-…: new Pod web-… for ReplicaSet ns/web [in flight]").
type reportedWorkload struct {
	kind, namespace, name string
	inFlight              bool
	writes                []string
}

func (w reportedWorkload) String() string { return w.kind + " " + w.namespace + "/" + w.name }

// parseDryRunReport reads the report DryRunResult.Print writes: a workload line
// ("Kind ns/name", then " (rollout in flight)" when it is), its writes indented by two
// spaces, "owned by no workload" before the writes of none, and the event count and
// summary lines, which it skips.
func parseDryRunReport(out string) dryRunReport {
	var r dryRunReport
	var cur *reportedWorkload
	orphans := false
	for _, line := range strings.Split(out, "\n") {
		switch {
		case line == "" || strings.HasPrefix(line, "(") || strings.HasPrefix(line, "dry run:"):
		case strings.HasPrefix(line, "  "):
			switch {
			case orphans:
				r.unattributed = append(r.unattributed, strings.TrimSpace(line))
			case cur != nil:
				cur.writes = append(cur.writes, strings.TrimSpace(line))
			}
		case line == "owned by no workload":
			orphans, cur = true, nil
		default:
			head, inFlight := strings.CutSuffix(line, " (rollout in flight)")
			kind, ref, _ := strings.Cut(head, " ")
			ns, name, _ := strings.Cut(ref, "/")
			r.workloads = append(r.workloads, reportedWorkload{kind: kind, namespace: ns, name: name, inFlight: inFlight})
			cur, orphans = &r.workloads[len(r.workloads)-1], false
		}
	}
	return r
}

// checkDryRunInFlightOnly asserts what a dry run against p's namespace before the
// switch may report: writes only for members p marks in flight, each judged in flight
// by the dry run too, none owned by no workload, no workload of another namespace, and
// exit 0.
func checkDryRunInFlightOnly(t *testing.T, p *population, r managerRun, report dryRunReport) {
	t.Helper()
	inFlight := map[string]bool{}
	for _, m := range p.members {
		inFlight[m.name] = m.inFlight
	}
	if r.code != 0 || !strings.Contains(r.stdout, "dry run: no writes beyond in-flight rollouts' next steps") {
		t.Errorf("dry run before the switch: exit %d, want 0 with the no-writes summary", r.code)
	}
	for _, w := range report.workloads {
		switch {
		case w.namespace != p.ns:
			t.Errorf("dry run before the switch: writes for %s, outside the population: %v", w, w.writes)
		case !inFlight[w.name]:
			t.Errorf("dry run before the switch: writes for steady %s: %v", w, w.writes)
		case !w.inFlight:
			t.Errorf("dry run before the switch: %s is in flight, but the dry run judged it complete: %v", w, w.writes)
		}
	}
	if len(report.unattributed) > 0 {
		t.Errorf("dry run before the switch: writes owned by no workload: %v", report.unattributed)
	}
}

// realDifference scales p's bare ReplicaSet from 3 to 4 while no controllers run: the
// dry run must then report the pod kroll would create for it, as a write beyond any
// rollout, name it in its one stderr line and exit 1, report nothing else beyond
// in-flight rollouts, and leave the ReplicaSet at its 3 pods.
func realDifference(t *testing.T, c *cluster.Cluster, p *population, dryRun *takeoverDryRun) {
	ctx := context.Background()
	scale := &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: "rs-bare", Namespace: p.ns}, Spec: autoscalingv1.ScaleSpec{Replicas: 4}}
	if _, err := c.Client.AppsV1().ReplicaSets(p.ns).UpdateScale(ctx, "rs-bare", scale, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	r, report := dryRun.run(t, "with rs-bare scaled 3 → 4")
	if r.code != 1 {
		t.Errorf("exit %d, want 1", r.code)
	}
	want := "create Pod " + p.ns + "/rs-bare-…: new Pod rs-bare-… for ReplicaSet " + p.ns + "/rs-bare"
	found := false
	for _, w := range report.workloads {
		switch {
		case w.String() == "ReplicaSet "+p.ns+"/rs-bare":
			found = !w.inFlight && strings.Contains(strings.Join(w.writes, "\n"), want)
		case !w.inFlight:
			t.Errorf("writes for %s, which nothing changed: %v", w, w.writes)
		}
	}
	if !found {
		t.Errorf("the report does not show %q for rs-bare, as a write beyond in-flight rollouts", want)
	}
	if len(report.unattributed) > 0 {
		t.Errorf("writes owned by no workload: %v", report.unattributed)
	}
	if lines := strings.Split(strings.TrimSpace(r.stderr), "\n"); len(lines) != 1 ||
		!strings.HasPrefix(lines[0], "kroll: dry run: kroll would make") || !strings.Contains(lines[0], "ReplicaSet "+p.ns+"/rs-bare") {
		t.Errorf("stderr is not the one summary line naming rs-bare: %q", r.stderr)
	}
	pods := must(c.Client.CoreV1().Pods(p.ns).List(ctx, metav1.ListOptions{LabelSelector: workloadLabel + "=rs-bare"}))
	if len(pods.Items) != 3 {
		t.Errorf("rs-bare has %d pods after the dry run, want its 3", len(pods.Items))
	}
}
