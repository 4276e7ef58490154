package store

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// openMapped opens a store in a fresh directory (absolute, as /proc/self/maps names its
// files) with a silent logger and opts, for the mapped-page tests.
func openMapped(t *testing.T, opts Options) (string, *DB) {
	t.Helper()
	dir, err := filepath.Abs(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	db, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	return dir, db
}

// incompressible returns n pseudo-random bytes, the same for the same i and stream:
// above the value threshold they go to the value log, and compression does not shrink them.
func incompressible(n, i int, stream uint64) []byte {
	b := make([]byte, n)
	r := rand.New(rand.NewPCG(uint64(i), stream))
	for k := 0; k+8 <= len(b); k += 8 {
		binary.LittleEndian.PutUint64(b[k:], r.Uint64())
	}
	return b
}

// setValues writes keys x/0000000 … x/<n-1> with val(j), per keys to a transaction.
func setValues(t *testing.T, db *DB, n, per int, val func(j int) []byte) {
	t.Helper()
	for i := 0; i < n; i += per {
		err := db.Update(context.Background(), func(txn *Txn) error {
			for j := i; j < min(i+per, n); j++ {
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

// mappedRSSKB sums the Rss of this process's mappings of files under dir
// (/proc/self/smaps).
func mappedRSSKB(t *testing.T, dir string) int64 { return mappedRSSOf(t, dir, "") }

// mappedRSSOf sums the Rss of this process's mappings of the files under dir whose
// names end in suffix (/proc/self/smaps).
func mappedRSSOf(t *testing.T, dir, suffix string) int64 {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Fatalf("reading /proc/self/smaps (procfs is needed to measure RSS): %v", err)
	}
	defer f.Close()
	prefix := filepath.Clean(dir) + "/"
	var sum int64
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) >= 5 && strings.Contains(fs[0], "-") {
			in = len(fs) >= 6 && strings.HasPrefix(fs[5], prefix) && strings.HasSuffix(fs[5], suffix)
			continue
		}
		if in && len(fs) >= 2 && fs[0] == "Rss:" {
			n, _ := strconv.ParseInt(fs[1], 10, 64)
			sum += n
		}
	}
	return sum
}

// pageOutMapped takes badger's mapped pages out of RSS, and what they held
// reads back intact.
func TestPageOutMapped(t *testing.T) {
	dir, db := openMapped(t, Options{MappedBudget: -1})
	defer db.Close()
	// 70 KB of incompressible bytes: above the value threshold (64 KiB), so
	// in the value log, and not shrunk by the tables' compression.
	val := func(i int) []byte { return incompressible(70_000, i, 1) }
	const n = 400 // 28 MB
	setValues(t, db, n, 20, val)
	before := mappedRSSKB(t, dir)
	if before < 20<<10 {
		t.Fatalf("only %d KiB of badger's files resident after writing 28 MB", before)
	}
	if err := pageOutMapped(dir); errors.Is(err, errPageoutUnsupported) && os.Getenv("CI") == "" {
		t.Skipf("this kernel has no MADV_PAGEOUT (Linux 5.4+): %v", err) // in CI this fails below
	} else if err != nil {
		t.Fatal(err)
	}
	after := mappedRSSKB(t, dir)
	t.Logf("badger's mapped files resident: %d KiB before, %d KiB after", before, after)
	if after > before/4 {
		t.Fatalf("%d KiB still resident of %d", after, before)
	}
	err := db.View(func(txn *Txn) error {
		for i := 0; i < n; i++ {
			v, _, err := txn.Get([]byte(fmt.Sprintf("x/%07d", i)))
			if err != nil {
				return err
			}
			if !bytes.Equal(v, val(i)) {
				return fmt.Errorf("value %d differs", i)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// The trimmer started by Open keeps badger's resident mapped pages near the
// budget while more than that is written; Close stops it.
func TestTrimmerKeepsMappedPagesNearBudget(t *testing.T) {
	dir, db := openMapped(t, Options{MappedBudget: 4 << 20})
	defer db.Close()
	v := bytes.Repeat([]byte("v"), 8<<10)
	setValues(t, db, 6000, 100, func(int) []byte { return v }) // 48 MB
	waitMappedUnder(t, dir, 16<<10, 5*time.Second, "writing 48 MB with a 4 MiB budget")
}

// waitMappedUnder waits (up to within) for badger's mapped files in dir to have less than
// limitKB resident, and fails the test naming what was done (after) if they do not.
func waitMappedUnder(t *testing.T, dir string, limitKB int64, within time.Duration, after string) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		kb := mappedRSSKB(t, dir)
		if kb < limitKB {
			t.Logf("badger's mapped files resident: %d KiB after %s", kb, after)
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("badger's mapped files still %d KiB resident after %s", kb, after)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// With the default budget (8 MiB since session 29: a satellite's peak RSS in a first
// sync, docs/BENCHMARKS.md), reading 48 MB of tables 8 MB at a time leaves less than
// 12 MiB of them resident (here: 0.1); 32 MiB, the default before, left 18.
func TestTrimmerDefaultBudget(t *testing.T) {
	dir, db := openMapped(t, Options{MappedBudget: -1})
	rng := rand.New(rand.NewPCG(3, 4))
	v := make([]byte, 8<<10)
	const size, n, chunk = 8 << 10, 6000, 1000 // 48 MB written and read back, 8 MB at a time
	// Every key is set to v, refilled with random bytes first; a transaction keeps the
	// slice it is given, so the 100 keys of one transaction commit v's last fill.
	setValues(t, db, n, 100, func(int) []byte {
		for k := range v {
			v[k] = byte(rng.Uint32())
		}
		return v
	})
	if err := db.Close(); err != nil { // memtables flushed: every key is in a table
		t.Fatal(err)
	}
	opts := Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	db, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for i := 0; i < n; i += chunk {
		err := db.View(func(txn *Txn) error {
			for j := i; j < i+chunk; j++ {
				got, ok, err := txn.Get([]byte(fmt.Sprintf("x/%07d", j)))
				if err != nil {
					return err
				}
				if !ok || len(got) != size {
					return fmt.Errorf("x/%07d: %d bytes (found %v), want %d", j, len(got), ok, size)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(3 * trimInterval) // the trimmer looks between the chunks
	}
	waitMappedUnder(t, dir, 12<<10, 3*time.Second, "reading 48 MB of tables with the default budget")
}
