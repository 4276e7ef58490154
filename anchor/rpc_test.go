package anchor

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"

	"github.com/crow-sync/crow/store/storetest"
)

// TestRPC runs the RPC backend against the embedded chain served on
// 127.0.0.1: Deploy a second contract through it, anchor roots and
// memories, read back, and read the embedded chain's own roots through
// plain JSON-RPC.
func TestRPC(t *testing.T) {
	ctx := testCtx(t)
	key := testKey(t)
	e := openEmbedded(t, t.TempDir(), key, WithLoopbackRPC("127.0.0.1:0"))
	url := e.Info().RPCURL
	if !strings.HasPrefix(url, "http://127.0.0.1:") {
		t.Fatalf("RPCURL = %q", url)
	}
	states := testStates("compartido", "a", 1, 2)
	etree, er := anchorStates(t, e, states)

	// The embedded chain's contract, read over HTTP.
	viaHTTP, err := DialRPC(ctx, url, common.HexToAddress(e.Info().Contract), key)
	if err != nil {
		t.Fatal(err)
	}
	defer viaHTTP.Close()
	if info := viaHTTP.Info(); info.Kind != KindRPC || info.RPCURL != url || info.ChainID != 1337 || info.Contract != e.Info().Contract || info.Account != e.Info().Account {
		t.Errorf("Info() = %+v", info)
	}
	checkRoot(t, viaHTTP.client, etree.Root(), 2, er)
	if st, err := viaHTTP.TxStatus(ctx, er.TxHash); err != nil || !st.Mined || st.Block != er.Block || st.BlockHash != er.BlockHash {
		t.Errorf("TxStatus over HTTP = %+v, %v", st, err)
	}
	if st, err := viaHTTP.TxStatus(ctx, HashHex(hashOf("no such tx"))); err != nil || st.Mined || st.Head == 0 || st.Confirmations() != 0 {
		t.Errorf("TxStatus of an unknown tx = %+v, %v", st, err)
	}

	// A contract of its own.
	addr, err := Deploy(ctx, url, key)
	if err != nil {
		t.Fatal(err)
	}
	if addr.Hex() == e.Info().Contract {
		t.Fatal("Deploy returned the embedded contract's address")
	}
	r, err := DialRPC(ctx, url, addr, key)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	tree, rr := anchorStates(t, r, states[:1])
	if rr.RootID != 1 {
		t.Errorf("root id on the new contract = %d, want 1", rr.RootID)
	}
	checkRoot(t, r.client, tree.Root(), 1, rr)
	// Idempotent over RPC too.
	if again, err := r.AnchorRoot(ctx, tree.Root(), 1); err != nil || again.RootID != 1 || rootCount(t, r.client) != 1 {
		t.Errorf("re-anchoring over RPC: %+v %v, %d roots", again, err, rootCount(t, r.client))
	}
	// The embedded contract's root is not the new one's.
	if _, ok, err := r.GetRoot(ctx, etree.Root()); ok || err != nil {
		t.Errorf("the new contract knows the embedded one's root: %v %v", ok, err)
	}

	memKey := goldenSeed().MemoryEncryptionKey()
	ev := hashOf("rpc memory")
	ct, _ := EncryptMemory(memKey, ev, []byte("por HTTP"))
	ms := []MemoryAnchor{{EventHash: ev, EncryptedContent: ct, Category: "note", Importance: 3, PlainLength: 8}}
	mr, err := r.AnchorMemories(ctx, memoryRoot(t, ms), ms)
	if err != nil {
		t.Fatal(err)
	}
	if mr.RootID != 2 {
		t.Errorf("memory root id = %d, want 2", mr.RootID)
	}
	evs, err := r.MemoryEvents(ctx, ev, 0)
	if err != nil || len(evs) != 1 || evs[0].TxHash != mr.TxHash {
		t.Fatalf("MemoryEvents = %+v, %v", evs, err)
	}
	if pt, err := DecryptMemory(memKey, ev, evs[0].EncryptedContent); err != nil || string(pt) != "por HTTP" {
		t.Errorf("decrypted %q, %v", pt, err)
	}
	// The embedded contract did not see it (events are per contract).
	if evs, err := e.MemoryEvents(ctx, ev, 0); err != nil || len(evs) != 0 {
		t.Errorf("embedded contract has %d events of the RPC one (%v)", len(evs), err)
	}

	// Refusals: another key, no contract.
	if _, err := DialRPC(ctx, url, addr, testKey(t)); !errors.Is(err, ErrNotOwner) {
		t.Errorf("another key: err = %v, want ErrNotOwner", err)
	}
	if _, err := DialRPC(ctx, url, common.HexToAddress("0x1234"), key); err == nil {
		t.Error("DialRPC to an address without code succeeded")
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := r.AnchorRoot(ctx, tree.Root(), 1); !errors.Is(err, ErrClosed) {
		t.Errorf("after Close: %v", err)
	}
}

// TestWorkerOverRPC is the RPC mode: the worker anchors through an RPC
// Chain (here the embedded chain's loopback endpoint and a contract
// deployed through it), its records name that chain and contract, the
// packet checks out, and a Verifier over RPC finds the root.
func TestWorkerOverRPC(t *testing.T) {
	ctx := testCtx(t)
	seed := goldenSeed()
	e := openEmbedded(t, t.TempDir(), seed.AnchorKey(), WithLoopbackRPC("127.0.0.1:0"))
	url := e.Info().RPCURL
	addr, err := Deploy(ctx, url, seed.AnchorKey())
	if err != nil {
		t.Fatal(err)
	}
	r, err := DialRPC(ctx, url, addr, seed.AnchorKey())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	env := storetest.Start(t, t.TempDir())
	h := newWorkerHome(t, env)
	versions := h.states("crow", 1, 3)
	w := NewWorker(WorkerConfig{DB: env.DB, Writer: env.Writer, Chain: r, Seed: seed, Interval: time.Hour, RPCURL: "https://rpc.example"})
	if err := w.Round(ctx); err != nil {
		t.Fatal(err)
	}
	rec, ok, err := ReadRecord(env.DB, StateRecordID("crow", 2))
	if err != nil || !ok || rec.Contract != addr.Hex() || rec.ChainID != 1337 || rec.Root == "" {
		t.Fatalf("record: %+v %v %v", rec, ok, err)
	}
	p, ok, err := PacketOf(env.DB, rec)
	if err != nil || !ok || CheckPacket(p) != nil || p.RPCURL != "https://rpc.example" || p.Contract != addr.Hex() || p.Status != StatusFinal {
		t.Fatalf("packet %+v %v %v (check: %v)", p, ok, err, CheckPacket(p))
	}
	rep, err := Verifier{DB: env.DB, Chain: r, ProjectID: SeedProjectID(seed), Versions: versions}.VerifyProject(ctx, "crow")
	if err != nil || !rep.Verified || rep.Chain.Kind != KindRPC || len(rep.Versions) != 3 {
		t.Fatalf("report over RPC: %+v %v", rep, err)
	}
	// The embedded chain's own contract knows nothing of it: a Verifier
	// reading it says unverified (another contract), never verified.
	rep, err = Verifier{DB: env.DB, Chain: e, ProjectID: SeedProjectID(seed), Versions: versions}.VerifyProject(ctx, "crow")
	if err != nil || rep.Verified || rep.Versions[0].Status != StatusUnverified {
		t.Fatalf("report over the other contract: %+v %v", rep, err)
	}
}
