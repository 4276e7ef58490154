package anchor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"maps"
	"reflect"
	"testing"
	"time"

	"github.com/crow-sync/crow/state"
	"github.com/crow-sync/crow/store"
	"github.com/crow-sync/crow/store/storetest"
)

// One round commits every pending state version, of every project, under
// ONE root in one transaction; each version's record carries a proof to
// that root; the packet checks out offline (proof and address binding) and
// the root is on chain with the right count.
func TestWorkerOneRootPerRound(t *testing.T) {
	env := storetest.Start(t, t.TempDir())
	seed := goldenSeed()
	ch := openEmbedded(t, t.TempDir(), seed.AnchorKey())
	ctx := testCtx(t)
	h := newWorkerHome(t, env)
	projects := []string{"crow", "sistema-pagos", "tesis-ml", "crow/sub"}
	all := map[string]mapVersions{}
	for _, p := range projects {
		all[p] = h.states(p, 1, 25)
	}
	before, roots := headOf(t, ch.client), rootCount(t, ch.client)
	w := NewWorker(WorkerConfig{DB: env.DB, Writer: env.Writer, Chain: ch, Seed: seed, Interval: time.Hour, RPCURL: "http://example.invalid/rpc"})
	if err := w.Round(ctx); err != nil {
		t.Fatal(err)
	}
	if got := headOf(t, ch.client) - before; got != 1 {
		t.Fatalf("the round made %d blocks, want 1", got)
	}
	if got := rootCount(t, ch.client) - roots; got != 1 {
		t.Fatalf("the round anchored %d roots, want 1", got)
	}
	if st := w.Stats(); st.States != 100 {
		t.Fatalf("stats: %+v", st)
	}

	var root string
	var txHash string
	for _, p := range projects {
		for v, hash := range all[p] {
			rec, ok, err := ReadRecord(env.DB, StateRecordID(p, v))
			if err != nil || !ok || rec.Kind != RecordState || rec.StateHash != hash || rec.ProjectID != HashHex(seed.ProjectIDHash(p)) {
				t.Fatalf("%s v%d: %+v %v %v", p, v, rec, ok, err)
			}
			if root == "" {
				root, txHash = rec.Root, rec.TxHash
			}
			if rec.Root != root || rec.TxHash != txHash {
				t.Fatalf("%s v%d under root %s tx %s, others under %s %s", p, v, rec.Root, rec.TxHash, root, txHash)
			}
			if len(rec.Proof) < 6 || len(rec.Proof) > 7 {
				t.Errorf("%s v%d: a proof of %d hashes in a tree of 100", p, v, len(rec.Proof))
			}
			checkRecordProof(t, rec)
			pk, ok, err := PacketOf(env.DB, rec)
			if err != nil || !ok {
				t.Fatalf("PacketOf(%s v%d): %v %v", p, v, ok, err)
			}
			if err := CheckPacket(pk); err != nil {
				t.Fatalf("CheckPacket(%s v%d): %v", p, v, err)
			}
		}
	}
	rr := rootRecord(t, env.DB, root)
	if recs, err := BatchRecords(rr); err != nil || len(recs) != 100 || len(rr.Items) != 0 {
		t.Fatalf("root record's batch: %d records, %d items, %v", len(recs), len(rr.Items), err)
	}
	if rr.Count != 100 || rr.TxHash != txHash || rr.Status != StatusFinal || rr.Leaves != RecordState || rr.RootID == 0 ||
		rr.ChainID != 1337 || rr.Contract != ch.Info().Contract {
		t.Fatalf("root record: %+v", rr)
	}
	rh, _ := state.ParseHash(root)
	ri, ok, err := ch.GetRoot(ctx, rh)
	if err != nil || !ok || ri.Count != 100 || ri.ID != rr.RootID {
		t.Fatalf("GetRoot = %+v %v %v", ri, ok, err)
	}
	checkRoot(t, ch.client, rh, 100, Receipt{TxHash: rr.TxHash, Block: rr.Block, BlockHash: rr.BlockHash, RootID: rr.RootID})
	t.Logf("100 versions, one root: %d gas", receiptOf(t, ch.client, txHash).GasUsed)

	// The packet, field by field, and as JSON (the SPEC's names).
	rec, _, _ := ReadRecord(env.DB, StateRecordID("tesis-ml", 17))
	pk, _, _ := PacketOf(env.DB, rec)
	if pk.ChainID != 1337 || pk.Contract != ch.Info().Contract || pk.Version != 17 || pk.StateHash != all["tesis-ml"][17] || pk.Root != root ||
		pk.TxHash != txHash || pk.BlockNumber != rr.Block || pk.Status != StatusFinal || pk.AnchoringAddress != ch.Info().Account ||
		pk.CrowID != seed.CrowID() || pk.RPCURL != "http://example.invalid/rpc" || !reflect.DeepEqual(pk.LeafTypes, []string{"bytes32", "uint64", "bytes32"}) {
		t.Fatalf("packet: %+v", pk)
	}
	if err := CheckBinding(pk.CrowID, pk.RootPublicKey, pk.AnchoringAddress, pk.AddressSignature); err != nil {
		t.Fatalf("binding: %v", err)
	}
	b, _ := json.Marshal(pk)
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"chain_id", "contract", "project_id", "version", "state_hash", "root", "proof", "tx_hash", "block_number",
		"status", "anchoring_address", "address_signature", "rpc_url"} {
		if _, ok := doc[k]; !ok {
			t.Errorf("packet JSON lacks %q: %s", k, b)
		}
	}

	// What CheckPacket refuses: another state hash, version or root, a
	// proof cut short; a binding of another address or by another key.
	bad := map[string]func(*Packet){
		"state hash":  func(p *Packet) { p.StateHash = all["tesis-ml"][18] },
		"version":     func(p *Packet) { p.Version = 18 },
		"root":        func(p *Packet) { p.Root = HashHex(hashOf("other")) },
		"short proof": func(p *Packet) { p.Proof = p.Proof[1:] },
		"project id":  func(p *Packet) { p.ProjectID = HashHex(seed.ProjectIDHash("crow")) },
	}
	for name, f := range bad {
		p := pk
		p.Proof = append([]string(nil), pk.Proof...)
		f(&p)
		if err := CheckPacket(p); !errors.Is(err, ErrProofMismatch) {
			t.Errorf("packet with another %s: %v, want ErrProofMismatch", name, err)
		}
	}
	other := pk
	other.AnchoringAddress = ch.Info().Contract
	if err := CheckPacket(other); !errors.Is(err, ErrBadBinding) {
		t.Errorf("another anchoring address: %v, want ErrBadBinding", err)
	}
	var seed2 = seed
	seed2[0] ^= 1
	other = pk
	other.CrowID, other.RootPublicKey, other.AddressSignature = SignBinding(seed2, "0x0000000000000000000000000000000000000001")
	if err := CheckPacket(other); !errors.Is(err, ErrBadBinding) {
		t.Errorf("another key's binding: %v, want ErrBadBinding", err)
	}
	other = pk
	_, other.RootPublicKey, _ = SignBinding(seed2, pk.AnchoringAddress)
	if err := CheckPacket(other); !errors.Is(err, ErrBadBinding) {
		t.Errorf("another root key for the crow id: %v, want ErrBadBinding", err)
	}

	// A new version later: a root of its own, a tree of one leaf.
	h.states("crow", 26, 1)
	if err := w.Round(ctx); err != nil {
		t.Fatal(err)
	}
	rec, _, _ = ReadRecord(env.DB, StateRecordID("crow", 26))
	if rec.Root == root || len(rec.Proof) != 0 || rootRecord(t, env.DB, rec.Root).Count != 1 {
		t.Fatalf("the next version: %+v", rec)
	}
	if pk, _, _ := PacketOf(env.DB, rec); CheckPacket(pk) != nil || pk.Proof == nil {
		t.Fatalf("a packet of a tree of one: %+v (proof must be [], not null)", pk)
	}
}

// With Confirmations 3 a root stays included until two more blocks are on
// top of its own, then it is final (and stays so).
func TestWorkerConfirmations(t *testing.T) {
	env := storetest.Start(t, t.TempDir())
	seed := goldenSeed()
	ch := openEmbedded(t, t.TempDir(), seed.AnchorKey())
	ctx := testCtx(t)
	h := newWorkerHome(t, env)
	h.states("crow", 1, 2)
	w := NewWorker(WorkerConfig{DB: env.DB, Writer: env.Writer, Chain: ch, Seed: seed, Interval: time.Hour, Confirmations: 3})
	entries := env.Journal.Len()
	if err := w.Round(ctx); err != nil {
		t.Fatal(err)
	}
	if n := env.Journal.Len() - entries; n != 2 {
		t.Fatalf("anchoring two versions wrote %d rows, want 2: the chain record and the root's", n)
	}
	rec, _, _ := ReadRecord(env.DB, StateRecordID("crow", 1))
	status := func() string {
		t.Helper()
		st, _, err := StatusOf(env.DB, rec)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	sa := func() string {
		t.Helper()
		a, err := Records{DB: env.DB}.StateAnchor("crow", 1)
		if err != nil {
			t.Fatal(err)
		}
		return a.Status
	}
	if s := status(); s != StatusIncluded || sa() != StatusIncluded {
		t.Fatalf("just anchored: %s / %s, want included", s, sa())
	}
	// Rounds without new blocks change nothing.
	if err := w.Round(ctx); err != nil || status() != StatusIncluded {
		t.Fatalf("a round without blocks: %s %v", status(), err)
	}
	mineBlock(t, ch.client)
	if err := w.Round(ctx); err != nil || status() != StatusIncluded {
		t.Fatalf("two confirmations: %s %v", status(), err)
	}
	if pk, _, _ := PacketOf(env.DB, rec); pk.Status != StatusIncluded {
		t.Fatalf("packet status with two confirmations: %s", pk.Status)
	}
	mineBlock(t, ch.client)
	entries = env.Journal.Len()
	if err := w.Round(ctx); err != nil {
		t.Fatal(err)
	}
	if n := env.Journal.Len() - entries; n != 1 {
		t.Fatalf("turning final wrote %d rows, want 1: the root's, not one per version", n)
	}
	rr := rootRecord(t, env.DB, rec.Root)
	if rr.Status != StatusFinal || rr.FinalAt == "" || status() != StatusFinal || sa() != StatusFinal {
		t.Fatalf("three confirmations: %+v", rr)
	}
	if pk, _, _ := PacketOf(env.DB, rec); pk.Status != StatusFinal {
		t.Fatalf("packet status when final: %s", pk.Status)
	}
	// A final root is not followed any more (no write), nor by a fresh
	// worker.
	lamport := func() uint64 {
		t.Helper()
		r, err := env.DB.Get(store.TableAnchors, RootRecordID(mustRoot(t, rec.Root)))
		if err != nil {
			t.Fatal(err)
		}
		return r.LamportTS
	}
	before := lamport()
	mineBlock(t, ch.client)
	for _, w := range []*Worker{w, NewWorker(WorkerConfig{DB: env.DB, Writer: env.Writer, Chain: ch, Seed: seed, Confirmations: 3})} {
		if err := w.Round(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if rr2 := rootRecord(t, env.DB, rec.Root); !reflect.DeepEqual(rr2, rr) || lamport() != before {
		t.Fatalf("a final root changed: %+v, was %+v", rr2, rr)
	}
}

func mustRoot(t *testing.T, s string) [32]byte {
	t.Helper()
	h, err := state.ParseHash(s)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// A reorg drops the block holding a root's transaction: the next round
// sees the transaction is no longer on the canonical chain and sends the
// root again; the root record gets the new transaction (resent 1), the
// root is on chain again, and the version records (root, proof) are
// untouched.
func TestWorkerResendsAfterReorg(t *testing.T) {
	env := storetest.Start(t, t.TempDir())
	seed := goldenSeed()
	ch := openEmbedded(t, t.TempDir(), seed.AnchorKey())
	ctx := testCtx(t)
	h := newWorkerHome(t, env)
	versions := h.states("crow", 1, 5)
	w := NewWorker(WorkerConfig{DB: env.DB, Writer: env.Writer, Chain: ch, Seed: seed, Interval: time.Hour, Confirmations: 3})
	if err := w.Round(ctx); err != nil {
		t.Fatal(err)
	}
	recordsBefore := stateRecords(t, env.DB)
	rec := recordsBefore[StateRecordID("crow", 3)]
	rr := rootRecord(t, env.DB, rec.Root)
	if rr.Status != StatusIncluded || rr.Resent != 0 {
		t.Fatalf("root record: %+v", rr)
	}
	root := mustRoot(t, rec.Root)

	// The reorg: the block of the root's transaction and everything after
	// it are dropped; the chain grows two other blocks at those heights.
	rewindTo(t, ch, rr.Block-1)
	mineBlock(t, ch.client)
	mineBlock(t, ch.client)
	if st, err := ch.TxStatus(ctx, rr.TxHash); err != nil || st.Mined {
		t.Fatalf("after the reorg the anchoring tx is %+v, %v; want not mined", st, err)
	}
	if _, ok, err := ch.GetRoot(ctx, root); err != nil || ok {
		t.Fatalf("after the reorg the root is on chain: %v %v", ok, err)
	}
	if s, _, _ := StatusOf(env.DB, rec); s != StatusIncluded {
		t.Fatalf("before the worker notices: %s", s)
	}

	if err := w.Round(ctx); err != nil {
		t.Fatal(err)
	}
	rr2 := rootRecord(t, env.DB, rec.Root)
	if rr2.Resent != 1 || rr2.TxHash == rr.TxHash || rr2.TxHash == "" || rr2.BlockHash == rr.BlockHash ||
		(rr2.Status != StatusIncluded && rr2.Status != StatusFinal) ||
		rr2.Count != 5 || !reflect.DeepEqual(rr2.Items, rr.Items) || !bytes.Equal(rr2.Batch, rr.Batch) {
		t.Fatalf("root record after the re-send: %+v\nbefore: %+v", rr2, rr)
	}
	st, err := ch.TxStatus(ctx, rr2.TxHash)
	if err != nil || !st.Mined || st.Block != rr2.Block || st.BlockHash != rr2.BlockHash {
		t.Fatalf("the re-sent tx: %+v %v", st, err)
	}
	// The dev beacon may seal empty blocks after a rewind (the pool's
	// reset re-announces transactions), so the re-sent root can already
	// have its three confirmations when the round looks: final then, and
	// only then (confirmations never go down on this chain).
	if rr2.Status == StatusFinal && st.Confirmations() < 3 {
		t.Fatalf("the re-sent root is final with %d confirmations: %+v", st.Confirmations(), rr2)
	}
	ri, ok, err := ch.GetRoot(ctx, root)
	if err != nil || !ok || ri.Count != 5 || ri.ID != rr2.RootID {
		t.Fatalf("GetRoot after the re-send: %+v %v %v (record: %+v)", ri, ok, err, rr2)
	}
	// Every version's record is its root's (the same root and proofs) in
	// the root's new transaction.
	for id, r := range recordsBefore {
		r.TxHash, r.Block, r.RootID = rr2.TxHash, rr2.Block, rr2.RootID
		recordsBefore[id] = r
	}
	if after := stateRecords(t, env.DB); !reflect.DeepEqual(after, recordsBefore) {
		t.Fatalf("the version records changed:\n%+v\nwas\n%+v", after, recordsBefore)
	}
	// The packets follow the root's new transaction and still check out;
	// the Verifier sees the root on chain again.
	pk, _, _ := PacketOf(env.DB, rec)
	if pk.TxHash != rr2.TxHash || pk.BlockNumber != rr2.Block || CheckPacket(pk) != nil {
		t.Fatalf("packet after the re-send: %+v", pk)
	}
	rep, err := Verifier{DB: env.DB, Chain: ch, ProjectID: SeedProjectID(seed), Versions: versions}.VerifyProject(ctx, "crow")
	if err != nil || !rep.Verified || rep.Versions[2].TxHash != rr2.TxHash {
		t.Fatalf("report after the re-send: %+v %v", rep, err)
	}
	// It becomes final like any root.
	mineBlock(t, ch.client)
	mineBlock(t, ch.client)
	if err := w.Round(ctx); err != nil {
		t.Fatal(err)
	}
	if rr3 := rootRecord(t, env.DB, rec.Root); rr3.Status != StatusFinal || rr3.Resent != 1 || rr3.TxHash != rr2.TxHash {
		t.Fatalf("after the re-send and two blocks: %+v", rr3)
	}
}

// A reorg that mines the same transaction again in another block: the
// root record follows it to its new block; nothing is sent again.
func TestWorkerFollowsMovedTx(t *testing.T) {
	env := storetest.Start(t, t.TempDir())
	seed := goldenSeed()
	ch := openEmbedded(t, t.TempDir(), seed.AnchorKey())
	ctx := testCtx(t)
	h := newWorkerHome(t, env)
	h.states("crow", 1, 2)
	w := NewWorker(WorkerConfig{DB: env.DB, Writer: env.Writer, Chain: ch, Seed: seed, Interval: time.Hour, Confirmations: 3})
	if err := w.Round(ctx); err != nil {
		t.Fatal(err)
	}
	rec, _, _ := ReadRecord(env.DB, StateRecordID("crow", 1))
	rr := rootRecord(t, env.DB, rec.Root)
	tx, _, err := ch.ec.TransactionByHash(ctx, mustRoot(t, rr.TxHash))
	if err != nil {
		t.Fatal(err)
	}
	rewindTo(t, ch, rr.Block-1)
	if err := ch.ec.SendTransaction(ctx, tx); err != nil {
		t.Fatalf("sending the dropped tx again: %v", err)
	}
	if _, err := waitMined(ctx, ch.ec, tx.Hash(), ch.log); err != nil {
		t.Fatal(err)
	}
	// What "nothing sent" means is the account's nonce: the head is no
	// witness, since the dev beacon may seal an empty block when the pool
	// re-injects the rewound transaction after it was mined again.
	nonce, err := ch.ec.PendingNonceAt(ctx, ch.from)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Round(ctx); err != nil {
		t.Fatal(err)
	}
	rr2 := rootRecord(t, env.DB, rec.Root)
	if rr2.TxHash != rr.TxHash || rr2.BlockHash == rr.BlockHash || rr2.Block != rr.Block || rr2.Resent != 0 || rr2.Status != StatusIncluded {
		t.Fatalf("root record after the move: %+v\nbefore: %+v", rr2, rr)
	}
	if after, err := ch.ec.PendingNonceAt(ctx, ch.from); err != nil || after != nonce {
		t.Fatalf("the worker sent a transaction for a root that is on chain: nonce %d → %d (%v)", nonce, after, err)
	}
}

// stateRecords is every state record of the anchors table, by record id:
// per-version rows and those of the roots' batch rows.
func stateRecords(t *testing.T, db *store.DB) map[string]Record {
	t.Helper()
	out := map[string]Record{}
	err := db.View(func(txn *store.Txn) error {
		return txn.ScanRows(store.TableAnchors, func(r *store.Row) error {
			var rec Record
			if r.Deleted || json.Unmarshal(r.Data, &rec) != nil {
				return nil
			}
			if rec.Kind == RecordState {
				out[r.RowID] = rec
			}
			var rr RootRecord
			if rec.Kind == RecordRoot && json.Unmarshal(r.Data, &rr) == nil && rr.Leaves == RecordState {
				recs, err := BatchRecords(rr)
				if err != nil {
					return err
				}
				maps.Copy(out, recs)
			}
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// The Verifier over a real chain and home's records: included, then final
// (with Match); mismatch when the state held here differs from the
// anchored one; missing when a record points at a root the chain does not
// have.
func TestVerifierOverChain(t *testing.T) {
	env := storetest.Start(t, t.TempDir())
	seed := goldenSeed()
	ch := openEmbedded(t, t.TempDir(), seed.AnchorKey())
	ctx := testCtx(t)
	h := newWorkerHome(t, env)
	versions := h.states("crow", 1, 3)
	w := NewWorker(WorkerConfig{DB: env.DB, Writer: env.Writer, Chain: ch, Seed: seed, Interval: time.Hour, Confirmations: 2})
	if err := w.Round(ctx); err != nil {
		t.Fatal(err)
	}
	v := Verifier{DB: env.DB, Chain: ch, ProjectID: SeedProjectID(seed), Versions: versions}
	check := func(want string, verified bool) Report {
		t.Helper()
		rep, err := v.VerifyProject(ctx, "crow")
		if err != nil {
			t.Fatal(err)
		}
		if rep.Verified != verified || len(rep.Versions) != 3 || rep.ProjectID != HashHex(seed.ProjectIDHash("crow")) ||
			rep.Chain == nil || rep.Chain.Contract != ch.Info().Contract {
			t.Fatalf("report: %+v", rep)
		}
		for _, c := range rep.Versions {
			if c.Status != want || !c.Match || c.RootID == 0 || c.AnchoredAt == "" || c.AnchoredBy != ch.Info().Account || c.Packet == nil ||
				c.TxHash == "" || c.BlockNumber == 0 {
				t.Fatalf("version %d: %+v, want %s with a match", c.Version, c, want)
			}
		}
		return rep
	}
	check(StatusIncluded, true)
	mineBlock(t, ch.client)
	if err := w.Round(ctx); err != nil {
		t.Fatal(err)
	}
	rep := check(StatusFinal, true)
	one, err := v.VerifyVersion(ctx, "crow", 2)
	if err != nil || !one.Verified || one.Packet == nil || one.Packet.Version != 2 || CheckPacket(*one.Packet) != nil {
		t.Fatalf("one version: %+v %v", one, err)
	}

	// The state held here is not the one anchored.
	changed := mapVersions{1: versions[1], 2: HashHex(hashOf("tampered")), 3: versions[3]}
	rep2, err := Verifier{DB: env.DB, Chain: ch, ProjectID: SeedProjectID(seed), Versions: changed}.VerifyProject(ctx, "crow")
	if err != nil || rep2.Verified {
		t.Fatalf("tampered: %+v %v", rep2, err)
	}
	if c := rep2.Versions[1]; c.Status != StatusMismatch || c.Match || !c.Contradicted() {
		t.Fatalf("tampered version: %+v", c)
	}
	if c := rep2.Versions[0]; c.Status != StatusFinal || !c.Match {
		t.Fatalf("the others stay final: %+v", c)
	}

	// A record (with a proof that checks out) pointing at a root never
	// anchored on this chain: missing.
	h.states("crow", 4, 1)
	versions[4] = HashHex(hashOf("crow v4"))
	leaf := testState{ProjectID: seed.ProjectIDHash("crow"), Version: 4, StateHash: hashOf("crow v4")}
	never := HashHex(leaf.leaf()) // a tree of one leaf: root = leaf, empty proof
	info := ch.Info()
	h.put(store.TableAnchors, StateRecordID("crow", 4), Record{Kind: RecordState, Status: StatusIncluded, Project: "crow",
		ProjectID: HashHex(leaf.ProjectID), Version: 4, StateHash: versions[4], Root: never, Proof: []string{}, RootID: 99,
		TxHash: rep.Versions[0].TxHash, Block: rep.Versions[0].BlockNumber, ChainID: info.ChainID, Contract: info.Contract})
	h.put(store.TableAnchors, RootRecordID(leaf.leaf()), RootRecord{Kind: RecordRoot, Leaves: RecordState, Status: StatusFinal, Root: never,
		Count: 1, RootID: 99, TxHash: rep.Versions[0].TxHash, Block: rep.Versions[0].BlockNumber, ChainID: info.ChainID, Contract: info.Contract,
		Items: []string{StateRecordID("crow", 4)}})
	v.Versions = versions
	one, err = v.VerifyVersion(ctx, "crow", 4)
	if err != nil || one.Verified || one.Versions[0].Status != StatusMissing || !one.Versions[0].Contradicted() {
		t.Fatalf("a root the chain lacks: %+v %v", one, err)
	}
	if pk := one.Packet; pk == nil || CheckPacket(*pk) != nil {
		t.Fatalf("its packet checks out offline (only the chain says no): %+v", pk)
	}
	if rep, err := v.VerifyProject(ctx, "crow"); err != nil || rep.Verified || len(rep.Versions) != 4 {
		t.Fatalf("the project with one missing: %+v %v", rep, err)
	}
}

// A reorg drops a memory root: the worker seals the memories again (fresh
// nonces, the same event hashes, so the same root) and sends it again; the
// proofs follow the new transaction. If a memory of the dropped root was
// forgotten since, the root cannot be rebuilt: its records are dropped and
// what is left is anchored under a new root at the next round.
func TestWorkerResendsMemoriesAfterReorg(t *testing.T) {
	h := newProofHome(t)
	h.memory("m1", 1, "primera")
	h.memory("m2", 2, "segunda")
	w := NewWorker(WorkerConfig{DB: h.env.DB, Writer: h.env.Writer, Chain: h.chain, Seed: h.seed, Interval: time.Hour, Confirmations: 3})
	if err := w.Round(h.ctx); err != nil {
		t.Fatal(err)
	}
	rec, _, _ := ReadRecord(h.env.DB, VersionRecordID(1))
	rr := rootRecord(t, h.env.DB, rec.Root)
	if rr.Leaves != RecordMemory || rr.Count != 2 || rr.Status != StatusIncluded {
		t.Fatalf("memory root record: %+v", rr)
	}
	rewindTo(t, h.chain, rr.Block-1)
	mineBlock(t, h.chain.client)
	waitDropped(t, h.chain, rr.TxHash)
	if err := w.Round(h.ctx); err != nil {
		t.Fatal(err)
	}
	rr2 := rootRecord(t, h.env.DB, rec.Root)
	if rr2.Resent != 1 || rr2.TxHash == rr.TxHash || rr2.Count != 2 {
		t.Fatalf("after the re-send: %+v", rr2)
	}
	// The record is the root's batch row's: the same root and proof, the
	// transaction the root was sent again in.
	want := rec
	want.TxHash, want.Block, want.RootID = rr2.TxHash, rr2.Block, rr2.RootID
	if rec2, _, _ := ReadRecord(h.env.DB, VersionRecordID(1)); !reflect.DeepEqual(rec2, want) {
		t.Fatalf("the memory record changed: %+v, want %+v", rec2, want)
	}
	pr := h.proof(h.prover(), 1)
	if pr.Status != StatusVerified || pr.Onchain == nil || pr.Onchain.TxHash != rr2.TxHash || pr.Anchor.TxHash != rr2.TxHash {
		t.Fatalf("proof after the re-send: %+v onchain %+v", pr, pr.Onchain)
	}

	// Dropped again, and m2 forgotten meanwhile: the root is gone for good.
	rewindTo(t, h.chain, rr2.Block-1)
	mineBlock(t, h.chain.client)
	waitDropped(t, h.chain, rr2.TxHash)
	if err := ShredMemoryKey(h.env.DB, "m2"); err != nil {
		t.Fatal(err)
	}
	if err := w.Round(h.ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := ReadRootRecord(h.env.DB, rec.Root); ok {
		t.Fatal("the root that cannot be rebuilt still has a record")
	}
	for _, n := range []uint64{1, 2} {
		if _, ok, _ := ReadRecord(h.env.DB, VersionRecordID(n)); ok {
			t.Fatalf("memory #%d keeps its record of the dropped root", n)
		}
	}
	if err := w.Round(h.ctx); err != nil {
		t.Fatal(err)
	}
	rec3, ok, _ := ReadRecord(h.env.DB, VersionRecordID(1))
	if !ok || rec3.Root == "" || rec3.Root == rec.Root || len(rec3.Proof) != 0 {
		t.Fatalf("m1 anchored again: %+v %v", rec3, ok)
	}
	if rr3 := rootRecord(t, h.env.DB, rec3.Root); rr3.Count != 1 || rr3.Resent != 0 {
		t.Fatalf("the new root: %+v", rr3)
	}
	if _, ok, _ := ReadRecord(h.env.DB, VersionRecordID(2)); ok {
		t.Fatal("the forgotten memory was anchored again")
	}
	if pr := h.proof(h.prover(), 1); pr.Status != StatusVerified {
		t.Fatalf("m1's proof under the new root: %+v", pr)
	}
}

// A worker that died after its transaction was mined but before it wrote
// the records: the next round builds the same root from the same pending
// versions and anchors it again, which the contract takes as a no-op (the
// same root id, no second root); the records are then written.
func TestWorkerAfterCrashBeforeRecording(t *testing.T) {
	env := storetest.Start(t, t.TempDir())
	seed := goldenSeed()
	ch := openEmbedded(t, t.TempDir(), seed.AnchorKey())
	ctx := testCtx(t)
	h := newWorkerHome(t, env)
	versions := h.states("crow", 1, 3)
	var states []testState
	for v := uint64(1); v <= 3; v++ {
		states = append(states, testState{ProjectID: seed.ProjectIDHash("crow"), Version: v, StateHash: mustRoot(t, versions[v])})
	}
	tree, r := anchorStates(t, ch, states) // what the dead worker sent
	if err := NewWorker(WorkerConfig{DB: env.DB, Writer: env.Writer, Chain: ch, Seed: seed}).Round(ctx); err != nil {
		t.Fatal(err)
	}
	rec, ok, err := ReadRecord(env.DB, StateRecordID("crow", 2))
	if err != nil || !ok || rec.Root != HashHex(tree.Root()) || rec.RootID != r.RootID {
		t.Fatalf("record after the restart: %+v %v %v (the first anchoring: root %x id %d)", rec, ok, err, tree.Root(), r.RootID)
	}
	if n := rootCount(t, ch.client); n != 1 {
		t.Fatalf("%d roots on chain, want 1", n)
	}
	checkRoot(t, ch.client, tree.Root(), 3, r) // its one event is the first transaction's
}

// A deleted anchors row (a tombstone keeps its data) is no record.
func TestReadRecordTombstone(t *testing.T) {
	env := storetest.Start(t, t.TempDir())
	h := newWorkerHome(t, env)
	h.put(store.TableAnchors, VersionRecordID(1), Record{Kind: RecordMemory, Number: 1, Root: HashHex(hashOf("r"))})
	if _, ok, err := ReadRecord(env.DB, VersionRecordID(1)); !ok || err != nil {
		t.Fatalf("live record: %v %v", ok, err)
	}
	if _, err := env.Writer.Write(h.ctx, store.Mutation{Table: store.TableAnchors, RowID: VersionRecordID(1), Op: store.OpDelete}); err != nil {
		t.Fatal(err)
	}
	if rec, ok, err := ReadRecord(env.DB, VersionRecordID(1)); ok || err != nil {
		t.Fatalf("deleted record read back: %+v %v %v", rec, ok, err)
	}
}

// waitDropped waits until the chain no longer reports transaction tx as
// mined. Right after debug_setHead and a block at the rewound height, a
// lookup could still find it once under load (1 run in 30 at load 5), and a
// round then saw no reorg to handle.
func waitDropped(t *testing.T, ch *Embedded, tx string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(testCtx(t), 10*time.Second)
	defer cancel()
	for {
		st, err := ch.TxStatus(ctx, tx)
		if err == nil && !st.Mined {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("after the reorg transaction %s is still reported mined (%+v, %v)", tx, st, err)
		case <-time.After(10 * time.Millisecond):
		}
	}
}
