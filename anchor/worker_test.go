package anchor

import (
	"encoding/json"
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/crow-sync/crow/store"
	"github.com/crow-sync/crow/store/storetest"
)

// The worker anchors every state version and numbered memory version once,
// on a real embedded chain, and records each in the anchors table (an edit
// is its own number; a record by memory id from before versions counts for
// its number); a second round sends nothing; a deleted memory and a
// forgotten version are not anchored.
func TestWorkerAnchorsPendingOnce(t *testing.T) {
	env := storetest.Start(t, t.TempDir())
	seed := goldenSeed()
	ch := openEmbedded(t, t.TempDir(), seed.AnchorKey())
	ctx := testCtx(t)
	put := func(table, id string, v any) {
		t.Helper()
		data, _ := json.Marshal(v)
		if _, err := env.Writer.Write(ctx, store.Mutation{Table: table, RowID: id, Op: store.OpPut, Data: data}); err != nil {
			t.Fatal(err)
		}
	}
	h1, h2 := HashHex(hashOf("v1")), HashHex(hashOf("v2"))
	put(store.TableStateVersions, "crow/00000000000000000001", map[string]any{"project": "crow", "version": 1, "state_hash": h1})
	put(store.TableStateVersions, "crow/00000000000000000002", map[string]any{"project": "crow", "version": 2, "state_hash": h2})
	version := func(n int, id, content string, more map[string]any) {
		t.Helper()
		v := map[string]any{"number": n, "memory_id": id, "content": content, "content_hash": "h" + content,
			"category": "fact", "importance": 7, "event_hash": HashHex(hashOf(fmt.Sprint("event ", n)))}
		maps.Copy(v, more)
		put(store.TableMemoryVersions, fmt.Sprintf("%020d", n), v)
		put(store.TableMemoryNumbers, id, map[string]any{"number": n, "event_hash": v["event_hash"]})
	}
	for i, id := range []string{"m1", "m2", "m3"} {
		put(store.TableMemories, id, map[string]any{"content": "secret text " + id, "category": "fact", "importance": 7})
		version(i+1, id, "secret text "+id, nil)
	}
	// m1 edited: #4 supersedes #1 (and #1 stays to anchor); m2's #2 was
	// anchored before versions, under its memory id; #5 was forgotten.
	version(4, "m1", "secret text m1, edited", map[string]any{"supersedes": 1})
	put(store.TableAnchors, MemoryRecordID("m2"), Record{Kind: RecordMemory, Status: StatusAnchored, MemoryID: "m2", Number: 2, TxHash: "0xold"})
	put(store.TableMemories, "m5", map[string]any{"content": "", "category": "fact", "importance": 7})
	version(5, "m5", "", map[string]any{"content_hash": "", "forgotten_at": "2026-12-01T00:00:00Z"})
	if _, err := env.Writer.Write(ctx, store.Mutation{Table: store.TableMemories, RowID: "m3", Op: store.OpDelete}); err != nil {
		t.Fatal(err)
	}
	w := NewWorker(WorkerConfig{DB: env.DB, Writer: env.Writer, Chain: ch, Seed: seed, Interval: time.Hour})
	if err := w.Round(ctx); err != nil {
		t.Fatal(err)
	}
	for v, want := range map[uint64]string{1: h1, 2: h2} {
		rec, ok, err := ReadRecord(env.DB, StateRecordID("crow", v))
		if err != nil || !ok || rec.Status != StatusAnchored || rec.StateHash != want || rec.TxHash == "" || rec.AnchorID == 0 ||
			rec.ProjectID != HashHex(seed.ProjectIDHash("crow")) {
			t.Fatalf("record of version %d: %+v %v %v", v, rec, ok, err)
		}
		a, ok, err := ch.GetAnchor(ctx, seed.ProjectIDHash("crow"), v)
		if err != nil || !ok || HashHex(a.StateHash) != want || a.ID != rec.AnchorID {
			t.Fatalf("on chain, version %d: %+v %v %v", v, a, ok, err)
		}
	}
	for n, id := range map[uint64]string{1: "m1", 4: "m1"} {
		if rec, ok, _ := ReadRecord(env.DB, VersionRecordID(n)); !ok || rec.Status != StatusAnchored || rec.TxHash == "" ||
			rec.Number != n || rec.MemoryID != id {
			t.Fatalf("memory #%d: %+v %v", n, rec, ok)
		}
	}
	for n, why := range map[uint64]string{2: "anchored before versions, by memory id", 3: "of a deleted memory", 5: "forgotten"} {
		if _, ok, _ := ReadRecord(env.DB, VersionRecordID(n)); ok {
			t.Fatalf("memory #%d (%s) was anchored", n, why)
		}
	}
	if st := w.Stats(); st.States != 2 || st.Memories != 2 || st.Failures != 0 {
		t.Fatalf("stats = %+v", st)
	}
	count := anchorCount(t, ch.client)
	// Nothing pending: a second round (and a fresh worker, reloading the
	// records) sends no transaction.
	before := headOf(t, ch.client)
	if err := w.Round(ctx); err != nil {
		t.Fatal(err)
	}
	if err := NewWorker(WorkerConfig{DB: env.DB, Writer: env.Writer, Chain: ch, Seed: seed}).Round(ctx); err != nil {
		t.Fatal(err)
	}
	if headOf(t, ch.client) != before || anchorCount(t, ch.client) != count {
		t.Fatal("a round with nothing pending sent a transaction")
	}
}
