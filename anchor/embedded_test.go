package anchor

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/accounts/abi/bind"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	ethcrypto "github.com/ethereum/go-ethereum/crypto"

	"github.com/crow-sync/crow/anchor/contract"
	"github.com/crow-sync/crow/anchor/merkle"
	"github.com/crow-sync/crow/memory"
)

func testKey(t *testing.T) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ethcrypto.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func testLogger(t *testing.T) *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func openEmbedded(t *testing.T, dir string, key *ecdsa.PrivateKey, opts ...EmbeddedOption) *Embedded {
	t.Helper()
	e, err := OpenEmbedded(dir, key, testLogger(t), opts...)
	if err != nil {
		t.Fatalf("OpenEmbedded: %v", err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

func headOf(t *testing.T, c *client) uint64 {
	t.Helper()
	n, err := c.ec.BlockNumber(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func rootCount(t *testing.T, c *client) uint64 {
	t.Helper()
	n, err := c.contract.RootCount(&bind.CallOpts{})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func hashOf(s string) [32]byte { return [32]byte(ethcrypto.Keccak256([]byte(s))) }

// testState is the leaf values of one state version.
type testState struct {
	ProjectID [32]byte
	Version   uint64
	StateHash [32]byte
}

func (s testState) leaf() merkle.Hash { return merkle.StateLeaf(s.ProjectID, s.Version, s.StateHash) }

// testStates is n versions of project name, hashes derived from tag.
func testStates(name, tag string, from uint64, n int) []testState {
	out := make([]testState, n)
	for i := range out {
		v := from + uint64(i)
		out[i] = testState{ProjectID: goldenSeed().ProjectIDHash(name), Version: v, StateHash: hashOf(fmt.Sprintf("%s/%s/v%d", tag, name, v))}
	}
	return out
}

// fataler is the part of testing.TB the tree helpers use (so the crash
// test's child process can use them too).
type fataler interface {
	Helper()
	Fatal(args ...any)
}

// stateTree is the tree of states, as the worker builds it.
func stateTree(t fataler, states []testState) *merkle.Tree {
	t.Helper()
	leaves := make([]merkle.Hash, len(states))
	for i, s := range states {
		leaves[i] = s.leaf()
	}
	tree, err := merkle.New(leaves)
	if err != nil {
		t.Fatal(err)
	}
	return tree
}

// checkProofs checks that every state's proof leads to the tree's root,
// and that no other state's does.
func checkProofs(t *testing.T, tree *merkle.Tree, states []testState) {
	t.Helper()
	for _, s := range states {
		proof, ok := tree.Proof(s.leaf())
		if !ok || !merkle.Verify(tree.Root(), s.leaf(), proof) {
			t.Fatalf("state %d: proof %v (found %v) does not lead to the root", s.Version, proof, ok)
		}
		other := s
		other.StateHash[0] ^= 1
		if merkle.Verify(tree.Root(), other.leaf(), proof) {
			t.Fatalf("state %d: the proof also proves another state hash", s.Version)
		}
	}
}

// anchorStates commits states under one root.
func anchorStates(t *testing.T, ch Chain, states []testState) (*merkle.Tree, Receipt) {
	t.Helper()
	tree := stateTree(t, states)
	r, err := ch.AnchorRoot(testCtx(t), tree.Root(), tree.Len())
	if err != nil {
		t.Fatalf("AnchorRoot over %d states: %v", len(states), err)
	}
	return tree, r
}

// memoryRoot is the root of a batch of memories (the worker's memoryTree).
func memoryRoot(t fataler, ms []MemoryAnchor) [32]byte {
	t.Helper()
	tree, _, err := memoryTree(ms)
	if err != nil {
		t.Fatal(err)
	}
	return tree.Root()
}

func receiptOf(t *testing.T, c *client, txHash string) *types.Receipt {
	t.Helper()
	rc, err := c.ec.TransactionReceipt(testCtx(t), common.HexToHash(txHash))
	if err != nil {
		t.Fatalf("receipt of %s: %v", txHash, err)
	}
	return rc
}

// checkRoot reads root back (getRoot) and finds its one RootAnchored event,
// in the transaction of r.
func checkRoot(t *testing.T, c *client, root [32]byte, count uint32, r Receipt) {
	t.Helper()
	ctx := testCtx(t)
	ri, ok, err := c.GetRoot(ctx, root)
	if err != nil || !ok {
		t.Fatalf("GetRoot(%x) = %v, %v", root, ok, err)
	}
	if ri.ID == 0 || (r.RootID != 0 && ri.ID != r.RootID) || ri.Count != count {
		t.Errorf("GetRoot(%x) = %+v, want id %d count %d", root, ri, r.RootID, count)
	}
	if ri.AnchoredAt.IsZero() || time.Since(ri.AnchoredAt) > time.Hour || time.Until(ri.AnchoredAt) > time.Minute {
		t.Errorf("AnchoredAt = %v, not about now", ri.AnchoredAt)
	}
	it, err := c.contract.FilterRootAnchored(&bind.FilterOpts{Context: ctx}, nil, [][32]byte{root})
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	var evs []*contract.ProjectStateAnchorRootAnchored
	for it.Next() {
		evs = append(evs, it.Event)
	}
	if err := it.Error(); err != nil {
		t.Fatal(err)
	}
	if len(evs) != 1 {
		t.Fatalf("%d RootAnchored events for root %x, want 1", len(evs), root)
	}
	ev := evs[0]
	if ev.RootId.Uint64() != ri.ID || ev.Count != count || ev.Root != root {
		t.Errorf("RootAnchored = id %v root %x count %d, want %d %x %d", ev.RootId, ev.Root, ev.Count, ri.ID, root, count)
	}
	if r.TxHash != "" && (ev.Raw.TxHash.Hex() != r.TxHash || ev.Raw.BlockNumber != r.Block) {
		t.Errorf("root %x anchored at tx %s block %d, want %s %d", root, ev.Raw.TxHash.Hex(), ev.Raw.BlockNumber, r.TxHash, r.Block)
	}
	if r.BlockHash != "" && ev.Raw.BlockHash.Hex() != r.BlockHash {
		t.Errorf("root %x in block %s, the receipt said %s", root, ev.Raw.BlockHash.Hex(), r.BlockHash)
	}
}

func TestEmbeddedAnchorRoot(t *testing.T) {
	ctx := testCtx(t)
	key := testKey(t)
	e := openEmbedded(t, t.TempDir(), key)

	info := e.Info()
	if info.Kind != KindEmbedded || info.ChainID != 1337 || info.Account != ethcrypto.PubkeyToAddress(key.PublicKey).Hex() || info.Contract == "" || info.RPCURL != "" {
		t.Errorf("Info() = %+v", info)
	}

	// One root: two projects, three versions, one transaction, one block.
	states := append(testStates("sistema-pagos", "a", 1, 2), testStates("tesis-ml", "a", 7, 1)...)
	before := headOf(t, e.client)
	tree, r := anchorStates(t, e, states)
	if r.Block != before+1 || headOf(t, e.client) != r.Block || r.RootID != 1 || r.BlockHash == "" {
		t.Errorf("receipt %+v, head before %d, head now %d: want root 1 in one new block", r, before, headOf(t, e.client))
	}
	checkRoot(t, e.client, tree.Root(), 3, r)
	checkProofs(t, tree, states)
	if st, err := e.TxStatus(ctx, r.TxHash); err != nil || !st.Mined || st.Reverted || st.Block != r.Block || st.BlockHash != r.BlockHash ||
		st.Confirmations() != 1 {
		t.Errorf("TxStatus = %+v (%d confirmations), %v", st, st.Confirmations(), err)
	}
	if rc := receiptOf(t, e.client, r.TxHash); len(rc.Logs) != 1 {
		t.Errorf("%d logs, want 1 (RootAnchored)", len(rc.Logs))
	}

	// The same root again (a retried round), even with another count: the
	// same id, nothing new on chain, no second event; the receipt points at
	// the first transaction, the one whose RootAnchored a verifier looks for.
	for _, n := range []int{3, 99} {
		head := blockNumber(t, e.client)
		r2, err := e.AnchorRoot(ctx, tree.Root(), n)
		if err != nil {
			t.Fatalf("re-anchoring the root (count %d): %v", n, err)
		}
		if r2 != r || rootCount(t, e.client) != 1 {
			t.Errorf("re-anchor gave %+v and %d roots, want the first anchoring %+v and 1 root", r2, rootCount(t, e.client), r)
		}
		if got := blockNumber(t, e.client); got != head+1 {
			t.Errorf("re-anchoring made %d blocks, want 1 (a no-op transaction)", got-head)
		}
	}
	checkRoot(t, e.client, tree.Root(), 3, r) // still located at the first transaction, with its count

	// Another hash for an anchored version is only another root: the chain
	// holds roots, and a verifier compares a version with home's record.
	conflict := testStates("sistema-pagos", "b", 2, 1)
	ctree, cr := anchorStates(t, e, conflict)
	if cr.RootID != 2 || ctree.Root() == tree.Root() {
		t.Fatalf("second root: %+v", cr)
	}
	checkRoot(t, e.client, ctree.Root(), 1, cr)
	if p, _ := ctree.Proof(conflict[0].leaf()); len(p) != 0 || ctree.Root() != conflict[0].leaf() {
		t.Errorf("a tree of one leaf: root %x, proof %v; want the leaf and no proof", ctree.Root(), p)
	}

	// Not anchored.
	for _, root := range [][32]byte{{}, hashOf("nunca"), stateTree(t, testStates("x", "a", 1, 1)).Root()} {
		if ri, ok, err := e.GetRoot(ctx, root); ok || err != nil || ri != (RootInfo{}) {
			t.Errorf("GetRoot(%x) = %+v, %v, %v; want not found", root, ri, ok, err)
		}
	}

	// Refused before sending.
	head := headOf(t, e.client)
	for name, err := range map[string]error{
		"zero root":     second(e.AnchorRoot(ctx, [32]byte{}, 1)),
		"zero count":    second(e.AnchorRoot(ctx, hashOf("r"), 0)),
		"no memories":   second(e.AnchorMemories(ctx, hashOf("r"), nil)),
		"zero mem root": second(e.AnchorMemories(ctx, [32]byte{}, []MemoryAnchor{{EventHash: hashOf("e")}})),
	} {
		if !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: err = %v, want ErrInvalid", name, err)
		}
	}
	if _, err := e.AnchorRoot(ctx, hashOf("r"), MaxLeavesPerRoot+1); !errors.Is(err, ErrBatchTooLarge) {
		t.Errorf("oversized root: %v", err)
	}
	if h := headOf(t, e.client); h != head {
		t.Errorf("refused calls made %d blocks", h-head)
	}
}

// TestEmbeddedFullRoot anchors a root of MaxLeavesPerRoot versions: it
// costs what a root of one does, and every proof is at most 14 hashes.
func TestEmbeddedFullRoot(t *testing.T) {
	e := openEmbedded(t, t.TempDir(), testKey(t))
	states := testStates("grande", "a", 1, MaxLeavesPerRoot)
	tree, r := anchorStates(t, e, states)
	checkRoot(t, e.client, tree.Root(), MaxLeavesPerRoot, r)
	gas := receiptOf(t, e.client, r.TxHash).GasUsed
	t.Logf("a root of %d states: %d gas", MaxLeavesPerRoot, gas)
	// 21000 + calldata + two fresh storage slots (the root, rootCount's
	// first write) + one event: ~69k on Osaka's rules, whatever the count.
	if gas > 75_000 {
		t.Errorf("a full root used %d gas: want one storage slot and one event (the embedded chain on Osaka's gas rules)", gas)
	}
	for _, i := range []int{0, 1, 4095, 4096, MaxLeavesPerRoot - 1} {
		s := states[i]
		proof, ok := tree.Proof(s.leaf())
		if !ok || len(proof) > 14 || !merkle.Verify(tree.Root(), s.leaf(), proof) {
			t.Errorf("state %d: proof of %d hashes (found %v)", i, len(proof), ok)
		}
	}
}

func TestEmbeddedMemories(t *testing.T) {
	ctx := testCtx(t)
	e := openEmbedded(t, t.TempDir(), testKey(t))
	memKey := goldenSeed().MemoryEncryptionKey()

	var ms []MemoryAnchor
	plains := []string{"Usar consenso Clique PoA", "PostgreSQL con RLS para multi-tenancy"}
	for i, p := range plains {
		ev := hashOf(fmt.Sprintf("event %d", i))
		ct, err := EncryptMemory(memKey, ev, []byte(p))
		if err != nil {
			t.Fatal(err)
		}
		ms = append(ms, MemoryAnchor{EventHash: ev, EncryptedContent: ct, Category: "decision", Importance: uint8(7 + i), PlainLength: uint32(len(p))})
	}
	root := memoryRoot(t, ms)
	r, err := e.AnchorMemories(ctx, root, ms)
	if err != nil {
		t.Fatal(err)
	}
	if r.TxHash == "" || r.Block == 0 || r.RootID != 1 {
		t.Errorf("receipt %+v", r)
	}
	checkRoot(t, e.client, root, 2, r)
	// Each event hash's leaf is proved in the root.
	tree, leaves, _ := memoryTree(ms)
	for i, l := range leaves {
		if p, ok := tree.Proof(l); !ok || !merkle.Verify(root, merkle.HashLeaf(ms[i].EventHash), p) {
			t.Errorf("memory %d: no proof to the root", i)
		}
	}

	got, err := e.MemoryEvents(ctx, ms[1].EventHash, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 {
		t.Fatalf("%d events for memory 1, want 1", len(got))
	}
	ev := got[0]
	if ev.TxHash != r.TxHash || ev.Block != r.Block || ev.Category != "decision" || ev.Importance != 8 || ev.PlainLength != uint32(len(plains[1])) {
		t.Errorf("event %+v", ev)
	}
	pt, err := DecryptMemory(memKey, ev.EventHash, ev.EncryptedContent)
	if err != nil || string(pt) != plains[1] {
		t.Fatalf("decrypted %q, %v", pt, err)
	}
	if bytes.Contains(ev.EncryptedContent, []byte("RLS")) {
		t.Error("plaintext visible in the event")
	}
	// Every event of the block, in order, in one query.
	inBlock, err := e.MemoryEventsBetween(ctx, r.Block, r.Block)
	if err != nil || len(inBlock) != len(ms) {
		t.Fatalf("MemoryEventsBetween(%d, %d): %d events, %v; want %d", r.Block, r.Block, len(inBlock), err, len(ms))
	}
	for i, ev := range inBlock {
		if ev.EventHash != ms[i].EventHash || ev.TxHash != r.TxHash {
			t.Errorf("event %d of the block: %x in %s, want %x in %s", i, ev.EventHash, ev.TxHash, ms[i].EventHash, r.TxHash)
		}
	}
	if _, err := e.MemoryEventsBetween(ctx, r.Block, r.Block-1); !errors.Is(err, ErrInvalid) {
		t.Errorf("backwards range: %v", err)
	}
	// Every event of the transaction is there, in order: the root's, then
	// one per memory.
	if rc := receiptOf(t, e.client, r.TxHash); len(rc.Logs) != len(ms)+1 {
		t.Errorf("%d logs, want %d", len(rc.Logs), len(ms)+1)
	}

	// The same batch again (a retried round): the same root id, no event
	// logged twice.
	r2, err := e.AnchorMemories(ctx, root, ms)
	if err != nil || r2 != r {
		t.Fatalf("re-anchoring the batch: %+v %v, want the first anchoring %+v", r2, err, r)
	}
	if got, _ := e.MemoryEvents(ctx, ms[0].EventHash, 0); len(got) != 1 {
		t.Errorf("after re-anchoring: %d events for memory 0", len(got))
	}

	// The largest memory crow allows fits one transaction, alone.
	big := make([]byte, memory.MaxContentBytes)
	for i := range big {
		big[i] = byte(i*7 + 1)
	}
	bigEv := hashOf("big")
	bigCT, err := EncryptMemory(memKey, bigEv, big)
	if err != nil {
		t.Fatal(err)
	}
	bigM := MemoryAnchor{EventHash: bigEv, EncryptedContent: bigCT, Category: "note", Importance: 1, PlainLength: uint32(len(big))}
	two := []MemoryAnchor{bigM, bigM, ms[0]}
	if _, err := e.AnchorMemories(ctx, memoryRoot(t, two), two); !errors.Is(err, ErrBatchTooLarge) {
		t.Fatalf("two 64 KiB memories: err = %v, want ErrBatchTooLarge", err)
	}
	batches := SplitMemories(two)
	if len(batches) != 2 || len(batches[0]) != 1 || len(batches[1]) != 2 {
		t.Fatalf("SplitMemories gave batches of %v", lens(batches))
	}
	for _, b := range batches {
		br, err := e.AnchorMemories(ctx, memoryRoot(t, b), b)
		if err != nil {
			t.Fatalf("anchoring a batch of %d: %v", len(b), err)
		}
		checkRoot(t, e.client, memoryRoot(t, b), uint32(len(b)), br)
	}
	got, err = e.MemoryEvents(ctx, bigEv, r.Block)
	if err != nil || len(got) != 2 {
		t.Fatalf("big memory events: %d, %v (want 2: it was in two roots)", len(got), err)
	}
	if pt, err := DecryptMemory(memKey, bigEv, got[1].EncryptedContent); err != nil || !bytes.Equal(pt, big) {
		t.Fatalf("big memory does not decrypt back: %v", err)
	}
}

func lens(bs [][]MemoryAnchor) []int {
	var n []int
	for _, b := range bs {
		n = append(n, len(b))
	}
	return n
}

// TestEmbeddedReopen is the persistence test: everything survives Close and
// OpenEmbedded on the same directory, and the chain goes on from there.
func TestEmbeddedReopen(t *testing.T) {
	ctx := testCtx(t)
	dir, key := t.TempDir(), testKey(t)
	e, err := OpenEmbedded(dir, key, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	states := testStates("persistente", "a", 1, 3)
	tree, r := anchorStates(t, e, states)
	memKey := goldenSeed().MemoryEncryptionKey()
	ev := hashOf("persisted memory")
	ct, _ := EncryptMemory(memKey, ev, []byte("sigue ahí"))
	ms := []MemoryAnchor{{EventHash: ev, EncryptedContent: ct, Category: "note", Importance: 5, PlainLength: 10}}
	mr, err := e.AnchorMemories(ctx, memoryRoot(t, ms), ms)
	if err != nil {
		t.Fatal(err)
	}
	info, head := e.Info(), headOf(t, e.client)
	if err := e.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := e.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, _, err := e.GetRoot(ctx, tree.Root()); !errors.Is(err, ErrClosed) {
		t.Errorf("after Close: GetRoot err = %v, want ErrClosed", err)
	}
	if _, err := e.AnchorRoot(ctx, tree.Root(), 3); !errors.Is(err, ErrClosed) {
		t.Errorf("after Close: AnchorRoot err = %v, want ErrClosed", err)
	}
	if _, err := e.TxStatus(ctx, r.TxHash); !errors.Is(err, ErrClosed) {
		t.Errorf("after Close: TxStatus err = %v, want ErrClosed", err)
	}

	e2 := openEmbedded(t, dir, key)
	if e2.Info() != info {
		t.Errorf("reopened Info() = %+v, want %+v", e2.Info(), info)
	}
	if h := headOf(t, e2.client); h != head {
		t.Errorf("reopened head = %d, want %d", h, head)
	}
	checkRoot(t, e2.client, tree.Root(), 3, r)
	checkRoot(t, e2.client, memoryRoot(t, ms), 1, mr)
	if st, err := e2.TxStatus(ctx, r.TxHash); err != nil || !st.Mined || st.BlockHash != r.BlockHash {
		t.Errorf("TxStatus after reopen = %+v, %v", st, err)
	}
	evs, err := e2.MemoryEvents(ctx, ev, 0)
	if err != nil || len(evs) != 1 || evs[0].TxHash != mr.TxHash {
		t.Fatalf("memory events after reopen: %+v, %v", evs, err)
	}
	if pt, err := DecryptMemory(memKey, ev, evs[0].EncryptedContent); err != nil || string(pt) != "sigue ahí" {
		t.Errorf("decrypted %q, %v", pt, err)
	}
	// It goes on: the next root gets the next id, in the next block.
	_, r2 := anchorStates(t, e2, testStates("persistente", "a", 4, 1))
	if r2.RootID != 3 || r2.Block != head+1 {
		t.Errorf("after reopen: root id %d block %d, want 3 and %d", r2.RootID, r2.Block, head+1)
	}
}

func TestEmbeddedFreshDir(t *testing.T) {
	ctx := testCtx(t)
	key := testKey(t)
	a := openEmbedded(t, t.TempDir(), key)
	tree, _ := anchorStates(t, a, testStates("p", "a", 1, 1))
	// Same key, fresh dir: a new chain and a new deployment. The address is
	// the same (same deployer, nonce 0) but it is another contract, on
	// another chain, with no anchors.
	b := openEmbedded(t, t.TempDir(), key)
	if n := rootCount(t, b.client); n != 0 {
		t.Errorf("fresh chain has %d roots", n)
	}
	if _, ok, err := b.GetRoot(ctx, tree.Root()); ok || err != nil {
		t.Errorf("fresh chain knows the other chain's root: %v, %v", ok, err)
	}
	if headOf(t, b.client) != 1 {
		t.Errorf("fresh chain head = %d, want 1 (the deployment)", headOf(t, b.client))
	}
	ga, _ := a.ec.HeaderByNumber(ctx, nil)
	gb, _ := b.ec.HeaderByNumber(ctx, nil)
	if ga.Hash() == gb.Hash() {
		t.Error("the two chains share their head block")
	}
	// Another key: another contract address.
	c := openEmbedded(t, t.TempDir(), testKey(t))
	if c.Info().Contract == a.Info().Contract {
		t.Error("two keys got the same contract address")
	}
}

func TestEmbeddedRefusals(t *testing.T) {
	dir, key := t.TempDir(), testKey(t)
	e := openEmbedded(t, dir, key)
	if _, err := OpenEmbedded(dir, key, nil); err == nil {
		t.Error("a second OpenEmbedded on an open dir succeeded")
	}
	e.Close()
	if _, err := OpenEmbedded(dir, testKey(t), nil); !errors.Is(err, ErrWrongKey) {
		t.Errorf("another key: err = %v, want ErrWrongKey", err)
	}
	if _, err := OpenEmbedded(t.TempDir(), key, nil, WithLoopbackRPC("0.0.0.0:0")); err == nil {
		t.Error("a non-loopback RPC address was accepted")
	}
}

func blockNumber(t *testing.T, c *client) uint64 {
	t.Helper()
	n, err := c.ec.BlockNumber(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return n
}
