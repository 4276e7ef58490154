package store

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4/y"
)

// A read-only transaction does not wait for a commit still in flight (its WAL
// sync held here): it reads what was committed before, at once; once the
// commit returns, every new read sees it (third_party/badger/CROW.md, "Reads
// do not wait for commits in flight"). Upstream badger makes the read wait for
// the sync: the read below then times out.
func TestReadDoesNotWaitForCommitInFlight(t *testing.T) {
	dir := t.TempDir()
	db := openTest(t, dir)
	defer db.Close()
	ctx := context.Background()
	if err := db.Update(ctx, func(txn *Txn) error { return txn.Set([]byte("x/before"), []byte("1")) }); err != nil {
		t.Fatal(err)
	}

	held, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	y.SetDataSyncHook(func(f *os.File) {
		if strings.HasPrefix(f.Name(), dir+string(filepath.Separator)) && strings.HasSuffix(f.Name(), ".mem") {
			once.Do(func() { close(held); <-release })
		}
	})
	defer y.SetDataSyncHook(nil)
	committed := setHeld(t, db, "x/inflight", "2", held)

	read := func() (before, inflight bool) {
		done := make(chan struct{})
		go func() {
			defer close(done)
			err := db.View(func(txn *Txn) error {
				var err error
				if _, before, err = txn.Get([]byte("x/before")); err != nil {
					return err
				}
				_, inflight, err = txn.Get([]byte("x/inflight"))
				return err
			})
			if err != nil {
				t.Error(err)
			}
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			close(release)
			t.Fatal("a read waited for the commit in flight")
		}
		return before, inflight
	}
	if before, inflight := read(); !before || inflight {
		t.Fatalf("read during the commit: earlier write seen %v, the commit in flight seen %v", before, inflight)
	}
	select {
	case err := <-committed:
		t.Fatalf("the commit returned (%v) while its sync was held", err)
	default:
	}

	close(release)
	if err := <-committed; err != nil {
		t.Fatal(err)
	}
	if before, inflight := read(); !before || !inflight {
		t.Fatalf("read after the commit: earlier write seen %v, the commit seen %v", before, inflight)
	}
}

// Reads at the completed commits, beside read-write transactions that still
// wait for them, under concurrent commits: every read sees whole transactions
// (two keys always written together are always equal), no read goes back in
// time, and a read begun after a commit returned sees it. badger's read
// watermark asserts its marks stay ordered; a break panics here.
func TestReadsSeeWholeCommitsInOrder(t *testing.T) {
	db := openTest(t, t.TempDir())
	defer db.Close()
	ctx := context.Background()
	get := func(txn *Txn, k string) int {
		v, ok, err := txn.Get([]byte(k))
		if err != nil {
			t.Error(err)
		}
		if !ok {
			return 0
		}
		n, err := strconv.Atoi(string(v))
		if err != nil {
			t.Error(err)
		}
		return n
	}
	put := func(txn *Txn, k string, n int) error { return txn.Set([]byte(k), []byte(strconv.Itoa(n))) }
	var last atomic.Int64 // the highest value whose commit returned
	deadline := time.Now().Add(time.Second)
	var wg sync.WaitGroup
	for w := range 3 {
		wg.Go(func() {
			for time.Now().Before(deadline) {
				var n int
				err := db.Update(ctx, func(txn *Txn) error {
					n = get(txn, "x/a") + 1
					if err := put(txn, "x/a", n); err != nil {
						return err
					}
					return put(txn, "x/b", n)
				})
				if err != nil {
					t.Errorf("writer %d: %v", w, err)
					return
				}
				for {
					old := last.Load()
					if int64(n) <= old || last.CompareAndSwap(old, int64(n)) {
						break
					}
				}
			}
		})
	}
	for r := range 3 {
		wg.Go(func() {
			seen := 0
			for time.Now().Before(deadline) {
				floor := int(last.Load())
				err := db.View(func(txn *Txn) error {
					a, b := get(txn, "x/a"), get(txn, "x/b")
					switch {
					case a != b:
						t.Errorf("reader %d: a torn commit: a=%d b=%d", r, a, b)
					case a < floor:
						t.Errorf("reader %d: %d read after the commit of %d returned", r, a, floor)
					case a < seen:
						t.Errorf("reader %d: read %d after %d", r, a, seen)
					}
					seen = a
					return nil
				})
				if err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if last.Load() == 0 {
		t.Fatal("nothing committed")
	}
}

// Commits that queue while the write-ahead log syncs are written as one batch
// with one sync of the log, not one each (third_party/badger/CROW.md, "One WAL
// sync per batch"), and none returns before that sync.
func TestQueuedCommitsShareOneWALSync(t *testing.T) {
	dir := t.TempDir()
	db := openTest(t, dir)
	defer db.Close()
	ctx := context.Background()
	var syncs atomic.Int32
	held, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	y.SetDataSyncHook(func(f *os.File) {
		if strings.HasPrefix(f.Name(), dir+string(filepath.Separator)) && strings.HasSuffix(f.Name(), ".mem") {
			once.Do(func() { close(held); <-release })
			syncs.Add(1)
		}
	})
	defer y.SetDataSyncHook(nil)
	defer func() {
		select {
		case <-release:
		default:
			close(release) // a failed test must not leave a write held
		}
	}()
	// The 20 transactions begin before the first commit: a read-write transaction
	// begun while a commit is being written waits for it (its read timestamp), so
	// begun later they would queue there, not behind the WAL sync, and reach the
	// write goroutine one by one as the scheduler woke them.
	const n = 20
	var returned atomic.Int32
	began := make(chan struct{}, n)
	errs := make(chan error, n)
	for i := range n {
		go func() {
			err := db.Update(ctx, func(txn *Txn) error {
				if err := txn.Set([]byte("x/"+strconv.Itoa(i)), []byte("v")); err != nil {
					return err
				}
				began <- struct{}{}
				<-held
				return nil
			})
			returned.Add(1)
			errs <- err
		}()
	}
	for range n {
		select {
		case <-began:
		case <-time.After(10 * time.Second):
			t.Fatal("the queued transactions never began")
		}
	}
	first := setHeld(t, db, "x/first", "v", held)
	// The 20 commit now, behind the held sync.
	time.Sleep(200 * time.Millisecond)
	if r := returned.Load(); r != 0 {
		t.Fatalf("%d commits returned while the WAL sync before them was held", r)
	}
	syncs.Store(0)
	close(release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if s := syncs.Load(); s > n/2 {
		t.Fatalf("%d WAL syncs for %d queued commits: one per commit, not per batch", s, n)
	}
	t.Logf("%d queued commits, %d WAL syncs", n, syncs.Load())
}

// setHeld commits key=val in the background and returns once its WAL sync is
// held (held closed by the test's sync hook); the commit's result comes on the
// channel returned.
func setHeld(t *testing.T, db *DB, key, val string, held <-chan struct{}) <-chan error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		done <- db.Update(context.Background(), func(txn *Txn) error { return txn.Set([]byte(key), []byte(val)) })
	}()
	select {
	case <-held:
	case <-time.After(10 * time.Second):
		t.Fatalf("the commit of %s never reached its WAL sync", key)
	}
	return done
}
