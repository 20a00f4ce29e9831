package app

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// madvPageout is Linux's MADV_PAGEOUT (5.4 and later): reclaim these
// pages now, as memory pressure would.
const madvPageout = 21

// releaseStartPages hands back the pages of the executable that only
// start-up read (package set-up, configuration, migrations, the first
// connections): it asks the kernel to reclaim the read-only mappings of
// the binary (its code, constants and the runtime's tables), and serving
// reads back the pages it uses as it uses them. Pages another process
// maps too (a second BobNet on the host) are left alone by the kernel.
// It reports how many bytes of mappings it covered.
func releaseStartPages() (int, error) {
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return 0, fmt.Errorf("find the executable: %w", err)
	}
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return 0, fmt.Errorf("read the mappings: %w", err)
	}
	ranges, err := readOnlyMappings(maps, exe)
	if err != nil {
		return 0, err
	}
	covered := 0
	for _, r := range ranges {
		if _, _, errno := syscall.Syscall(syscall.SYS_MADVISE, r[0], r[1]-r[0], madvPageout); errno != 0 {
			return covered, fmt.Errorf("madvise(MADV_PAGEOUT): %w", errno)
		}
		covered += int(r[1] - r[0])
	}
	return covered, nil
}

// readOnlyMappings are the [start, end) ranges of /proc/self/maps's
// mappings of path that are not writable.
func readOnlyMappings(maps []byte, path string) ([][2]uintptr, error) {
	var out [][2]uintptr
	sc := bufio.NewScanner(bytes.NewReader(maps))
	for sc.Scan() {
		// start-end perms offset dev inode path
		f := strings.Fields(sc.Text())
		if len(f) < 6 || strings.Join(f[5:], " ") != path || strings.Contains(f[1], "w") {
			continue
		}
		lo, hi, ok := strings.Cut(f[0], "-")
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		if !ok || err1 != nil || err2 != nil || end <= start {
			return nil, fmt.Errorf("a mapping %q that does not read as start-end", f[0])
		}
		out = append(out, [2]uintptr{uintptr(start), uintptr(end)})
	}
	return out, sc.Err()
}
