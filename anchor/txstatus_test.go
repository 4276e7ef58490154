package anchor

import (
	"testing"

	"github.com/ethereum/go-ethereum/common"
)

// TestTxStatusBelievesItsRecordOnlyWhileTheBlockIsThere: TxStatus answers from
// where a transaction was mined (recorded when it was sent or its receipt read)
// only while the canonical block at that height still has that hash; a record
// the chain contradicts is never believed, and the receipt is read again.
func TestTxStatusBelievesItsRecordOnlyWhileTheBlockIsThere(t *testing.T) {
	ch := openEmbedded(t, t.TempDir(), goldenSeed().AnchorKey())
	ctx := testCtx(t)
	r, err := ch.AnchorRoot(ctx, hashOf("txstatus root"), 1)
	if err != nil {
		t.Fatal(err)
	}
	ch.minedMu.Lock()
	m, ok := ch.mined[common.HexToHash(r.TxHash)]
	ch.minedMu.Unlock()
	if !ok || m.block != r.Block || m.blockHash.Hex() != r.BlockHash || m.reverted {
		t.Fatalf("after sending, the record is %+v (%v); the receipt %+v", m, ok, r)
	}
	mineBlock(t, ch.client)
	st, err := ch.TxStatus(ctx, r.TxHash)
	if err != nil || !st.Mined || st.Reverted || st.Block != r.Block || st.BlockHash != r.BlockHash || st.Head <= r.Block {
		t.Fatalf("status %+v, %v; the receipt %+v", st, err, r)
	}

	// A record naming another block at that height, or a failure: the
	// canonical block disagrees, so the receipt decides.
	ch.minedMu.Lock()
	ch.mined[common.HexToHash(r.TxHash)] = minedTx{block: r.Block, blockHash: common.HexToHash("0x01"), reverted: true}
	ch.minedMu.Unlock()
	st, err = ch.TxStatus(ctx, r.TxHash)
	if err != nil || !st.Mined || st.Reverted || st.Block != r.Block || st.BlockHash != r.BlockHash {
		t.Fatalf("with a wrong record: status %+v, %v; the receipt %+v", st, err, r)
	}
	ch.minedMu.Lock()
	m = ch.mined[common.HexToHash(r.TxHash)]
	ch.minedMu.Unlock()
	if m.blockHash.Hex() != r.BlockHash || m.reverted {
		t.Fatalf("the wrong record was not replaced: %+v", m)
	}

	// A record of a block beyond the head: the receipt decides.
	ch.minedMu.Lock()
	ch.mined[common.HexToHash(r.TxHash)] = minedTx{block: st.Head + 100, blockHash: common.HexToHash(r.BlockHash)}
	ch.minedMu.Unlock()
	if st, err = ch.TxStatus(ctx, r.TxHash); err != nil || !st.Mined || st.Block != r.Block {
		t.Fatalf("with a record beyond the head: status %+v, %v", st, err)
	}

	// An unknown transaction is not mined, and leaves no record.
	unknown := common.Hash(hashOf("no such transaction")).Hex()
	if st, err := ch.TxStatus(ctx, unknown); err != nil || st.Mined {
		t.Fatalf("unknown tx: %+v, %v", st, err)
	}
	ch.minedMu.Lock()
	_, ok = ch.mined[common.HexToHash(unknown)]
	ch.minedMu.Unlock()
	if ok {
		t.Fatal("an unknown transaction has a record")
	}
}
