package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
)

// putRows writes n settings rows through Txn.PutRow, one transaction each.
func putRows(t testing.TB, db *DB, n int) {
	t.Helper()
	for range n {
		err := db.Update(context.Background(), func(txn *Txn) error {
			_, err := txn.PutRow(&Row{RowID: "k", Table: TableSettings, Data: json.RawMessage(`{}`)})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// queueSeqs returns the seqs of the q/ entries present.
func queueSeqs(t testing.TB, db *DB) []uint64 {
	t.Helper()
	var seqs []uint64
	err := db.View(func(txn *Txn) error {
		return txn.ScanQueue(0, 0, func(e QueueEntry) error { seqs = append(seqs, e.Seq); return nil })
	})
	if err != nil {
		t.Fatal(err)
	}
	return seqs
}

// waitHead waits until the queue head reaches seq.
func waitHead(t testing.TB, db *DB, seq uint64) {
	t.Helper()
	for {
		head, ch := db.QueueHead()
		if head >= seq {
			return
		}
		select {
		case <-ch:
		case <-time.After(10 * time.Second):
			t.Fatalf("queue head stuck at %d, waiting for %d", head, seq)
		}
	}
}

func seqRange(from, to uint64) []uint64 {
	var s []uint64
	for i := from; i <= to; i++ {
		s = append(s, i)
	}
	return s
}

func TestPruneQueueClampsToConsumers(t *testing.T) {
	db := openTest(t, t.TempDir())
	defer db.Close()
	if _, ok, err := db.ConsumerPos("numbers"); ok || err != nil {
		t.Fatalf("unregistered consumer: ok %v err %v", ok, err)
	}
	for _, bad := range []string{"", "a\x00b", string(make([]byte, 129))} {
		if err := db.SetConsumerPos(bad, 1); err == nil {
			t.Errorf("SetConsumerPos(%q) accepted", bad)
		}
	}
	putRows(t, db, 10)
	if err := db.SetConsumerPos("numbers", 3); err != nil {
		t.Fatal(err)
	}
	if err := db.SetConsumerPos("other", 6); err != nil {
		t.Fatal(err)
	}
	if pos, ok, err := db.ConsumerPos("numbers"); pos != 3 || !ok || err != nil {
		t.Fatalf("ConsumerPos = %d %v %v", pos, ok, err)
	}
	check := func(upto uint64, want []uint64) {
		t.Helper()
		if err := db.PruneQueue(upto); err != nil {
			t.Fatal(err)
		}
		if got := queueSeqs(t, db); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("after PruneQueue(%d): queue %v, want %v", upto, got, want)
		}
	}
	check(2, seqRange(3, 10))  // below every consumer: as asked
	check(10, seqRange(4, 10)) // clamped to the lowest consumer (3)
	if err := db.SetConsumerPos("numbers", 8); err != nil {
		t.Fatal(err)
	}
	check(10, seqRange(7, 10)) // now "other" (6) is the lowest
	if err := db.DropConsumer("other"); err != nil {
		t.Fatal(err)
	}
	if err := db.DropConsumer("never-registered"); err != nil {
		t.Fatal(err)
	}
	check(10, seqRange(9, 10)) // "numbers" (8)
	if err := db.SetConsumerPos("numbers", 10); err != nil {
		t.Fatal(err)
	}
	check(10, nil)

	// Positions are durable.
	dir := t.TempDir()
	db2 := openTest(t, dir)
	if err := db2.SetConsumerPos("numbers", 42); err != nil {
		t.Fatal(err)
	}
	db2.Close()
	db2 = openTest(t, dir)
	defer db2.Close()
	if pos, ok, err := db2.ConsumerPos("numbers"); pos != 42 || !ok || err != nil {
		t.Fatalf("after reopen: %d %v %v", pos, ok, err)
	}
}

// TestPruneConflictsWithRegistration: a prune chunk that computed its floor before a consumer
// registered cannot commit.
func TestPruneConflictsWithRegistration(t *testing.T) {
	db := openTest(t, t.TempDir())
	defer db.Close()
	putRows(t, db, 5)
	for _, tc := range []struct {
		name  string
		setup func()
	}{
		{"register", func() {}},
		{"move back", func() {
			if err := db.SetConsumerPos("c", 5); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		tc.setup()
		txn := db.bdb.NewTransaction(true)
		if _, _, err := consumersFloorTxn(txn); err != nil {
			t.Fatal(err)
		}
		if err := txn.Delete(queueKey(5)); err != nil {
			t.Fatal(err)
		}
		if err := db.SetConsumerPos("c", 1); err != nil {
			t.Fatal(err)
		}
		if err := txn.Commit(); !errors.Is(err, badger.ErrConflict) {
			t.Fatalf("%s: stale prune committed: %v", tc.name, err)
		}
		if err := db.DropConsumer("c"); err != nil {
			t.Fatal(err)
		}
	}
	if got := queueSeqs(t, db); len(got) != 5 {
		t.Fatalf("queue %v", got)
	}
}

// TestRegisterWhilePruning: once SetConsumerPos(p) returns, entries above p survive any
// number of concurrent prunes to the head, while rows keep being written.
func TestRegisterWhilePruning(t *testing.T) {
	db := openTest(t, t.TempDir())
	defer db.Close()
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Go(func() { // writer
		for !stop.Load() {
			putRows(t, db, 1)
		}
	})
	wg.Go(func() { // pruner, like the search indexer when it has caught up
		for !stop.Load() {
			head, _ := db.QueueHead()
			if err := db.PruneQueue(head); err != nil {
				t.Error(err)
				return
			}
		}
	})
	for i := range 50 {
		name := fmt.Sprint("c", i)
		head, _ := db.QueueHead()
		if err := db.SetConsumerPos(name, head); err != nil {
			t.Fatal(err)
		}
		waitHead(t, db, head+3)
		// Every entry above head that existed after registering must still be there:
		// entries seq > head were committed after we read head; some may have been
		// pruned before SetConsumerPos returned, none after.
		before := queueSeqs(t, db)
		waitHead(t, db, head+6)
		after := map[uint64]bool{}
		for _, s := range queueSeqs(t, db) {
			after[s] = true
		}
		for _, s := range before {
			if s > head && !after[s] {
				t.Fatalf("round %d: entry %d above consumer position %d was pruned", i, s, head)
			}
		}
		if err := db.DropConsumer(name); err != nil {
			t.Fatal(err)
		}
	}
	stop.Store(true)
	wg.Wait()
}

// TestPruneQueueFrom: each call starts where the last one said every entry below is
// deleted, clamped to the consumers as PruneQueue is, across chunks of pruneChunk.
func TestPruneQueueFrom(t *testing.T) {
	db := openTest(t, t.TempDir())
	defer db.Close()
	putRows(t, db, pruneChunk+20)
	if err := db.SetConsumerPos("numbers", pruneChunk+5); err != nil {
		t.Fatal(err)
	}
	step := func(from, upto, wantNext uint64, wantFirst uint64) uint64 {
		t.Helper()
		next, err := db.PruneQueueFrom(from, upto)
		if err != nil {
			t.Fatal(err)
		}
		if next != wantNext {
			t.Fatalf("PruneQueueFrom(%d, %d) = %d, want %d", from, upto, next, wantNext)
		}
		if got := queueSeqs(t, db); len(got) == 0 || got[0] != wantFirst || got[len(got)-1] != pruneChunk+20 {
			t.Fatalf("after PruneQueueFrom(%d, %d): queue from %v", from, upto, got[:min(3, len(got))])
		}
		return next
	}
	next := step(0, 5, 6, 6)
	next = step(next, 5, 6, 6)                                   // nothing new
	next = step(next, pruneChunk+10, pruneChunk+6, pruneChunk+6) // two chunks, clamped to the consumer
	if err := db.SetConsumerPos("numbers", pruneChunk+20); err != nil {
		t.Fatal(err)
	}
	next = step(next, pruneChunk+10, pruneChunk+11, pruneChunk+11)
	if next, err := db.PruneQueueFrom(next, pruneChunk+20); err != nil || next != pruneChunk+21 || len(queueSeqs(t, db)) != 0 {
		t.Fatalf("pruning the rest: next %d err %v queue %v", next, err, queueSeqs(t, db))
	}
}

// TestPruneQueueRemembersWhereItStopped: a prune stores where the next may
// start, so one from seq 0 after a reopen (the indexer's first prune at
// start-up) starts there instead of walking the earlier prunes' tombstones;
// and it still deletes exactly what it must.
func TestPruneQueueRemembersWhereItStopped(t *testing.T) {
	dir := t.TempDir()
	db := openTest(t, dir)
	putRows(t, db, pruneChunk+20)
	if next, err := db.PruneQueueFrom(0, pruneChunk+5); err != nil || next != pruneChunk+6 {
		t.Fatalf("PruneQueueFrom = %d, %v", next, err)
	}
	db.Close()
	db = openTest(t, dir)
	defer db.Close()
	var stored uint64
	if err := db.bdb.View(func(txn *badger.Txn) error {
		var err error
		stored, err = getUint(txn, keyQueuePruned)
		return err
	}); err != nil || stored != pruneChunk+6 {
		t.Fatalf("stored prune position %d (%v), want %d", stored, err, pruneChunk+6)
	}
	// A prune from 0 returns the stored start, not 0, when there is nothing new.
	if next, err := db.PruneQueueFrom(0, 3); err != nil || next != pruneChunk+6 {
		t.Fatalf("PruneQueueFrom(0, 3) after reopen = %d, %v; want %d", next, err, pruneChunk+6)
	}
	putRows(t, db, 10)
	if next, err := db.PruneQueueFrom(0, pruneChunk+25); err != nil || next != pruneChunk+26 {
		t.Fatalf("PruneQueueFrom(0, %d) = %d, %v", pruneChunk+25, next, err)
	}
	if got := queueSeqs(t, db); len(got) != 5 || got[0] != pruneChunk+26 {
		t.Fatalf("queue after the prune: %v, want %d..%d", got, pruneChunk+26, pruneChunk+30)
	}
}

// TestQueueEntryFlags: a q/ entry says whether the row version it records is
// a forget's tombstone, so a follower need not read the row; an entry written
// before flags (a bare "table/id" value) still reads, as not known.
func TestQueueEntryFlags(t *testing.T) {
	db := openTest(t, t.TempDir())
	defer db.Close()
	now := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	rows := []*Row{
		{Table: TableMemories, RowID: "live", Data: []byte(`{"content":"x"}`), UpdatedAt: now},
		{Table: TableMemories, RowID: "gone", Data: []byte(`{"forgotten_at":"2026-12-02T00:00:00Z"}`), Deleted: true, UpdatedAt: now},
		{Table: TableMemories, RowID: "deleted", Data: []byte(`{}`), Deleted: true, UpdatedAt: now},
	}
	if err := db.bdb.Update(func(txn *badger.Txn) error {
		for i, r := range rows {
			if err := putRowSeq(txn, r, uint64(i+1)); err != nil {
				return err
			}
		}
		// An entry from before flags.
		return txn.Set(queueKey(4), []byte(TableMemories+"/old"))
	}); err != nil {
		t.Fatal(err)
	}
	want := map[string][2]bool{"live": {false, true}, "gone": {true, true}, "deleted": {false, true}, "old": {false, false}}
	n := 0
	err := db.View(func(txn *Txn) error {
		return txn.ScanQueue(1, 0, func(e QueueEntry) error {
			n++
			f, known := e.Forgotten()
			if w, ok := want[e.RowID]; !ok || e.Table != TableMemories || w != [2]bool{f, known} {
				t.Errorf("entry %d %s/%s: forgotten %v known %v, want %v", e.Seq, e.Table, e.RowID, f, known, w)
			}
			return nil
		})
	})
	if err != nil || n != 4 {
		t.Fatalf("scanned %d entries: %v", n, err)
	}
}

// TestSchemaVersion: a store of layout 1 (q/ values without flags) is raised
// to this build's layout when opened; a store of a newer layout is refused.
func TestSchemaVersion(t *testing.T) {
	dir := t.TempDir()
	db := openTest(t, dir)
	set := func(v uint64) {
		t.Helper()
		if err := db.bdb.Update(func(txn *badger.Txn) error { return setUint(txn, keySchema, v) }); err != nil {
			t.Fatal(err)
		}
	}
	get := func(db *DB) uint64 {
		t.Helper()
		var v uint64
		if err := db.bdb.View(func(txn *badger.Txn) error {
			var err error
			v, err = getUint(txn, keySchema)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		return v
	}
	if v := get(db); v != schemaVersion {
		t.Fatalf("a new store has schema %d, want %d", v, schemaVersion)
	}
	set(1)
	db.Close()
	db = openTest(t, dir)
	if v := get(db); v != schemaVersion {
		t.Fatalf("a store of schema 1 reopened has schema %d, want %d", v, schemaVersion)
	}
	set(schemaVersion + 1)
	db.Close()
	if db, err := Open(dir, Options{}); err == nil {
		db.Close()
		t.Fatalf("a store of schema %d opened", schemaVersion+1)
	} else if !strings.Contains(err.Error(), "newer than this build") {
		t.Fatalf("opening a newer store: %v", err)
	}
}
