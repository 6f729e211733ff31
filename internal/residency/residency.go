// Package residency gives back the pages of the kroll executable that only its start
// touched, for a long-running verb that uses a small part of the binary (`kroll
// dashboard`).
//
// Why: kroll is one binary of some 240 MB (the embedded control plane, kubectl, the
// controllers). Go runs every linked package's init before main, wherever it lies in
// the text, and the kernel maps the executable's pages in large folios: ext4 and XFS
// on recent kernels read a file in folios of up to 2 MiB, and on the 6.18 kernel this
// was measured on, a fault maps the whole folio, with one PMD where it can. At start,
// `kroll dashboard` had 134 MiB of file-backed resident pages, 122 MiB of them
// PMD-mapped, nearly the whole text and read-only data, though the dashboard later
// runs a small part of them. Those pages are clean and shared with the page cache, but
// they are the process's resident set, which is what a container's memory is judged
// by.
//
// Release marks the executable's read-only mappings MADV_NOHUGEPAGE (no PMD mappings
// from then on) and drops their pages from the process with MADV_DONTNEED. Nothing is
// lost: a read-only private file mapping's pages are the file's, and the next access
// maps them again from the page cache, without I/O while the cache holds them (unlike
// MADV_PAGEOUT, which would evict them for every process of the binary, `kroll up`'s
// too). What comes back is what the dashboard touches from then on, a folio at a time
// (at 1,000 Deployments, the list and its live stream served to a browser: some 70 MiB
// of the 137 MiB). A mapping that holds anonymous (copied-on-write) pages, such as the
// relocated read-only data the dynamic loader wrote, is left alone, for DONTNEED would
// return it to the file's contents.
package residency

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Region is one mapping of the executable that Release gives back.
type Region struct {
	Start, End uintptr
	// Resident is how much of it was resident (smaps' Rss), in bytes.
	Resident int64
}

// File identifies the executable as /proc/PID/maps names a mapping's file: its device
// ("fe:00", major:minor in hex) and inode.
type File struct {
	Device string
	Inode  uint64
}

// Plan reads smaps (the text of /proc/self/smaps) and returns the mappings of file
// that Release may drop: private and not writable ("r-xp", "r--p") and holding no
// anonymous page.
func Plan(smaps io.Reader, file File) ([]Region, error) {
	var out []Region
	var cur *Region
	anonymous := false
	flush := func() {
		if cur != nil && !anonymous {
			out = append(out, *cur)
		}
		cur, anonymous = nil, false
	}
	sc := bufio.NewScanner(smaps)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 {
			continue
		}
		if start, end, ok := mappingRange(fields[0]); ok && len(fields) >= 5 {
			flush()
			ino, err := strconv.ParseUint(fields[4], 10, 64)
			if err != nil {
				return nil, fmt.Errorf("smaps: inode %q: %w", fields[4], err)
			}
			perms := fields[1]
			if fields[3] == file.Device && ino == file.Inode && (perms == "r-xp" || perms == "r--p") {
				cur = &Region{Start: start, End: end}
			}
			continue
		}
		if cur == nil || len(fields) < 2 {
			continue
		}
		kb, err := strconv.ParseInt(fields[1], 10, 64)
		if err != nil {
			continue
		}
		switch fields[0] {
		case "Rss:":
			cur.Resident = kb << 10
		case "Anonymous:":
			anonymous = anonymous || kb > 0
		}
	}
	flush()
	return out, sc.Err()
}

// mappingRange parses a mapping's header's first field, "7f00a000-7f00c000".
func mappingRange(s string) (start, end uintptr, ok bool) {
	a, b, found := strings.Cut(s, "-")
	if !found {
		return 0, 0, false
	}
	x, err1 := strconv.ParseUint(a, 16, 64)
	y, err2 := strconv.ParseUint(b, 16, 64)
	if err1 != nil || err2 != nil || y <= x {
		return 0, 0, false
	}
	return uintptr(x), uintptr(y), true
}
