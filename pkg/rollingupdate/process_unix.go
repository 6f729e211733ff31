//go:build unix

package rollingupdate

import (
	"errors"
	"syscall"
)

// processExists tells whether a process with pid runs on this machine (signal 0 probes
// without signalling; EPERM means it exists but is someone else's).
func processExists(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
