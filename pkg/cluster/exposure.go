package cluster

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"k8s.io/klog/v2"
)

// A data dir holds the cluster's CA key and admin credentials. kroll makes it 0700 and
// every secret 0600; a data dir made otherwise (by hand, by an older kroll, or copied)
// may let other local users read them. kroll says so when it starts, and changes
// nothing itself: the user decides.

// pathMode is a path (relative to the data dir) and its permission bits.
type pathMode struct {
	path  string
	mode  fs.FileMode
	isDir bool
}

// exposed returns, sorted, the paths others may read or enter: directories with any
// group or other permission, secret files (keys, kubeconfigs) readable or writable by
// group or others. Certificates are public and not reported.
func exposed(paths []pathMode) []string {
	var out []string
	for _, p := range paths {
		perm := p.mode.Perm()
		secret := strings.HasSuffix(p.path, ".key") || strings.HasSuffix(p.path, "kubeconfig")
		if (p.isDir && perm&0o077 != 0) || (!p.isDir && secret && perm&0o066 != 0) {
			out = append(out, fmt.Sprintf("%s (%04o)", p.path, perm))
		}
	}
	sort.Strings(out)
	return out
}

// warnExposure tells warn (or the log, when warn is nil) what of dir others may read.
func warnExposure(dir string, warn func(string)) {
	switch w := exposureWarning(dir); {
	case w == "":
	case warn != nil:
		warn(w)
	default:
		klog.Warning(w)
	}
}

// exposureWarning is the one-line warning about dir, or "" when nothing is exposed.
func exposureWarning(dir string) string {
	var paths []pathMode
	add := func(rel string) {
		if fi, err := os.Lstat(filepath.Join(dir, rel)); err == nil {
			paths = append(paths, pathMode{path: rel, mode: fi.Mode(), isDir: fi.IsDir()})
		}
	}
	add(".")
	add("kubeconfig")
	add("pki")
	if entries, err := os.ReadDir(filepath.Join(dir, "pki")); err == nil {
		for _, e := range entries {
			add(filepath.Join("pki", e.Name()))
		}
	}
	found := exposed(paths)
	if len(found) == 0 {
		return ""
	}
	return fmt.Sprintf("data dir %s holds the cluster's keys and credentials, but other local users may read %s; to close it: chmod -R go-rwx %s",
		dir, strings.Join(found, ", "), dir)
}
