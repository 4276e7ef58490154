package anchor

import (
	"fmt"
	"testing"
	"time"

	"github.com/crow-sync/crow/store"
	"github.com/crow-sync/crow/store/storetest"
)

// The worker's rounds scan the memory versions from where the last round got
// to (not from the first version): and still anchor a version that arrives
// with a lower number than the mark (an old home's numbering replicated
// late), a version whose memory was deleted when it was passed over and is
// then revived, every version when a round's cap stops the scan halfway, and
// after a restart (a new worker) nothing twice.
func TestWorkerScanMark(t *testing.T) {
	env := storetest.Start(t, t.TempDir())
	seed := goldenSeed()
	ch := openEmbedded(t, t.TempDir(), seed.AnchorKey())
	ctx := testCtx(t)
	h := newWorkerHome(t, env)
	memory := func(id string) {
		t.Helper()
		h.put(store.TableMemories, id, map[string]any{"content": "text of " + id, "category": "fact", "importance": 7})
	}
	version := func(n int, id string) {
		t.Helper()
		eh := HashHex(hashOf(fmt.Sprint("event ", n)))
		h.put(store.TableMemoryVersions, fmt.Sprintf("%020d", n), map[string]any{"number": n, "memory_id": id,
			"content": "text of " + id, "content_hash": "h" + id, "category": "fact", "importance": 7, "event_hash": eh})
		h.put(store.TableMemoryNumbers, id, map[string]any{"number": n, "event_hash": eh})
	}
	anchored := func(n uint64) bool {
		t.Helper()
		rec, ok, err := ReadRecord(env.DB, VersionRecordID(n))
		if err != nil {
			t.Fatal(err)
		}
		return ok && rec.Root != ""
	}
	w := NewWorker(WorkerConfig{DB: env.DB, Writer: env.Writer, Chain: ch, Seed: seed, Interval: time.Hour, MaxMemoriesPerRound: 3})
	round := func() {
		t.Helper()
		if err := w.Round(ctx); err != nil {
			t.Fatal(err)
		}
	}
	check := func(when string, want map[uint64]bool) {
		t.Helper()
		for n, a := range want {
			if got := anchored(n); got != a {
				t.Fatalf("%s: #%d anchored %v, want %v", when, n, got, a)
			}
		}
	}
	before := w.Stats().Memories

	for i := 1; i <= 3; i++ {
		memory(fmt.Sprint("m", i))
		version(i, fmt.Sprint("m", i))
	}
	round()
	check("first round", map[uint64]bool{1: true, 2: true, 3: true})

	// #5 numbered, then #4 arrives below the mark.
	memory("m5")
	version(5, "m5")
	round()
	check("#5", map[uint64]bool{5: true})
	// Numbers 1 to 3 had no gap below the mark: nothing was counted.
	if w.tailCounts != 0 {
		t.Fatalf("%d rounds counted the versions from the mark, want 0", w.tailCounts)
	}
	memory("m4")
	version(4, "m4")
	round()
	check("#4 below the mark", map[uint64]bool{4: true})
	// #4 was missing below the mark #5: that round counted (and rescanned).
	if w.tailCounts != 1 {
		t.Fatalf("%d rounds counted the versions from the mark, want 1", w.tailCounts)
	}

	// #6's memory is deleted when the round passes it; revived, it is anchored.
	memory("m6")
	version(6, "m6")
	if _, err := env.Writer.Write(ctx, store.Mutation{Table: store.TableMemories, RowID: "m6", Op: store.OpDelete}); err != nil {
		t.Fatal(err)
	}
	memory("m7")
	version(7, "m7")
	round()
	check("deleted #6", map[uint64]bool{6: false, 7: true})
	round()
	check("deleted #6, a round later", map[uint64]bool{6: false})
	memory("m6")
	round()
	check("revived #6", map[uint64]bool{6: true})

	// Seven versions at once with a cap of 3 a round: three rounds.
	for i := 8; i <= 14; i++ {
		memory(fmt.Sprint("m", i))
		version(i, fmt.Sprint("m", i))
	}
	round()
	round()
	check("two capped rounds", map[uint64]bool{8: true, 13: true, 14: false})
	round()
	check("three capped rounds", map[uint64]bool{14: true})
	if got := w.Stats().Memories - before; got != 14 {
		t.Fatalf("the worker anchored %d memories, want 14 (each once)", got)
	}
	if w.tailCounts != 1 {
		t.Fatalf("%d rounds counted the versions from the mark, want only the one after #4", w.tailCounts)
	}

	// A new worker (a restart) scans everything once and anchors nothing again.
	w2 := NewWorker(WorkerConfig{DB: env.DB, Writer: env.Writer, Chain: ch, Seed: seed, Interval: time.Hour, MaxMemoriesPerRound: 3})
	if err := w2.Round(ctx); err != nil {
		t.Fatal(err)
	}
	if n := w2.Stats().Memories; n != 0 {
		t.Fatalf("after a restart the worker anchored %d memories again", n)
	}
}
