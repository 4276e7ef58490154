package anchor

import (
	"errors"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"
)

// TestRPC runs the RPC backend against the embedded chain served on
// 127.0.0.1: Deploy a second contract through it, anchor, read back, and
// read the embedded chain's own anchors through plain JSON-RPC.
func TestRPC(t *testing.T) {
	ctx := testCtx(t)
	key := testKey(t)
	e := openEmbedded(t, t.TempDir(), key, WithLoopbackRPC("127.0.0.1:0"))
	url := e.Info().RPCURL
	if !strings.HasPrefix(url, "http://127.0.0.1:") {
		t.Fatalf("RPCURL = %q", url)
	}
	states := testStates("compartido", "a", 1, 2)
	er, err := e.AnchorStates(ctx, states)
	if err != nil {
		t.Fatal(err)
	}

	// The embedded chain's contract, read over HTTP.
	viaHTTP, err := DialRPC(ctx, url, common.HexToAddress(e.Info().Contract), key)
	if err != nil {
		t.Fatal(err)
	}
	defer viaHTTP.Close()
	if info := viaHTTP.Info(); info.Kind != KindRPC || info.RPCURL != url || info.ChainID != 1337 || info.Contract != e.Info().Contract || info.Account != e.Info().Account {
		t.Errorf("Info() = %+v", info)
	}
	for i, s := range states {
		checkAnchor(t, viaHTTP, er.AnchorIDs[i], s, er)
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
	rr, err := r.AnchorStates(ctx, states[:1])
	if err != nil {
		t.Fatal(err)
	}
	if len(rr.AnchorIDs) != 1 || rr.AnchorIDs[0] != 1 {
		t.Errorf("AnchorIDs on the new contract = %v, want [1]", rr.AnchorIDs)
	}
	checkAnchor(t, r, 1, states[0], rr)
	if _, err := r.AnchorStates(ctx, testStates("compartido", "b", 1, 1)); !errors.Is(err, ErrAlreadyAnchored) {
		t.Errorf("conflict over RPC: err = %v, want ErrAlreadyAnchored", err)
	}

	memKey := goldenSeed().MemoryEncryptionKey()
	ev := hashOf("rpc memory")
	ct, _ := EncryptMemory(memKey, ev, []byte("por HTTP"))
	mr, err := r.AnchorMemories(ctx, []MemoryAnchor{{EventHash: ev, EncryptedContent: ct, Category: "note", Importance: 3, PlainLength: 8}})
	if err != nil {
		t.Fatal(err)
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
	if _, err := r.AnchorStates(ctx, states); !errors.Is(err, ErrClosed) {
		t.Errorf("after Close: %v", err)
	}
}
