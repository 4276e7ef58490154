package anchor

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/crow-sync/crow/store"
	"github.com/crow-sync/crow/store/storetest"
)

// The worker anchors every state version and numbered memory once, on a
// real embedded chain, and records each in the anchors table; a second
// round sends nothing; a deleted memory is not anchored.
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
	for i, id := range []string{"m1", "m2", "m3"} {
		put(store.TableMemories, id, map[string]any{"content": "secret text " + id, "category": "fact", "importance": 7})
		put(store.TableMemoryNumbers, id, map[string]any{"number": i + 1, "event_hash": HashHex(hashOf("event " + id))})
	}
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
	for _, id := range []string{"m1", "m2"} {
		if rec, ok, _ := ReadRecord(env.DB, MemoryRecordID(id)); !ok || rec.Status != StatusAnchored || rec.TxHash == "" {
			t.Fatalf("memory %s: %+v %v", id, rec, ok)
		}
	}
	if _, ok, _ := ReadRecord(env.DB, MemoryRecordID("m3")); ok {
		t.Fatal("a deleted memory was anchored")
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
