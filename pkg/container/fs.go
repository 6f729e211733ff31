package container

import (
	"path"
	"sort"
	"strings"
)

// FS is one container instance's file system: the files its image ships plus whatever
// its command and `kubectl exec` wrote since it started. It lives as long as the
// instance: a restarted container starts again from the image's files, as on a real
// node where the writable layer belongs to the container, not the pod.
//
// Paths are absolute and cleaned ("/usr/share/nginx/html/index.html"); a relative path
// is taken from "/". Directories exist implicitly above every file and explicitly once
// made by mkdir. The zero FS is not usable; use NewFS.
type FS struct {
	files map[string]string
	dirs  map[string]bool
}

// NewFS is a file system holding files (path → content), with their parent directories.
func NewFS(files map[string]string) *FS {
	fs := &FS{files: map[string]string{}, dirs: map[string]bool{"/": true}}
	for p, content := range files {
		fs.Write(p, content)
	}
	return fs
}

// Clone is an independent copy: what the copy's owner writes the original does not see.
func (fs *FS) Clone() *FS {
	c := &FS{files: make(map[string]string, len(fs.files)), dirs: make(map[string]bool, len(fs.dirs))}
	for k, v := range fs.files {
		c.files[k] = v
	}
	for k := range fs.dirs {
		c.dirs[k] = true
	}
	return c
}

func clean(p string) string {
	if !strings.HasPrefix(p, "/") {
		p = "/" + p
	}
	return path.Clean(p)
}

// Read is a file's content; ok is false for a missing file or a directory.
func (fs *FS) Read(p string) (string, bool) {
	c, ok := fs.files[clean(p)]
	return c, ok
}

// IsDir tells an existing directory.
func (fs *FS) IsDir(p string) bool { return fs.dirs[clean(p)] }

// Exists tells an existing file or directory.
func (fs *FS) Exists(p string) bool {
	p = clean(p)
	_, ok := fs.files[p]
	return ok || fs.dirs[p]
}

// Write creates or replaces a file, making its parent directories. It fails (false)
// when p names a directory.
func (fs *FS) Write(p, content string) bool {
	p = clean(p)
	if fs.dirs[p] {
		return false
	}
	fs.mkdirAll(path.Dir(p))
	fs.files[p] = content
	return true
}

// Mkdir makes a directory and its parents; false when a file is in the way.
func (fs *FS) Mkdir(p string) bool {
	p = clean(p)
	for q := p; ; q = path.Dir(q) {
		if _, ok := fs.files[q]; ok {
			return false
		}
		if q == "/" {
			break
		}
	}
	fs.mkdirAll(p)
	return true
}

func (fs *FS) mkdirAll(p string) {
	for q := p; !fs.dirs[q]; q = path.Dir(q) {
		fs.dirs[q] = true
	}
}

// Remove deletes a file, or a directory with everything under it when recursive;
// false when nothing was there (or a directory without recursive).
func (fs *FS) Remove(p string, recursive bool) bool {
	p = clean(p)
	if _, ok := fs.files[p]; ok {
		delete(fs.files, p)
		return true
	}
	if !fs.dirs[p] || !recursive || p == "/" {
		return false
	}
	for _, k := range fs.under(p) {
		delete(fs.files, k)
		delete(fs.dirs, k)
	}
	delete(fs.dirs, p)
	return true
}

// Move renames a file or a directory (with its contents). A destination that is an
// existing directory receives the source under its own base name, as mv does.
func (fs *FS) Move(from, to string) bool {
	if strings.HasSuffix(to, "/") && !fs.IsDir(to) {
		return false
	}
	from, to = clean(from), clean(to)
	if fs.dirs[to] {
		to = path.Join(to, path.Base(from))
	}
	if c, ok := fs.files[from]; ok {
		if !fs.Write(to, c) {
			return false
		}
		if from != to {
			delete(fs.files, from)
		}
		return true
	}
	if !fs.dirs[from] || from == "/" || strings.HasPrefix(to+"/", from+"/") {
		return false
	}
	fs.mkdirAll(to)
	for _, k := range fs.under(from) {
		dst := to + strings.TrimPrefix(k, from)
		if c, ok := fs.files[k]; ok {
			fs.Write(dst, c)
			delete(fs.files, k)
		} else {
			fs.mkdirAll(dst)
			delete(fs.dirs, k)
		}
	}
	delete(fs.dirs, from)
	return true
}

// Copy copies a file; a destination that is a directory receives it under its base name.
func (fs *FS) Copy(from, to string) bool {
	c, ok := fs.Read(from)
	if !ok {
		return false
	}
	to = clean(to)
	if fs.dirs[to] {
		to = path.Join(to, path.Base(clean(from)))
	}
	return fs.Write(to, c)
}

// List is the names directly inside a directory, sorted (ok false when p is not one).
func (fs *FS) List(p string) ([]string, bool) {
	p = clean(p)
	if !fs.dirs[p] {
		return nil, false
	}
	seen := map[string]bool{}
	for _, k := range fs.under(p) {
		rest := strings.TrimPrefix(k, strings.TrimSuffix(p, "/")+"/")
		if i := strings.IndexByte(rest, '/'); i >= 0 {
			rest = rest[:i]
		}
		seen[rest] = true
	}
	names := make([]string, 0, len(seen))
	for n := range seen {
		names = append(names, n)
	}
	sort.Strings(names)
	return names, true
}

// under is every file and directory strictly below directory p.
func (fs *FS) under(p string) []string {
	prefix := strings.TrimSuffix(p, "/") + "/"
	var out []string
	for k := range fs.files {
		if strings.HasPrefix(k, prefix) {
			out = append(out, k)
		}
	}
	for k := range fs.dirs {
		if strings.HasPrefix(k, prefix) {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}
