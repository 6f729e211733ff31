package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/kroll-dev/kroll/bench"
	"github.com/kroll-dev/kroll/pkg/cluster"
)

// readmeMarkers delimit the results in a README that `kroll bench --readme` rewrites.
const (
	readmeBegin = "<!-- results: written by kroll bench -->"
	readmeEnd   = "<!-- end of results -->"
)

func newBenchCommand(stdout io.Writer) *cobra.Command {
	o := bench.Options{OutDir: filepath.Join("bench", "results"), Reps: 3, Scale: 1, SteadyWindow: 30 * time.Second, RollbackWindow: bench.DefaultRollbackWindow}
	var readme string
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure kroll's workload controllers against upstream's, each scenario on a fresh embedded cluster",
		Long: `Run the benchmark scenarios (see bench/README.md): each on a fresh embedded cluster,
with kroll's controllers and with upstream's (kube-controller-manager's), each in a
process of its own, alternating, --reps times. The full run takes about four and a
half hours on 2 cores. Writes results.json, results.md (the tables) and results.svg
(the chart) into --out, and the tables into --readme, only once every run is done,
each file written whole. Until then the samples are kept after every run in kroll's
cache directory (named on interruption), so an interrupted run leaves --out and
--readme as they were; --resume with the same flags runs only what is missing.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			binary, err := os.Executable()
			if err != nil {
				return err
			}
			o.Binary, o.Progress = binary, stdout
			o.PartialFile = bench.PartialFileFor(o.OutDir)
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			if readme != "" {
				// A README without the markers is found out before hours of runs.
				if _, err := readmeWithResults(readme, ""); err != nil {
					return err
				}
			}
			results, err := bench.Run(ctx, o)
			if err != nil {
				if results != nil && len(results.Samples) > 0 {
					fmt.Fprintf(stdout, "incomplete: %s and --readme untouched; %d samples kept in %s, --resume with the same flags runs the rest\n",
						o.OutDir, len(results.Samples), o.PartialFile)
				}
				return err
			}
			if readme != "" {
				text, err := readmeWithResults(readme, results.Markdown())
				if err == nil {
					err = bench.WriteFileAtomic(readme, []byte(text))
				}
				if err != nil {
					return err
				}
			}
			fmt.Fprintf(stdout, "results in %s\n", o.OutDir)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.OutDir, "out", o.OutDir, "directory for results.json, results.md and results.svg, written when the run is complete")
	f.IntVar(&o.Reps, "reps", o.Reps, "runs of each scenario with each controller set")
	f.Float64Var(&o.Scale, "scale", o.Scale, "multiplies every scenario's size (0.05: 50 replicas where the full run has 1,000)")
	f.StringSliceVar(&o.Only, "only", nil, "run only these scenarios (names as in results.json, e.g. rolling-1000-qps20)")
	f.BoolVar(&o.Resume, "resume", false, "keep the runs of the interrupted run with the same --out (or else those in --out/results.json) and run only the missing ones")
	f.DurationVar(&o.SteadyWindow, "steady-window", o.SteadyWindow, "how long the steady-state scenario settles, then measures")
	f.DurationVar(&o.RollbackWindow, "rollback-window", o.RollbackWindow, "how long the rollback scenario watches a rollout to a crash-looping image (upstream's runs take all of it; under 60s it sees no progress deadline)")
	f.StringVar(&o.ProfileDir, "cpuprofile-dir", "", "write into this directory CPU profiles of the cluster's process over each measured change and of each controller process, and a heap profile of kroll's controllers at its end")
	f.StringVar(&readme, "readme", "", "also write the tables into this README, between its result markers")
	return cmd
}

// readmeWithResults is the README at path with results between its markers.
func readmeWithResults(path, results string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("--readme: %w", err)
	}
	text := string(data)
	begin, end := strings.Index(text, readmeBegin), strings.Index(text, readmeEnd)
	if begin < 0 || end < begin {
		return "", fmt.Errorf("--readme: %s has no %q … %q section to write the results into", path, readmeBegin, readmeEnd)
	}
	return text[:begin+len(readmeBegin)] + "\n" + results + text[end:], nil
}

// newUpstreamControllerManagerCommand is the bench harness's counterpart of `kroll
// controller-manager`: kube-controller-manager with only its workload controllers, in a
// process of its own. Hidden: it is a measuring instrument, not a way to run a cluster.
func newUpstreamControllerManagerCommand() *cobra.Command {
	var kubeconfig, logFile, cpuProfile string
	var qps float32
	var burst int
	cmd := &cobra.Command{
		Use:    "upstream-controller-manager",
		Short:  "Run kube-controller-manager's workload controllers only (for kroll bench)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if kubeconfig == "" || logFile == "" {
				return fmt.Errorf("--kubeconfig and --log-file are required")
			}
			stopProfile, err := startCPUProfile(cpuProfile)
			if err != nil {
				return err
			}
			defer stopProfile()
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			err = cluster.RunUpstreamWorkloadControllers(ctx, kubeconfig, qps, burst, logFile)
			if ctx.Err() != nil {
				return nil // stopped
			}
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig of the cluster")
	f.StringVar(&logFile, "log-file", "", "file the controllers' logs are appended to")
	f.Float32Var(&qps, "kube-api-qps", 20, "each controller's API requests per second; negative: no limit")
	f.IntVar(&burst, "kube-api-burst", 30, "each controller's API request burst")
	addCPUProfileFlag(f, &cpuProfile)
	return cmd
}
