package search

import (
	"context"
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
