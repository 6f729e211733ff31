package cluster

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestExposed(t *testing.T) {
	for _, tc := range []struct {
		name  string
		paths []pathMode
		want  string
	}{
		{"as kroll makes it: nothing", []pathMode{{".", 0o700, true}, {"pki", 0o700, true}, {"pki/ca.key", 0o600, false}, {"pki/ca.crt", 0o644, false}, {"kubeconfig", 0o600, false}}, ""},
		{"an old data dir 0755: the dir", []pathMode{{".", 0o755, true}, {"pki", 0o700, true}}, ". (0755)"},
		{"a key readable by the group", []pathMode{{".", 0o700, true}, {"pki/ca.key", 0o640, false}}, "pki/ca.key (0640)"},
		{"a kubeconfig readable by all", []pathMode{{"kubeconfig", 0o644, false}, {"pki/controller-manager.kubeconfig", 0o604, false}}, "kubeconfig (0644) pki/controller-manager.kubeconfig (0604)"},
		{"certificates are public", []pathMode{{"pki/ca.crt", 0o644, false}}, ""},
		{"a dir others may only enter", []pathMode{{"pki", 0o711, true}}, "pki (0711)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := strings.Join(exposed(tc.paths), " "); got != tc.want {
				t.Errorf("exposed = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestExposureWarning_namesWhatAndHow(t *testing.T) {
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "pki"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "pki", "ca.key"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if w := exposureWarning(dir); w != "" {
		t.Errorf("a data dir as kroll makes it is warned about: %s", w)
	}
	if err := os.Chmod(filepath.Join(dir, "pki", "ca.key"), 0o644); err != nil {
		t.Fatal(err)
	}
	w := exposureWarning(dir)
	if !strings.Contains(w, "pki/ca.key (0644)") || !strings.HasSuffix(w, "chmod -R go-rwx "+dir) || strings.Contains(w, "\n") {
		t.Errorf("warning %q does not name pki/ca.key and the fix in one line", w)
	}
}
