package cli

import (
	"fmt"
	"os"
	"runtime/pprof"

	"github.com/spf13/pflag"
)

// addCPUProfileFlag adds the hidden --cpuprofile flag of the controller processes: the
// benchmark harness profiles them from start to stop, which /debug/pprof/profile (a
// duration fixed up front) cannot do.
func addCPUProfileFlag(f *pflag.FlagSet, path *string) {
	f.StringVar(path, "cpuprofile", "", "write a CPU profile of this process, from start until it stops, to this file")
	_ = f.MarkHidden("cpuprofile")
}

// startCPUProfile profiles this process into path until the returned function is
// called; with no path it does nothing.
func startCPUProfile(path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}
