package container

import (
	"reflect"
	"testing"
)

func TestFS(t *testing.T) {
	fs := NewFS(map[string]string{"/a/b/c.txt": "c", "/a/d.txt": "d"})
	steps := []struct {
		name string
		do   func() bool
		want bool
	}{
		{"parents of a file are directories", func() bool { return fs.IsDir("/a/b") && fs.IsDir("/a") }, true},
		{"write over a directory fails", func() bool { return fs.Write("/a/b", "x") }, false},
		{"mkdir through a file fails", func() bool { return fs.Mkdir("/a/d.txt/e") }, false},
		{"move a directory with its files", func() bool { return fs.Move("/a/b", "/z") }, true},
		{"the moved file is at its new place", func() bool { c, ok := fs.Read("/z/c.txt"); return ok && c == "c" }, true},
		{"and gone from the old one", func() bool { return fs.Exists("/a/b/c.txt") || fs.Exists("/a/b") }, false},
		{"a directory cannot move into itself", func() bool { return fs.Move("/z", "/z/y") }, false},
		{"copy into a directory keeps the base name", func() bool { return fs.Copy("/a/d.txt", "/z") && fs.Exists("/z/d.txt") }, true},
		{"rm of a directory needs -r", func() bool { return fs.Remove("/z", false) }, false},
		{"rm -r removes everything under it", func() bool { return fs.Remove("/z", true) && !fs.Exists("/z/d.txt") }, true},
		{"a clone is independent", func() bool { c := fs.Clone(); c.Write("/new", ""); return fs.Exists("/new") }, false},
	}
	for _, s := range steps {
		if got := s.do(); got != s.want {
			t.Fatalf("%s: got %v", s.name, got)
		}
	}
	if names, _ := fs.List("/a"); !reflect.DeepEqual(names, []string{"d.txt"}) {
		t.Errorf("ls /a = %v", names)
	}
}
