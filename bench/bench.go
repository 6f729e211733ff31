// Package bench is kroll's benchmark harness: each scenario runs on a fresh embedded
// cluster with kroll's workload controllers and with upstream's, alternating, and the
// results (medians and spreads, kroll / upstream ratios) are written as JSON, a
// Markdown table and an SVG chart. `kroll bench` runs it; bench/README.md has the
// figures.
package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime/pprof"
	"time"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kroll-dev/kroll/pkg/cluster"
	"github.com/kroll-dev/kroll/pkg/kubelet"
)

// Options configure one harness run.
type Options struct {
	// Binary is the kroll binary the controller processes are started from.
	Binary string
	// OutDir receives results.json, results.md and results.svg, the results of record,
	// once the run is complete, each file written whole (a temporary file renamed);
	// an interrupted or failed run leaves it as it was.
	OutDir string
	// PartialFile keeps the samples of a run while it is incomplete, after every
	// sample, for Resume; it is removed when the run completes. Outside OutDir, so the
	// results of record stay untouched until the end (PartialFileFor(OutDir) when empty).
	PartialFile string
	// Reps is how many times each scenario runs with each controller set (≥ 1).
	Reps int
	// Scale multiplies every scenario's size (1: 1,000 and 5,000 replicas; 0.05: 50
	// and 250). Sizes are rounded and kept at least 1.
	Scale float64
	// Only, when not empty, names the scenarios to run (Scenario.Name).
	Only []string
	// Resume keeps the samples of an earlier run at the same scale, those of the
	// interrupted run in PartialFile or else OutDir's results.json, and runs only the
	// missing ones, so an interrupted run can be finished.
	Resume bool
	// SteadyWindow is how long the steady-state scenario measures idle controllers.
	SteadyWindow time.Duration
	// RollbackWindow is how long the rollback scenario watches a rollout to a
	// crash-looping image (DefaultRollbackWindow when zero): upstream's arm never
	// recovers, so each of its runs takes the whole window.
	RollbackWindow time.Duration
	// ProfileDir, when set, receives a CPU profile of the harness's process (the
	// cluster) over each measured change, <scenario>-<arm>-<rep>.pprof; a CPU profile of
	// the measured controller process, from its start (the scenario's settle included)
	// until it stops, <scenario>-<arm>-<rep>.controllers.pprof; and a heap profile of
	// kroll's controllers at the change's end, <scenario>-<arm>-<rep>.heap.pprof.
	ProfileDir string
	// Progress receives one line per run.
	Progress io.Writer
}

// Run runs the scenarios and, once all have run, writes the results into OutDir; it
// returns them too. Until then the samples go to PartialFile only: a run stopped by ctx
// or by a failure returns the samples it has and its error, and OutDir is untouched.
func Run(ctx context.Context, o Options) (*Results, error) {
	if o.Reps < 1 {
		return nil, fmt.Errorf("--reps must be at least 1, got %d", o.Reps)
	}
	if o.Scale <= 0 {
		return nil, fmt.Errorf("--scale must be positive, got %g", o.Scale)
	}
	if o.SteadyWindow <= 0 {
		o.SteadyWindow = 30 * time.Second
	}
	if o.RollbackWindow <= 0 {
		o.RollbackWindow = DefaultRollbackWindow
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	scenarios, err := selectScenarios(Scenarios(o.Scale, o.SteadyWindow, o.RollbackWindow), o.Only)
	if err != nil {
		return nil, err
	}
	if o.PartialFile == "" {
		o.PartialFile = PartialFileFor(o.OutDir)
	}
	results := newResults(o.Scale)
	if o.Resume {
		earlier, err := readEarlier(o.PartialFile, filepath.Join(o.OutDir, resultsJSON))
		switch {
		case err != nil:
			return nil, err
		case earlier == nil:
		case earlier.Scale != o.Scale:
			return nil, fmt.Errorf("--resume: the earlier run holds samples at scale %g, not %g", earlier.Scale, o.Scale)
		default:
			results = earlier
		}
	}
	results.Machine = describeMachine()
	for _, s := range scenarios {
		results.addScenario(s)
		for rep := 1; rep <= o.Reps; rep++ {
			for _, arm := range alternate(s.Arms, rep) {
				if results.has(s.Name, arm.Name, rep) {
					continue
				}
				fmt.Fprintf(o.Progress, "%s  %s, %s, run %d/%d: ", time.Now().Format("15:04:05"), s.Title, arm.Name, rep, o.Reps)
				sample, err := runOnce(ctx, o, s, arm, rep)
				if err != nil {
					fmt.Fprintln(o.Progress, "failed")
					return results, fmt.Errorf("%s, %s, run %d: %w", s.Name, arm.Name, rep, err)
				}
				sample.Rep = rep
				fmt.Fprintln(o.Progress, sample.summary())
				results.Samples = append(results.Samples, sample)
				if err := results.writePartial(o.PartialFile); err != nil {
					return results, err
				}
			}
		}
	}
	if err := os.MkdirAll(o.OutDir, 0o755); err != nil {
		return results, err
	}
	if err := results.write(o.OutDir); err != nil {
		return results, err
	}
	if err := os.Remove(o.PartialFile); err != nil && !errors.Is(err, os.ErrNotExist) {
		return results, err
	}
	return results, nil
}

// alternate orders the arms of repetition rep: as listed on odd ones, reversed on even
// ones, so that neither controller set always runs first on a machine warming up.
func alternate(arms []Arm, rep int) []Arm {
	if rep%2 == 1 {
		return arms
	}
	out := make([]Arm, 0, len(arms))
	for i := len(arms) - 1; i >= 0; i-- {
		out = append(out, arms[i])
	}
	return out
}

// run is one scenario run with one arm on its own fresh cluster.
type run struct {
	arm     Arm
	cluster *cluster.Cluster
	client  kubernetes.Interface
	// informers are scoped to the bench namespace; a scenario starts the ones it needs.
	informers informers.SharedInformerFactory
	// controllers is the process running arm's controllers, nil for NoControllers.
	controllers *controllerProcess
}

// namespace is where every scenario creates its objects.
const namespace = "default"

// runOnce starts a cluster, lets the scenario prepare its workload with the arm's
// controllers unthrottled, restarts the controllers at the scenario's limits, and
// measures the scenario's change.
func runOnce(ctx context.Context, o Options, s Scenario, arm Arm, rep int) (Sample, error) {
	dir, err := os.MkdirTemp("", "kroll-bench-")
	if err != nil {
		return Sample{}, err
	}
	defer os.RemoveAll(dir)
	k := kubelet.DefaultConfig()
	k.Nodes = s.Nodes
	k.MaxGracePeriod = 0
	c, err := cluster.Start(ctx, cluster.Config{
		DataDir:             dir,
		WorkloadControllers: cluster.WorkloadControllersNone,
		Kubelet:             k,
		EtcdUnsafeNoFsync:   true,
		ReadyTimeout:        5 * time.Minute,
	})
	if err != nil {
		return Sample{}, err
	}
	defer c.Stop()
	ctx, cancel := context.WithCancel(ctx)
	r := &run{arm: arm, cluster: c, client: c.Client,
		informers: informers.NewSharedInformerFactoryWithOptions(c.Client, 0, informers.WithNamespace(namespace))}
	defer func() {
		cancel()
		r.informers.Shutdown()
	}()
	defer r.stopControllers()
	logFile := filepath.Join(dir, "controllers.log")
	sample := Sample{Scenario: s.Name, Arm: arm.Name, Started: time.Now().UTC().Truncate(time.Second), Kroll: krollRevision()}
	fail := func(err error) (Sample, error) {
		if r.controllers != nil {
			if gone, exitErr := r.controllers.exited(); gone {
				err = fmt.Errorf("%w (the %s controllers exited: %v; %s)", err, arm.Controllers, exitErr, lastLines(logFile, 3))
			}
		}
		if cerr := c.Err(); cerr != nil {
			err = fmt.Errorf("%w (cluster: %v)", err, cerr)
		}
		return sample, err
	}

	profileAddr := ""                      // where the measured kroll process serves its profiles
	var serving cluster.ServingCertificate // and its certificate, the cluster CA's
	if arm.Controllers != NoControllers {
		if r.controllers, err = startControllers(o.Binary, arm.Controllers, c.KubeconfigPath, Unthrottled, logFile, "", cluster.ServingCertificate{}, ""); err != nil {
			return fail(err)
		}
	}
	if s.prepare != nil {
		if err := s.prepare(ctx, r); err != nil {
			return fail(fmt.Errorf("prepare: %w", err))
		}
	}
	if arm.Controllers != NoControllers {
		// The measured process starts fresh at the scenario's limits; its informers
		// sync before the change is made.
		r.stopControllers()
		if o.ProfileDir != "" && arm.Controllers == Kroll {
			port, err := cluster.FreePort()
			if err != nil {
				return fail(err)
			}
			profileAddr = fmt.Sprintf("127.0.0.1:%d", port)
			if serving, err = c.IssueServingCertificate("bench-controllers-serving", net.ParseIP("127.0.0.1")); err != nil {
				return fail(err)
			}
		}
		cpuProfile := ""
		if o.ProfileDir != "" {
			if err := os.MkdirAll(o.ProfileDir, 0o755); err != nil {
				return fail(err)
			}
			cpuProfile = filepath.Join(o.ProfileDir, fmt.Sprintf("%s-%s-%d.controllers.pprof", s.Name, arm.Name, rep))
		}
		if r.controllers, err = startControllers(o.Binary, arm.Controllers, c.KubeconfigPath, s.Limits, logFile, profileAddr, serving, cpuProfile); err != nil {
			return fail(err)
		}
		if err := sleep(ctx, s.settle); err != nil {
			return fail(err)
		}
	}
	before, err := r.usage()
	if err != nil {
		return fail(err)
	}
	requestsBefore, writesBefore, err := countRequests(ctx, c.Client)
	if err != nil {
		return fail(err)
	}
	stopProfile, err := startProfile(o.ProfileDir, fmt.Sprintf("%s-%s-%d.pprof", s.Name, arm.Name, rep))
	if err != nil {
		return fail(err)
	}
	peak := r.watchPeakMemory()
	clusterBefore := ownCPUSeconds()
	m, err := s.measure(ctx, r)
	sample.ClusterCPUSeconds = ownCPUSeconds() - clusterBefore
	if own, uerr := usageOf(os.Getpid()); uerr == nil {
		sample.ClusterMiB = own.anonMiB
	}
	peakMiB := peak()
	if perr := stopProfile(); perr != nil && err == nil {
		err = perr
	}
	if profileAddr != "" && err == nil {
		err = fetchHeapProfile(ctx, c.RESTConfig, profileAddr, filepath.Join(o.ProfileDir, fmt.Sprintf("%s-%s-%d.heap.pprof", s.Name, arm.Name, rep)))
	}
	if err != nil {
		return fail(err)
	}
	after, err := r.usage()
	if err != nil {
		return fail(err)
	}
	requestsAfter, writesAfter, err := countRequests(ctx, c.Client)
	if err != nil {
		return fail(err)
	}
	sample.Seconds = m.seconds
	sample.PodWritesPerSecond = m.podWritesPerSecond
	sample.ControllerCores, sample.ClusterCores, sample.PodStatusWrites = m.cores, m.clusterCores, m.podStatusWrites
	sample.FailingToRollbackSeconds, sample.FailingToReadySeconds = m.failingToRollback, m.failingToReady
	sample.DeadlineExceededSeconds, sample.NotRecoveredWithinSeconds = m.deadlineExceeded, m.notRecoveredWithin
	sample.LeastAvailabilityMargin = m.leastAvailabilityMargin
	sample.Requests = requestsAfter.since(requestsBefore)
	sample.Writes = writesAfter.since(writesBefore)
	if r.controllers != nil {
		sample.ControllerCPUSeconds = after.cpuSeconds - before.cpuSeconds
		sample.ControllerPeakMiB = max(peakMiB, after.anonMiB)
		sample.ControllerMiB = after.anonMiB
	}
	return sample, nil
}

// usage is the controller process's usage so far; zero without one.
func (r *run) usage() (usage, error) {
	if r.controllers == nil {
		return usage{}, nil
	}
	if gone, err := r.controllers.exited(); gone {
		return usage{}, fmt.Errorf("the %s controllers exited: %v", r.arm.Controllers, err)
	}
	return usageOf(r.controllers.cmd.Process.Pid)
}

// watchPeakMemory samples the controller process's memory every 250 ms until the
// returned function is called, which returns the most seen.
func (r *run) watchPeakMemory() func() float64 {
	stop, done := make(chan struct{}), make(chan float64)
	go func() {
		peak := 0.0
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		for {
			if u, err := r.usage(); err == nil {
				peak = max(peak, u.anonMiB)
			}
			select {
			case <-stop:
				done <- peak
				return
			case <-tick.C:
			}
		}
	}()
	return func() float64 {
		close(stop)
		return <-done
	}
}

func (r *run) stopControllers() {
	if r.controllers != nil {
		r.controllers.stop()
		r.controllers = nil
	}
}

// startProfile starts a CPU profile of this process into dir/name, when dir is set;
// the returned function stops it.
func startProfile(dir, name string) (stop func() error, err error) {
	if dir == "" {
		return func() error { return nil }, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	f, err := os.Create(filepath.Join(dir, name))
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() error {
		pprof.StopCPUProfile()
		return f.Close()
	}, nil
}

// fetchHeapProfile saves the heap profile served at addr (/debug/pprof/heap) to file,
// asking as cfg's identity (the cluster's admin, allowed every path), and verifying the
// server against cfg's CA, the cluster CA, which signed the certificate kroll serves.
func fetchHeapProfile(ctx context.Context, cfg *rest.Config, addr, file string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+addr+"/debug/pprof/heap", nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("heap profile: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("heap profile: %s", resp.Status)
	}
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-time.After(d):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
