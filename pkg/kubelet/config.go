package kubelet

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
)

// Annotations a pod can carry to steer its own simulation.
const (
	// AnnotationStartupDelay overrides Config.PodStartupDelay for one pod ("2s").
	AnnotationStartupDelay = "kroll.dev/startup-delay"
	// AnnotationFault gives every container of one pod a fault ("CrashLoopBackOff",
	// "ReadyAfter(30s)", "None", "ErrorRate(0.2)+Latency(300ms)"), ahead of the image rules.
	AnnotationFault = "kroll.dev/fault"
	// LabelSimulated marks the nodes this package registers and owns.
	LabelSimulated = "kroll.dev/simulated-node"
)

// Config describes the simulated nodes and how their pods behave.
type Config struct {
	// Nodes is how many nodes to register, named NodeName(FirstNode..FirstNode+Nodes-1).
	Nodes int
	// FirstNode is the index of the first node; a second simulator added to a running
	// cluster starts where the first one's nodes end.
	FirstNode int
	// CPU, Memory and Pods are each node's capacity (and allocatable).
	CPU    resource.Quantity
	Memory resource.Quantity
	Pods   int
	// PodStartupDelay is how long a container spends being created before it runs
	// and, after an in-place image change, how long it stays not ready.
	PodStartupDelay time.Duration
	// MaxGracePeriod caps a deleted pod's termination grace period so tests stay fast;
	// zero finalises deletions as soon as they are seen.
	MaxGracePeriod time.Duration
	// CrashLoopBackOff is the first restart back-off of a crashing container (the
	// first restart is at once, the second waits this); it doubles per restart up to
	// five minutes, as the kubelet's does. Image pulls are retried after it too.
	CrashLoopBackOff time.Duration
	// Faults decides which containers misbehave; nil means DefaultFaultRules only.
	Faults *FaultRules
	// Registry is the image registry the nodes pull from: which tags of which
	// repositories exist; nil means DefaultRegistry() (the built-in catalogue, other
	// repositories pulling).
	Registry *Registry
	// StaticCPUManager makes the nodes' CPU manager policy static: the kubelet then
	// refuses a Guaranteed pod's CPU resize as Infeasible (it cannot move exclusive CPUs).
	StaticCPUManager bool
	// PodWorkers is how many pods are synced in parallel.
	PodWorkers int
	// LeaseDuration and LeaseRenewInterval are the node heartbeat settings (kubelet: 40s, 10s).
	LeaseDuration      time.Duration
	LeaseRenewInterval time.Duration
	// NodeStatusInterval is how often the Ready condition's heartbeat is refreshed even
	// when nothing changed (the kubelet's nodeStatusReportFrequency is 5m).
	NodeStatusInterval time.Duration
	// KubeletVersion is reported in each node's nodeInfo.
	KubeletVersion string
	// API, when set, serves the kubelet API (logs, exec, attach, port-forward) on every
	// node's address; nil advertises port 10250 with nothing listening.
	API *APIConfig
}

// DefaultConfig returns three roomy nodes with the kubelet's heartbeat timings.
func DefaultConfig() Config {
	return Config{
		Nodes:              3,
		CPU:                resource.MustParse("32"),
		Memory:             resource.MustParse("256Gi"),
		Pods:               110,
		PodStartupDelay:    500 * time.Millisecond,
		MaxGracePeriod:     time.Second,
		CrashLoopBackOff:   10 * time.Second,
		PodWorkers:         16,
		LeaseDuration:      40 * time.Second,
		LeaseRenewInterval: 10 * time.Second,
		NodeStatusInterval: time.Minute,
		KubeletVersion:     "v0.0.0",
	}
}

// Validate reports the first setting that cannot work, naming the flag-level field.
func (c *Config) Validate() error {
	switch {
	case c.Nodes < 0:
		return fmt.Errorf("nodes must be 0 or more, got %d", c.Nodes)
	case c.Pods < 1:
		return fmt.Errorf("node pod capacity must be at least 1, got %d", c.Pods)
	case c.CPU.Sign() <= 0 || c.Memory.Sign() <= 0:
		return fmt.Errorf("node cpu and memory must be positive, got cpu=%s memory=%s", c.CPU.String(), c.Memory.String())
	case c.PodStartupDelay < 0 || c.MaxGracePeriod < 0 || c.CrashLoopBackOff <= 0:
		return fmt.Errorf("pod startup delay and max grace period must not be negative, and the crash back-off must be positive")
	case c.PodWorkers < 1:
		return fmt.Errorf("pod workers must be at least 1, got %d", c.PodWorkers)
	case c.LeaseRenewInterval <= 0 || c.LeaseDuration < c.LeaseRenewInterval:
		return fmt.Errorf("lease renew interval must be positive and no longer than the lease duration")
	}
	return nil
}

// NodeName is the name of simulated node i.
func NodeName(i int) string { return fmt.Sprintf("kroll-node-%d", i) }

// nodeIndex is the index in a NodeName; ok is false for other names.
func nodeIndexOf(name string) (int, bool) {
	var i int
	if _, err := fmt.Sscanf(name, "kroll-node-%d", &i); err != nil || NodeName(i) != name {
		return 0, false
	}
	return i, true
}
