package bench

import (
	"strings"
	"testing"
)

// The targets are those of bench/README.md: in each rollout scenario kroll's writes
// ≤ 1.00 ×, controller CPU ≤ 0.85 × and time ≤ 1.00 × upstream's; QPS-bound rollouts
// within 1 % of 2N ÷ QPS; in place ≤ 0.50 × RollingUpdate; memory at rest over 10,000
// pods ≤ 0.50 ×. Scenarios where the arms do different work have none.
func TestTargets(t *testing.T) {
	r := newResults(1)
	rolling := rollingScenario(1000, DefaultLimits, []Arm{krollArm, upstreamArm, inPlaceArm})
	steady := steadyScenario(10000, 10, 0)
	rollback := rollbackScenario(100)
	for _, s := range []Scenario{rolling, steady, rollback} {
		r.addScenario(s)
	}
	sample := func(s Scenario, arm Arm, seconds, writes, cpu, mib float64) {
		r.Samples = append(r.Samples, Sample{Scenario: s.Name, Arm: arm.Name, Rep: 1, Seconds: seconds,
			Requests: requestCounts{"PUT": writes}, ControllerCPUSeconds: cpu, ControllerMiB: mib})
	}
	sample(rolling, krollArm, 100.5, 7000, 2.5, 0)
	sample(rolling, upstreamArm, 102, 7100, 3.0, 0)
	sample(rolling, inPlaceArm, 51, 5000, 1, 0)
	sample(steady, krollArm, 0, 0, 0, 50)
	sample(steady, upstreamArm, 0, 0, 0, 110)
	sample(rollback, krollArm, 30, 500, 1, 0)
	sample(rollback, upstreamArm, 150, 100, 0.1, 0)

	got := map[string]string{}
	for _, tg := range r.Targets() {
		got[tg.Name] = tg.Measured
		if !tg.Met {
			got[tg.Name] += " not met"
		}
	}
	want := map[string]string{
		"rolling-1000-qps20: API writes ≤ 1.00 × upstream's":                   "0.99×",
		"rolling-1000-qps20: controller CPU ≤ 0.85 × upstream's":               "0.83×",
		"rolling-1000-qps20: time ≤ 1.00 × upstream's":                         "0.99×",
		"rolling-1000-qps20: time ≤ 1.01 × the write limit (2N ÷ QPS = 100 s)": "1.00×",
		"rolling-1000-qps20: in place ≤ 0.50 × RollingUpdate's time":           "0.51× not met",
		"10000 pods at rest: kroll memory ≤ 0.50 × upstream's":                 "0.45×",
	}
	for name, m := range want {
		if got[name] != m {
			t.Errorf("target %q: got %q, want %q", name, got[name], m)
		}
	}
	if len(got) != len(want) {
		t.Errorf("targets %v, want exactly %v", got, want)
	}
	for name := range got {
		if strings.HasPrefix(name, "rollback-") {
			t.Errorf("rollback has a target %q: its arms do different work", name)
		}
	}
}
