// Package asbinary lets a package's test binary be the kroll command for the processes
// its tests start. Tests that run kroll as a user does (kroll up, the rollout verbs,
// kroll controller-manager, kroll bench) exec their own binary, which runs cmd/kroll's
// cli.Main, instead of linking Kubernetes a second time with `go build ./cmd/kroll`: on
// two cores that link takes half a minute of both, once for every package that needs
// the command.
//
// Use it first thing in TestMain:
//
//	func TestMain(m *testing.M) {
//		asbinary.RunIfAsked()
//		os.Exit(m.Run())
//	}
package asbinary

import (
	"os"

	"github.com/kroll-dev/kroll/internal/cli"
	"github.com/kroll-dev/kroll/internal/failpoint"
)

// EnvVar, set to "1" in a process's environment, makes a test binary that calls
// RunIfAsked run as kroll.
const EnvVar = "KROLL_TEST_BINARY_AS_KROLL"

// RunIfAsked runs kroll with the process's arguments and exits with its code when the
// process was started as kroll. Otherwise it sets EnvVar in the process's environment,
// so that every process the tests start from Path with that environment (exec.Cmd's
// default, or os.Environ() plus more) is kroll, as are the processes kroll starts from
// its own executable (kroll bench's controller processes); and it returns.
func RunIfAsked() {
	if os.Getenv(EnvVar) == "1" {
		failpoint.Arm() // crash tests' failpoints: in test binaries only
		os.Exit(cli.Main(os.Args[1:], os.Stdout, os.Stderr))
	}
	if err := os.Setenv(EnvVar, "1"); err != nil {
		panic(err)
	}
}

// Path is the path of this binary: kroll, when started with this process's
// environment after RunIfAsked.
func Path() (string, error) {
	return os.Executable()
}
