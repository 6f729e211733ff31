package cli

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
)

// run runs kroll's Main as the kroll binary would and returns its exit code and output.
func run(args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = Main(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestMissingKubeconfigIsNamed(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nonexistent")
	want := "kroll: kubeconfig " + missing + " does not exist; pass --kubeconfig with the path of a kubeconfig file\n"
	for _, args := range [][]string{
		{"controller-manager"},
		{"status"},
		{"rollout", "status", "deployment/web"},
		{"rollout", "plan", "deployment/web", "--image", "nginx=nginx:1.26"},
		{"rollout", "watch", "deployment/web"},
		{"rollout", "timeline", "deployment/web", "-o", filepath.Join(t.TempDir(), "web.svg")},
		{"rollout", "history", "deployment/web", "--diff", "1", "2"},
		{"rolling-update", "frontend", "--image", "nginx:1.16.1"},
	} {
		code, stdout, stderr := run(append(args, "--kubeconfig", missing)...)
		if code != 1 || stdout != "" || stderr != want {
			t.Errorf("kroll %s --kubeconfig %s: exit %d, stdout %q, stderr %q; want exit 1 and %q",
				strings.Join(args, " "), missing, code, stdout, stderr, want)
		}
	}

	// kubectl's own verbs say what kubectl says.
	code, _, stderr := run("get", "pods", "--kubeconfig", missing)
	if wantKubectl := "error: stat " + missing + ": no such file or directory\n"; code != 1 || stderr != wantKubectl {
		t.Errorf("kroll get pods --kubeconfig %s: exit %d, stderr %q; want kubectl's %q", missing, code, stderr, wantKubectl)
	}
}

func TestControllerManager_kubeconfigEnvNamingNoFile(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nonexistent")
	t.Setenv("KUBECONFIG", missing)
	code, _, stderr := run("controller-manager")
	want := "kroll: $KUBECONFIG (" + missing + ") names no file that exists; set it to a kubeconfig file or pass --kubeconfig\n"
	if code != 1 || stderr != want {
		t.Errorf("exit %d, stderr %q; want exit 1 and %q", code, stderr, want)
	}
}
