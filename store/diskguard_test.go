package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crow-sync/crow/clock"
)

// fakeFS is an injected Statfs: a 10 GiB filesystem whose free space the test sets.
type fakeFS struct {
	mu    sync.Mutex
	free  uint64
	calls int
}

func (f *fakeFS) statfs(string) (uint64, uint64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	return f.free, 50 << 30, nil
}

func (f *fakeFS) set(free uint64) { f.mu.Lock(); f.free = free; f.mu.Unlock() }

// The guard refuses writes below max(256 MiB, 1 % of 50 GiB = 512 MiB), caches statfs for
// a second, and lets writes through again once space returns; a refused write leaves nothing.
func TestDiskGuard(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	fs := &fakeFS{free: 1 << 30}
	dir := t.TempDir()
	db, err := Open(dir, Options{Clock: clk, Statfs: fs.statfs, MappedBudget: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	w := startWriter(t, db, &fakeJournal{})
	ctx := context.Background()

	if _, err := w.Write(ctx, ins("n1", `{"text":"a"}`)); err != nil {
		t.Fatal(err)
	}
	fs.set(500 << 20) // below 512 MiB, but the cached reading is still 1 GiB
	if _, err := w.Write(ctx, ins("n2", `{"text":"b"}`)); err != nil {
		t.Fatalf("within the cache second: %v", err)
	}
	clk.Advance(time.Second)
	_, err = w.Write(ctx, ins("n3", `{"text":"c"}`))
	if !errors.Is(err, ErrDiskFull) {
		t.Fatalf("below threshold: err = %v, want ErrDiskFull", err)
	}
	for _, s := range []string{"500.0 MiB free", dir, "512.0 MiB"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not say %q", err, s)
		}
	}
	if err := db.View(func(txn *Txn) error {
		_, err := txn.GetRow("notes", "n3")
		return err
	}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("refused row: %v, want ErrNotFound", err)
	}
	if got := db.RefusedWrites(); got != 1 {
		t.Errorf("RefusedWrites = %d, want 1", got)
	}
	if free, ok := db.FreeSpace(); !ok || free != 500<<20 {
		t.Errorf("FreeSpace = %d, %v", free, ok)
	}

	calls := fs.calls
	for range 10 {
		db.CheckSpace()
	}
	if fs.calls != calls {
		t.Errorf("statfs called %d times within the cache second", fs.calls-calls)
	}

	fs.set(2 << 30)
	clk.Advance(time.Second)
	if _, err := w.Write(ctx, ins("n3", `{"text":"c"}`)); err != nil {
		t.Fatalf("after space returned: %v", err)
	}
}

// A negative MinFree disables the guard; an in-memory store has none.
func TestDiskGuardDisabled(t *testing.T) {
	fs := &fakeFS{free: 0}
	db, err := Open(t.TempDir(), Options{MinFree: -1, Statfs: fs.statfs, MappedBudget: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.CheckSpace(); err != nil || fs.calls != 0 {
		t.Fatalf("disabled guard: %v, %d statfs calls", err, fs.calls)
	}
	mem, err := Open("", Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer mem.Close()
	if err := mem.CheckSpace(); err != nil {
		t.Fatal(err)
	}
}

// StatfsDir reads a real filesystem.
func TestStatfsDir(t *testing.T) {
	free, total, err := StatfsDir(t.TempDir())
	if err != nil || total == 0 || free > total {
		t.Fatalf("StatfsDir = %d, %d, %v", free, total, err)
	}
}

// Every writer of the database is refused on a full disk, not only the Writer: DB.Update
// (fn not even run), a WriteBatch's Set and Compact. Store's own bookkeeping (consumer
// positions, queue pruning) still goes through. Once space returns all of them work again.
func TestDiskGuardEveryWriter(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	fs := &fakeFS{free: 1 << 30}
	db, err := Open(t.TempDir(), Options{Clock: clk, Statfs: fs.statfs, MappedBudget: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	set := func(k string) func(*Txn) error {
		return func(txn *Txn) error { return txn.Set([]byte(k), []byte("v")) }
	}
	if err := db.Update(ctx, set("n/test/a")); err != nil {
		t.Fatal(err)
	}

	fs.set(100 << 20)
	clk.Advance(time.Second)
	ran := false
	err = db.Update(ctx, func(txn *Txn) error { ran = true; return txn.Set([]byte("n/test/b"), []byte("v")) })
	if !errors.Is(err, ErrDiskFull) || ran {
		t.Fatalf("Update on a full disk: err %v, fn ran %v; want ErrDiskFull before fn", err, ran)
	}
	wb := db.NewWriteBatch()
	if err := wb.Set([]byte("n/test/c"), []byte("v")); !errors.Is(err, ErrDiskFull) {
		t.Fatalf("WriteBatch.Set on a full disk: %v", err)
	}
	wb.Cancel()
	if _, err := db.Compact(ctx); !errors.Is(err, ErrDiskFull) {
		t.Fatalf("Compact on a full disk: %v", err)
	}
	if err := db.SetConsumerPos("test", 0); err != nil {
		t.Fatalf("consumer position on a full disk: %v", err)
	}
	if err := db.PruneQueue(0); err != nil {
		t.Fatalf("queue pruning on a full disk: %v", err)
	}
	for _, k := range []string{"n/test/b", "n/test/c"} {
		if err := db.View(func(txn *Txn) error {
			if _, ok, err := txn.Get([]byte(k)); err != nil || ok {
				return fmt.Errorf("%s: present %v, err %v", k, ok, err)
			}
			return nil
		}); err != nil {
			t.Errorf("a refused write left data: %v", err)
		}
	}
	if got := db.RefusedWrites(); got != 3 {
		t.Errorf("RefusedWrites = %d, want 3", got)
	}

	fs.set(2 << 30)
	clk.Advance(time.Second)
	if err := db.Update(ctx, set("n/test/b")); err != nil {
		t.Fatalf("Update after space returned: %v", err)
	}
	wb = db.NewWriteBatch()
	defer wb.Cancel()
	if err := wb.Set([]byte("n/test/c"), []byte("v")); err != nil {
		t.Fatal(err)
	}
	if err := wb.Flush(); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Compact(ctx); err != nil {
		t.Fatalf("Compact after space returned: %v", err)
	}
}
