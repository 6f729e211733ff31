package cluster

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"k8s.io/client-go/rest"
	logsapi "k8s.io/component-base/logs/api/v1"
	"k8s.io/klog/v2"
)

var (
	logMu sync.Mutex
	// logFile is where klog writes now; a later cluster in the same process replaces
	// (and closes) it.
	logFile *os.File
)

// setupLogging sends klog, which every embedded component logs through, to file
// (appending), keeping the terminal for kroll's own messages.
func setupLogging(file string, verbosity int) error {
	logMu.Lock()
	defer logMu.Unlock()
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(file, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("open log file: %w", err)
	}
	// Several components validate and apply logging options of their own; the same
	// settings applied again must not be an error.
	logsapi.ReapplyHandling = logsapi.ReapplyHandlingIgnoreUnchanged
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	for name, value := range map[string]string{
		"logtostderr":     "false",
		"alsologtostderr": "false",
		"stderrthreshold": "FATAL",
		"one_output":      "true",
		"v":               strconv.Itoa(verbosity),
	} {
		if err := fs.Set(name, value); err != nil {
			return err
		}
	}
	klog.SetOutput(f)
	if logFile != nil {
		logFile.Close()
	}
	logFile = f
	// Deprecation warnings the components' clients receive are noise to a user.
	rest.SetDefaultWarningHandler(rest.NoWarnings{})
	return nil
}
