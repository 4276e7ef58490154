package anchor

import (
	"testing"
	"time"

	"github.com/crow-sync/crow/state"
	"github.com/crow-sync/crow/store"
	"github.com/crow-sync/crow/store/storetest"
)

// Home failover: a worker with Recheck on a fresh chain (a promoted home's
// embedded chain) sends again the roots the old home's chain held, the same
// roots, so the records' proofs stay valid; the roots already on its chain
// cost no write.
func TestWorkerRecheckSendsLostRoots(t *testing.T) {
	env := storetest.Start(t, t.TempDir())
	seed := goldenSeed()
	ctx := testCtx(t)
	h := newWorkerHome(t, env)
	h.states("crow", 1, 2)
	old := openEmbedded(t, t.TempDir(), seed.AnchorKey())
	if err := NewWorker(WorkerConfig{DB: env.DB, Writer: env.Writer, Chain: old, Seed: seed, Interval: time.Hour}).Round(ctx); err != nil {
		t.Fatal(err)
	}
	rec, ok, err := ReadRecord(env.DB, StateRecordID("crow", 1))
	if err != nil || !ok || rec.Root == "" {
		t.Fatalf("record on the old chain: %+v %v %v", rec, ok, err)
	}
	before := rootRecord(t, env.DB, rec.Root)
	root, _ := state.ParseHash(rec.Root)

	fresh := openEmbedded(t, t.TempDir(), seed.AnchorKey())
	// Without Recheck a final root is never looked at again.
	if err := NewWorker(WorkerConfig{DB: env.DB, Writer: env.Writer, Chain: fresh, Seed: seed, Interval: time.Hour}).Round(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := fresh.GetRoot(ctx, root); ok {
		t.Fatal("a root was sent without Recheck")
	}
	w := NewWorker(WorkerConfig{DB: env.DB, Writer: env.Writer, Chain: fresh, Seed: seed, Interval: time.Hour, Recheck: true})
	if err := w.Round(ctx); err != nil {
		t.Fatal(err)
	}
	if ri, ok, err := fresh.GetRoot(ctx, root); err != nil || !ok || ri.Count != 2 {
		t.Fatalf("the root on the fresh chain: %+v %v %v", ri, ok, err)
	}
	after := rootRecord(t, env.DB, rec.Root)
	if after.Resent != before.Resent+1 || after.BlockHash == before.BlockHash || after.Status != StatusFinal {
		t.Fatalf("root record after the recheck: %+v (was %+v)", after, before)
	}
	if again, _, _ := ReadRecord(env.DB, StateRecordID("crow", 1)); again.Root != rec.Root {
		t.Fatal("the version's record moved to another root")
	}
	checkRecordProof(t, rec)
	// A second recheck finds every root on this chain: nothing sent, nothing written.
	head, seq := headOf(t, fresh.client), queueSeq(t, env.DB)
	if err := NewWorker(WorkerConfig{DB: env.DB, Writer: env.Writer, Chain: fresh, Seed: seed, Recheck: true}).Round(ctx); err != nil {
		t.Fatal(err)
	}
	if headOf(t, fresh.client) != head || queueSeq(t, env.DB) != seq {
		t.Fatal("a recheck of roots already on the chain sent or wrote something")
	}
}

func queueSeq(t *testing.T, db *store.DB) uint64 {
	t.Helper()
	var seq uint64
	if err := db.View(func(txn *store.Txn) error {
		var err error
		seq, err = txn.QueueSeq()
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return seq
}
