package bench

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"sort"
	"strings"
	"time"
)

// The files a run writes into its output directory.
const (
	resultsJSON     = "results.json"
	resultsMarkdown = "results.md"
	resultsSVG      = "results.svg"
)

// Results are a harness run: the scenarios, every sample, and the machine.
type Results struct {
	Scale     float64    `json:"scale"`
	Machine   Machine    `json:"machine"`
	Scenarios []Scenario `json:"scenarios"`
	Samples   []Sample   `json:"samples"`
}

// Machine describes where the run ran.
type Machine struct {
	CPU       string `json:"cpu"`
	Cores     int    `json:"cores"`
	MemoryGiB int    `json:"memoryGiB"`
	Kernel    string `json:"kernel"`
	Go        string `json:"go"`
}

// Sample is one run of one scenario with one arm.
type Sample struct {
	Scenario string    `json:"scenario"`
	Arm      string    `json:"arm"`
	Rep      int       `json:"rep"`
	Started  time.Time `json:"started"`
	// Kroll is the revision of kroll the run used (its commit, "+modified" when built
	// from a changed tree; empty when the build did not record one).
	Kroll string `json:"kroll,omitempty"`
	// Seconds is from the change until it was done (zero for steady state).
	Seconds float64 `json:"seconds,omitempty"`
	// PodWritesPerSecond is pod creates plus deletes per second, where pods were replaced.
	PodWritesPerSecond float64 `json:"podWritesPerSecond,omitempty"`
	// Requests are the API requests served meanwhile, by verb, Leases left out.
	Requests requestCounts `json:"requests,omitempty"`
	// Writes are the write requests among them by verb and resource, e.g.
	// "PUT replicasets/status": whose writes they are.
	Writes requestCounts `json:"writes,omitempty"`
	// ControllerCPUSeconds is the controller process's CPU (user + system) meanwhile.
	ControllerCPUSeconds float64 `json:"controllerCPUSeconds,omitempty"`
	// ControllerPeakMiB is the most memory the controller process held meanwhile, and
	// ControllerMiB what it held at the end: resident anonymous memory (RssAnon, heap
	// and stacks), sampled every 250 ms.
	ControllerPeakMiB float64 `json:"controllerPeakMiB,omitempty"`
	ControllerMiB     float64 `json:"controllerMiB,omitempty"`
	// ClusterCPUSeconds is the CPU of the harness's own process meanwhile: the API
	// server, etcd, the scheduler, the non-workload controllers and the simulated
	// kubelet (the harness's own waiting is a small part of it).
	ClusterCPUSeconds float64 `json:"clusterCPUSeconds,omitempty"`
	// ClusterMiB is the harness's own resident anonymous memory at the end: the API
	// server, etcd, the scheduler, the non-workload controllers and the simulated
	// kubelets, and what earlier runs' clusters left in the Go heap.
	ClusterMiB float64 `json:"clusterMiB,omitempty"`
	// ControllerCores is the controllers' CPU use at rest (steady state), and
	// ClusterCores the cluster's (the harness's process) over the same window.
	ControllerCores float64 `json:"controllerCores,omitempty"`
	ClusterCores    float64 `json:"clusterCores,omitempty"`
	// PodStatusWrites are the pod status writes the API server served over the steady
	// state's window, where counted (steady-N-probed): 0 when no probe result changed.
	PodStatusWrites *float64 `json:"podStatusWrites,omitempty"`
	// The rollback scenario's: FailingToRollbackSeconds is from the first failing pod
	// of the bad revision to the rollback write, FailingToReadySeconds to every pod
	// Ready at the restored revision again; DeadlineExceededSeconds from the change to
	// ProgressDeadlineExceeded; NotRecoveredWithinSeconds is the observation window
	// when the Deployment did not recover within it (upstream). Zero when not seen.
	// LeastAvailabilityMargin is, where Deployments roll, the least over every state of
	// theirs the harness saw from the change until done of availableReplicas −
	// (replicas − maxUnavailable): negative when a rollout reported fewer available
	// replicas than its RollingUpdate allows. Absent where nothing rolls.
	LeastAvailabilityMargin   *int32  `json:"leastAvailabilityMargin,omitempty"`
	FailingToRollbackSeconds  float64 `json:"failingToRollbackSeconds,omitempty"`
	FailingToReadySeconds     float64 `json:"failingToReadySeconds,omitempty"`
	DeadlineExceededSeconds   float64 `json:"deadlineExceededSeconds,omitempty"`
	NotRecoveredWithinSeconds float64 `json:"notRecoveredWithinSeconds,omitempty"`
}

func (s Sample) summary() string {
	var parts []string
	if s.Seconds > 0 {
		parts = append(parts, fmt.Sprintf("%.1fs", s.Seconds))
	}
	if s.PodWritesPerSecond > 0 {
		parts = append(parts, fmt.Sprintf("%.0f pod writes/s", s.PodWritesPerSecond))
	}
	if s.ControllerCores > 0 {
		parts = append(parts, fmt.Sprintf("%.3f cores", s.ControllerCores))
	}
	if s.ClusterCores > 0 {
		parts = append(parts, fmt.Sprintf("cluster %.3f cores", s.ClusterCores))
	}
	if s.PodStatusWrites != nil {
		parts = append(parts, fmt.Sprintf("%.0f pod status writes at rest", *s.PodStatusWrites))
	}
	if s.FailingToRollbackSeconds > 0 {
		parts = append(parts, fmt.Sprintf("first failing pod to rollback write %.1fs, to all Ready %.1fs", s.FailingToRollbackSeconds, s.FailingToReadySeconds))
	}
	if s.DeadlineExceededSeconds > 0 {
		parts = append(parts, fmt.Sprintf("ProgressDeadlineExceeded at %.1fs", s.DeadlineExceededSeconds))
	}
	if s.NotRecoveredWithinSeconds > 0 {
		parts = append(parts, fmt.Sprintf("not recovered within %.0fs", s.NotRecoveredWithinSeconds))
	}
	if s.ControllerMiB > 0 {
		parts = append(parts, fmt.Sprintf("controllers %.1f CPU-s, %.0f MiB peak, %.0f MiB at the end", s.ControllerCPUSeconds, s.ControllerPeakMiB, s.ControllerMiB))
	}
	parts = append(parts, fmt.Sprintf("%.0f API writes", s.Requests.writes()))
	return strings.Join(parts, ", ")
}

func newResults(scale float64) *Results { return &Results{Scale: scale} }

// ReadResults reads a results.json.
func ReadResults(path string) (*Results, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	r := &Results{}
	if err := json.Unmarshal(data, r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return r, nil
}

func (r *Results) addScenario(s Scenario) {
	for i, known := range r.Scenarios {
		if known.Name == s.Name {
			r.Scenarios[i] = s
			return
		}
	}
	r.Scenarios = append(r.Scenarios, s)
}

func (r *Results) has(scenario, arm string, rep int) bool {
	return slices.ContainsFunc(r.Samples, func(s Sample) bool { return s.Scenario == scenario && s.Arm == arm && s.Rep == rep })
}

// write saves results.json, results.md and results.svg into dir, each written whole.
func (r *Results) write(dir string) error {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := WriteFileAtomic(filepath.Join(dir, resultsJSON), append(data, '\n')); err != nil {
		return err
	}
	if err := WriteFileAtomic(filepath.Join(dir, resultsMarkdown), []byte(r.Markdown())); err != nil {
		return err
	}
	return WriteFileAtomic(filepath.Join(dir, resultsSVG), []byte(r.Chart()))
}

// stat is the median and spread of one metric over the samples of one arm.
type stat struct {
	median, min, max float64
	n                int
}

func (s stat) String() string {
	if s.n == 0 {
		return "—"
	}
	if s.n == 1 {
		return format(s.median)
	}
	return fmt.Sprintf("%s (%s–%s)", format(s.median), format(s.min), format(s.max))
}

// format prints a figure with 3 significant digits, without exponent.
func format(x float64) string {
	switch ax := max(x, -x); {
	case ax >= 100:
		return fmt.Sprintf("%.0f", x)
	case ax >= 10:
		return fmt.Sprintf("%.1f", x)
	case ax >= 1:
		return fmt.Sprintf("%.2f", x)
	default:
		return fmt.Sprintf("%.3f", x)
	}
}

// statOf summarises metric over the samples of scenario and arm.
func (r *Results) statOf(scenario, arm string, metric func(Sample) float64) stat {
	return r.statOfWhere(scenario, arm, metric, func(Sample) bool { return true })
}

// statOfWhere summarises metric over the samples of scenario and arm that keep holds.
func (r *Results) statOfWhere(scenario, arm string, metric func(Sample) float64, keep func(Sample) bool) stat {
	var xs []float64
	for _, s := range r.Samples {
		if s.Scenario == scenario && s.Arm == arm && keep(s) {
			xs = append(xs, metric(s))
		}
	}
	if len(xs) == 0 {
		return stat{}
	}
	sort.Float64s(xs)
	m := xs[len(xs)/2]
	if len(xs)%2 == 0 {
		m = (xs[len(xs)/2-1] + xs[len(xs)/2]) / 2
	}
	return stat{median: m, min: xs[0], max: xs[len(xs)-1], n: len(xs)}
}

func (r *Results) scenario(name string) (Scenario, bool) {
	for _, s := range r.Scenarios {
		if s.Name == name {
			return s, true
		}
	}
	return Scenario{}, false
}

// krollRevision is the commit this binary was built from, as the Go toolchain stamped it.
func krollRevision() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	var rev, modified string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value[:min(12, len(s.Value))]
		case "vcs.modified":
			if s.Value == "true" {
				modified = "+modified"
			}
		}
	}
	if rev == "" {
		return ""
	}
	return rev + modified
}

func describeMachine() Machine {
	m := Machine{Cores: runtime.NumCPU(), Go: runtime.Version()}
	if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			if name, ok := strings.CutPrefix(line, "model name"); ok {
				m.CPU = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(name), ":"))
				break
			}
		}
	}
	if data, err := os.ReadFile("/proc/meminfo"); err == nil {
		var kb int
		if _, err := fmt.Sscanf(string(data), "MemTotal: %d kB", &kb); err == nil {
			m.MemoryGiB = (kb + 1<<19) >> 20
		}
	}
	if data, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(data))
	}
	return m
}
