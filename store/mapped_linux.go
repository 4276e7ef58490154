package store

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
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

// pageoutSupported reports whether the kernel knows MADV_PAGEOUT (5.4+), by
// trying it on a page of our own.
func pageoutSupported() bool {
	b, err := syscall.Mmap(-1, 0, os.Getpagesize(), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		return false
	}
	defer syscall.Munmap(b)
	return syscall.Madvise(b, madvPageout) == nil
}

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
// errPageoutUnsupported if the kernel lacks MADV_PAGEOUT or there is no
// /proc/self/maps. A range unmapped (or remapped) meanwhile is skipped.
func pageOutMapped(dir string) error {
	if !pageoutOnce() {
		return errPageoutUnsupported
	}
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return fmt.Errorf("%w: %w", errPageoutUnsupported, err)
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
		switch e {
		case 0, syscall.ENOMEM, syscall.EINVAL: // unmapped, or remapped as something PAGEOUT refuses
		default:
			return fmt.Errorf("madvise(MADV_PAGEOUT) of %s: %w", path, e)
		}
	}
	return sc.Err()
}

var (
	errPageoutUnsupported = errors.New("trimming mapped pages needs madvise(MADV_PAGEOUT) (Linux 5.4+) and /proc")
	pageoutOnce           = sync.OnceValue(pageoutSupported)
)
