package deploy

import (
	"os"
	"path"
	"strings"
	"testing"
)

// The image's build context (COPY . . in the Dockerfile) leaves out every `kroll up`
// data dir, at the top or deeper, and the built binary.
func TestDockerignoreKeepsDataDirsOut(t *testing.T) {
	data, err := os.ReadFile("../.dockerignore")
	if err != nil {
		t.Fatal(err)
	}
	var patterns []string
	for _, l := range strings.Split(string(data), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			patterns = append(patterns, strings.TrimPrefix(l, "/"))
		}
	}
	// Docker's ** matches any number of directories, none included.
	matches := func(p, name string) bool {
		if rest, ok := strings.CutPrefix(p, "**/"); ok {
			parts := strings.Split(name, "/")
			for i := range parts {
				if ok, _ := path.Match(rest, strings.Join(parts[i:], "/")); ok {
					return true
				}
			}
			return false
		}
		ok, _ := path.Match(p, name)
		return ok
	}
	for _, name := range []string{".kroll", "e2e/.kroll", "bench/x/.kroll", "kroll"} {
		excluded := false
		for _, p := range patterns {
			excluded = excluded || matches(p, name)
		}
		if !excluded {
			t.Errorf(".dockerignore lets %s into the image's build context", name)
		}
	}
}
