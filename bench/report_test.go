package bench

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// The targets are those of bench/README.md: in each rollout scenario kroll's writes
// ≤ 1.00 ×, controller CPU ≤ 0.85 × and time ≤ 1.00 × upstream's; QPS-bound rollouts
// within 1 % of 2N ÷ QPS; in place ≤ 0.50 × RollingUpdate; memory at rest over 10,000
// pods ≤ 0.50 ×. Scenarios where the arms do different work have none.
func TestTargets(t *testing.T) {
	r := newResults(1)
	rolling := rollingScenario(1000, DefaultLimits, []Arm{krollArm, upstreamArm, inPlaceArm})
	steady := steadyScenario(10000, 10, 0, false)
	rollback := rollbackScenario(100, DefaultRollbackWindow)
	budget := budgetScenario(1000)
	config := configScenario(100, 10)
	for _, s := range []Scenario{rolling, steady, rollback, budget, config} {
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
	sample(budget, krollArm, 100, 7000, 2.5, 0)
	sample(budget, budgetArm, 106, 8000, 2.6, 0)
	sample(config, krollArm, 20, 10000, 4, 0)
	sample(config, upstreamArm, 19, 9000, 5, 0)
	sample(config, configArm, 20.8, 11200, 4, 0)

	got := map[string]string{}
	for _, tg := range r.Targets() {
		got[tg.Name] = tg.Measured
		if !tg.Met {
			got[tg.Name] += " not met"
		}
	}
	want := map[string]string{
		"rolling-1000-qps20: API writes ≤ 1.00 × upstream's":                                                           "0.99×",
		"rolling-1000-qps20: controller CPU ≤ 0.85 × upstream's":                                                       "0.83×",
		"rolling-1000-qps20: time ≤ 1.00 × upstream's":                                                                 "0.99×",
		"rolling-1000-qps20: time ≤ 1.01 × the write limit (2N ÷ QPS = 100 s)":                                         "1.00×",
		"rolling-1000-qps20: in place ≤ 0.50 × RollingUpdate's time, available ≥ replicas − maxUnavailable throughout": "0.51×; not watched in every run not met",
		"10000 pods at rest: kroll memory ≤ 0.50 × upstream's":                                                         "0.45×",
		"rolling-1000-qps20-budget: time ≤ 1.01 × the write limit (2N ÷ QPS = 100 s)":                                  "1.00×",
		"rolling-1000-qps20-budget: time with the budget respected ≤ 1.05 × ignored":                                   "1.06× not met",
		"config-100x10: time of a ConfigMap edit ≤ 1.05 × an image update's":                                           "1.04×",
		"config-100x10: API writes of a ConfigMap edit ≤ 1.10 × an image update's":                                     "1.12× not met",
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
		if strings.Contains(name, "upstream") && strings.HasPrefix(name, "config-") {
			t.Errorf("the configuration rollout has a target against upstream %q: kroll's Deployments there write snapshots", name)
		}
	}
}

// The in-place target holds only when in place takes at most half RollingUpdate's time
// and every in-place run watched its Deployment stay at or above its floor.
func TestInPlaceTarget(t *testing.T) {
	margin := func(m int32) *int32 { return &m }
	for _, tc := range []struct {
		name    string
		seconds []float64
		margins []*int32
		want    string
		met     bool
	}{
		{"half the time, the floor held", []float64{49, 50, 51}, []*int32{margin(0), margin(3), margin(1)},
			"0.50×; least available above the floor 0", true},
		{"half the time, one run below the floor", []float64{49, 50, 51}, []*int32{margin(2), margin(-1), margin(1)},
			"0.50×; least available above the floor -1", false},
		{"half the time, one run not watched", []float64{49, 50, 51}, []*int32{margin(2), nil, margin(1)},
			"0.50×; least available above the floor 1", false},
		{"the floor held, too slow", []float64{52, 51, 53}, []*int32{margin(0), margin(0), margin(0)},
			"0.52×; least available above the floor 0", false},
	} {
		r := newResults(1)
		s := rollingScenario(1000, DefaultLimits, []Arm{krollArm, upstreamArm, inPlaceArm})
		r.addScenario(s)
		for i := range tc.seconds {
			r.Samples = append(r.Samples,
				Sample{Scenario: s.Name, Arm: krollArm.Name, Rep: i + 1, Seconds: 100},
				Sample{Scenario: s.Name, Arm: inPlaceArm.Name, Rep: i + 1, Seconds: tc.seconds[i], LeastAvailabilityMargin: tc.margins[i]})
		}
		got := r.inPlaceTarget(s.Name, r.statOf(s.Name, krollArm.Name, func(x Sample) float64 { return x.Seconds }))
		if len(got) != 1 || got[0].Measured != tc.want || got[0].Met != tc.met {
			t.Errorf("%s: got %+v, want measured %q, met %v", tc.name, got, tc.want, tc.met)
		}
	}
}

// availabilityMargin resolves maxUnavailable as the Deployment controller does. The
// Deployments are as the API server defaults them: RollingUpdate, 25% and 25%.
func TestAvailabilityMargin(t *testing.T) {
	deployment := func(replicas, available int32, strategy appsv1.DeploymentStrategy) *appsv1.Deployment {
		return &appsv1.Deployment{Spec: appsv1.DeploymentSpec{Replicas: &replicas, Strategy: strategy},
			Status: appsv1.DeploymentStatus{AvailableReplicas: available}}
	}
	rolling := func(surge, unavailable intstr.IntOrString) appsv1.DeploymentStrategy {
		return appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
			RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: &surge, MaxUnavailable: &unavailable}}
	}
	for _, tc := range []struct {
		name string
		d    *appsv1.Deployment
		want int32
	}{
		{"defaults: 25% of 1000 may be unavailable", deployment(1000, 750, rolling(intstr.FromString("25%"), intstr.FromString("25%"))), 0},
		{"defaults, one below", deployment(1000, 749, rolling(intstr.FromString("25%"), intstr.FromString("25%"))), -1},
		{"25% of 10 rounds down to 2", deployment(10, 8, rolling(intstr.FromString("25%"), intstr.FromString("25%"))), 0},
		{"both zero: one may be unavailable", deployment(10, 9, rolling(intstr.FromInt32(0), intstr.FromInt32(0))), 0},
		{"surge only: none may be unavailable", deployment(10, 9, rolling(intstr.FromInt32(1), intstr.FromInt32(0))), -1},
		{"more unavailable than replicas", deployment(3, 0, rolling(intstr.FromInt32(0), intstr.FromInt32(5))), 0},
		{"Recreate has no floor", deployment(10, 0, appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}), 0},
	} {
		if got := availabilityMargin(tc.d); got != tc.want {
			t.Errorf("%s: availabilityMargin = %d, want %d", tc.name, got, tc.want)
		}
	}
}

// In the rollback scenario each arm times events the other never sees (upstream never
// completes nor rolls back; kroll never reaches its deadline): those cells read "—", not
// a zero that would pass for an instant.
func TestReportLeavesOutEventsNotSeen(t *testing.T) {
	r := newResults(1)
	s := rollbackScenario(100, DefaultRollbackWindow)
	r.addScenario(s)
	for rep := 1; rep <= 3; rep++ {
		r.Samples = append(r.Samples,
			Sample{Scenario: s.Name, Arm: krollArm.Name, Rep: rep, Seconds: 7, FailingToRollbackSeconds: 0.005, FailingToReadySeconds: 5.5,
				Requests: requestCounts{"PATCH": 600}, ControllerCPUSeconds: 0.3},
			Sample{Scenario: s.Name, Arm: upstreamArm.Name, Rep: rep, DeadlineExceededSeconds: 146, NotRecoveredWithinSeconds: 150,
				Requests: requestCounts{"PATCH": 1800}, ControllerCPUSeconds: 1.2})
	}
	md := r.Markdown()
	for _, want := range []string{
		"| time, s | 7.00 (7.00–7.00) | — | — |",
		"| first failing pod to rollback write, s | 0.005 (0.005–0.005) | — | — |",
		"| change to ProgressDeadlineExceeded, s | — | 146 (146–146) | — |",
		"| not recovered within, s | — | 150 (150–150) | — |",
		"| controller CPU, s | 0.300 (0.300–0.300) | 1.20 (1.20–1.20) | 0.25 |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("the report lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "| pod writes/s | — | — |") {
		t.Errorf("the report has a pod writes/s row though no run of either arm saw one:\n%s", md)
	}
}

// A miss that two decimals would round onto its limit is printed with three.
func TestRatioFigure(t *testing.T) {
	for _, c := range []struct {
		v, limit float64
		want     string
	}{
		{0.994, 1, "0.99×"},
		{1, 1, "1.00×"},
		{1.002, 1, "1.002×"},
		{1.004, 1, "1.004×"},
		{1.03, 1, "1.03×"},
		{0.852, 0.85, "0.852×"},
		{0.86, 0.85, "0.86×"},
	} {
		if got := ratioFigure(c.v, c.limit); got != c.want {
			t.Errorf("ratioFigure(%g, %g) = %q, want %q", c.v, c.limit, got, c.want)
		}
	}
}
