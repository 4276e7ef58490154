package anchor

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math/big"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/crow-sync/crow/anchor/merkle"
	"github.com/crow-sync/crow/state"
	"github.com/crow-sync/crow/store"
	"github.com/crow-sync/crow/store/storetest"
)

// workerHome writes what the worker anchors into a real store.
type workerHome struct {
	t   *testing.T
	ctx context.Context
	env *storetest.Env
}

func newWorkerHome(t *testing.T, env *storetest.Env) *workerHome {
	return &workerHome{t: t, ctx: testCtx(t), env: env}
}

func (h *workerHome) put(table, id string, v any) {
	h.t.Helper()
	data, _ := json.Marshal(v)
	if _, err := h.env.Writer.Write(h.ctx, store.Mutation{Table: table, RowID: id, Op: store.OpPut, Data: data}); err != nil {
		h.t.Fatal(err)
	}
}

// states writes state versions from..from+n-1 of project (hashes derived
// from the project and version) and returns them.
func (h *workerHome) states(project string, from uint64, n int) mapVersions {
	h.t.Helper()
	out := mapVersions{}
	for v := from; v < from+uint64(n); v++ {
		hash := HashHex(hashOf(fmt.Sprintf("%s v%d", project, v)))
		h.put(store.TableStateVersions, fmt.Sprintf("%s/%020d", project, v), map[string]any{"project": project, "version": v, "state_hash": hash})
		out[v] = hash
	}
	return out
}

// rootRecord reads a root's record, failing the test if there is none.
func rootRecord(t *testing.T, db *store.DB, root string) RootRecord {
	t.Helper()
	rr, ok, err := ReadRootRecord(db, root)
	if err != nil || !ok {
		t.Fatalf("root record of %s: %v %v", root, ok, err)
	}
	return rr
}

// checkRecordProof checks that a state record's proof leads from its leaf
// (project id, version, state hash) to its root.
func checkRecordProof(t *testing.T, rec Record) {
	t.Helper()
	hs, err := parseHashes(append([]string{rec.ProjectID, rec.StateHash, rec.Root}, rec.Proof...))
	if err != nil {
		t.Fatalf("record %s v%d: %v", rec.Project, rec.Version, err)
	}
	if !merkle.Verify(hs[2], merkle.StateLeaf(hs[0], rec.Version, hs[1]), hs[3:]) {
		t.Fatalf("record %s v%d: the proof does not lead to root %s", rec.Project, rec.Version, rec.Root)
	}
}

// mineBlock makes one block by sending a transfer of 1 wei to a fresh
// address (a transaction that is no anchoring) and waiting for it.
func mineBlock(t *testing.T, c *client) uint64 {
	t.Helper()
	ctx := testCtx(t)
	nonce, err := c.ec.PendingNonceAt(ctx, c.from)
	if err != nil {
		t.Fatal(err)
	}
	head, err := c.ec.HeaderByNumber(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	seed := hashOf(fmt.Sprint("filler ", nonce))
	to := common.BytesToAddress(seed[:20])
	tip := big.NewInt(1e9)
	tx, err := types.SignNewTx(c.key, types.LatestSignerForChainID(c.chainID), &types.DynamicFeeTx{
		ChainID: c.chainID, Nonce: nonce, GasTipCap: tip, GasFeeCap: new(big.Int).Add(tip, new(big.Int).Mul(head.BaseFee, big.NewInt(2))),
		Gas: 21000, To: &to, Value: big.NewInt(1),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.ec.SendTransaction(ctx, tx); err != nil {
		t.Fatal(err)
	}
	rc, err := waitMined(ctx, c.ec, tx.Hash(), c.log)
	if err != nil {
		t.Fatal(err)
	}
	return rc.BlockNumber.Uint64()
}

// rewindTo drops every block after n from the embedded chain (debug_setHead:
// the blocks are discarded, so their transactions are not put back in the
// pool and re-mined). Seen from a Chain it is a reorg: the transactions of
// the dropped blocks are no longer on the canonical chain, and the next
// blocks at those heights are others.
func rewindTo(t *testing.T, e *Embedded, n uint64) {
	t.Helper()
	// The dev beacon seals on its own goroutine after each new transaction
	// (and once more for an event queued meanwhile): a seal racing the
	// rewind can read a block the rewind drops (a nil dereference in
	// go-ethereum's sealBlock). Rewind only once it has been idle a while.
	waitBeaconIdle(t, e)
	if err := e.ec.Client().CallContext(testCtx(t), nil, "debug_setHead", hexutil.Uint64(n)); err != nil {
		t.Fatalf("debug_setHead(%d): %v", n, err)
	}
	if h := headOf(t, e.client); h != n {
		t.Fatalf("after rewinding to %d the head is %d", n, h)
	}
	// The pool resets to the new head in the background: wait until it
	// gives out the account's nonce at the new head again.
	ctx := testCtx(t)
	want, err := e.ec.NonceAt(ctx, e.from, nil)
	if err != nil {
		t.Fatal(err)
	}
	for {
		got, err := e.ec.PendingNonceAt(ctx, e.from)
		if err != nil {
			t.Fatal(err)
		}
		if got == want {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("after rewinding the pool's nonce stays %d, the chain's is %d", got, want)
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// waitBeaconIdle waits until the pool holds no transaction and the head
// has not moved for 300 ms.
func waitBeaconIdle(t *testing.T, e *Embedded) {
	t.Helper()
	ctx := testCtx(t)
	last, since := headOf(t, e.client), time.Now()
	for {
		pending, err := e.ec.PendingTransactionCount(ctx)
		if err != nil {
			t.Fatal(err)
		}
		h := headOf(t, e.client)
		if h != last || pending != 0 {
			last, since = h, time.Now()
		} else if time.Since(since) >= 300*time.Millisecond {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the dev beacon did not go idle (head %d, %d pending)", h, pending)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// The worker anchors every state version and numbered memory version once,
// on a real embedded chain, under one root per kind and round, and records
// each in the anchors table with its proof (an edit is its own number; a
// record by memory id with a root counts for its number; a record from
// before roots is anchored again); a second round sends nothing; a deleted
// memory and a forgotten version are not anchored.
func TestWorkerAnchorsPendingOnce(t *testing.T) {
	env := storetest.Start(t, t.TempDir())
	seed := goldenSeed()
	ch := openEmbedded(t, t.TempDir(), seed.AnchorKey())
	ctx := testCtx(t)
	h := newWorkerHome(t, env)
	put := h.put
	versions := h.states("crow", 1, 2)
	// Version 2 was anchored on the first contract (no root): anchored again.
	put(store.TableAnchors, StateRecordID("crow", 2), Record{Kind: RecordState, Status: StatusAnchored, Project: "crow", Version: 2,
		StateHash: versions[2], AnchorID: 7, TxHash: "0xold"})
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
	// anchored under a root before versions, in a record by its memory id;
	// #5 was forgotten.
	version(4, "m1", "secret text m1, edited", map[string]any{"supersedes": 1})
	put(store.TableAnchors, MemoryRecordID("m2"), Record{Kind: RecordMemory, Status: StatusIncluded, MemoryID: "m2", Number: 2,
		Root: HashHex(hashOf("an older root")), TxHash: "0xold"})
	put(store.TableMemories, "m5", map[string]any{"content": "", "category": "fact", "importance": 7})
	version(5, "m5", "", map[string]any{"content_hash": "", "forgotten_at": "2026-12-01T00:00:00Z"})
	if _, err := env.Writer.Write(ctx, store.Mutation{Table: store.TableMemories, RowID: "m3", Op: store.OpDelete}); err != nil {
		t.Fatal(err)
	}
	w := NewWorker(WorkerConfig{DB: env.DB, Writer: env.Writer, Chain: ch, Seed: seed, Interval: time.Hour})
	if err := w.Round(ctx); err != nil {
		t.Fatal(err)
	}
	var stateRoot string
	for v, want := range versions {
		rec, ok, err := ReadRecord(env.DB, StateRecordID("crow", v))
		if err != nil || !ok || rec.Status != StatusIncluded || rec.StateHash != want || rec.TxHash == "" || rec.RootID == 0 || rec.Root == "" ||
			rec.ProjectID != HashHex(seed.ProjectIDHash("crow")) || rec.AnchorID != 0 {
			t.Fatalf("record of version %d: %+v %v %v", v, rec, ok, err)
		}
		checkRecordProof(t, rec)
		if stateRoot != "" && rec.Root != stateRoot {
			t.Fatalf("versions under two roots: %s and %s", stateRoot, rec.Root)
		}
		stateRoot = rec.Root
		if st, _, err := StatusOf(env.DB, rec); err != nil || st != StatusFinal {
			t.Fatalf("status of version %d: %s %v (one confirmation makes it final by default)", v, st, err)
		}
	}
	root, _ := state.ParseHash(stateRoot)
	if ri, ok, err := ch.GetRoot(ctx, root); err != nil || !ok || ri.Count != 2 {
		t.Fatalf("the state root on chain: %+v %v %v", ri, ok, err)
	}
	if rr := rootRecord(t, env.DB, stateRoot); rr.Leaves != RecordState || rr.Count != 2 || len(rr.Batch) == 0 || rr.Status != StatusFinal || rr.FinalAt == "" {
		t.Fatalf("root record: %+v", rr)
	}
	var memRoot string
	for n, id := range map[uint64]string{1: "m1", 4: "m1"} {
		rec, ok, _ := ReadRecord(env.DB, VersionRecordID(n))
		if !ok || rec.Status != StatusIncluded || rec.TxHash == "" || rec.Number != n || rec.MemoryID != id || rec.Root == "" {
			t.Fatalf("memory #%d: %+v %v", n, rec, ok)
		}
		eh, _ := state.ParseHash(rec.EventHash)
		hs, err := parseHashes(append([]string{rec.Root}, rec.Proof...))
		if err != nil || !merkle.Verify(hs[0], merkle.HashLeaf(eh), hs[1:]) {
			t.Fatalf("memory #%d: the proof does not lead to the root (%v)", n, err)
		}
		memRoot = rec.Root
	}
	if rr := rootRecord(t, env.DB, memRoot); rr.Leaves != RecordMemory || rr.Count != 2 || rr.Status != StatusFinal {
		t.Fatalf("memory root record: %+v", rr)
	}
	for n, why := range map[uint64]string{2: "anchored before versions, by memory id", 3: "of a deleted memory", 5: "forgotten"} {
		if _, ok, _ := ReadRecord(env.DB, VersionRecordID(n)); ok {
			t.Fatalf("memory #%d (%s) was anchored", n, why)
		}
	}
	if st := w.Stats(); st.States != 2 || st.Memories != 2 || st.Failures != 0 {
		t.Fatalf("stats = %+v", st)
	}
	if n := rootCount(t, ch.client); n != 2 {
		t.Fatalf("%d roots on chain, want 2 (one of states, one of memories)", n)
	}
	// Nothing pending: a second round (and a fresh worker, reloading the
	// records) sends no transaction.
	before := headOf(t, ch.client)
	if err := w.Round(ctx); err != nil {
		t.Fatal(err)
	}
	if err := NewWorker(WorkerConfig{DB: env.DB, Writer: env.Writer, Chain: ch, Seed: seed}).Round(ctx); err != nil {
		t.Fatal(err)
	}
	if headOf(t, ch.client) != before || rootCount(t, ch.client) != 2 {
		t.Fatal("a round with nothing pending sent a transaction")
	}
}
