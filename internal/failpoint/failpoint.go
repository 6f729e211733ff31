// Package failpoint lets crash tests stop a kroll command at a named point so they can
// kill it there: with KROLL_FAILPOINTS=name[,name...] in its environment, the command
// prints "failpoint <name>" on stderr when it reaches that point and then waits to be
// killed. Without the variable a failpoint costs one map lookup.
//
// Only test binaries read the variable: they call Arm (package asbinary does, for the
// test binaries that run as kroll), and nothing in cmd/kroll does, so the linker leaves
// Arm out of the kroll command, and no environment can make a user's `kroll
// rolling-update` hang.
package failpoint

import (
	"fmt"
	"os"
	"strings"
	"time"
)

// EnvVar names the failpoints to stop at.
const EnvVar = "KROLL_FAILPOINTS"

// armed are the failpoints Arm armed; nil in the kroll command.
var armed map[string]bool

// Arm arms the failpoints EnvVar names. Test binaries only.
func Arm() { armed = parse(os.Getenv(EnvVar)) }

func parse(v string) map[string]bool {
	m := map[string]bool{}
	for _, name := range strings.Split(v, ",") {
		if name = strings.TrimSpace(name); name != "" {
			m[name] = true
		}
	}
	return m
}

// Hit stops the process at name if that failpoint is armed, until it is killed.
func Hit(name string) {
	if !armed[name] {
		return
	}
	fmt.Fprintf(os.Stderr, "failpoint %s\n", name)
	for {
		time.Sleep(time.Hour)
	}
}
