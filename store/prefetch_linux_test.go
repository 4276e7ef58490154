package store

import (
	"context"
	"encoding/binary"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"
	"unsafe"

	"github.com/dgraph-io/badger/v4/options"
	"github.com/dgraph-io/badger/v4/table"
	"github.com/dgraph-io/ristretto/v2/z"
	"golang.org/x/sys/unix"
)

// residentPages counts the pages of [off, off+n) of file name that are in the page
// cache (mincore on a fresh read-only mapping, which faults nothing in).
func residentPages(t *testing.T, name string, off, n int64) (resident, total int) {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	page := int64(os.Getpagesize())
	start := off / page * page
	b, err := unix.Mmap(int(f.Fd()), start, int(off+n-start), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(b)
	vec := make([]byte, (int64(len(b))+page-1)/page)
	if _, _, e := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), uintptr(unsafe.Pointer(&vec[0]))); e != 0 {
		t.Fatalf("mincore: %v", e)
	}
	for _, v := range vec {
		if v&1 != 0 {
			resident++
		}
	}
	return resident, len(vec)
}

// badgerIndexSize is the index length badger itself reads from table file name.
func badgerIndexSize(t *testing.T, name string) int {
	t.Helper()
	mf, err := z.OpenMmapFile(name, os.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	tb, err := table.OpenTable(mf, table.Options{Compression: options.Snappy, BlockSize: 4 << 10}) // as badgerOptions
	if err != nil {
		t.Fatal(err)
	}
	defer tb.DecrRef()
	return tb.IndexSize()
}

// footerChecksum is the length of the checksum at the end of table file name.
func footerChecksum(t *testing.T, name string) int64 {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return int64(binary.BigEndian.Uint32(b[len(b)-4:]))
}

func evict(t *testing.T, name string) {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		t.Fatal(err)
	}
}

// prefetchFiles brings the tails of a store's tables back into the page cache after
// they left it, and only the tails; the store opens and reads intact afterwards.
func TestPrefetchFiles(t *testing.T) {
	// 1 MiB memtables and incompressible values: ~12 tables of ~1 MiB at Close.
	opts := Options{MappedBudget: -1, MemTableSize: 1 << 20}
	dir, db := openMapped(t, opts)
	val := func(i int) []byte { return incompressible(512, i, 2) }
	const n = 24_000
	for i := 0; i < n; i += 200 {
		err := db.Update(context.Background(), func(txn *Txn) error {
			for j := i; j < i+200; j++ {
				if err := txn.Set(fmt.Appendf(nil, "p/%07d", j), val(j)); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	tables, _ := filepath.Glob(filepath.Join(dir, "*.sst"))
	big := 0
	want := map[string]int64{} // the bytes badger reads at the end of each table
	for _, name := range tables {
		want[name] = int64(badgerIndexSize(t, name)) + lastBlock + 8 + footerChecksum(t, name)
		evict(t, name)
		st, err := os.Stat(name)
		if err != nil {
			t.Fatal(err)
		}
		if st.Size() > 2*tableTailMax {
			big++
		}
		if r, _ := residentPages(t, name, 0, st.Size()); r > 0 {
			t.Fatalf("%s: %d pages still cached after FADV_DONTNEED: the filesystem of %s keeps pages "+
				"(tmpfs?); run the tests with TMPDIR on a disk", name, r, dir)
		}
	}
	if big < 4 {
		t.Fatalf("want at least 4 tables over %d KiB to tell a tail from the rest, have %d of %d", 2*tableTailMax>>10, big, len(tables))
	}

	prefetchFiles(dir)
	deadline := time.Now().Add(10 * time.Second) // the reads are asynchronous
	for _, name := range tables {
		st, _ := os.Stat(name)
		f, err := os.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		off, n := tableTail(f, st.Size())
		f.Close()
		// The range read from the footer: the index badger reports, the footer, and the
		// block before the index.
		if off+n != st.Size() || n != min(st.Size(), want[name]) {
			t.Fatalf("%s: tableTail = [%d, +%d); size %d, want the last %d bytes", name, off, n, st.Size(), want[name])
		}
		for {
			r, total := residentPages(t, name, off, n)
			if r == total {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: %d of the tail's %d pages in the page cache 10 s after the prefetch", name, r, total)
			}
			time.Sleep(5 * time.Millisecond)
		}
		if off > 2*tableTailMax {
			// The head (beyond the kernel's readahead of the tail) was not asked for.
			if r, total := residentPages(t, name, 0, tableTailMax); r == total {
				t.Errorf("%s: its first %d KiB were read too", name, tableTailMax>>10)
			}
		}
	}

	opts.Logger = slog.New(slog.DiscardHandler)
	db, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.View(func(txn *Txn) error {
		for i := 0; i < n; i += 97 {
			v, ok, err := txn.Get(fmt.Appendf(nil, "p/%07d", i))
			if err != nil || !ok || string(v) != string(val(i)) {
				return fmt.Errorf("key %d: found %v, err %v", i, ok, err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
