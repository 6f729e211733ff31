package bench_test

import (
	"os"
	"testing"

	"github.com/kroll-dev/kroll/internal/cli/asbinary"
)

// TestMain lets TestHarnessTinyRun run `kroll bench` as this test binary (asbinary):
// the same cli.Main as cmd/kroll, with no second link of Kubernetes.
func TestMain(m *testing.M) {
	asbinary.RunIfAsked()
	os.Exit(m.Run())
}
