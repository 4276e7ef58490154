//go:build gethdev

// Tests against a real `geth --dev`, built from the same go-ethereum version:
//
//	go install github.com/ethereum/go-ethereum/cmd/geth@v1.17.10   # ~3-7 min
//	go test -tags gethdev -run GethDev -v ./anchor/
//
// geth is looked up as $CROW_GETH, else on $PATH. Not part of go test ./...

package anchor

import (
	"bytes"
	"context"
	"log/slog"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	ethcrypto "github.com/ethereum/go-ethereum/crypto"

	"github.com/crow-sync/crow/memory"
)

// gethDevKey is geth --dev's well-known developer key (cmd/utils.DeveloperKey).
const gethDevKey = "b71c71a67e1177ad4e901695e1b4b9ee17ae16c6668d313eac2f96dbcda3f291"

// startGethDev runs geth --dev on datadir, reachable only over an IPC socket
// in it, and returns the socket path and a func that stops the process (also
// called at cleanup).
func startGethDev(t *testing.T, datadir string) (string, func()) {
	t.Helper()
	bin := os.Getenv("CROW_GETH")
	if bin == "" {
		var err error
		if bin, err = exec.LookPath("geth"); err != nil {
			const msg = "no geth: go install github.com/ethereum/go-ethereum/cmd/geth@v1.17.10"
			if os.Getenv("CI") == "true" {
				t.Fatal(msg) // in CI a missing tool fails the test
			}
			t.Skip(msg)
		}
	}
	ipc := filepath.Join(datadir, "g.ipc")
	var logs bytes.Buffer
	cmd := exec.Command(bin, "--dev", "--datadir", datadir, "--ipcpath", ipc, "--verbosity", "2")
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cmd.Process.Signal(os.Interrupt)
			select {
			case <-done:
			case <-time.After(20 * time.Second):
				cmd.Process.Kill()
				<-done
			}
			if t.Failed() {
				t.Logf("geth output:\n%s", logs.Bytes())
			}
		})
	}
	t.Cleanup(stop)
	deadline := time.Now().Add(30 * time.Second)
	for {
		if ec, _, err := dial(context.Background(), ipc); err == nil {
			ec.Close()
			return ipc, stop
		}
		select {
		case <-done:
			t.Fatalf("geth exited:\n%s", logs.Bytes())
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("geth did not come up:\n%s", logs.Bytes())
		}
	}
}

func shortTempDir(t *testing.T) string {
	// Unix socket paths are limited to ~100 bytes; t.TempDir can be longer.
	dir, err := os.MkdirTemp("", "crowgeth")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// TestGethDev runs the RPC backend against geth --dev, whose dev rules
// include the Amsterdam state-gas repricing: a root of MaxLeavesPerRoot
// versions, re-anchoring it, and the largest memory must each fit one
// transaction.
func TestGethDev(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	key, err := ethcrypto.HexToECDSA(gethDevKey)
	if err != nil {
		t.Fatal(err)
	}
	url, _ := startGethDev(t, shortTempDir(t))

	addr, err := Deploy(ctx, url, key)
	if err != nil {
		t.Fatal(err)
	}
	r, err := DialRPC(ctx, url, addr, key)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	t.Logf("geth --dev: %+v", r.Info())

	states := testStates("geth", "a", 1, MaxLeavesPerRoot)
	tree, rc := anchorStates(t, r, states)
	full, err := r.ec.TransactionReceipt(ctx, common.HexToHash(rc.TxHash))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("a root of %d states on geth --dev: %d gas", len(states), full.GasUsed)
	checkRoot(t, r.client, tree.Root(), MaxLeavesPerRoot, rc)
	checkProofs(t, tree, states[:3])
	if again, err := r.AnchorRoot(ctx, tree.Root(), MaxLeavesPerRoot); err != nil || again.RootID != rc.RootID {
		t.Errorf("re-anchoring: %+v %v", again, err)
	}
	if st, err := r.TxStatus(ctx, rc.TxHash); err != nil || !st.Mined || st.Confirmations() < 1 {
		t.Errorf("TxStatus = %+v %v", st, err)
	}

	memKey := goldenSeed().MemoryEncryptionKey()
	big := bytes.Repeat([]byte("0123456789abcdef"), memory.MaxContentBytes/16)
	ev := hashOf("geth big memory")
	ct, _ := EncryptMemory(memKey, ev, big)
	ms := []MemoryAnchor{{EventHash: ev, EncryptedContent: ct, Category: "note", Importance: 1, PlainLength: uint32(len(big))}}
	mr, err := r.AnchorMemories(ctx, memoryRoot(t, ms), ms)
	if err != nil {
		t.Fatalf("a 64 KiB memory: %v", err)
	}
	evs, err := r.MemoryEvents(ctx, ev, 0)
	if err != nil || len(evs) != 1 || evs[0].TxHash != mr.TxHash {
		t.Fatalf("MemoryEvents = %d, %v", len(evs), err)
	}
	if pt, err := DecryptMemory(memKey, ev, evs[0].EncryptedContent); err != nil || !bytes.Equal(pt, big) {
		t.Fatalf("decrypt: %v", err)
	}
}

// TestGethDevOpensEmbedded checks what the package documentation claims:
// while crow is stopped, geth --dev --datadir <dir> opens the embedded chain
// and serves its roots; and crow reopens it afterwards.
func TestGethDevOpensEmbedded(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir, key := shortTempDir(t), testKey(t)
	e, err := OpenEmbedded(dir, key, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	tree, rc := anchorStates(t, e, testStates("inspect", "a", 1, 2))
	contract := common.HexToAddress(e.Info().Contract)
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}

	url, stop := startGethDev(t, dir)
	r, err := DialRPC(ctx, url, contract, key)
	if err != nil {
		t.Fatal(err)
	}
	checkRoot(t, r.client, tree.Root(), 2, rc)
	if n, err := r.ec.BlockNumber(ctx); err != nil || n != rc.Block {
		t.Errorf("geth sees head %d (%v), want %d", n, err, rc.Block)
	}
	r.Close()
	stop()

	e2, err := OpenEmbedded(dir, key, testLogger(t))
	if err != nil {
		t.Fatalf("reopening after geth: %v", err)
	}
	defer e2.Close()
	checkRoot(t, e2.client, tree.Root(), 2, rc)
	anchorStates(t, e2, testStates("inspect", "a", 3, 1))
}

// TestGethDevReplacesStuckTransaction: on a real geth --dev, a transaction
// whose fee cap is below the base fee stays in the pool; after ReplaceAfter
// the sender replaces it (same nonce, fees bumped against the base fee) and
// the replacement is mined.
func TestGethDevReplacesStuckTransaction(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	key, err := ethcrypto.HexToECDSA(gethDevKey)
	if err != nil {
		t.Fatal(err)
	}
	url, _ := startGethDev(t, shortTempDir(t))
	addr, err := Deploy(ctx, url, key)
	if err != nil {
		t.Fatal(err)
	}
	r, err := DialRPC(ctx, url, addr, key)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	head, err := r.ec.HeaderByNumber(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := newSender(r.ec, key, r.chainID, TxPolicy{ReplaceAfter: 2 * time.Second}, slog.New(slog.DiscardHandler))
	s.firstFees = func(baseFee, tip *big.Int) (*big.Int, *big.Int) {
		return big.NewInt(1), big.NewInt(1) // 1 wei: below any base fee (its floor is 7 wei), never includable
	}
	data, _ := contractABI.Pack("anchorRoot", [32]byte{1}, uint32(1))
	type result struct {
		hash common.Hash
		err  error
	}
	done := make(chan result, 1)
	go func() {
		rc, err := s.Send(ctx, addr, data, "a stuck root")
		if err != nil {
			done <- result{err: err}
			return
		}
		done <- result{hash: rc.TxHash}
	}()
	var first PendingTx
	for deadline := time.Now().Add(30 * time.Second); ; {
		if p, ok := s.Pending(); ok {
			first = p
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no first attempt")
		}
		time.Sleep(20 * time.Millisecond)
	}
	res := <-done
	if res.err != nil {
		t.Fatalf("Send: %v", res.err)
	}
	if res.hash.Hex() == first.Hash {
		t.Fatalf("the first attempt (fee cap %s wei, base fee %s) was mined: it was not stuck", first.MaxFeeWei, head.BaseFee)
	}
	tx, _, err := r.ec.TransactionByHash(ctx, res.hash)
	if err != nil {
		t.Fatal(err)
	}
	if tx.Nonce() != first.Nonce {
		t.Fatalf("replacement nonce %d, first %d", tx.Nonce(), first.Nonce)
	}
	if _, err := r.ec.TransactionReceipt(ctx, common.HexToHash(first.Hash)); err == nil {
		t.Fatal("the stuck attempt has a receipt too")
	}
	t.Logf("stuck tx %s (fee cap %s wei < base fee %s) replaced by %s (fee cap %s) and mined", first.Hash, first.MaxFeeWei, head.BaseFee, res.hash.Hex(), tx.GasFeeCap())
}
