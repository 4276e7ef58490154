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
	ethcrypto "github.com/ethereum/go-ethereum/crypto"

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

func anchorCount(t *testing.T, c *client) uint64 {
	t.Helper()
	n, err := c.contract.AnchorCount(&bind.CallOpts{})
	if err != nil {
		t.Fatal(err)
	}
	return n.Uint64()
}

func hashOf(s string) [32]byte { return [32]byte(ethcrypto.Keccak256([]byte(s))) }

// testStates is n versions of project name, hashes derived from tag.
func testStates(name, tag string, from uint64, n int) []StateAnchor {
	out := make([]StateAnchor, n)
	for i := range out {
		v := from + uint64(i)
		out[i] = StateAnchor{ProjectID: goldenSeed().ProjectIDHash(name), Version: v, StateHash: hashOf(fmt.Sprintf("%s/%s/v%d", tag, name, v))}
	}
	return out
}

// checkAnchor reads a back by id and by (project, version) and compares.
func checkAnchor(t *testing.T, ch Chain, id uint64, want StateAnchor, r Receipt) {
	t.Helper()
	ctx := testCtx(t)
	byID, ok, err := ch.GetAnchorByID(ctx, id)
	if err != nil || !ok {
		t.Fatalf("GetAnchorByID(%d) = %v, %v", id, ok, err)
	}
	byPV, ok, err := ch.GetAnchor(ctx, want.ProjectID, want.Version)
	if err != nil || !ok {
		t.Fatalf("GetAnchor(%x, %d) = %v, %v", want.ProjectID, want.Version, ok, err)
	}
	if byID != byPV {
		t.Errorf("by id %+v\nby (project, version) %+v", byID, byPV)
	}
	a := byID
	if a.ID != id || a.ProjectID != want.ProjectID || a.Version != want.Version || a.StateHash != want.StateHash {
		t.Errorf("anchor %d = %+v, want %+v", id, a, want)
	}
	if a.AnchoredBy != ch.Info().Account {
		t.Errorf("AnchoredBy = %s, want %s", a.AnchoredBy, ch.Info().Account)
	}
	if a.AnchoredAt.IsZero() || time.Since(a.AnchoredAt) > time.Hour || time.Until(a.AnchoredAt) > time.Minute {
		t.Errorf("AnchoredAt = %v, not about now", a.AnchoredAt)
	}
	if r.TxHash != "" && (a.TxHash != r.TxHash || a.Block != r.Block) {
		t.Errorf("anchor %d located at tx %s block %d, want %s %d", id, a.TxHash, a.Block, r.TxHash, r.Block)
	}
}

func TestEmbeddedAnchorStates(t *testing.T) {
	ctx := testCtx(t)
	key := testKey(t)
	e := openEmbedded(t, t.TempDir(), key)

	info := e.Info()
	if info.Kind != KindEmbedded || info.ChainID != 1337 || info.Account != ethcrypto.PubkeyToAddress(key.PublicKey).Hex() || info.Contract == "" || info.RPCURL != "" {
		t.Errorf("Info() = %+v", info)
	}

	// One batch: two projects, three versions, one transaction.
	states := append(testStates("sistema-pagos", "a", 1, 2), testStates("tesis-ml", "a", 7, 1)...)
	before := headOf(t, e.client)
	r, err := e.AnchorStates(ctx, states)
	if err != nil {
		t.Fatal(err)
	}
	if r.Block != before+1 || headOf(t, e.client) != r.Block {
		t.Errorf("receipt block %d, head before %d, head now %d: want one new block", r.Block, before, headOf(t, e.client))
	}
	if fmt.Sprint(r.AnchorIDs) != "[1 2 3]" {
		t.Fatalf("AnchorIDs = %v, want [1 2 3]", r.AnchorIDs)
	}
	for i, s := range states {
		checkAnchor(t, e, r.AnchorIDs[i], s, r)
	}

	// Same hashes again: same ids, nothing new on chain.
	r2, err := e.AnchorStates(ctx, states[1:])
	if err != nil {
		t.Fatalf("re-anchoring with the same hashes: %v", err)
	}
	if fmt.Sprint(r2.AnchorIDs) != "[2 3]" || anchorCount(t, e.client) != 3 {
		t.Errorf("re-anchor gave ids %v and %d anchors, want [2 3] and 3", r2.AnchorIDs, anchorCount(t, e.client))
	}
	checkAnchor(t, e, 2, states[1], r) // still located at the first transaction

	// Another hash for an anchored version: refused, with the whole batch.
	fresh := testStates("sistema-pagos", "a", 3, 1)[0]
	conflict := testStates("sistema-pagos", "b", 2, 1)[0]
	_, err = e.AnchorStates(ctx, []StateAnchor{fresh, conflict})
	if !errors.Is(err, ErrAlreadyAnchored) {
		t.Fatalf("conflicting anchor: err = %v, want ErrAlreadyAnchored", err)
	}
	t.Logf("conflict error: %v", err)
	if _, ok, _ := e.GetAnchor(ctx, fresh.ProjectID, fresh.Version); ok {
		t.Error("the refused batch's other state was anchored")
	}
	checkAnchor(t, e, 2, states[1], r)

	// Not anchored.
	for _, id := range []uint64{0, 4, 1 << 40} {
		if _, ok, err := e.GetAnchorByID(ctx, id); ok || err != nil {
			t.Errorf("GetAnchorByID(%d) = %v, %v; want not found", id, ok, err)
		}
	}
	if _, ok, err := e.GetAnchor(ctx, goldenSeed().ProjectIDHash("nunca"), 1); ok || err != nil {
		t.Errorf("GetAnchor(unknown) = %v, %v; want not found", ok, err)
	}

	// Refused before sending.
	if _, err := e.AnchorStates(ctx, nil); !errors.Is(err, ErrInvalid) {
		t.Errorf("empty batch: %v", err)
	}
	if _, err := e.AnchorStates(ctx, []StateAnchor{{ProjectID: fresh.ProjectID, Version: 9}}); !errors.Is(err, ErrInvalid) {
		t.Errorf("zero hash: %v", err)
	}
	if _, err := e.AnchorStates(ctx, testStates("x", "a", 1, MaxStatesPerTx+1)); !errors.Is(err, ErrBatchTooLarge) {
		t.Errorf("oversized batch: %v", err)
	}
}

// TestEmbeddedFullBatch anchors MaxStatesPerTx states in one transaction:
// the limit must fit the per-transaction gas cap.
func TestEmbeddedFullBatch(t *testing.T) {
	ctx := testCtx(t)
	e := openEmbedded(t, t.TempDir(), testKey(t))
	r, err := e.AnchorStates(ctx, testStates("grande", "a", 1, MaxStatesPerTx))
	if err != nil {
		t.Fatal(err)
	}
	rc, err := e.ec.TransactionReceipt(ctx, [32]byte(mustHex(t, r.TxHash[2:])))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d states: %d gas (%d per state)", MaxStatesPerTx, rc.GasUsed, rc.GasUsed/MaxStatesPerTx)
	if rc.GasUsed > 4_000_000 {
		t.Errorf("a full batch used %d gas: the embedded chain is not on Osaka's gas rules", rc.GasUsed)
	}
	if len(r.AnchorIDs) != MaxStatesPerTx || r.AnchorIDs[MaxStatesPerTx-1] != MaxStatesPerTx {
		t.Errorf("AnchorIDs = %v", r.AnchorIDs)
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
	r, err := e.AnchorMemories(ctx, ms)
	if err != nil {
		t.Fatal(err)
	}
	if r.TxHash == "" || r.Block == 0 || r.AnchorIDs != nil {
		t.Errorf("receipt %+v", r)
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
	// Every event of the transaction is there, in order.
	rc, err := e.ec.TransactionReceipt(ctx, [32]byte(mustHex(t, r.TxHash[2:])))
	if err != nil {
		t.Fatal(err)
	}
	if len(rc.Logs) != len(ms) {
		t.Errorf("%d logs, want %d", len(rc.Logs), len(ms))
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
	if _, err := e.AnchorMemories(ctx, two); !errors.Is(err, ErrBatchTooLarge) {
		t.Fatalf("two 64 KiB memories: err = %v, want ErrBatchTooLarge", err)
	}
	batches := SplitMemories(two)
	if len(batches) != 2 || len(batches[0]) != 1 || len(batches[1]) != 2 {
		t.Fatalf("SplitMemories gave batches of %v", lens(batches))
	}
	for _, b := range batches {
		if _, err := e.AnchorMemories(ctx, b); err != nil {
			t.Fatalf("anchoring a batch of %d: %v", len(b), err)
		}
	}
	got, err = e.MemoryEvents(ctx, bigEv, r.Block)
	if err != nil || len(got) != 2 {
		t.Fatalf("big memory events: %d, %v (want 2: it was sent twice)", len(got), err)
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
	r, err := e.AnchorStates(ctx, states)
	if err != nil {
		t.Fatal(err)
	}
	memKey := goldenSeed().MemoryEncryptionKey()
	ev := hashOf("persisted memory")
	ct, _ := EncryptMemory(memKey, ev, []byte("sigue ahí"))
	mr, err := e.AnchorMemories(ctx, []MemoryAnchor{{EventHash: ev, EncryptedContent: ct, Category: "note", Importance: 5, PlainLength: 10}})
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
	if _, _, err := e.GetAnchorByID(ctx, 1); !errors.Is(err, ErrClosed) {
		t.Errorf("after Close: err = %v, want ErrClosed", err)
	}

	e2 := openEmbedded(t, dir, key)
	if e2.Info() != info {
		t.Errorf("reopened Info() = %+v, want %+v", e2.Info(), info)
	}
	if h := headOf(t, e2.client); h != head {
		t.Errorf("reopened head = %d, want %d", h, head)
	}
	for i, s := range states {
		checkAnchor(t, e2, r.AnchorIDs[i], s, r)
	}
	evs, err := e2.MemoryEvents(ctx, ev, 0)
	if err != nil || len(evs) != 1 || evs[0].TxHash != mr.TxHash {
		t.Fatalf("memory events after reopen: %+v, %v", evs, err)
	}
	if pt, err := DecryptMemory(memKey, ev, evs[0].EncryptedContent); err != nil || string(pt) != "sigue ahí" {
		t.Errorf("decrypted %q, %v", pt, err)
	}
	// It goes on: the next anchor gets the next id, in the next block.
	more := testStates("persistente", "a", 4, 1)
	r2, err := e2.AnchorStates(ctx, more)
	if err != nil {
		t.Fatal(err)
	}
	if r2.AnchorIDs[0] != 4 || r2.Block != head+1 {
		t.Errorf("after reopen: id %d block %d, want 4 and %d", r2.AnchorIDs[0], r2.Block, head+1)
	}
}

func TestEmbeddedFreshDir(t *testing.T) {
	ctx := testCtx(t)
	key := testKey(t)
	a := openEmbedded(t, t.TempDir(), key)
	if _, err := a.AnchorStates(ctx, testStates("p", "a", 1, 1)); err != nil {
		t.Fatal(err)
	}
	// Same key, fresh dir: a new chain and a new deployment. The address is
	// the same (same deployer, nonce 0) but it is another contract, on
	// another chain, with no anchors.
	b := openEmbedded(t, t.TempDir(), key)
	if n := anchorCount(t, b.client); n != 0 {
		t.Errorf("fresh chain has %d anchors", n)
	}
	if _, ok, err := b.GetAnchorByID(ctx, 1); ok || err != nil {
		t.Errorf("fresh chain knows anchor 1: %v, %v", ok, err)
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
