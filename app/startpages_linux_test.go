package app

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

func TestReadOnlyMappings(t *testing.T) {
	maps := strings.Join([]string{
		"00400000-01340000 r-xp 00000000 08:01 123 /opt/bob net/bobnet",
		"01340000-0231c000 r--p 00f40000 08:01 123 /opt/bob net/bobnet",
		"0231c000-023e5000 rw-p 01f1c000 08:01 123 /opt/bob net/bobnet",
		"023e5000-04435000 rw-p 00000000 00:00 0",
		"7f0000000000-7f0000001000 r--p 00000000 08:01 9 /usr/lib/other.so",
	}, "\n")
	got, err := readOnlyMappings([]byte(maps), "/opt/bob net/bobnet")
	if err != nil {
		t.Fatal(err)
	}
	want := [][2]uintptr{{0x400000, 0x1340000}, {0x1340000, 0x231c000}}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("mappings = %x, want the code and the constants, not the data nor other files: %x", got, want)
	}
	for _, bad := range []string{
		"zz-01340000 r-xp 00000000 08:01 123 /bin/x",
		"00400000 r-xp 00000000 08:01 123 /bin/x",
		"01340000-00400000 r-xp 00000000 08:01 123 /bin/x",
	} {
		if got, err := readOnlyMappings([]byte(bad), "/bin/x"); err == nil {
			t.Errorf("readOnlyMappings(%q) = %x, want an error", bad, got)
		}
	}
}

// releaseStartPages covers this process's executable: its code and
// constants, read-only and mapped from the file /proc/self/exe names.
func TestReleaseStartPagesCoversTheExecutable(t *testing.T) {
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Fatal(err)
	}
	ranges, err := readOnlyMappings(maps, exe)
	if err != nil || len(ranges) == 0 {
		t.Fatalf("read-only mappings of %s = %x, %v; want the code at least", exe, ranges, err)
	}
	total := 0
	for _, r := range ranges {
		total += int(r[1] - r[0])
	}
	before := rssFile(t)
	n, err := releaseStartPages()
	if err != nil || n != total {
		t.Fatalf("releaseStartPages = %d, %v; want the %d bytes of the executable's read-only mappings", n, err, total)
	}
	if after := rssFile(t); after >= before {
		t.Errorf("the executable's resident pages: %d kB before, %d kB after; want fewer", before, after)
	}
}

// rssFile is the process's resident file-backed memory in kB.
func rssFile(t *testing.T) int {
	t.Helper()
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(status)) {
		if rest, ok := strings.CutPrefix(line, "RssFile:"); ok {
			kb, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(rest), " kB"))
			if err != nil {
				t.Fatal(err)
			}
			return kb
		}
	}
	t.Fatal("no RssFile in /proc/self/status")
	return 0
}
