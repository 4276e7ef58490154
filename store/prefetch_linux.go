package store

import (
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// tableTail is how much of the end of each table file prefetchFiles asks for: badger's
// Open reads every table's index (at the end of the file: a 2 MiB table's is ~50 KiB, up
// to ~180 KiB) and its last block, just before the index.
const tableTail = 256 << 10

// vlogHead is how much of the start of each value log file prefetchFiles asks for:
// Open reads each one's header.
const vlogHead = 64 << 10

// prefetchFiles asks the kernel to read into the page cache what badger's Open reads of
// the files in dir: the tail of every table, the head of every value log file, the
// memtable logs it replays (whole; their unwritten part is sparse and costs no read) and
// the manifest. posix_fadvise(WILLNEED) returns at once and the reads run in parallel;
// Open then finds the pages in memory instead of faulting them in from disk one at a
// time per opener. That happens after a reboot, and after every run of this store: the
// mapped-page trimmer (trimMapped, MADV_PAGEOUT) takes badger's pages out of the page
// cache too. Errors are ignored: this is a hint, and Open reports what matters.
func prefetchFiles(dir string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		name := e.Name()
		var head, tail bool
		switch {
		case strings.HasSuffix(name, ".sst"):
			tail = true
		case strings.HasSuffix(name, ".vlog"):
			head = true
		case strings.HasSuffix(name, ".mem"), name == "MANIFEST":
		default:
			continue
		}
		f, err := os.Open(filepath.Join(dir, name))
		if err != nil {
			continue
		}
		if st, err := f.Stat(); err == nil {
			off, n := int64(0), st.Size()
			switch {
			case tail:
				off = max(0, n-tableTail)
				n -= off
			case head:
				n = min(n, vlogHead)
			}
			_ = unix.Fadvise(int(f.Fd()), off, n, unix.FADV_WILLNEED)
		}
		f.Close()
	}
}
