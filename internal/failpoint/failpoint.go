// Package failpoint lets crash tests stop a kroll command at a named point so they can
// kill it there: with KROLL_FAILPOINTS=name[,name...] in its environment, the command
// prints "failpoint <name>" on stderr when it reaches that point and then waits to be
// killed. Without the variable a failpoint costs one map lookup.
package failpoint

import (
	"fmt"
	"os"
	"strings"
	"time"
)

// EnvVar names the failpoints to stop at.
const EnvVar = "KROLL_FAILPOINTS"

var armed = parse(os.Getenv(EnvVar))

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
