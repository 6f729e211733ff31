// Command kroll runs Kubernetes workload rollouts: `kroll up` starts a whole cluster on
// one machine. See README.md.
package main

import (
	"os"

	"github.com/kroll-dev/kroll/internal/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:], os.Stdout, os.Stderr))
}
