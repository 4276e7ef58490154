package store

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// mappedRSSBySuffix is mappedRSSOf, with the sizes of those files.
func mappedRSSBySuffix(t *testing.T, dir, suffix string) (rssKB, sizeKB int64) {
	t.Helper()
	names, _ := filepath.Glob(filepath.Join(dir, "*"+suffix))
	for _, n := range names {
		if fi, err := os.Stat(n); err == nil {
			sizeKB += fi.Size() >> 10
		}
	}
	return mappedRSSOf(t, dir, suffix), sizeKB
}

// The memtable's write-ahead log and new tables are written with pwrite and synced
// with fdatasync (third_party/badger/CROW.md), not copied into their memory maps: a
// page fault per fresh page and the write-back of mapped dirty pages cost ~10× the
// CPU. So what was written is not resident in this process's maps. It fails with an
// unpatched badger (the go.mod replace dropped): the maps then hold every page written.
func TestWALAndTablesAreNotWrittenThroughTheirMaps(t *testing.T) {
	dir, db := openMapped(t, Options{MappedBudget: -1, MemTableSize: 4 << 20})
	defer db.Close()
	// 1 KB values: below the value threshold, so in the WAL and the tables.
	val := func(i int) []byte { return []byte(strings.Repeat(fmt.Sprintf("%07d ", i), 128)) }
	write := func(from, to int) {
		for i := from; i < to; i += 200 {
			err := db.Update(context.Background(), func(txn *Txn) error {
				for j := i; j < min(i+200, to); j++ {
					if err := txn.Set([]byte(fmt.Sprintf("x/%07d", j)), val(j)); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	// 2.5 MB: in the first memtable (4 MiB), not flushed yet.
	write(0, 2500)
	if rss, _ := mappedRSSBySuffix(t, dir, ".mem"); rss > 256 {
		t.Fatalf("%d KiB of the WAL's map resident after writing 2.5 MB to it: written through the map", rss)
	}
	// 12 MB more: memtables flushed into tables.
	write(2500, 14500)
	if err := db.bdb.Sync(); err != nil {
		t.Fatal(err)
	}
	rss, size := mappedRSSBySuffix(t, dir, ".sst")
	if size < 1<<10 {
		t.Fatalf("only %d KiB of tables after writing 14.5 MB", size)
	}
	if rss > size/2 {
		t.Fatalf("%d KiB of the tables' %d KiB resident right after they were built: written through the map", rss, size)
	}
	// What was written reads back.
	err := db.View(func(txn *Txn) error {
		for _, i := range []int{0, 1234, 2499, 2500, 9999, 14499} {
			v, ok, err := txn.Get([]byte(fmt.Sprintf("x/%07d", i)))
			if err != nil || !ok || string(v) != string(val(i)) {
				return fmt.Errorf("x/%07d: ok %v err %v", i, ok, err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// BenchmarkSyncedFileWrite is what the badger patch above is about: CPU per MiB written
// to a fresh file and synced, 1 MiB at a time (a large commit, a table), through a shared
// memory map with msync (upstream badger) or with pwrite and fdatasync (crow's copy).
func BenchmarkSyncedFileWrite(b *testing.B) {
	const chunk, size = 1 << 20, 64 << 20
	buf := make([]byte, chunk)
	for i := range buf {
		buf[i] = byte(i)
	}
	cpu := func() time.Duration {
		var r syscall.Rusage
		syscall.Getrusage(syscall.RUSAGE_SELF, &r)
		return time.Duration(r.Utime.Nano() + r.Stime.Nano())
	}
	for _, how := range []string{"map+msync", "pwrite+fdatasync"} {
		b.Run(how, func(b *testing.B) {
			var f *os.File
			var m []byte
			open := func() {
				var err error
				if f, err = os.Create(filepath.Join(b.TempDir(), "f")); err != nil {
					b.Fatal(err)
				}
				if err := f.Truncate(size); err != nil {
					b.Fatal(err)
				}
				if how == "map+msync" {
					if m, err = unix.Mmap(int(f.Fd()), 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED); err != nil {
						b.Fatal(err)
					}
				}
			}
			closeFile := func() {
				if m != nil {
					unix.Munmap(m)
					m = nil
				}
				f.Close()
			}
			open()
			c0 := cpu()
			off := 0
			for b.Loop() {
				if off+chunk > size { // a fresh file, as badger's WAL and tables are
					closeFile()
					open()
					off = 0
				}
				var err error
				if m != nil {
					copy(m[off:], buf)
					err = unix.Msync(m, unix.MS_SYNC)
				} else {
					if _, err = f.WriteAt(buf, int64(off)); err == nil {
						err = unix.Fdatasync(int(f.Fd()))
					}
				}
				if err != nil {
					b.Fatal(err)
				}
				off += chunk
			}
			b.ReportMetric(float64((cpu()-c0).Microseconds())/1000/float64(b.N), "cpu-ms/MiB")
			closeFile()
		})
	}
}

// badger's DB.Sync flushes the WAL's held-back entries from its caller's goroutine while
// the write goroutine appends to them (third_party/badger's pendingMu): run with -race.
func TestBadgerSyncWhileWriting(t *testing.T) {
	_, db := openMapped(t, Options{MappedBudget: -1, MemTableSize: 4 << 20})
	defer db.Close()
	done := make(chan struct{})
	synced := make(chan error, 1)
	go func() {
		for {
			select {
			case <-done:
				synced <- nil
				return
			default:
			}
			if err := db.bdb.Sync(); err != nil {
				synced <- err
				return
			}
		}
	}()
	const n = 3000
	for i := 0; i < n; i += 100 {
		err := db.Update(context.Background(), func(txn *Txn) error {
			for j := i; j < i+100; j++ {
				if err := txn.Set([]byte(fmt.Sprintf("y/%07d", j)), []byte(strings.Repeat("v", 900))); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	close(done)
	if err := <-synced; err != nil {
		t.Fatalf("Sync while writing: %v", err)
	}
	err := db.View(func(txn *Txn) error {
		for i := 0; i < n; i += 97 {
			if _, ok, err := txn.Get([]byte(fmt.Sprintf("y/%07d", i))); err != nil || !ok {
				return fmt.Errorf("y/%07d: ok %v err %v", i, ok, err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
