package kubelet

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestRegistry_builtinCatalogue(t *testing.T) {
	reg := DefaultRegistry()
	const notFound161 = `rpc error: code = NotFound desc = failed to pull and unpack image "docker.io/library/nginx:1.161": failed to resolve reference "docker.io/library/nginx:1.161": docker.io/library/nginx:1.161: not found`
	tests := []struct {
		image string
		want  PullResult
	}{
		// The Deployments page's walkthrough: 1.14.2 → 1.16.1 rolls out, the typo 1.161 does not.
		{"nginx:1.14.2", PullResult{OK: true}},
		{"nginx:1.16.1", PullResult{OK: true}},
		{"nginx:1.161", PullResult{Reason: "ErrImagePull", Message: notFound161}},
		{"docker.io/library/nginx:1.161", PullResult{Reason: "ErrImagePull", Message: notFound161}},
		{"nginx", PullResult{OK: true}},
		{"nginx:latest", PullResult{OK: true}},
		{"nginx:1.25", PullResult{OK: true}},
		{"nginx:1.26", PullResult{OK: true}},
		{"nginx:1.27.3-alpine", PullResult{OK: true}},
		{"nginx:1.25.4-alpine-slim", PullResult{OK: true}},
		{"nginx:stable-perl", PullResult{OK: true}},
		{"nginx:1.7.9", PullResult{OK: true}}, // the old Deployment docs' image
		{"nginx:1.99", PullResult{Reason: "ErrImagePull", Message: `rpc error: code = NotFound desc = failed to pull and unpack image "docker.io/library/nginx:1.99": failed to resolve reference "docker.io/library/nginx:1.99": docker.io/library/nginx:1.99: not found`}},
		{"nginx:1.14.3", PullResult{Reason: "ErrImagePull", Message: `rpc error: code = NotFound desc = failed to pull and unpack image "docker.io/library/nginx:1.14.3": failed to resolve reference "docker.io/library/nginx:1.14.3": docker.io/library/nginx:1.14.3: not found`}},
		{"busybox:1.36.1-musl", PullResult{OK: true}},
		{"busybox", PullResult{OK: true}},
		{"httpd:2.4.62-alpine", PullResult{OK: true}},
		{"redis:7.2", PullResult{OK: true}},
		{"postgres:16", PullResult{OK: true}},
		{"postgres:18", PullResult{OK: true}},
		{"memcached:1.6.21", PullResult{OK: true}},
		{"mysql:8.0.36", PullResult{OK: true}},
		{"registry.k8s.io/pause:3.10", PullResult{OK: true}},
		{"registry.k8s.io/nginx-slim:0.8", PullResult{OK: true}},
		{"registry.k8s.io/nginx-slim:0.24", PullResult{OK: true}},
		{"registry.k8s.io/e2e-test-images/agnhost:2.63.0", PullResult{OK: true}},
		{"registry.k8s.io/e2e-test-images/agnhost:2.55", PullResult{OK: true}},
		{"registry.k8s.io/e2e-test-images/busybox:1.37.0-1", PullResult{OK: true}},
		{"registry.k8s.io/e2e-test-images/nginx:1.27-0", PullResult{OK: true}},
		{"registry.k8s.io/e2e-test-images/agnhost:9.9", PullResult{Reason: "ErrImagePull", Message: `rpc error: code = NotFound desc = failed to pull and unpack image "registry.k8s.io/e2e-test-images/agnhost:9.9": failed to resolve reference "registry.k8s.io/e2e-test-images/agnhost:9.9": registry.k8s.io/e2e-test-images/agnhost:9.9: not found`}},
		// Digests are not catalogued: a digest reference pulls, its tag (if any) unchecked.
		{"nginx@sha256:0000000000000000000000000000000000000000000000000000000000000000", PullResult{OK: true}},
		{"nginx:1.161@sha256:0000000000000000000000000000000000000000000000000000000000000000", PullResult{OK: true}},
		// Repositories the catalogue does not list pull whatever the tag.
		{"fluentd:v2", PullResult{OK: true}},
		{"registry.example.com/team/app:anything", PullResult{OK: true}},
		// A reference the kubelet cannot parse.
		{"Nginx:1.16.1", PullResult{Reason: "InvalidImageName", Message: `Failed to apply default image tag "Nginx:1.16.1": couldn't parse image name "Nginx:1.16.1": invalid reference format: repository name (library/Nginx) must be lowercase`}},
	}
	for _, tt := range tests {
		if got := reg.Pull(tt.image); got != tt.want {
			t.Errorf("Pull(%q) = %+v\nwant %+v", tt.image, got, tt.want)
		}
	}
}

func TestRegistry_unknownRepositoriesFail(t *testing.T) {
	reg, err := NewRegistry(UnknownImagesFail, CatalogRepository{Name: "registry.example.com/team/app", Tags: []string{"v{1..2}", "nightly-*"}})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		image  string
		ok     bool
		prefix string // of the message, when not ok
	}{
		{"registry.example.com/team/app:v2", true, ""},
		{"registry.example.com/team/app:nightly-2026-11-21", true, ""},
		{"registry.example.com/team/app:v3", false, `rpc error: code = NotFound desc = failed to pull and unpack image "registry.example.com/team/app:v3"`},
		{"nginx:1.16.1", true, ""}, // the built-in catalogue is still there
		{"fluentd:v2", false, `rpc error: code = Unknown desc = failed to pull and unpack image "docker.io/library/fluentd:v2": failed to resolve reference "docker.io/library/fluentd:v2": pull access denied, repository does not exist or may require authorization`},
		{"quay.io/someone/tool:1", false, `rpc error: code = NotFound desc = failed to pull and unpack image "quay.io/someone/tool:1": failed to resolve reference "quay.io/someone/tool:1": quay.io/someone/tool:1: not found`},
	}
	for _, tt := range tests {
		got := reg.Pull(tt.image)
		if got.OK != tt.ok || !strings.HasPrefix(got.Message, tt.prefix) || (!tt.ok && got.Reason != "ErrImagePull") {
			t.Errorf("Pull(%q) = %+v; want ok=%v, message starting %q", tt.image, got, tt.ok, tt.prefix)
		}
	}
}

func TestRegistry_userCatalogueAddsTags(t *testing.T) {
	reg, err := NewRegistry(UnknownImagesPull, CatalogRepository{Name: "nginx", Tags: []string{"1.99"}})
	if err != nil {
		t.Fatal(err)
	}
	for image, want := range map[string]bool{"nginx:1.99": true, "nginx:1.16.1": true, "nginx:1.98": false} {
		if got := reg.Pull(image).OK; got != want {
			t.Errorf("Pull(%q).OK = %v, want %v", image, got, want)
		}
	}
}

func TestParseUnknownImages(t *testing.T) {
	for in, want := range map[string]UnknownImages{"pull": UnknownImagesPull, "fail": UnknownImagesFail} {
		if got, err := ParseUnknownImages(in); err != nil || got != want {
			t.Errorf("ParseUnknownImages(%q) = %q, %v", in, got, err)
		}
	}
	for _, bad := range []string{"", "Pull", "deny"} {
		if _, err := ParseUnknownImages(bad); err == nil {
			t.Errorf("ParseUnknownImages(%q) accepted", bad)
		}
	}
}

func TestExpandBraces(t *testing.T) {
	tests := []struct {
		in      string
		want    []string
		wantErr string
	}{
		{in: "1.16.1", want: []string{"1.16.1"}},
		{in: "1.14.{0..2}", want: []string{"1.14.0", "1.14.1", "1.14.2"}},
		{in: "1.{25,26}{,-alpine}", want: []string{"1.25", "1.25-alpine", "1.26", "1.26-alpine"}},
		{in: "1.16{,.{0..1}}", want: []string{"1.16", "1.16.0", "1.16.1"}},
		{in: "v*", want: []string{"v*"}},
		{in: "1.{2..1}", wantErr: "want alternatives"},
		{in: "1.{x}", wantErr: "want alternatives"},
		{in: "1.{0..2", wantErr: "'{' without '}'"},
		{in: "1.0..2}", wantErr: "'}' without '{'"},
		{in: "{0..99999999}", wantErr: "more than 1000"},
		{in: "{0..99}.{0..99}", wantErr: "more than 1000"},
	}
	for _, tt := range tests {
		got, err := expandBraces(tt.in, 1000)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("expandBraces(%q) error %v, want one containing %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("expandBraces(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

func TestLoadImageCatalogFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	good := write("good.yaml", "repositories:\n- name: registry.example.com/team/app\n  tags: [v1, \"v2.{0..3}\"]\n")
	repos, err := LoadImageCatalogFile(good)
	if err != nil || len(repos) != 1 || repos[0].Name != "registry.example.com/team/app" {
		t.Fatalf("good catalogue: %+v, %v", repos, err)
	}
	tests := []struct {
		name, content, wantErr string
	}{
		{"unknown field", "repositories:\n- name: app\n  tag: [v1]\n", `unknown field "tag"`},
		{"no repositories", "repositories: []\n", "no repositories"},
		{"no tags", "repositories:\n- name: app\n", `repository "app" lists no tags`},
		{"bad name", "repositories:\n- name: Team/App\n  tags: [v1]\n", `repository 1 ("Team/App")`},
		{"name with a tag", "repositories:\n- name: app:v1\n  tags: [v1]\n", "without a tag or digest"},
		{"listed twice", "repositories:\n- name: app\n  tags: [v1]\n- name: docker.io/library/app\n  tags: [v2]\n", `"docker.io/library/app" is listed twice`},
		{"bad tag", "repositories:\n- name: app\n  tags: [\"-v1\"]\n", `"-v1" is not a valid tag`},
		{"bad braces", "repositories:\n- name: app\n  tags: [\"v{1..\"]\n", `tag "v{1.."`},
		{"not yaml", "repositories: [\n", "image catalog"},
	}
	for _, tt := range tests {
		path := write(strings.ReplaceAll(tt.name, " ", "-")+".yaml", tt.content)
		_, err := LoadImageCatalogFile(path)
		if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), path) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: error %v; want one line naming %s and containing %q", tt.name, err, path, tt.wantErr)
		}
	}
	if _, err := LoadImageCatalogFile(filepath.Join(dir, "missing.yaml")); err == nil || !strings.Contains(err.Error(), "missing.yaml") {
		t.Errorf("a missing file: %v", err)
	}
}
