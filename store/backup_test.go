package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
)

// loadSnapshot loads a snapshot into a new database on disk.
func loadSnapshot(t *testing.T, snap []byte) *DB {
	t.Helper()
	db := openTest(t, t.TempDir())
	t.Cleanup(func() { db.Close() })
	if _, err := db.LoadSnapshot(bytes.NewReader(snap)); err != nil {
		t.Fatalf("loading the snapshot: %v", err)
	}
	return db
}

// counts counts the notes rows and journal entries (x/j/) of db and reads its Lamport counter.
func counts(t *testing.T, db *DB) (rows, entries int, lamport uint64) {
	t.Helper()
	err := db.View(func(txn *Txn) error {
		if err := txn.ScanRows(TableNotes, func(*Row) error { rows++; return nil }); err != nil {
			return err
		}
		if err := txn.IterateKeys([]byte("x/j/"), nil, func([]byte) error { entries++; return nil }); err != nil {
			return err
		}
		var err error
		lamport, err = txn.Lamport()
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return rows, entries, lamport
}

func TestSnapshotRoundTrip(t *testing.T) {
	db := openTest(t, t.TempDir())
	defer db.Close()
	w := startWriter(t, db, &fakeJournal{})
	ctx := context.Background()
	for i := range 50 {
		if _, err := w.Write(ctx, ins(fmt.Sprintf("n%03d", i), fmt.Sprintf(`{"text":"note %d"}`, i))); err != nil {
			t.Fatal(err)
		}
	}
	big := bytes.Repeat([]byte("v"), 64<<10) // in badger's value log
	if err := db.Update(ctx, func(txn *Txn) error {
		return errors.Join(txn.Set([]byte("x/big"), big), txn.Set([]byte("x/local/secret"), []byte("skip me")))
	}); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	st, err := db.Snapshot(&buf, func(k []byte) bool { return bytes.HasPrefix(k, []byte("x/local/")) })
	if err != nil {
		t.Fatal(err)
	}
	got := loadSnapshot(t, buf.Bytes())
	if rows, entries, lamport := counts(t, got); rows != 50 || entries != 50 || lamport != 50 {
		t.Fatalf("restored: %d rows, %d entries, lamport %d; want 50 each", rows, entries, lamport)
	}
	r, err := got.Get(TableNotes, "n007")
	if err != nil || string(r.Data) != `{"text":"note 7"}` {
		t.Fatalf("n007 = %+v, %v", r, err)
	}
	if head, _ := got.QueueHead(); head != 50 {
		t.Fatalf("queue head after load = %d, want 50", head)
	}
	err = got.View(func(txn *Txn) error {
		v, ok, err := txn.Get([]byte("x/big"))
		if err != nil || !ok || !bytes.Equal(v, big) {
			return fmt.Errorf("x/big: %d bytes, %v, %v", len(v), ok, err)
		}
		if _, ok, _ := txn.Get([]byte("x/local/secret")); ok {
			return errors.New("a skipped key was restored")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if st.Keys == 0 || st.Bytes < uint64(len(big)) {
		t.Fatalf("stats %+v", st)
	}
}

// TestSnapshotConsistentUnderWrites takes snapshots while writers commit: each write is
// a row, a journal entry and a Lamport tick in one transaction, so a consistent snapshot
// holds as many of each, whatever moment it shows.
func TestSnapshotConsistentUnderWrites(t *testing.T) {
	db := openTest(t, t.TempDir())
	defer db.Close()
	w := startWriter(t, db, &fakeJournal{})
	ctx, cancel := context.WithCancel(context.Background())
	var (
		wg      sync.WaitGroup
		written atomic.Int64
	)
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ctx.Err() == nil; i++ {
				if _, err := w.Write(ctx, ins(fmt.Sprintf("g%d-%05d", g, i), `{"text":"x"}`)); err != nil {
					if ctx.Err() == nil {
						t.Errorf("write: %v", err)
					}
					return
				}
				written.Add(1)
			}
		}()
	}
	var snaps [][]byte
	for len(snaps) < 5 {
		for before := written.Load(); written.Load() < before+20 && ctx.Err() == nil; {
			// let writes land between snapshots
			if _, err := db.Get(TableNotes, "none"); !errors.Is(err, ErrNotFound) {
				t.Fatal(err)
			}
		}
		var buf bytes.Buffer
		if _, err := db.Snapshot(&buf, nil); err != nil {
			t.Fatal(err)
		}
		snaps = append(snaps, buf.Bytes())
	}
	cancel()
	wg.Wait()
	last := 0
	for i, s := range snaps {
		rows, entries, lamport := counts(t, loadSnapshot(t, s))
		if rows != entries || uint64(rows) != lamport {
			t.Errorf("snapshot %d: %d rows, %d journal entries, lamport %d: not one moment", i, rows, entries, lamport)
		}
		if rows < last {
			t.Errorf("snapshot %d has %d rows, fewer than the one before (%d)", i, rows, last)
		}
		last = rows
	}
	if last == 0 {
		t.Fatal("no write landed in any snapshot")
	}
}

func TestLoadSnapshotRefusesIncomplete(t *testing.T) {
	db := openTest(t, t.TempDir())
	defer db.Close()
	if err := db.Update(context.Background(), func(txn *Txn) error {
		return txn.Set([]byte("x/a"), []byte("value"))
	}); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := db.Snapshot(&buf, nil); err != nil {
		t.Fatal(err)
	}
	snap := buf.Bytes()
	for name, b := range map[string][]byte{
		"empty":        nil,
		"other format": []byte("not a snapshot at all, longer than the header"),
		"truncated":    snap[:len(snap)-3],
		"no end":       snap[:len(snap)-9],
		"trailing":     append(append([]byte{}, snap...), 'x'),
	} {
		to := openTest(t, t.TempDir())
		if _, err := to.LoadSnapshot(bytes.NewReader(b)); !errors.Is(err, ErrBadSnapshot) {
			t.Errorf("%s: %v, want ErrBadSnapshot", name, err)
		}
		to.Close()
	}
}
