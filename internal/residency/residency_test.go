package residency

import (
	"strings"
	"testing"
)

// smaps is three mappings of the executable (inode 11347128 on fe:00) as
// /proc/self/smaps shows them, trimmed, then one of another file and the heap.
const smaps = `00400000-02299000 r--p 00000000 fe:00 11347128                           /usr/bin/kroll
Size:              31332 kB
Rss:                4452 kB
Anonymous:             0 kB
VmFlags: rd mr mw me dw sd
02299000-060b5000 r-xp 01e99000 fe:00 11347128                           /usr/bin/kroll
Rss:               63600 kB
Anonymous:             0 kB
FilePmdMapped:     61440 kB
0a86f000-0a870000 r--p 0a46e000 fe:00 11347128                           /usr/bin/kroll
Rss:                   4 kB
Anonymous:             4 kB
0a870000-0a9a0000 rw-p 0a46f000 fe:00 11347128                           /usr/bin/kroll
Rss:                1096 kB
Anonymous:           320 kB
7f10000000-7f10001000 r-xp 00000000 fe:00 999                             /usr/lib/libc.so.6
Rss:                   4 kB
Anonymous:             0 kB
1c58d000-1c5ae000 rw-p 00000000 00:00 0                                  [heap]
Rss:                   8 kB
Anonymous:             8 kB
`

func TestPlan(t *testing.T) {
	for _, tc := range []struct {
		name string
		file File
		want []Region
	}{
		{"the executable: its read-only text and data, not the relocated page the loader wrote (anonymous) nor the writable data",
			File{"fe:00", 11347128}, []Region{{0x400000, 0x2299000, 4452 << 10}, {0x2299000, 0x60b5000, 63600 << 10}}},
		{"another file's mapping only", File{"fe:00", 999}, []Region{{0x7f10000000, 0x7f10001000, 4 << 10}}},
		{"the same inode on another device: none", File{"fe:01", 11347128}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Plan(strings.NewReader(smaps), tc.file)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("Plan = %+v, want %+v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("region %d = %+v, want %+v", i, got[i], tc.want[i])
				}
			}
		})
	}
}
