package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// kubectlEnv names a kubectl binary for the scenarios to drive instead of the one on
// PATH or the one built from the module.
const kubectlEnv = "KROLL_E2E_KUBECTL"

// kubectlPath is the kubectl the scenarios run, resolved once by TestMain.
var kubectlPath string

// kubernetesModule is the module kubectl is built from when none is given or on PATH:
// the one kroll embeds, already in the module graph (go.sum), so building it needs
// nothing new from the network.
const kubernetesModule = "k8s.io/kubernetes"

// resolveKubectl finds the kubectl the scenarios drive: $KROLL_E2E_KUBECTL if set
// (which must then be an executable file), else kubectl on PATH, else one built from
// k8s.io/kubernetes/cmd/kubectl into the user's cache directory, keyed by the module's
// version and reused by later runs. The scenarios are about kroll, not about whether
// the machine has kubectl: a missing one is built, never a reason to skip.
func resolveKubectl() (string, error) {
	if p, ok := os.LookupEnv(kubectlEnv); ok {
		if err := executable(p); err != nil {
			return "", fmt.Errorf("$%s: %v", kubectlEnv, err)
		}
		return p, nil
	}
	if p, err := exec.LookPath("kubectl"); err == nil {
		return p, nil
	}
	version, err := moduleVersion(kubernetesModule)
	if err != nil {
		return "", err
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("kubectl is not on PATH and there is no cache directory to build it into (%v); set $%s to a kubectl binary", err, kubectlEnv)
	}
	return buildKubectl(filepath.Join(cache, "kroll", "kubectl-"+version), version)
}

// buildKubectl returns dir/kubectl, building it first unless an earlier run did. The
// binary is built in a temporary directory next to it and renamed into place, so a
// concurrent `go test` (another package, another checkout) sees either no kubectl or a
// whole one; two concurrent builds both rename, and the later wins with the same bytes.
func buildKubectl(dir, version string) (string, error) {
	path := filepath.Join(dir, "kubectl")
	if executable(path) == nil {
		return path, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("kubectl is not on PATH; building it: %v; set $%s to a kubectl binary", err, kubectlEnv)
	}
	tmp, err := os.MkdirTemp(dir, "build-")
	if err != nil {
		return "", fmt.Errorf("kubectl is not on PATH; building it: %v; set $%s to a kubectl binary", err, kubectlEnv)
	}
	defer os.RemoveAll(tmp)
	fmt.Fprintf(os.Stderr, "e2e: kubectl is not on PATH: building %s/cmd/kubectl %s into %s (once; later runs reuse it)\n", kubernetesModule, version, path)
	// Cold, this compiles much of Kubernetes: minutes on 2 cores. Warm (kroll built
	// before), seconds to link.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "go", "build",
		"-ldflags", "-X k8s.io/component-base/version.gitVersion="+version,
		"-o", filepath.Join(tmp, "kubectl"), kubernetesModule+"/cmd/kubectl").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("kubectl is not on PATH and building it failed (go build %s/cmd/kubectl: %v); set $%s to a kubectl binary\n%s", kubernetesModule, err, kubectlEnv, out)
	}
	if err := os.Rename(filepath.Join(tmp, "kubectl"), path); err != nil {
		return "", fmt.Errorf("kubectl is not on PATH; building it: %v; set $%s to a kubectl binary", err, kubectlEnv)
	}
	return path, nil
}

// moduleVersion is the version of module mod in this module's graph, as go.mod pins
// it. (A test binary carries no dependency versions in its build information.)
func moduleVersion(mod string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "go", "list", "-m", "-f", "{{.Version}}", mod).CombinedOutput()
	version := strings.TrimSpace(string(out))
	if err != nil || !strings.HasPrefix(version, "v") {
		return "", fmt.Errorf("kubectl is not on PATH and the version of %s to build it from is unknown (go list -m %s: %v %s); set $%s to a kubectl binary", mod, mod, err, version, kubectlEnv)
	}
	return version, nil
}

// executable reports why path is not an executable file, or nil.
func executable(path string) error {
	info, err := os.Stat(path)
	switch {
	case err != nil:
		return err
	case info.IsDir():
		return fmt.Errorf("%s is a directory", path)
	case info.Mode().Perm()&0o111 == 0:
		return fmt.Errorf("%s is not executable", path)
	}
	return nil
}
