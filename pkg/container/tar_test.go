package container

import (
	"archive/tar"
	"bytes"
	"io"
	"reflect"
	"strings"
	"testing"
)

// members lists an archive: name → content ("" and a trailing "/" for directories).
func members(t *testing.T, archive string) map[string]string {
	t.Helper()
	out := map[string]string{}
	tr := tar.NewReader(strings.NewReader(archive))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("not a tar archive: %v", err)
		}
		b, _ := io.ReadAll(tr)
		out[h.Name] = string(b)
	}
}

func archive(t *testing.T, files map[string]string) string {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for name, content := range files {
		if strings.HasSuffix(name, "/") {
			_ = tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeDir, Mode: 0o755})
			continue
		}
		_ = tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(content))})
		_, _ = tw.Write([]byte(content))
	}
	_ = tw.Close()
	return buf.String()
}

func TestTarCreate(t *testing.T) {
	cases := []struct {
		name    string
		image   string
		argv    []string
		members map[string]string
		stderr  string
		code    int
	}{
		{name: "kubectl cp pod:/tmp/d: the directory and what it holds, leading / removed (GNU's words)", image: "nginx",
			argv:    []string{"tar", "cf", "-", "/tmp/d"},
			members: map[string]string{"tmp/d/": "", "tmp/d/a.txt": "A\n", "tmp/d/sub/": "", "tmp/d/sub/b.txt": "B\n"},
			stderr:  "tar: Removing leading `/' from member names\n"},
		{name: "one file, busybox's words", image: "busybox", argv: []string{"tar", "-cf", "-", "/tmp/d/a.txt"},
			members: map[string]string{"tmp/d/a.txt": "A\n"}, stderr: "tar: removing leading '/' from member names\n"},
		{name: "a missing path: GNU's messages (the leading / first, as kubectl cp users see them) and status 2", image: "nginx", argv: []string{"tar", "cf", "-", "/nope"},
			members: map[string]string{}, stderr: "tar: Removing leading `/' from member names\ntar: /nope: Cannot stat: No such file or directory\ntar: Exiting with failure status due to previous errors\n", code: 2},
		{name: "a missing path on busybox: status 1", image: "busybox", argv: []string{"tar", "cf", "-", "/nope"},
			members: map[string]string{}, stderr: "tar: /nope: No such file or directory\n", code: 1},
		{name: "no mode is refused", image: "nginx", argv: []string{"tar", "-f", "-", "/tmp"},
			stderr: "tar: You must specify one of the '-Acdtrux', '--delete' or '--test-label' options\n", code: 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := Start(Spec{Image: tc.image}, t0)
			c.FS().Write("/tmp/d/a.txt", "A\n")
			c.FS().Write("/tmp/d/sub/b.txt", "B\n")
			r := c.Exec(t0, tc.argv, nil)
			if r.ExitCode != tc.code || r.Stderr != tc.stderr {
				t.Errorf("exit %d stderr %q, want %d %q", r.ExitCode, r.Stderr, tc.code, tc.stderr)
			}
			if tc.members != nil {
				if got := members(t, r.Stdout); !reflect.DeepEqual(got, tc.members) {
					t.Errorf("members = %v, want %v", got, tc.members)
				}
			}
		})
	}
}

func TestTarExtract(t *testing.T) {
	in := archive(t, map[string]string{"f.txt": "from the laptop\n", "dir/": "", "dir/g.txt": "G\n"})
	cases := []struct {
		name   string
		image  string
		argv   []string
		files  map[string]string // expected afterwards
		stderr string
		code   int
	}{
		{name: "kubectl cp f pod:/tmp (no-preserve form): files land under -C", image: "nginx",
			argv:  []string{"tar", "--no-same-permissions", "--no-same-owner", "-xmf", "-", "-C", "/tmp"},
			files: map[string]string{"/tmp/f.txt": "from the laptop\n", "/tmp/dir/g.txt": "G\n"}},
		{name: "kubectl cp f pod:/tmp (default form)", image: "busybox", argv: []string{"tar", "-xmf", "-", "-C", "/tmp"},
			files: map[string]string{"/tmp/f.txt": "from the laptop\n"}},
		{name: "-C a missing directory: GNU's message, status 2, nothing written", image: "nginx", argv: []string{"tar", "-xmf", "-", "-C", "/nope"},
			stderr: "tar: /nope: Cannot open: No such file or directory\ntar: Error is not recoverable: exiting now\n", code: 2},
		{name: "-C a missing directory on busybox", image: "busybox", argv: []string{"tar", "xf", "-", "-C", "/nope"},
			stderr: "tar: can't change directory to '/nope': No such file or directory\n", code: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := Start(Spec{Image: tc.image}, t0)
			stdin := in
			r := c.ExecInput(t0, tc.argv, nil, &stdin)
			if r.ExitCode != tc.code || r.Stderr != tc.stderr {
				t.Errorf("exit %d stderr %q, want %d %q", r.ExitCode, r.Stderr, tc.code, tc.stderr)
			}
			for p, want := range tc.files {
				if got, ok := c.FS().Read(p); !ok || got != want {
					t.Errorf("%s = %q (%v), want %q", p, got, ok, want)
				}
			}
			if tc.code != 0 && c.FS().Exists("/nope/f.txt") {
				t.Error("a failed extract wrote files")
			}
		})
	}
	t.Run("not an archive: GNU's message and status 2", func(t *testing.T) {
		c := Start(Spec{Image: "nginx"}, t0)
		stdin := strings.Repeat("not a tar archive at all ", 40)
		r := c.ExecInput(t0, []string{"tar", "xf", "-"}, nil, &stdin)
		if r.ExitCode != 2 || !strings.HasPrefix(r.Stderr, "tar: This does not look like a tar archive\n") {
			t.Errorf("exit %d stderr %q", r.ExitCode, r.Stderr)
		}
	})
	t.Run("a round trip: what tar c writes, tar x in another container reads back", func(t *testing.T) {
		a := Start(Spec{Image: "nginx"}, t0)
		out := a.Exec(t0, []string{"tar", "czf", "-", "/usr/share/nginx/html"}, nil).Stdout
		b := Start(Spec{Image: "busybox"}, t0)
		r := b.ExecInput(t0, []string{"tar", "xf", "-", "-C", "/tmp"}, nil, &out)
		if got, ok := b.FS().Read("/tmp/usr/share/nginx/html/index.html"); r.ExitCode != 0 || !ok || got != nginxIndex {
			t.Errorf("round trip: exit %d %q, index.html %v", r.ExitCode, r.Stderr, ok)
		}
	})
}
