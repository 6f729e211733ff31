package clustertest

import (
	"bufio"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kroll-dev/kroll/pkg/cluster"
)

// Refusals are the lines of a cluster's log that tell of a request of one of its
// components refused as forbidden: RBAC naming the component's user, or the
// NodeRestriction admission naming a simulated node. A namespace being deleted also
// answers "forbidden" (to every client); those lines are not a role's fault.
func Refusals(log io.Reader) []string {
	users := cluster.ComponentUsers()
	var out []string
	s := bufio.NewScanner(log)
	s.Buffer(make([]byte, 1<<20), 1<<20)
	for s.Scan() {
		l := s.Text()
		if !strings.Contains(l, "forbidden") || strings.Contains(l, "being terminated") {
			continue
		}
		named := strings.Contains(l, `node \"kroll-node-`) || strings.Contains(l, `node "kroll-node-`)
		for _, u := range users {
			named = named || strings.Contains(l, u)
		}
		if named {
			out = append(out, l)
		}
	}
	return out
}

// CheckNoRefusals fails t if the log of the cluster in dataDir (kroll.log) tells of a
// component refused: every component must be able to do its work with its own
// identity's roles.
func CheckNoRefusals(t testing.TB, dataDir string) {
	t.Helper()
	f, err := os.Open(filepath.Join(dataDir, "kroll.log"))
	if err != nil {
		t.Errorf("the cluster's log: %v", err)
		return
	}
	defer f.Close()
	if lines := Refusals(f); len(lines) > 0 {
		if len(lines) > 20 {
			lines = lines[:20]
		}
		t.Errorf("a component of the cluster was refused as forbidden (%s):\n%s", f.Name(), strings.Join(lines, "\n"))
	}
}
