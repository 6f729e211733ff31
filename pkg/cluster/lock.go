package cluster

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// dataDirLock is an exclusive lock on a data dir, held for as long as a cluster runs on it.
// The operating system drops it when the process dies, so a crash never leaves it stuck.
type dataDirLock struct{ f *os.File }

func lockDataDir(dir string) (*dataDirLock, error) {
	path := filepath.Join(dir, "lock")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		holder, _ := os.ReadFile(path)
		f.Close()
		pid := strings.TrimSpace(string(holder))
		if pid == "" {
			pid = "another process"
		} else {
			pid = "process " + pid
		}
		return nil, fmt.Errorf("data dir %s is in use by %s (another kroll up?); stop it first or pass a different --data-dir", dir, pid)
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return &dataDirLock{f: f}, nil
}

func (l *dataDirLock) release() {
	if l == nil || l.f == nil {
		return
	}
	_ = l.f.Truncate(0)
	_ = syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN)
	l.f.Close()
	l.f = nil
}
