package anchor

import (
	"errors"
	"math/big"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/accounts/abi/bind"
	"github.com/ethereum/go-ethereum/common"
	ethcrypto "github.com/ethereum/go-ethereum/crypto"
)

// v1Contract is the first ProjectStateAnchor (one storage entry per state
// version), as crow deployed it before Merkle batching: testdata holds its
// ABI and bytecode from commit 08e55dc.
func v1Contract(t testing.TB) (abi.ABI, []byte) {
	t.Helper()
	abiJSON, err := os.ReadFile("testdata/ProjectStateAnchorV1.abi")
	if err != nil {
		t.Fatal(err)
	}
	a, err := abi.JSON(strings.NewReader(string(abiJSON)))
	if err != nil {
		t.Fatal(err)
	}
	bin, err := os.ReadFile("testdata/ProjectStateAnchorV1.bin")
	if err != nil {
		t.Fatal(err)
	}
	return a, common.FromHex(strings.TrimSpace(string(bin)))
}

// An embedded chain whose state file points at a v1 contract (a chain made
// before Merkle batching) gets the v2 contract deployed beside it on
// opening: the state file then names v2, and lists v1 in
// legacy_contracts; the v1 contract and its anchors stay on chain; a
// second opening changes nothing. DialRPC on the v1 contract fails with
// ErrOldContract.
func TestEmbeddedUpgradesV1Contract(t *testing.T) {
	ctx := testCtx(t)
	dir, key := t.TempDir(), testKey(t)
	account := ethcrypto.PubkeyToAddress(key.PublicKey)
	e := openEmbedded(t, dir, key, WithLoopbackRPC("127.0.0.1:0"))

	// Deploy v1 and anchor one state version on it, as crow did then.
	v1ABI, v1Bin := v1Contract(t)
	opts, err := bind.NewKeyedTransactorWithChainID(key, e.chainID)
	if err != nil {
		t.Fatal(err)
	}
	opts.Context = ctx
	v1Addr, tx, v1, err := bind.DeployContract(opts, v1ABI, v1Bin, e.ec)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := waitMined(ctx, e.ec, tx.Hash(), e.log)
	if err != nil || rc.Status != 1 {
		t.Fatalf("deploying v1: %v %+v", err, rc)
	}
	s := testStates("viejo", "a", 1, 1)[0]
	tx, err = v1.Transact(opts, "anchor", s.ProjectID, s.Version, s.StateHash)
	if err != nil {
		t.Fatalf("anchoring on v1: %v", err)
	}
	if rc, err := waitMined(ctx, e.ec, tx.Hash(), e.log); err != nil || rc.Status != 1 {
		t.Fatalf("anchoring on v1: %v %+v", err, rc)
	}
	v1Count := func(t *testing.T, c *client) uint64 {
		t.Helper()
		var out []any
		if err := bind.NewBoundContract(v1Addr, v1ABI, c.ec, c.ec, c.ec).Call(&bind.CallOpts{Context: ctx}, &out, "anchorCount"); err != nil {
			t.Fatal(err)
		}
		return out[0].(*big.Int).Uint64()
	}
	if n := v1Count(t, e.client); n != 1 {
		t.Fatalf("v1 holds %d anchors", n)
	}
	if current, err := isCurrentContract(ctx, e.ec, v1Addr); err != nil || current {
		t.Fatalf("isCurrentContract(v1) = %v, %v", current, err)
	}

	// An RPC Chain on the v1 contract is refused, with the error that says
	// what to do; on the v2 one it is accepted.
	_, err = DialRPC(ctx, e.Info().RPCURL, v1Addr, key)
	if !errors.Is(err, ErrOldContract) {
		t.Fatalf("DialRPC on v1: %v, want ErrOldContract", err)
	}
	t.Logf("DialRPC on v1: %v", err)
	if r, err := DialRPC(ctx, e.Info().RPCURL, common.HexToAddress(e.Info().Contract), key); err != nil {
		t.Fatalf("DialRPC on v2: %v", err)
	} else {
		r.Close()
	}

	// The state file as a crow before Merkle batching wrote it: its
	// contract is v1.
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	st, err := readState(dir)
	if err != nil || st == nil {
		t.Fatalf("state file: %+v %v", st, err)
	}
	old := *st
	old.Contract, old.DeployBlock, old.Legacy = v1Addr, rc.BlockNumber.Uint64(), nil
	if err := writeState(dir, old); err != nil {
		t.Fatal(err)
	}

	e2, err := OpenEmbedded(dir, key, testLogger(t))
	if err != nil {
		t.Fatalf("reopening over a v1 contract: %v", err)
	}
	t.Cleanup(func() { e2.Close() })
	v2Addr := common.HexToAddress(e2.Info().Contract)
	if v2Addr == v1Addr {
		t.Fatal("the chain still anchors on v1")
	}
	// The account's fourth transaction (v2, v1, the v1 anchor, then this).
	if want := ethcrypto.CreateAddress(account, 3); v2Addr != want {
		t.Errorf("the new contract is at %s, want a fresh deployment at %s", v2Addr.Hex(), want.Hex())
	}
	if current, err := isCurrentContract(ctx, e2.ec, v2Addr); err != nil || !current {
		t.Fatalf("the new contract is not v2: %v %v", current, err)
	}
	st2, err := readState(dir)
	if err != nil || st2.Contract != v2Addr || !slices.Equal(st2.Legacy, []common.Address{v1Addr}) || st2.DeployBlock == 0 ||
		st2.Genesis != st.Genesis || st2.Account != account {
		t.Fatalf("state file after the upgrade: %+v %v (v1 %s)", st2, err, v1Addr.Hex())
	}
	raw, _ := os.ReadFile(dir + "/" + stateFile)
	if !strings.Contains(string(raw), `"legacy_contracts"`) {
		t.Errorf("state file lacks legacy_contracts:\n%s", raw)
	}
	// v1 and its anchor are still there; v2 anchors.
	if n := v1Count(t, e2.client); n != 1 {
		t.Errorf("after the upgrade v1 holds %d anchors", n)
	}
	tree, r := anchorStates(t, e2, testStates("viejo", "a", 1, 1))
	if r.RootID != 1 {
		t.Errorf("the first root on v2 has id %d", r.RootID)
	}
	checkRoot(t, e2.client, tree.Root(), 1, r)

	// Opening again: no second upgrade.
	head := headOf(t, e2.client)
	if err := e2.Close(); err != nil {
		t.Fatal(err)
	}
	e3 := openEmbedded(t, dir, key)
	st3, err := readState(dir)
	if err != nil || st3.Contract != v2Addr || len(st3.Legacy) != 1 || headOf(t, e3.client) != head {
		t.Fatalf("third opening: %+v %v, head %d (was %d)", st3, err, headOf(t, e3.client), head)
	}
	checkRoot(t, e3.client, tree.Root(), 1, r)
}
