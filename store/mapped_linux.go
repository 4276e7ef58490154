package store

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// madvPageout is MADV_PAGEOUT (Linux 5.4+): reclaim the pages of a range
// now. For a shared file mapping, clean pages leave this process's RSS and
// the page cache (later reads fault them back in from disk); dirty pages are
// left for writeback. Applied to memory that is not a file mapping (an
// address badger unmapped and something else mapped before the call), it
// can only move pages to swap: it never changes their contents, unlike
// MADV_DONTNEED, so the race with badger unmapping files is harmless.
const madvPageout = 21

// mappedTrimSupported reports whether this platform can trim mapped pages.
const mappedTrimSupported = true

// residentFileKB returns RssFile of this process in KiB (0 if unknown).
func residentFileKB() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	i := bytes.Index(b, []byte("\nRssFile:"))
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+len("\nRssFile:"):]))
	if len(f) == 0 {
		return 0
	}
	n, _ := strconv.ParseInt(f[0], 10, 64)
	return n
}

// pageOutMapped asks the kernel to reclaim the resident pages of every
// mapping of a badger file (.sst, .vlog, .mem) in dir. It returns
// errPageoutUnsupported if the kernel lacks MADV_PAGEOUT.
func pageOutMapped(dir string) error {
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return err
	}
	defer f.Close()
	prefix := filepath.Clean(dir) + string(filepath.Separator)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// start-end perms offset dev inode path
		fs := strings.Fields(sc.Text())
		if len(fs) < 6 {
			continue
		}
		path := fs[5]
		if !strings.HasPrefix(path, prefix) || !(strings.HasSuffix(path, ".sst") ||
			strings.HasSuffix(path, ".vlog") || strings.HasSuffix(path, ".mem")) {
			continue
		}
		start, end, ok := strings.Cut(fs[0], "-")
		if !ok {
			continue
		}
		lo, err1 := strconv.ParseUint(start, 16, 64)
		hi, err2 := strconv.ParseUint(end, 16, 64)
		if err1 != nil || err2 != nil || hi <= lo {
			continue
		}
		_, _, e := syscall.Syscall(syscall.SYS_MADVISE, uintptr(lo), uintptr(hi-lo), madvPageout)
		switch {
		case e == syscall.EINVAL:
			return errPageoutUnsupported
		case e != 0 && e != syscall.ENOMEM: // ENOMEM: unmapped meanwhile
			return e
		}
	}
	return sc.Err()
}

var errPageoutUnsupported = errors.New("madvise(MADV_PAGEOUT) not supported by this kernel")
