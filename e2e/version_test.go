package e2e

import (
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A kroll built as a user builds it (`go build ./cmd/kroll`) reports the version of the
// k8s.io/kubernetes module it was built from, read from its build information, not a
// version written into the code. The build sets the code's fallback to a version no
// module has, so that only the build information can give the right one; the version
// expected is go.mod's, as `go list -m` reads it.
func TestKrollUp_reportsTheKubernetesModulesVersion(t *testing.T) {
	t.Parallel()
	want, err := moduleVersion(kubernetesModule)
	if err != nil {
		t.Fatal(err)
	}
	const notAModule = "v0.0.0-fallback"
	bin := filepath.Join(t.TempDir(), "kroll")
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	build := exec.CommandContext(ctx, "go", "build", "-o", bin,
		"-ldflags", "-X github.com/kroll-dev/kroll/pkg/cluster.fallbackKubernetesVersion="+notAModule, "./cmd/kroll")
	build.Dir = ".."
	began := time.Now()
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/kroll: %v\n%s", err, out)
	}
	t.Logf("go build ./cmd/kroll: %s", time.Since(began).Round(time.Second))

	dataDir := filepath.Join(t.TempDir(), "state")
	up := startUp(t, bin, "--data-dir", dataDir, "--port", "0", "--etcd-unsafe-no-fsync")
	if line := "kroll: starting Kubernetes " + want + " in "; !strings.Contains(up.errOut(), line) {
		t.Errorf("kroll up did not print %q; stderr:\n%s", line, up.errOut())
	}
	out := mustKubectl(t, filepath.Join(dataDir, "kubeconfig"), "version", "-o", "json")
	var v struct {
		Server struct{ GitVersion, Major, Minor string } `json:"serverVersion"`
	}
	// kubectl may warn of a version skew on stderr, which mustKubectl's output holds too.
	js := out
	if i, j := strings.Index(out, "{"), strings.LastIndex(out, "}"); i >= 0 && j > i {
		js = out[i : j+1]
	}
	if err := json.Unmarshal([]byte(js), &v); err != nil {
		t.Fatalf("kubectl version -o json: %v\n%s", err, out)
	}
	parts := strings.Split(strings.TrimPrefix(want, "v"), ".")
	if v.Server.GitVersion != want || v.Server.Major != parts[0] || v.Server.Minor != parts[1] {
		t.Errorf("the API server reports %+v; want %s (major %s, minor %s), the k8s.io/kubernetes of go.mod", v.Server, want, parts[0], parts[1])
	}
}
