package anchor

import (
	"context"
	"errors"
	"time"
)

// Chain is an EVM chain with the ProjectStateAnchor contract deployed, seen
// through the seed-derived account that owns it. The anchor worker uses it;
// Embedded and RPC implement it.
//
// All methods are safe for concurrent use. The writing methods
// (AnchorStates, AnchorMemories) are serialized internally: one transaction is
// in flight at a time, and each returns only once its transaction is mined
// (or ctx ends, in which case the transaction may still be mined later).
type Chain interface {
	// AnchorStates anchors the states in one transaction (at most
	// MaxStatesPerTx). Receipt.AnchorIDs[i] is the anchor id of states[i].
	// Anchoring a (project, version) again with the same hash is not an
	// error: its existing id is returned and nothing changes on chain, so a
	// retried batch is safe. A different hash fails the whole batch with an
	// error wrapping ErrAlreadyAnchored.
	AnchorStates(ctx context.Context, states []StateAnchor) (Receipt, error)
	// AnchorMemories emits one MemoryAnchored event per memory in one
	// transaction. The encoded call must fit in MaxTxDataBytes (see
	// SplitMemories). Nothing is deduplicated: a memory sent twice is
	// logged twice. Receipt.AnchorIDs is nil.
	AnchorMemories(ctx context.Context, ms []MemoryAnchor) (Receipt, error)
	// GetAnchor reads the anchor of (projectID, version); ok is false when
	// that version was never anchored.
	GetAnchor(ctx context.Context, projectID [32]byte, version uint64) (a Anchor, ok bool, err error)
	// GetAnchorByID reads anchor id; ok is false when there is no such id.
	GetAnchorByID(ctx context.Context, id uint64) (a Anchor, ok bool, err error)
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

// StateAnchor is one Project State version to anchor.
type StateAnchor struct {
	ProjectID [32]byte // identity.Seed.ProjectIDHash(name): never the name itself
	Version   uint64
	StateHash [32]byte // must not be all zeros
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
	TxHash    string   // 0x-prefixed hex
	Block     uint64   // number of the block that includes it
	AnchorIDs []uint64 // AnchorStates only: aligned with its input
}

// Anchor is a state anchor as stored on chain.
type Anchor struct {
	ID         uint64
	ProjectID  [32]byte
	Version    uint64
	StateHash  [32]byte
	AnchoredAt time.Time // the block timestamp, UTC
	AnchoredBy string    // 0x-prefixed checksummed address
	// TxHash and Block locate the StateAnchored event of this anchor. They
	// are empty when it could not be found (e.g. an RPC endpoint that
	// refuses log queries); the anchor itself is still valid.
	TxHash string
	Block  uint64
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
	// MaxStatesPerTx bounds AnchorStates so that a batch fits one
	// transaction on any chain: under 2^24 gas (EIP-7825's per-transaction
	// cap) and under geth --dev's default 11.5M block gas limit. A new anchor
	// costs about 116k gas under Osaka rules (TestEmbeddedFullBatch logs it)
	// but about 570k under the state-gas repricing planned for Amsterdam
	// (EIP-8037, already in geth --dev's rules; TestGethDev logs it).
	MaxStatesPerTx = 16
	// MaxTxDataBytes bounds the ABI-encoded call of AnchorMemories, under
	// geth's 128 KiB transaction size limit. One memory of crow's largest
	// size (64 KiB of content) fits.
	MaxTxDataBytes = 120_000
)

// Errors.
var (
	// ErrAlreadyAnchored is wrapped by AnchorStates when a (project, version)
	// in the batch is already anchored with a different state hash. The
	// whole batch is refused; the error names the project id and version.
	ErrAlreadyAnchored = errors.New("anchor: version already anchored with another state hash")
	// ErrNotOwner is wrapped by the writing methods when the account is not
	// the contract's owner (the contract was deployed by another key).
	ErrNotOwner = errors.New("anchor: account is not the contract owner")
	// ErrBatchTooLarge is returned by AnchorStates for more than
	// MaxStatesPerTx states and by AnchorMemories for a call larger than
	// MaxTxDataBytes.
	ErrBatchTooLarge = errors.New("anchor: batch too large for one transaction")
	// ErrInvalid is wrapped for arguments the contract would refuse (an
	// empty batch, an all-zero state hash).
	ErrInvalid = errors.New("anchor: invalid argument")
	// ErrReverted is wrapped when a mined transaction failed.
	ErrReverted = errors.New("anchor: transaction reverted")
	// ErrClosed is returned by a Chain's methods after Close.
	ErrClosed = errors.New("anchor: chain closed")
	// ErrWrongKey is returned by OpenEmbedded when the directory holds a
	// chain made for another anchoring account.
	ErrWrongKey = errors.New("anchor: chain directory belongs to another anchoring key")
)
