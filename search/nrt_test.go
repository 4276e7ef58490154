package search

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/crow-sync/crow/store"
	"github.com/crow-sync/crow/store/storetest"
)

// stalledPersister is a scorch configuration whose persister naps for an hour before each
// persist: batches are introduced (searchable) but never reach the disk.
var stalledPersister = map[string]any{"scorchPersisterOptions": map[string]any{"PersisterNapTimeMSec": 3_600_000}}

// crash closes the bleve index without waiting for its persister, as a kill -9 would leave it
// (what was only in memory is lost).
func crash(t *testing.T, ix *Index) {
	t.Helper()
	ix.closeOnce.Do(func() {
		close(ix.closed)
		if err := ix.bi.Close(); err != nil {
			t.Errorf("closing bleve: %v", err)
		}
	})
}

// TestSearchDoesNotWaitForPersistAndCrashCatchesUp: with a persister that never persists
// (real bleve on disk), a committed write is searchable as soon as the indexer introduced
// it; the durable position stays behind and the queue keeps the unpersisted entries. After a
// crash the index reopens at the persisted position and catches up from the queue, so it
// matches the table (the insert and the delete made in the crash window included).
func TestSearchDoesNotWaitForPersistAndCrashCatchesUp(t *testing.T) {
	dbDir, ixDir := t.TempDir(), filepath.Join(t.TempDir(), "index")
	env := storetest.Start(t, dbDir)
	cs := corpus()
	put(t, env.Writer, store.OpInsert, cs[0])
	put(t, env.Writer, store.OpInsert, cs[1])

	// A first run persists m1 and m2 and stops cleanly.
	ix, stop := runIndexer(t, env.DB, ixDir)
	caughtUp(t, env.DB, ix)
	persisted(t, ix)
	stop()
	durable := ix.Durable()
	if q := queueLen(t, env.DB); q != 0 {
		t.Fatalf("clean stop left %d queue entries", q)
	}

	// Second run: the persister is stalled.
	ix, err := open(ixDir, nil, stalledPersister)
	if err != nil {
		t.Fatal(err)
	}
	if ix.fresh || ix.Seq() != durable {
		t.Fatalf("reopened fresh=%v at %d, want the persisted %d", ix.fresh, ix.Seq(), durable)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- NewIndexer(env.DB, ix).Serve(ctx) }()

	put(t, env.Writer, store.OpInsert, cs[2])
	seq := del(t, env.Writer, "m1")
	wctx, wcancel := context.WithTimeout(context.Background(), 10*time.Second)
	err = ix.WaitFor(wctx, seq)
	wcancel()
	if err != nil {
		t.Fatalf("a committed write is not searchable while the persister is stalled: %v", err)
	}
	if got := ids(t, ix, Query{}); !slices.Equal(got, []string{"m2", "m3"}) {
		t.Fatalf("searchable before persist: %v, want m2 m3", got)
	}
	if got := ids(t, ix, Query{Text: "milk"}); !slices.Equal(got, []string{"m3"}) {
		t.Fatalf("text search before persist: %v", got)
	}
	if d := ix.Durable(); d != durable {
		t.Fatalf("durable position moved to %d without a persist (want %d)", d, durable)
	}
	if q := queueLen(t, env.DB); q < 2 {
		t.Fatalf("queue pruned to %d entries before the index persisted them", q)
	}

	// kill -9: the index loses its in-memory segments.
	crash(t, ix)
	cancel()
	<-served
	env.Close()

	env = storetest.Start(t, dbDir)
	ix, _ = runIndexer(t, env.DB, ixDir)
	if ix.fresh {
		t.Fatal("index treated as fresh after the crash")
	}
	caughtUp(t, env.DB, ix)
	if got := ids(t, ix, Query{}); !slices.Equal(got, []string{"m2", "m3"}) {
		t.Fatalf("after the crash the index holds %v, want m2 m3 (as the table)", got)
	}
	if got := ids(t, ix, Query{Text: "badger"}); got != nil {
		t.Fatalf("the memory deleted before the crash is still found: %v", got)
	}
	persisted(t, ix)
}

// TestPersisterNaps: scorch's persister is configured to nap after each persist
// (persisterNap), so the segments introduced meanwhile are merged in memory and persisted
// together; scorch ignores a misspelt option, and this test then fails. Batches stay
// searchable at once and all reach the disk after the nap. (How many segments one persist
// takes depends on timing: the merger may cut a nap short.)
func TestPersisterNaps(t *testing.T) {
	ix, err := Open(filepath.Join(t.TempDir(), "index"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	stat := func(name string) uint64 {
		t.Helper()
		m, _ := ix.bi.StatsMap()["index"].(map[string]any)
		v, ok := m[name].(uint64)
		if !ok {
			t.Fatalf("scorch stat %s missing (%T)", name, m[name])
		}
		return v
	}
	batch := func(seq uint64) {
		t.Helper()
		b := ix.bi.NewBatch()
		if err := b.Index(fmt.Sprintf("m%d", seq), memoryDoc{Content: fmt.Sprintf("batch%d", seq)}.fields()); err != nil {
			t.Fatal(err)
		}
		ix.seal(b, seq)
		if err := ix.bi.Batch(b); err != nil {
			t.Fatal(err)
		}
		ix.setSeq(seq)
	}
	for seq := uint64(1); seq <= 4; seq++ {
		batch(seq)
		if n := len(ids(t, ix, Query{Text: fmt.Sprintf("batch%d", seq)})); n != 1 {
			t.Fatalf("batch %d: %d hits right after it was introduced, want 1", seq, n)
		}
	}
	persisted(t, ix)
	deadline := time.Now().Add(10 * time.Second)
	for stat("TotPersisterNapPauseCompleted") == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the persister never completed a nap of %v", persisterNap)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
