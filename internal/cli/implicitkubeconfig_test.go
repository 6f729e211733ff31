package cli

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
)

func TestImplicitKubeconfigVerdict(t *testing.T) {
	// owned is a live cluster's data dir as `kroll up` makes it.
	owned := implicitKubeconfigFacts{Exists: true, UID: 1000, DirIsDir: true, DirOwner: 1000, DirMode: 0o700,
		FileIsRegular: true, FileOwner: 1000, FileMode: 0o600, LockHeld: true}
	with := func(edit func(*implicitKubeconfigFacts)) implicitKubeconfigFacts {
		f := owned
		edit(&f)
		return f
	}
	for _, tc := range []struct {
		name   string
		facts  implicitKubeconfigFacts
		use    bool
		reason string
	}{
		{"a running kroll up's own directory: used", owned, true, ""},
		{"no kubeconfig: nothing to say", implicitKubeconfigFacts{UID: 1000}, false, ""},
		{"a cloned repository's .kroll (0755): ignored", with(func(f *implicitKubeconfigFacts) { f.DirMode = 0o755 }), false, ".kroll has mode 0755, not 0700"},
		{"a directory of another user", with(func(f *implicitKubeconfigFacts) { f.DirOwner = 0 }), false, ".kroll belongs to another user (uid 0)"},
		{".kroll a symbolic link", with(func(f *implicitKubeconfigFacts) { f.DirIsDir = false }), false, "not a directory of its own"},
		{"the kubeconfig a symbolic link", with(func(f *implicitKubeconfigFacts) { f.FileIsRegular = false }), false, "not a regular file"},
		{"the kubeconfig of another user", with(func(f *implicitKubeconfigFacts) { f.FileOwner = 1001 }), false, "another user (uid 1001)"},
		{"the kubeconfig readable by the group", with(func(f *implicitKubeconfigFacts) { f.FileMode = 0o640 }), false, "mode 0640, not 0600"},
		{"no kroll up holds the lock", with(func(f *implicitKubeconfigFacts) { f.LockHeld = false }), false, "no `kroll up` is running on .kroll"},
		{"a file that does not parse", with(func(f *implicitKubeconfigFacts) { f.LoadErr = errors.New("yaml: line 1") }), false, "does not parse (yaml: line 1)"},
		{"an exec plugin, even with kroll up running", with(func(f *implicitKubeconfigFacts) { f.Plugins = []string{"exec"} }), false, "credential plugin (exec)"},
		{"an auth-provider", with(func(f *implicitKubeconfigFacts) { f.Plugins = []string{"auth-provider"} }), false, "credential plugin (auth-provider)"},
		// Ownership is told before the lock: the fix is chmod, not starting a cluster.
		{"mode and no lock: the mode is told", with(func(f *implicitKubeconfigFacts) { f.DirMode, f.LockHeld = 0o755, false }), false, "mode 0755"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			use, reason := implicitKubeconfigVerdict(tc.facts, ".kroll")
			if use != tc.use || (tc.reason == "") != (reason == "") || !strings.Contains(reason, tc.reason) {
				t.Errorf("verdict = %v, %q; want %v, %q", use, reason, tc.use, tc.reason)
			}
		})
	}
}

// recordingListener accepts connections on 127.0.0.1 and counts them: a server kroll
// must never contact.
func recordingListener(t *testing.T) (addr string, accepted *atomic.Int32) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	accepted = &atomic.Int32{}
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			conn.Close()
		}
	}()
	return l.Addr().String(), accepted
}

// Given a directory holding a .kroll/kubeconfig that names a foreign server and an exec
// credential plugin (which writes a marker file), when kroll's verbs run there without
// --kubeconfig, then neither the plugin runs nor the server is contacted, whether the
// directory is as a clone leaves it (0755), as kroll up leaves it but with no kroll up
// running, or even with a process holding its lock; each says once why the file is
// ignored and that no kubeconfig was found. The same file given with --kubeconfig
// runs the plugin and contacts the server: the fixture would show a leak.
func TestImplicitKubeconfig_foreignFileIsNeverUsed(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	t.Setenv("HOME", dir)
	t.Setenv("KUBECONFIG", "")
	addr, accepted := recordingListener(t)
	marker := filepath.Join(dir, "plugin-ran")
	plugin := filepath.Join(dir, "plugin.sh")
	script := fmt.Sprintf("#!/bin/sh\ntouch %s\necho '{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\",\"status\":{\"token\":\"t\"}}'\n", marker)
	if err := os.WriteFile(plugin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	kubeconfig := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "https://%s", insecure-skip-tls-verify: true}
users:
- name: u
  user:
    exec: {apiVersion: client.authentication.k8s.io/v1, command: %s, interactiveMode: Never}
contexts:
- name: c
  context: {cluster: c, user: u}
current-context: c
`, addr, plugin)
	if err := os.Mkdir(".kroll", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(krollUpKubeconfig, []byte(kubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	verbs := [][]string{{"rollout", "status", "deployment/x"}, {"get", "pods"}, {"status"}}
	check := func(t *testing.T, reason string) {
		for _, args := range verbs {
			code, _, stderr := run(args...)
			want := "kroll: ignoring .kroll/kubeconfig: " + reason
			if code != 1 || strings.Count(stderr, "\n") != 2 || !strings.HasPrefix(stderr, want) || !strings.Contains(stderr, "kroll: no kubeconfig found") {
				t.Errorf("kroll %s: exit %d, stderr %q; want exit 1, %q and that no kubeconfig was found", strings.Join(args, " "), code, stderr, want)
			}
			if _, err := os.Stat(marker); err == nil {
				t.Fatalf("kroll %s: the kubeconfig's exec plugin ran", strings.Join(args, " "))
			}
			if n := accepted.Load(); n != 0 {
				t.Fatalf("kroll %s: the kubeconfig's server was contacted %d times", strings.Join(args, " "), n)
			}
		}
	}
	t.Run("as cloned", func(t *testing.T) { check(t, ".kroll has mode 0755") })
	if err := os.Chmod(".kroll", 0o700); err != nil {
		t.Fatal(err)
	}
	t.Run("no kroll up running", func(t *testing.T) { check(t, "no `kroll up` is running on .kroll") })
	lock, err := os.OpenFile(filepath.Join(".kroll", "lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	t.Run("lock held, exec plugin", func(t *testing.T) { check(t, "it names a credential plugin (exec)") })

	// The control: named explicitly, the same file runs its plugin and dials its server.
	run("get", "pods", "--kubeconfig", krollUpKubeconfig, "--request-timeout=5s")
	if _, err := os.Stat(marker); err != nil {
		t.Errorf("with --kubeconfig the exec plugin did not run: the fixture cannot show a leak")
	}
	if accepted.Load() == 0 {
		t.Errorf("with --kubeconfig the server was not contacted: the fixture cannot show a leak")
	}
}
