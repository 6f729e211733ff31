package cluster

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"k8s.io/client-go/rest"
	logsapi "k8s.io/component-base/logs/api/v1"
	"k8s.io/klog/v2"
)

// klog is process-wide: every embedded component of every cluster in the process logs
// through it, and a line does not say which cluster it came from. So klog writes to the
// log file of every cluster running, and a cluster's file holds the lines of the others
// that ran beside it; one cluster at a time (kroll up, the bench), it holds its own.
var logs struct {
	sync.Mutex
	files []*os.File
}

// setupLogging sends klog to file as well (appending) until release is called, keeping
// the terminal for kroll's own messages. The verbosity is process-wide too: the last
// cluster started sets it.
func setupLogging(file string, verbosity int) (release func(), err error) {
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(file, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open log file: %w", err)
	}
	logs.Lock()
	defer logs.Unlock()
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
			f.Close()
			return nil, err
		}
	}
	logs.files = append(logs.files, f)
	setLogOutput()
	// Deprecation warnings the components' clients receive are noise to a user.
	rest.SetDefaultWarningHandler(rest.NoWarnings{})
	var once sync.Once
	return func() {
		once.Do(func() {
			logs.Lock()
			defer logs.Unlock()
			for i, open := range logs.files {
				if open == f {
					logs.files = append(logs.files[:i], logs.files[i+1:]...)
					break
				}
			}
			setLogOutput()
			f.Close()
		})
	}, nil
}

// setLogOutput points klog at logs.files; with none, klog's lines are dropped (a
// component still winding down after its cluster stopped). Called with logs held.
func setLogOutput() {
	writers := make([]io.Writer, len(logs.files))
	for i, f := range logs.files {
		writers[i] = f
	}
	klog.SetOutput(io.MultiWriter(writers...))
}
