package store

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// A badger table file ends with its index, the index's length (4 bytes, big-endian), a
// checksum of the index and the checksum's length (4 bytes). badger's Open reads the index
// (a 2 MiB table's is ~50 KiB, up to ~180 KiB) and the last data block, just before it.
const (
	// tableFooter is how much of a table's end prefetchFiles asks for first: the lengths
	// and the checksum (a few dozen bytes), within one page.
	tableFooter = 4 << 10
	// lastBlock is how much before the index prefetchFiles asks for: the last data block
	// (badger's blocks are 4 KiB before compression).
	lastBlock = 8 << 10
	// tableTailMax caps what is asked of a table whose footer cannot be read.
	tableTailMax = 256 << 10
)

// vlogHead is how much of the start of each value log file prefetchFiles asks for:
// Open reads each one's header.
const vlogHead = 64 << 10

// prefetchFiles asks the kernel to read into the page cache what badger's Open reads of
// the files in dir: the index and last block of every table, the head of every value log
// file, the memtable logs it replays (whole; their unwritten part is sparse and costs no
// read) and the manifest. posix_fadvise(WILLNEED) returns at once and the reads run in
// parallel; Open then finds the pages in memory instead of faulting them in from disk one
// at a time per opener. That happens after a reboot, and after every run of this store:
// the mapped-page trimmer (trimMapped, MADV_PAGEOUT) takes badger's pages out of the page
// cache too.
//
// Tables go in two rounds: first every table's last page, then, once those reads are in
// flight together, each footer is read to ask for exactly the index and the block before
// it (in a goroutine that ends when it has). Errors are ignored: this is a hint, and Open
// reports what matters.
func prefetchFiles(dir string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	type table struct {
		f    *os.File
		size int64
	}
	var tables []table
	for _, e := range entries {
		name := e.Name()
		var head, isTable bool
		switch {
		case strings.HasSuffix(name, ".sst"):
			isTable = true
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
		st, err := f.Stat()
		if err != nil {
			f.Close()
			continue
		}
		off, n := int64(0), st.Size()
		switch {
		case isTable:
			off = max(0, n-tableFooter)
			n -= off
		case head:
			n = min(n, vlogHead)
		}
		_ = unix.Fadvise(int(f.Fd()), off, n, unix.FADV_WILLNEED)
		if isTable {
			tables = append(tables, table{f, st.Size()})
		} else {
			f.Close()
		}
	}
	if len(tables) == 0 {
		return
	}
	// The second round runs beside badger's Open rather than before it: Open does not
	// wait for the footer reads, and the hints for the indexes still land ahead of its
	// three openers, which work through the tables one by one.
	go func() {
		for _, t := range tables {
			off, n := tableTail(t.f, t.size)
			_ = unix.Fadvise(int(t.f.Fd()), off, n, unix.FADV_WILLNEED)
			t.f.Close()
		}
	}()
}

// tableTail returns the range of table f (size bytes) that badger's Open reads: its index
// and the block before it, from the footer; without a readable footer, the last
// tableTailMax bytes.
func tableTail(f *os.File, size int64) (off, n int64) {
	var foot [tableFooter]byte
	b := foot[:min(size, int64(len(foot)))]
	indexStart := int64(-1)
	if _, err := f.ReadAt(b, size-int64(len(b))); err == nil && len(b) >= 4 {
		checksumLen := int64(binary.BigEndian.Uint32(b[len(b)-4:]))
		if end := int64(len(b)) - 4 - checksumLen; end >= 4 { // the index's length ends at end
			indexLen := int64(binary.BigEndian.Uint32(b[end-4 : end]))
			if indexLen > 0 {
				indexStart = size - (int64(len(b)) - end) - 4 - indexLen
			}
		}
	}
	if indexStart < 0 {
		off = max(0, size-tableTailMax)
	} else {
		off = max(0, indexStart-lastBlock)
	}
	return off, size - off
}
