package anchor

import (
	"context"
	"errors"
	"time"
)

// Chain is an EVM chain with the ProjectStateAnchor contract deployed, seen
// through the account that owns it. The anchor worker uses it; Embedded and
// RPC implement it.
//
// All methods are safe for concurrent use. The writing methods (AnchorRoot,
// AnchorMemories) are serialized internally: one transaction is in flight at
// a time, and each returns only once its transaction is mined (or ctx ends,
// in which case the transaction may still be mined later). Both are
// idempotent on chain: a root already anchored returns its existing id and
// changes nothing, so a retried batch is safe.
type Chain interface {
	// AnchorRoot commits root, the root of a merkle.Tree over count leaves
	// (state versions: merkle.StateLeaf), in one transaction.
	AnchorRoot(ctx context.Context, root [32]byte, count int) (Receipt, error)
	// AnchorMemories commits root, the root of a merkle.Tree over the
	// memories' event hashes (merkle.HashLeaf), and emits one
	// MemoryAnchored event per memory, in one transaction. The encoded call
	// must fit in MaxTxDataBytes (see SplitMemories).
	AnchorMemories(ctx context.Context, root [32]byte, ms []MemoryAnchor) (Receipt, error)
	// GetRoot reads the anchoring of root; ok is false when it was never
	// anchored.
	GetRoot(ctx context.Context, root [32]byte) (r RootInfo, ok bool, err error)
	// TxStatus reports where transaction txHash is now on the canonical
	// chain (for confirmations and reorgs).
	TxStatus(ctx context.Context, txHash string) (TxState, error)
	// Info describes the chain, the contract and the account.
	Info() ChainInfo
	// Close releases the chain (for Embedded, stops the node and closes its
	// database). The Chain is unusable afterwards.
	Close() error
}

// MemoryReader is the optional ability to read memory anchors back. Both
// Embedded and RPC have it.
type MemoryReader interface {
	// MemoryEvents returns the MemoryAnchored events for eventHash, oldest
	// first, searching blocks fromBlock..latest.
	MemoryEvents(ctx context.Context, eventHash [32]byte, fromBlock uint64) ([]MemoryEvent, error)
	// MemoryEventsBetween returns every MemoryAnchored event of blocks
	// fromBlock..toBlock (inclusive), in chain order: one log query for all
	// the memories anchored there (the audit reads a block once).
	MemoryEventsBetween(ctx context.Context, fromBlock, toBlock uint64) ([]MemoryEvent, error)
}

// MemoryAnchor is one memory to anchor. EncryptedContent comes from
// EncryptMemory with the same EventHash.
type MemoryAnchor struct {
	EventHash        [32]byte
	EncryptedContent []byte
	Category         string
	Importance       uint8
	PlainLength      uint32 // length of the plaintext in bytes
}

// MemoryEvent is a MemoryAnchored event read back from the chain.
type MemoryEvent struct {
	MemoryAnchor
	TxHash string
	Block  uint64
}

// Receipt describes a mined anchoring transaction.
type Receipt struct {
	TxHash    string // 0x-prefixed hex
	Block     uint64 // number of the block that includes it
	BlockHash string // that block's hash (a reorg changes it)
	RootID    uint64 // the root's id on chain
}

// RootInfo is a root's anchoring as stored on chain.
type RootInfo struct {
	ID         uint64
	AnchoredAt time.Time // the block timestamp, UTC
	Count      uint32    // leaves the root commits
}

// TxState is where a transaction is on the canonical chain.
type TxState struct {
	// Mined: a receipt exists on the canonical chain. False after a reorg
	// dropped the block that held it (it may be mined again).
	Mined     bool
	Reverted  bool // mined but failed
	Block     uint64
	BlockHash string
	Head      uint64 // the chain's head block number when asked
}

// Where a followed transaction (a root's, a checkpoint's) stands.
type txFollow int

const (
	followWait     txFollow = iota // in its block, waiting for confirmations
	followFinal                    // in its block with enough confirmations
	followMoved                    // re-included in another block after a reorg
	followDropped                  // no longer on the canonical chain: send it again
	followReverted                 // mined and failed
)

// follow decides where a transaction recorded in block recordedHash stands,
// needing confirmations to be final. The Worker and the Checkpointer share it.
func follow(st TxState, recordedHash string, confirmations uint64) txFollow {
	switch {
	case st.Mined && st.Reverted:
		return followReverted
	case st.Mined && st.BlockHash == recordedHash && st.Confirmations() < confirmations:
		return followWait
	case st.Mined && st.BlockHash == recordedHash:
		return followFinal
	case st.Mined:
		return followMoved
	}
	return followDropped
}

// Confirmations is how many blocks, the one holding the transaction
// included, are on top of the canonical chain (0: not mined).
func (s TxState) Confirmations() uint64 {
	if !s.Mined || s.Head < s.Block {
		return 0
	}
	return s.Head - s.Block + 1
}

// ChainInfo describes a Chain.
type ChainInfo struct {
	Kind     string // "embedded" or "rpc"
	ChainID  uint64
	Contract string // 0x-prefixed checksummed address
	// RPCURL is the endpoint, for "rpc" (as given to DialRPC: it may carry
	// an API key, so do not publish it as is); for "embedded", its loopback
	// endpoint if WithLoopbackRPC opened one.
	RPCURL  string
	Account string // the anchoring (owner) account, checksummed
}

// Kinds of Chain.
const (
	KindEmbedded = "embedded"
	KindRPC      = "rpc"
)

// Limits on one transaction.
const (
	// MaxLeavesPerRoot bounds the state versions one root commits. The
	// transaction costs the same for any count (one storage slot, one
	// event); the bound keeps proofs short (at most 14 hashes) and one
	// anchor record's size reasonable.
	MaxLeavesPerRoot = 10_000
	// MaxTxDataBytes bounds the ABI-encoded call of AnchorMemories, under
	// geth's 128 KiB transaction size limit. One memory of crow's largest
	// size (64 KiB of content) fits.
	MaxTxDataBytes = 120_000
)

// Errors.
var (
	// ErrNotOwner is wrapped by the writing methods when the account is not
	// the contract's owner (the contract was deployed by another key).
	ErrNotOwner = errors.New("anchor: account is not the contract owner")
	// ErrBatchTooLarge is returned by AnchorRoot for more than
	// MaxLeavesPerRoot leaves and by AnchorMemories for a call larger than
	// MaxTxDataBytes.
	ErrBatchTooLarge = errors.New("anchor: batch too large for one transaction")
	// ErrInvalid is wrapped for arguments the contract would refuse (an
	// empty batch, an all-zero root).
	ErrInvalid = errors.New("anchor: invalid argument")
	// ErrReverted is wrapped when a mined transaction failed.
	ErrReverted = errors.New("anchor: transaction reverted")
	// ErrOldContract is wrapped by DialRPC when the address holds the first
	// ProjectStateAnchor (one storage entry per version), which cannot
	// anchor Merkle roots: deploy the current one (anchor.Deploy).
	ErrOldContract = errors.New("anchor: the contract is ProjectStateAnchor v1 (per-version anchors); crow anchors Merkle roots with v2, deploy it and point [chain] contract at it")
	// ErrClosed is returned by a Chain's methods after Close.
	ErrClosed = errors.New("anchor: chain closed")
	// ErrWrongKey is returned by OpenEmbedded when the directory holds a
	// chain made for another anchoring account.
	ErrWrongKey = errors.New("anchor: chain directory belongs to another anchoring key")
)
