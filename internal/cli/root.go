// Package cli holds kroll's cobra verbs. They are thin: flags in, a call into a pkg/
// package, one clear line out on error.
package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Main runs kroll with args and returns the process exit code: 0 on success, 1 on any
// error, which is printed as one line "kroll: ..." on stderr.
func Main(args []string, stdout, stderr io.Writer) (code int) {
	catchKubectlExits(stderr)
	defer func() {
		if r := recover(); r != nil {
			exit, ok := r.(kubectlExit)
			if !ok {
				panic(r)
			}
			code = exit.code
		}
	}()
	root := NewRootCommand(stdout, stderr)
	root.SetArgs(args)
	if err := root.Execute(); err != nil {
		fmt.Fprintln(stderr, errorLine(err))
		return 1
	}
	return 0
}

// errorLine is how Main reports err: "kroll: ...", or kubectl's "error: ..." for a
// kubectlError.
func errorLine(err error) string {
	prefix := "kroll"
	if errors.As(err, new(kubectlError)) {
		prefix = "error" // a verb that prints kubectl's lines fails with kubectl's line
	}
	return prefix + ": " + oneLine(err.Error())
}

// kubectlError is an error kubectl reports the same way for the same verb (a rollout
// past its progress deadline, a timed-out watch): Main prints it as kubectl does,
// "error: ...", where kroll's own errors are "kroll: ...".
type kubectlError struct{ error }

func (e kubectlError) Unwrap() error { return e.error }

// NewRootCommand builds the kroll command tree.
func NewRootCommand(stdout, stderr io.Writer) *cobra.Command {
	// cobra offers every flag registered on pflag.CommandLine as a global flag; the
	// embedded Kubernetes packages register some there (--version) that are not kroll's.
	pflag.CommandLine = pflag.NewFlagSet("kroll", pflag.ContinueOnError)
	root := &cobra.Command{
		Use:           "kroll",
		Short:         "Kubernetes workload rollouts: controllers, CLI and a one-machine cluster",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	// Output goes where each verb writes it. Not root.SetOut: cobra writes deprecation
	// notices to OutOrStderr, which kubectl's users expect on stderr.
	root.SetErr(stderr)
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return fmt.Errorf("%s: %w; see '%s --help'", cmd.CommandPath(), err, cmd.CommandPath())
	})
	root.AddCommand(newUpCommand(stdout, stderr))
	root.AddCommand(newControllerManagerCommand(stdout, stderr))
	root.AddCommand(newBenchCommand(stdout))
	root.AddCommand(newUpstreamControllerManagerCommand())
	root.AddCommand(newRollingUpdateCommand(os.Stdin, stdout))
	root.AddCommand(newKubectlVerbs(os.Stdin, stdout, stderr).commands()...)
	return root
}

// oneLine folds a multi-line error (aggregates from upstream components) onto one line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", "; ")), " ")
}
