package cli

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"syscall"

	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/homedir"
)

// kroll uses ./.kroll/kubeconfig without being asked (no --kubeconfig, no $KUBECONFIG)
// only when it is the kubeconfig of a live cluster the user owns: a directory someone
// else wrote (a cloned repository) could hold one that sends the user's commands to a
// server of its choosing, or runs a command of its choosing as an exec credential
// plugin. The decision is implicitKubeconfigVerdict's; implicitKubeconfigFactsOf
// gathers what it needs, without reading anything a kubeconfig names.

// implicitKubeconfigFacts is what is known of ./.kroll and its kubeconfig.
type implicitKubeconfigFacts struct {
	// Exists: the kubeconfig file exists (as any kind of file). When false, nothing
	// else was looked at.
	Exists bool
	// UID is the current user's.
	UID int
	// DirIsDir: the data dir is a directory itself, not a symbolic link to one.
	DirIsDir bool
	// DirOwner and DirMode are the data dir's owner and permission bits.
	DirOwner int
	DirMode  fs.FileMode
	// FileIsRegular: the kubeconfig is a regular file, not a symbolic link.
	FileIsRegular bool
	// FileOwner and FileMode are the kubeconfig's owner and permission bits.
	FileOwner int
	FileMode  fs.FileMode
	// LockHeld: a process (a `kroll up`) holds the data dir's lock now.
	LockHeld bool
	// LoadErr is why the kubeconfig does not parse, or nil.
	LoadErr error
	// Plugins are the credential plugins the kubeconfig's users name ("exec",
	// "auth-provider"), sorted; empty when none.
	Plugins []string
}

// implicitKubeconfigVerdict decides whether kroll may use the implicit kubeconfig. use
// is false with an empty reason when there is nothing to use (no file: silence), and
// with a reason, one clause, when a file is there but not to be trusted. The checks
// run cheapest and most telling first: who owns what, then whether a cluster runs,
// then what the file says.
func implicitKubeconfigVerdict(f implicitKubeconfigFacts, dir string) (use bool, reason string) {
	switch {
	case !f.Exists:
		return false, ""
	case !f.DirIsDir:
		return false, fmt.Sprintf("%s is not a directory of its own (a symbolic link?)", dir)
	case f.DirOwner != f.UID:
		return false, fmt.Sprintf("%s belongs to another user (uid %d)", dir, f.DirOwner)
	case f.DirMode&0o077 != 0:
		return false, fmt.Sprintf("%s has mode %04o, not 0700: others could have written it", dir, f.DirMode.Perm())
	case !f.FileIsRegular:
		return false, "it is not a regular file (a symbolic link?)"
	case f.FileOwner != f.UID:
		return false, fmt.Sprintf("it belongs to another user (uid %d)", f.FileOwner)
	case f.FileMode&0o077 != 0:
		return false, fmt.Sprintf("it has mode %04o, not 0600", f.FileMode.Perm())
	case !f.LockHeld:
		return false, fmt.Sprintf("no `kroll up` is running on %s", dir)
	case f.LoadErr != nil:
		return false, fmt.Sprintf("it does not parse (%v)", f.LoadErr)
	case len(f.Plugins) > 0:
		return false, fmt.Sprintf("it names a credential plugin (%s), which kroll runs only from a kubeconfig given with --kubeconfig or $KUBECONFIG", f.Plugins[0])
	}
	return true, ""
}

// implicitKubeconfigFactsOf looks at dir and its kubeconfig, kubeconfig (a path inside
// dir). The file is parsed only when ownership, modes and the lock all check out.
func implicitKubeconfigFactsOf(dir, kubeconfig string) implicitKubeconfigFacts {
	f := implicitKubeconfigFacts{UID: os.Getuid()}
	fi, err := os.Lstat(kubeconfig)
	if err != nil {
		return f
	}
	f.Exists = true
	f.FileIsRegular = fi.Mode().IsRegular()
	f.FileMode = fi.Mode().Perm()
	f.FileOwner = ownerOf(fi)
	if di, err := os.Lstat(dir); err == nil {
		f.DirIsDir = di.IsDir()
		f.DirMode = di.Mode().Perm()
		f.DirOwner = ownerOf(di)
	}
	if _, reason := implicitKubeconfigVerdict(withLockAndFile(f), dir); reason != "" {
		return f // refused already on ownership or modes: nothing more is read
	}
	f.LockHeld = dataDirLockHeld(filepath.Join(dir, "lock"))
	if !f.LockHeld {
		return f
	}
	cfg, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		f.LoadErr = err
		return f
	}
	seen := map[string]bool{}
	for _, user := range cfg.AuthInfos {
		if user.Exec != nil {
			seen["exec"] = true
		}
		if user.AuthProvider != nil {
			seen["auth-provider"] = true
		}
	}
	for p := range seen {
		f.Plugins = append(f.Plugins, p)
	}
	sort.Strings(f.Plugins)
	return f
}

// withLockAndFile is f as if the lock were held and the file clean: the verdict then
// speaks of ownership and modes only.
func withLockAndFile(f implicitKubeconfigFacts) implicitKubeconfigFacts {
	f.LockHeld, f.LoadErr, f.Plugins = true, nil, nil
	return f
}

// ownerOf is fi's owner's uid, or -1 where the platform does not say.
func ownerOf(fi fs.FileInfo) int {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid)
	}
	return -1
}

// dataDirLockHeld reports whether a process holds the lock file a `kroll up` holds
// (exclusively) for as long as it runs. It asks for a shared lock without waiting,
// and gives it back at once: the moment it is held, a `kroll up` starting on the same
// data dir would be told the dir is in use; it is microseconds.
func dataDirLockHeld(path string) bool {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB)
	if err == nil {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		return false
	}
	return errors.Is(err, syscall.EWOULDBLOCK)
}

// kubeconfigChoice resolves the kubeconfig of one command once, however many of its
// steps ask (a verb's pre-run and its client), so that a refusal is told once.
type kubeconfigChoice struct {
	once sync.Once
	err  error
}

func (c *kubeconfigChoice) resolve(config *genericclioptions.ConfigFlags, stderr io.Writer) error {
	c.once.Do(func() { c.err = resolveKubeconfig(config, stderr) })
	return c.err
}

// resolveKubeconfig picks the kubeconfig as kroll documents it: --kubeconfig, then
// $KUBECONFIG, then the kubeconfig of a `kroll up` running on ./.kroll (when
// implicitKubeconfigVerdict trusts it; otherwise one line on stderr says why it is
// ignored), then ~/.kube/config (client-go's default). With none of them and no
// --server, it says that no kubeconfig was found, rather than letting client-go try
// http://localhost:8080.
func resolveKubeconfig(config *genericclioptions.ConfigFlags, stderr io.Writer) error {
	if *config.KubeConfig != "" || os.Getenv(clientcmd.RecommendedConfigPathEnvVar) != "" {
		return nil
	}
	dir := filepath.Dir(krollUpKubeconfig)
	use, reason := implicitKubeconfigVerdict(implicitKubeconfigFactsOf(dir, krollUpKubeconfig), dir)
	if use {
		*config.KubeConfig = krollUpKubeconfig
		return nil
	}
	if reason != "" {
		fmt.Fprintf(stderr, "kroll: ignoring %s: %s\n", krollUpKubeconfig, reason)
	}
	home := filepath.Join(homedir.HomeDir(), clientcmd.RecommendedHomeDir, clientcmd.RecommendedFileName)
	if _, err := os.Stat(home); err == nil || (config.APIServer != nil && *config.APIServer != "") {
		return nil
	}
	return errors.New("no kubeconfig found (no --kubeconfig, no $KUBECONFIG, no running `kroll up` in ./" + dir + ", no " +
		home + "); start a cluster here with 'kroll up', or pass --kubeconfig")
}
