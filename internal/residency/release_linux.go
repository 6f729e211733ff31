package residency

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// Release gives back the executable's read-only pages (see the package's doc) and
// returns how many bytes of them were resident.
func Release() (int64, error) {
	var st unix.Stat_t
	if err := unix.Stat("/proc/self/exe", &st); err != nil {
		return 0, err
	}
	file := File{Device: fmt.Sprintf("%02x:%02x", unix.Major(st.Dev), unix.Minor(st.Dev)), Inode: st.Ino}
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	regions, err := Plan(f, file)
	if err != nil {
		return 0, err
	}
	var released int64
	for _, r := range regions {
		for _, advice := range []uintptr{unix.MADV_NOHUGEPAGE, unix.MADV_DONTNEED} {
			if _, _, errno := unix.Syscall(unix.SYS_MADVISE, r.Start, r.End-r.Start, advice); errno != 0 {
				return released, fmt.Errorf("madvise(%#x-%#x, %d): %w", r.Start, r.End, advice, errno)
			}
		}
		released += r.Resident
	}
	return released, nil
}
