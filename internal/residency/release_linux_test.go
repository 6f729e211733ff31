package residency

import (
	"fmt"
	"os"
	"sort"
	"testing"

	"golang.org/x/sys/unix"
)

// Given this test binary running, when Release drops its read-only pages, then fewer
// of them are resident, and the program runs on (its code and data fault back in).
func TestReleaseDropsTheExecutablesPages(t *testing.T) {
	resident := func() int64 {
		var st unix.Stat_t
		if err := unix.Stat("/proc/self/exe", &st); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open("/proc/self/smaps")
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		regions, err := Plan(f, File{Device: fmt.Sprintf("%02x:%02x", unix.Major(st.Dev), unix.Minor(st.Dev)), Inode: st.Ino})
		if err != nil {
			t.Fatal(err)
		}
		if len(regions) < 2 {
			t.Fatalf("found %d read-only mappings of the executable, want its text and read-only data", len(regions))
		}
		var n int64
		for _, r := range regions {
			n += r.Resident
		}
		return n
	}
	before := resident()
	released, err := Release()
	if err != nil {
		t.Fatal(err)
	}
	// Code and read-only data that ran before run again.
	xs := []int{3, 1, 2}
	sort.Ints(xs)
	after := resident()
	t.Logf("the executable's read-only pages: %d KiB resident, %d KiB released, %d KiB after", before>>10, released>>10, after>>10)
	if released <= 0 || after >= before {
		t.Errorf("released %d KiB: resident %d KiB before, %d KiB after; want fewer after", released>>10, before>>10, after>>10)
	}
	if fmt.Sprint(xs) != "[1 2 3]" {
		t.Errorf("sorted %v after Release", xs)
	}
}
