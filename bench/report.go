package bench

import (
	"fmt"
	"slices"
	"strings"
)

// verbs are the API verbs of the requests table, in its column order.
var verbs = []string{"POST", "PUT", "PATCH", "DELETE", "GET", "LIST", "WATCH"}

// metric is one row of the comparison table.
type metric struct {
	name  string
	value func(Sample) float64
	// applies says whether the scenario reports it.
	applies func(Scenario) bool
	// event marks a figure that times something which may not happen in a run (the
	// rollback scenario's upstream never completes nor rolls back): a zero there is
	// "not seen", left out of the cell rather than counted as an instant.
	event bool
}

// statOf summarises the metric over the samples of scenario and arm, leaving out the
// runs that did not see an event metric's event; "—" when none did.
func (mt metric) statOf(r *Results, scenario, arm string) stat {
	if !mt.event {
		return r.statOf(scenario, arm, mt.value)
	}
	return r.statOfWhere(scenario, arm, mt.value, func(x Sample) bool { return mt.value(x) != 0 })
}

var (
	always       = func(Scenario) bool { return true }
	replacesPod  = func(s Scenario) bool { return !strings.HasPrefix(s.Name, "steady-") }
	steadyOnly   = func(s Scenario) bool { return strings.HasPrefix(s.Name, "steady-") }
	rollbackOnly = func(s Scenario) bool { return strings.HasPrefix(s.Name, "rollback-") }
	metrics      = []metric{
		{"time, s", func(s Sample) float64 { return s.Seconds }, replacesPod, true},
		{"pod writes/s", func(s Sample) float64 { return s.PodWritesPerSecond }, replacesPod, true},
		{"API writes", func(s Sample) float64 { return s.Requests.writes() }, always, false},
		{"controller CPU, s", func(s Sample) float64 { return s.ControllerCPUSeconds }, replacesPod, false},
		{"cluster CPU (API server, etcd, scheduler, kubelets), s", func(s Sample) float64 { return s.ClusterCPUSeconds }, replacesPod, false},
		{"controller CPU at rest, cores", func(s Sample) float64 { return s.ControllerCores }, steadyOnly, false},
		{"cluster CPU at rest (API server, etcd, scheduler, kubelets), cores", func(s Sample) float64 { return s.ClusterCores }, steadyOnly, false},
		{"controller peak memory, MiB", func(s Sample) float64 { return s.ControllerPeakMiB }, always, false},
		{"controller memory at the end, MiB", func(s Sample) float64 { return s.ControllerMiB }, steadyOnly, false},
		{"cluster memory at the end (API server, etcd, scheduler, kubelets), MiB", func(s Sample) float64 { return s.ClusterMiB }, steadyOnly, false},
		{"first failing pod to rollback write, s", func(s Sample) float64 { return s.FailingToRollbackSeconds }, rollbackOnly, true},
		{"first failing pod to all Ready again, s", func(s Sample) float64 { return s.FailingToReadySeconds }, rollbackOnly, true},
		{"change to ProgressDeadlineExceeded, s", func(s Sample) float64 { return s.DeadlineExceededSeconds }, rollbackOnly, true},
		{"not recovered within, s", func(s Sample) float64 { return s.NotRecoveredWithinSeconds }, rollbackOnly, true},
	}
)

// krollRevisions are the revisions of kroll the samples ran, each with the scenarios
// that ran it when there are several.
func (r *Results) krollRevisions() []string {
	var revs []string
	scenarios := map[string][]string{}
	for _, x := range r.Samples {
		if x.Kroll == "" {
			continue
		}
		if _, seen := scenarios[x.Kroll]; !seen {
			revs = append(revs, x.Kroll)
		}
		if !slices.Contains(scenarios[x.Kroll], x.Scenario) {
			scenarios[x.Kroll] = append(scenarios[x.Kroll], x.Scenario)
		}
	}
	if len(revs) < 2 {
		return revs
	}
	for i, rev := range revs {
		revs[i] = fmt.Sprintf("%s (%s)", rev, strings.Join(scenarios[rev], ", "))
	}
	return revs
}

// Markdown renders the results: the machine, the raw ceiling, kroll against upstream,
// in place against rolling, the targets, and the requests by verb.
func (r *Results) Markdown() string {
	var b strings.Builder
	m := r.Machine
	fmt.Fprintf(&b, "Machine: %s, %d cores, %d GiB, Linux %s, %s. Scale %g.\n", m.CPU, m.Cores, m.MemoryGiB, m.Kernel, m.Go, r.Scale)
	if revs := r.krollRevisions(); len(revs) > 0 {
		fmt.Fprintf(&b, "kroll at %s.\n", strings.Join(revs, ", "))
	}
	b.WriteString("Each cell: median (min–max) of the runs, — where no run saw the event a figure times; the ratio is of the medians.\n\n")

	b.WriteString("**Raw ceiling** (no controllers; a client with 32 workers creates the pods, waits until all are Ready, deletes them, waits until all are gone)\n\n")
	b.WriteString("| Pods | runs | time, s | pod writes/s | API writes | cluster CPU, s |\n|---|---|---|---|---|---|\n")
	for _, s := range r.Scenarios {
		if !strings.HasPrefix(s.Name, "ceiling-") {
			continue
		}
		t := r.statOf(s.Name, apiArm.Name, func(x Sample) float64 { return x.Seconds })
		w := r.statOf(s.Name, apiArm.Name, func(x Sample) float64 { return x.PodWritesPerSecond })
		a := r.statOf(s.Name, apiArm.Name, func(x Sample) float64 { return x.Requests.writes() })
		c := r.statOf(s.Name, apiArm.Name, func(x Sample) float64 { return x.ClusterCPUSeconds })
		fmt.Fprintf(&b, "| %d | %d | %s | %s | %s | %s |\n", s.Size, t.n, t, w, a, c)
	}

	b.WriteString("\n**kroll against upstream's controllers**\n\n")
	b.WriteString("| Scenario | Metric | kroll | upstream | kroll / upstream |\n|---|---|---|---|---|\n")
	for _, s := range r.Scenarios {
		if !hasArm(s, upstreamArm.Name) {
			continue
		}
		k, u := r.statOf(s.Name, krollArm.Name, nothing), r.statOf(s.Name, upstreamArm.Name, nothing)
		title := fmt.Sprintf("%s (runs: %d + %d)", s.Title, k.n, u.n)
		for _, mt := range metrics {
			if !mt.applies(s) {
				continue
			}
			k, u := mt.statOf(r, s.Name, krollArm.Name), mt.statOf(r, s.Name, upstreamArm.Name)
			if k.n == 0 && u.n == 0 {
				continue
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", title, mt.name, k, u, ratio(k, u))
			title = ""
		}
	}

	for _, s := range r.Scenarios {
		if !hasArm(s, inPlaceArm.Name) {
			continue
		}
		fmt.Fprintf(&b, "\n**In place (InPlaceIfPossible) against RollingUpdate**, kroll's controllers: %s\n\n", s.Title)
		r.armAgainstKroll(&b, s, inPlaceArm, "in place", "RollingUpdate", "rolling", func(mt metric) bool { return mt.name != "pod writes/s" })
		if i, k := r.availabilityMargin(s.Name, inPlaceArm.Name), r.availabilityMargin(s.Name, krollArm.Name); i.n+k.n > 0 {
			fmt.Fprintf(&b, "| least available above replicas − maxUnavailable, every status seen | %s | %s | — |\n", countStat(i), countStat(k))
		}
	}

	for _, s := range r.Scenarios {
		if !hasArm(s, budgetArm.Name) {
			continue
		}
		fmt.Fprintf(&b, "\n**Disruption budget respected (Respect) against ignored**, kroll's controllers: %s\n\n", s.Title)
		r.armAgainstKroll(&b, s, budgetArm, "Respect", "Ignore", "Ignore", func(metric) bool { return true })
	}

	for _, s := range r.Scenarios {
		if !hasArm(s, configArm.Name) {
			continue
		}
		fmt.Fprintf(&b, "\n**A ConfigMap edited against an image changed**, kroll's controllers: %s\n\n", s.Title)
		r.armAgainstKroll(&b, s, configArm, "ConfigMap edit", "image update", "image", func(metric) bool { return true })
	}

	if targets := r.Targets(); len(targets) > 0 {
		b.WriteString("\n**Targets** (ratios of medians from this run)\n\n| Target | Measured | Met |\n|---|---|---|\n")
		for _, t := range targets {
			met := "yes"
			if !t.Met {
				met = "**no**"
			}
			fmt.Fprintf(&b, "| %s | %s | %s |\n", t.Name, t.Measured, met)
		}
	}

	b.WriteString("\n**API requests by verb** (medians; every client, Leases left out)\n\n| Scenario | Arm |")
	for _, v := range verbs {
		fmt.Fprintf(&b, " %s |", v)
	}
	b.WriteString("\n|---|---|" + strings.Repeat("---|", len(verbs)) + "\n")
	for _, s := range r.Scenarios {
		for _, arm := range s.Arms {
			if r.statOf(s.Name, arm.Name, nothing).n == 0 {
				continue
			}
			fmt.Fprintf(&b, "| %s | %s |", s.Name, arm.Name)
			for _, v := range verbs {
				fmt.Fprintf(&b, " %s |", format(r.statOf(s.Name, arm.Name, func(x Sample) float64 { return x.Requests[v] }).median))
			}
			b.WriteString("\n")
		}
	}
	return b.String()
}

// armAgainstKroll writes the table of s's metrics (those show keeps) for arm against
// kroll's plain arm, headed "Metric | name | krollName | name / krollShort".
func (r *Results) armAgainstKroll(b *strings.Builder, s Scenario, arm Arm, name, krollName, krollShort string, show func(metric) bool) {
	fmt.Fprintf(b, "| Metric | %s | %s | %s / %s |\n|---|---|---|---|\n", name, krollName, name, krollShort)
	for _, mt := range metrics {
		if !mt.applies(s) || !show(mt) {
			continue
		}
		a, k := mt.statOf(r, s.Name, arm.Name), mt.statOf(r, s.Name, krollArm.Name)
		fmt.Fprintf(b, "| %s | %s | %s | %s |\n", mt.name, a, k, ratio(a, k))
	}
}

func nothing(Sample) float64 { return 0 }

func hasArm(s Scenario, name string) bool {
	for _, a := range s.Arms {
		if a.Name == name {
			return true
		}
	}
	return false
}

func ratio(a, b stat) string {
	if a.n == 0 || b.n == 0 || b.median == 0 {
		return "—"
	}
	return fmt.Sprintf("%.2f", a.median/b.median)
}

// ratioFigure prints a measured ratio to two decimals, or to three where two would
// round a miss onto its limit (1.002 against ≤ 1.00 reads 1.002×, not 1.00×).
func ratioFigure(v, limit float64) string {
	if s := fmt.Sprintf("%.2f×", v); v <= limit || s != fmt.Sprintf("%.2f×", limit) {
		return s
	}
	return fmt.Sprintf("%.3f×", v)
}

// Target is one of the targets, as measured.
type Target struct {
	Name     string
	Measured string
	Met      bool
}

// Targets checks the measured medians against kroll's targets, where this run holds
// the samples each needs: in every rollout scenario (rolloutScenario) kroll's API
// writes at most upstream's, its controller CPU at most 0.85 × upstream's and its time
// at most upstream's; where the client's QPS bounds a rollout, its time within 1 % of
// that bound (2N writes ÷ QPS); in place at most half RollingUpdate's time, its
// Deployment never reported below its RollingUpdate's floor; a disruption budget
// that never binds, respected, at most 1.05 × the time without; a ConfigMap edit
// rolled out, at most 1.05 × the time and 1.10 × the API writes of an image update of
// the same Deployments; and at rest
// over 10,000 pods, at most half upstream's memory.
func (r *Results) Targets() []Target {
	seconds := func(x Sample) float64 { return x.Seconds }
	writes := func(x Sample) float64 { return x.Requests.writes() }
	cpu := func(x Sample) float64 { return x.ControllerCPUSeconds }
	var out []Target
	add := func(name string, a, b stat, limit float64) {
		if a.n == 0 || b.n == 0 || b.median == 0 {
			return
		}
		v := a.median / b.median
		out = append(out, Target{Name: name, Measured: ratioFigure(v, limit), Met: v <= limit})
	}
	for _, s := range r.Scenarios {
		if !rolloutScenario(s) {
			continue
		}
		name := s.Name
		k := func(f func(Sample) float64) stat { return r.statOf(s.Name, krollArm.Name, f) }
		u := func(f func(Sample) float64) stat { return r.statOf(s.Name, upstreamArm.Name, f) }
		add(name+": API writes ≤ 1.00 × upstream's", k(writes), u(writes), 1)
		add(name+": controller CPU ≤ 0.85 × upstream's", k(cpu), u(cpu), 0.85)
		add(name+": time ≤ 1.00 × upstream's", k(seconds), u(seconds), 1)
		if qpsBound(s) {
			// 2N writes (N creates, N deletes) at QPS per second.
			limit := stat{median: float64(2*s.Size) / float64(s.Limits.QPS), n: 1}
			add(fmt.Sprintf("%s: time ≤ 1.01 × the write limit (2N ÷ QPS = %.0f s)", name, limit.median), k(seconds), limit, 1.01)
		}
		if hasArm(s, inPlaceArm.Name) {
			out = append(out, r.inPlaceTarget(s.Name, k(seconds))...)
		}
		if hasArm(s, budgetArm.Name) {
			// Evictions instead of deletes, under a budget that never binds: the same
			// rollout, at most 5 % slower.
			add(name+": time with the budget respected ≤ 1.05 × ignored", r.statOf(s.Name, budgetArm.Name, seconds), k(seconds), 1.05)
		}
	}
	for _, s := range r.Scenarios {
		if hasArm(s, configArm.Name) {
			// Issue 62: a configuration change rolls as an image change does, at most
			// 5 % slower and with at most 10 % more API writes.
			k := func(f func(Sample) float64) stat { return r.statOf(s.Name, krollArm.Name, f) }
			c := func(f func(Sample) float64) stat { return r.statOf(s.Name, configArm.Name, f) }
			add(s.Name+": time of a ConfigMap edit ≤ 1.05 × an image update's", c(seconds), k(seconds), 1.05)
			add(s.Name+": API writes of a ConfigMap edit ≤ 1.10 × an image update's", c(writes), k(writes), 1.10)
		}
	}
	for _, s := range r.Scenarios {
		if strings.HasPrefix(s.Name, "steady-") && s.Size == 10000 {
			rss := func(x Sample) float64 { return x.ControllerMiB }
			add(fmt.Sprintf("%d pods at rest: kroll memory ≤ 0.50 × upstream's", s.Size),
				r.statOf(s.Name, krollArm.Name, rss), r.statOf(s.Name, upstreamArm.Name, rss), 0.5)
		}
	}
	return out
}

// rolloutScenario tells the scenarios in which both controller sets make the same
// rollout: not the raw ceiling (no controllers), not steady state (nothing changes),
// not rollback (upstream never rolls back, so the two do different work), not the
// configuration rollout (kroll's Deployments there are opted into configuration
// rollout and write a snapshot per revision, which upstream's do not).
func rolloutScenario(s Scenario) bool {
	for _, prefix := range []string{"rolling-", "many-", "statefulset-", "daemonset-", "resize-"} {
		if strings.HasPrefix(s.Name, prefix) {
			return true
		}
	}
	return false
}

// qpsBound tells the rollouts whose time the client's QPS bounds: one Deployment
// replacing its N pods at the default limits, 2N writes.
func qpsBound(s Scenario) bool {
	return s.Limits == DefaultLimits && (strings.HasPrefix(s.Name, "rolling-") || strings.HasPrefix(s.Name, "resize-"))
}

// availabilityMargin summarises the least availability margins of scenario and arm's
// runs (the runs that measured one).
func (r *Results) availabilityMargin(scenario, arm string) stat {
	return r.statOfWhere(scenario, arm,
		func(x Sample) float64 { return float64(*x.LeastAvailabilityMargin) },
		func(x Sample) bool { return x.LeastAvailabilityMargin != nil })
}

// inPlaceTarget is scenario's in-place target, where this run holds its samples: in
// place at most half of RollingUpdate's time (rolling), with every in-place run's
// Deployment at or above its floor (availableReplicas ≥ replicas − maxUnavailable) in
// every status the harness saw. A run that did not watch availability cannot meet it.
func (r *Results) inPlaceTarget(scenario string, rolling stat) []Target {
	seconds := func(x Sample) float64 { return x.Seconds }
	inPlace := r.statOf(scenario, inPlaceArm.Name, seconds)
	if inPlace.n == 0 || rolling.n == 0 || rolling.median == 0 {
		return nil
	}
	v := inPlace.median / rolling.median
	margin := r.availabilityMargin(scenario, inPlaceArm.Name)
	held := margin.n == inPlace.n && margin.min >= 0
	floor := "not watched in every run"
	if margin.n > 0 {
		floor = fmt.Sprintf("least available above the floor %d", int(margin.min))
	}
	return []Target{{
		Name:     scenario + ": in place ≤ 0.50 × RollingUpdate's time, available ≥ replicas − maxUnavailable throughout",
		Measured: fmt.Sprintf("%s; %s", ratioFigure(v, 0.5), floor),
		Met:      v <= 0.5 && held,
	}}
}

// countStat prints a stat of whole numbers as whole numbers.
func countStat(s stat) string {
	switch s.n {
	case 0:
		return "—"
	case 1:
		return fmt.Sprint(int(s.median))
	}
	return fmt.Sprintf("%d (%d–%d)", int(s.median), int(s.min), int(s.max))
}
