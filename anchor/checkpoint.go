package anchor

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ethereum/go-ethereum/common"
	ethcrypto "github.com/ethereum/go-ethereum/crypto"

	"github.com/crow-sync/crow/anchor/merkle"
	"github.com/crow-sync/crow/clock"
	"github.com/crow-sync/crow/state"
	"github.com/crow-sync/crow/store"
)

// Public-chain checkpoints (SPEC §11): home's roots, anchored on its own
// (dev) chain, are committed again on an external EVM chain, a checkpoint
// root per interval. A checkpoint root is the root of a merkle.Tree whose
// leaves are merkle.HashLeaf(root) of each root it covers (types
// merkle.HashTypes), anchored with AnchorRoot on the same ProjectStateAnchor
// contract, deployed on the external chain. The owner can rewrite their dev
// chain; they cannot rewrite the external one: a packet's checkpoint proof
// shows its root was committed there, by the block's time.

// Anchor record kinds of checkpoints.
const (
	// RecordCheckpoint is a CheckpointRecord, row "checkpoint/<0x checkpoint root>".
	RecordCheckpoint = "checkpoint"
	// RecordCheckpointed is the index row "checkpointed/<0x root>" of a
	// covered root: which checkpoint covers it (checkpointRef).
	RecordCheckpointed = "checkpointed"
)

// CheckpointRecord is a checkpoint's anchors row, "checkpoint/<0x root>"
// (CheckpointRecordID), written by home's Checkpointer (and replicated).
// Roots are the covered roots, 0x-hex lowercase, sorted: the tree is rebuilt
// from them (merkle.New over merkle.HashLeaf of each), so a proof for any of
// them is derived, never stored. The transaction fields are on the external
// chain (ChainID, Contract).
//
// Compatibility: fields are only ever added; the JSON names match
// RootRecord's where they mean the same. The row also decodes as a Record
// (readers that scan the whole table, like the demo, see Kind "checkpoint").
type CheckpointRecord struct {
	Kind      string   `json:"kind"`   // RecordCheckpoint
	Status    string   `json:"status"` // StatusIncluded or StatusFinal (after Confirmations)
	Root      string   `json:"root"`   // the checkpoint root
	Roots     []string `json:"roots"`
	RootID    uint64   `json:"root_id"`
	TxHash    string   `json:"tx_hash"`
	Block     uint64   `json:"block_number"`
	BlockHash string   `json:"block_hash"`
	ChainID   uint64   `json:"chain_id"`
	Contract  string   `json:"contract"`
	// RPCURL is the external chain's public JSON-RPC endpoint, for
	// verifiers; "" for none published.
	RPCURL  string `json:"rpc_url,omitempty"`
	At      string `json:"anchored_at"`        // RFC 3339, when home first recorded it
	FinalAt string `json:"final_at,omitempty"` // when it became final
	Resent  int    `json:"resent,omitempty"`   // times sent again after a reorg
}

// checkpointRef is the index row "checkpointed/<0x root>": root is covered
// by checkpoint Checkpoint on (ChainID, Contract). It is written with the
// checkpoint record, in the same write; a later checkpoint of the same root
// (on another external chain, after the config changed) replaces it.
type checkpointRef struct {
	Kind       string `json:"kind"` // RecordCheckpointed
	Root       string `json:"root"` // the covered root
	Checkpoint string `json:"checkpoint"`
	ChainID    uint64 `json:"chain_id"`
	Contract   string `json:"contract"`
}

// CheckpointRecordID is the anchors row id of a checkpoint.
func CheckpointRecordID(ckRoot [32]byte) string { return "checkpoint/" + HashHex(ckRoot) }

func checkpointRefID(root string) string { return "checkpointed/" + strings.ToLower(root) }

// ReadCheckpointRecord reads a checkpoint's record by its 0x-hex root (ok
// false: none).
func ReadCheckpointRecord(db *store.DB, ckRoot string) (CheckpointRecord, bool, error) {
	var cr CheckpointRecord
	ok, err := readJSON(db, "checkpoint/"+strings.ToLower(ckRoot), &cr)
	return cr, ok, err
}

// LastCheckpoint is the newest checkpoint record in db (ok false: none), for
// `crow chain status` on any instance (the records replicate).
func LastCheckpoint(db *store.DB) (CheckpointRecord, bool, error) {
	var last CheckpointRecord
	found := false
	err := scanAnchors(db, "checkpoint/", func(r *store.Row) error {
		var cr CheckpointRecord
		if json.Unmarshal(r.Data, &cr) != nil || cr.Kind != RecordCheckpoint {
			return nil
		}
		if !found || newer(cr, last) {
			last, found = cr, true
		}
		return nil
	})
	return last, found, err
}

// newer orders checkpoints: by recording time, then by block.
func newer(a, b CheckpointRecord) bool {
	if a.At != b.At {
		return a.At > b.At // RFC 3339 UTC strings order as times
	}
	return a.Block > b.Block
}

// scanAnchors calls fn with each live anchors row whose id starts with
// prefix, in id order.
func scanAnchors(db *store.DB, prefix string, fn func(*store.Row) error) error {
	after := prefix // every id with the prefix sorts after the bare prefix
	for {
		rows, next, err := db.List(store.TableAnchors, store.ListOptions{After: after, Limit: 200})
		if err != nil {
			return fmt.Errorf("reading anchors %s*: %w", prefix, err)
		}
		for i := range rows {
			if !strings.HasPrefix(rows[i].RowID, prefix) {
				return nil
			}
			if err := fn(&rows[i]); err != nil {
				return err
			}
		}
		if next == "" {
			return nil
		}
		after = next
	}
}

// ProofOf rebuilds the checkpoint's tree from Roots and returns root's
// proof. It fails if root is not covered or the tree does not lead to Root
// (a corrupt record).
func (cr CheckpointRecord) ProofOf(root string) ([]merkle.Hash, error) {
	tree, err := checkpointTree(cr.Roots)
	if err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", cr.Root, err)
	}
	if HashHex(tree.Root()) != strings.ToLower(cr.Root) {
		return nil, fmt.Errorf("checkpoint %s: its roots make the tree %s", cr.Root, HashHex(tree.Root()))
	}
	h, err := state.ParseHash(root)
	if err != nil {
		return nil, fmt.Errorf("checkpoint proof of %q: %w", root, err)
	}
	proof, ok := tree.Proof(merkle.HashLeaf(h))
	if !ok {
		return nil, fmt.Errorf("checkpoint %s does not cover root %s", cr.Root, root)
	}
	return proof, nil
}

// checkpointTree is the tree of a checkpoint over roots (0x-hex).
func checkpointTree(roots []string) (*merkle.Tree, error) {
	hs, err := parseHashes(roots)
	if err != nil {
		return nil, err
	}
	leaves := make([]merkle.Hash, len(hs))
	for i, h := range hs {
		leaves[i] = merkle.HashLeaf(h)
	}
	return merkle.New(leaves)
}

// Errors of checkpoint verification.
var (
	// ErrNoCheckpoint is returned by CheckCheckpoint and RequireCheckpoint
	// for a packet that carries no checkpoint.
	ErrNoCheckpoint = errors.New("anchor: the packet carries no public-chain checkpoint")
	// ErrCheckpointMissing is returned by CheckCheckpoint when the external
	// chain has no such checkpoint root.
	ErrCheckpointMissing = errors.New("anchor: the checkpoint root is not anchored on the external chain")
	// ErrCheckpointChain is returned by CheckCheckpoint when the chain read
	// is not the one the checkpoint names (chain id or contract).
	ErrCheckpointChain = errors.New("anchor: the chain read is not the checkpoint's chain")
)

// CheckCheckpoint verifies p's checkpoint against ch, the external chain
// (dialed to p.Checkpoint.RPCURL or one the verifier chose): ch is the
// chain and contract the checkpoint names, the checkpoint proof leads from
// p.Root to the checkpoint root, and getRoot(checkpoint root) is anchored
// there. It returns ErrNoCheckpoint, ErrCheckpointChain, ErrProofMismatch,
// ErrCheckpointMissing, or ErrChainUnreadable (wrapped with the cause).
func CheckCheckpoint(ctx context.Context, ch ChainReader, p Packet) error {
	cp := p.Checkpoint
	if cp == nil {
		return ErrNoCheckpoint
	}
	if info := ch.Info(); info.ChainID != cp.ChainID || !strings.EqualFold(info.Contract, cp.Contract) {
		return fmt.Errorf("%w: the checkpoint is on chain %d, contract %s; read chain %d, contract %s",
			ErrCheckpointChain, cp.ChainID, cp.Contract, info.ChainID, info.Contract)
	}
	hs, err := parseHashes(append([]string{p.Root, cp.Root}, cp.Proof...))
	if err != nil {
		return fmt.Errorf("checking the checkpoint: %w", err)
	}
	if !merkle.Verify(hs[1], merkle.HashLeaf(hs[0]), hs[2:]) {
		return fmt.Errorf("%w: the checkpoint proof does not lead from root to the checkpoint root", ErrProofMismatch)
	}
	_, ok, err := ch.GetRoot(ctx, hs[1])
	if err != nil {
		return fmt.Errorf("%w: %w", ErrChainUnreadable, err)
	}
	if !ok {
		return fmt.Errorf("%w: checkpoint %s on chain %d, contract %s", ErrCheckpointMissing, cp.Root, cp.ChainID, cp.Contract)
	}
	return nil
}

// Reader reads roots from a ProjectStateAnchor over JSON-RPC, with no key:
// a verifier's ChainReader (CheckCheckpoint with p.Checkpoint.RPCURL, or the
// Verifier on any instance). DialRPC cannot serve there: it insists the key
// owns the contract.
type Reader struct {
	c *client
}

var _ ChainReader = (*Reader)(nil)

// DialReader connects to rpcURL and binds the ProjectStateAnchor at
// contractAddr, read only. It fails if there is no current (v2) contract
// there.
func DialReader(ctx context.Context, rpcURL string, contractAddr common.Address) (*Reader, error) {
	ec, chainID, err := dial(ctx, rpcURL)
	if err != nil {
		return nil, err
	}
	key, err := ethcrypto.GenerateKey() // the client's signer; a Reader never sends
	if err != nil {
		ec.Close()
		return nil, err
	}
	c, err := newClient(ec, contractAddr, key, chainID, ChainInfo{Kind: KindRPC, RPCURL: rpcURL}, slog.New(slog.DiscardHandler))
	if err != nil {
		ec.Close()
		return nil, err
	}
	c.info.Account = ""
	if err := c.checkOwner(ctx); err != nil && !errors.Is(err, ErrNotOwner) {
		ec.Close()
		return nil, err
	}
	return &Reader{c: c}, nil
}

// GetRoot reads the anchoring of root (ok false: never anchored).
func (r *Reader) GetRoot(ctx context.Context, root [32]byte) (RootInfo, bool, error) {
	return r.c.GetRoot(ctx, root)
}

// Info describes the chain and contract (Account is empty).
func (r *Reader) Info() ChainInfo { return r.c.Info() }

// Close closes the connection.
func (r *Reader) Close() error {
	r.c.closeClient()
	return nil
}

// RequireCheckpoint is a verifier's policy for a packet from a home that
// checkpoints every interval: a root anchored (on the dev chain, at
// anchoredAt: its getRoot anchoredAt) more than grace before now must be
// covered by a checkpoint, or ErrNoCheckpoint: the root was not part of the
// history the external chain saw (a rewritten dev chain). A younger root
// may not be checkpointed yet (nil). grace should be the interval plus the
// external chain's inclusion time; 0 requires a checkpoint always. Call
// CheckCheckpoint on a packet that has one.
func RequireCheckpoint(p Packet, anchoredAt, now time.Time, grace time.Duration) error {
	if p.Checkpoint != nil {
		return nil
	}
	if age := now.Sub(anchoredAt); grace > 0 && age <= grace {
		return nil
	}
	return fmt.Errorf("%w: root %s was anchored at %s, more than %s before %s", ErrNoCheckpoint, p.Root,
		anchoredAt.UTC().Format(time.RFC3339), grace, now.UTC().Format(time.RFC3339))
}

// CheckpointerConfig configures a Checkpointer.
type CheckpointerConfig struct {
	DB     *store.DB
	Writer *store.Writer
	// Chain is the external chain, with the ProjectStateAnchor deployed and
	// owned by its account.
	Chain Chain
	Clock clock.Clock // default clock.System
	// Interval between checkpoints (default 1 h).
	Interval time.Duration
	// Follow is how often checkpoints not final yet are followed
	// (confirmations, reorgs) between checkpoints (default min(Interval, 30 s)).
	Follow time.Duration
	// Confirmations is how many blocks (the including one counts) make a
	// checkpoint final (default 1).
	Confirmations uint64
	// RPCURL is the external chain's public JSON-RPC endpoint, written in
	// each checkpoint record and so in packets; "" for none.
	RPCURL string
	Logger *slog.Logger
}

// Checkpointer commits, on home, the roots home anchored (RootRecords,
// included or final) that no checkpoint on its Chain covers yet, once per
// Interval, and records each checkpoint (CheckpointRecord, and an index row
// per covered root) in the anchors table. It follows its checkpoints to
// finality as the Worker follows roots.
type Checkpointer struct {
	cfg CheckpointerConfig
	log *slog.Logger

	mu      sync.Mutex
	covered map[string]bool              // guarded by mu: roots covered on cfg.Chain (nil until loaded)
	open    map[string]*CheckpointRecord // guarded by mu: checkpoints on cfg.Chain not final yet, by row id

	lastMu sync.Mutex
	last   *CheckpointRecord // guarded by lastMu: the newest checkpoint (any chain)

	nCheckpoints, nRoots, failures atomic.Uint64
	lastSuccess                    atomic.Int64 // unix seconds of the last checkpoint round without error
}

// CheckpointerStats counts the Checkpointer's work since it started.
type CheckpointerStats struct {
	Checkpoints uint64 // checkpoints sent
	Roots       uint64 // roots they covered
	Failures    uint64 // rounds that failed (retried)
	// LastSuccess is when a checkpoint round last finished without error
	// (zero: never).
	LastSuccess time.Time
	// LastRoot and LastBlock: the newest checkpoint ("" and 0: none).
	LastRoot  string
	LastBlock uint64
}

// NewCheckpointer returns a Checkpointer; run it with Serve.
func NewCheckpointer(cfg CheckpointerConfig) *Checkpointer {
	cfg.Clock = clock.Or(cfg.Clock)
	cfg.Interval = cmp.Or(cfg.Interval, time.Hour)
	cfg.Follow = cmp.Or(cfg.Follow, min(cfg.Interval, 30*time.Second))
	cfg.Confirmations = cmp.Or(cfg.Confirmations, 1)
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Checkpointer{cfg: cfg, log: cfg.Logger}
}

// Stats returns the counters (for metrics).
func (c *Checkpointer) Stats() CheckpointerStats {
	st := CheckpointerStats{Checkpoints: c.nCheckpoints.Load(), Roots: c.nRoots.Load(), Failures: c.failures.Load()}
	if t := c.lastSuccess.Load(); t != 0 {
		st.LastSuccess = time.Unix(t, 0)
	}
	if last, ok := c.Last(); ok {
		st.LastRoot, st.LastBlock = last.Root, last.Block
	}
	return st
}

// Last is the newest checkpoint (ok false: none), with its current
// status, for `crow chain status`. It knows the recorded ones once Serve
// (or a Round) has read them; LastCheckpoint reads them from any DB.
func (c *Checkpointer) Last() (CheckpointRecord, bool) {
	c.lastMu.Lock()
	defer c.lastMu.Unlock()
	if c.last == nil {
		return CheckpointRecord{}, false
	}
	cr := *c.last
	cr.Roots = slices.Clone(cr.Roots)
	return cr, true
}

func (c *Checkpointer) setLast(cr CheckpointRecord) {
	c.lastMu.Lock()
	defer c.lastMu.Unlock()
	if c.last == nil || c.last.Root == cr.Root || newer(cr, *c.last) {
		c.last = &cr
	}
}

// Serve checkpoints every Interval, the first one Interval after the
// newest recorded checkpoint (after start, if none), and follows open
// checkpoints every Follow, until ctx ends. A failed checkpoint round is
// logged and retried after Follow.
func (c *Checkpointer) Serve(ctx context.Context) error {
	start := c.cfg.Clock.Now()
	c.mu.Lock()
	if err := c.loadLocked(); err != nil {
		c.log.Warn("reading checkpoints failed; retrying at the next round", "err", err)
	}
	c.mu.Unlock()
	due := start.Add(c.cfg.Interval)
	if last, ok := c.Last(); ok {
		if at, err := time.Parse(time.RFC3339, last.At); err == nil {
			due = at.Add(c.cfg.Interval)
		}
	}
	t := c.cfg.Clock.NewTicker(c.cfg.Follow)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C():
		}
		now := c.cfg.Clock.Now()
		if now.Before(due) {
			if err := c.Follow(ctx); err != nil && ctx.Err() == nil {
				c.log.Warn("following checkpoints failed; retrying", "err", err)
			}
			continue
		}
		if err := c.Round(ctx); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			c.failures.Add(1)
			c.log.Warn("checkpoint round failed; retrying", "err", err, "retry_in", c.cfg.Follow)
			due = now.Add(c.cfg.Follow)
			continue
		}
		c.lastSuccess.Store(c.cfg.Clock.Now().Unix())
		due = now.Add(c.cfg.Interval)
	}
}

// Round checkpoints every root not covered yet (one checkpoint per
// MaxLeavesPerRoot roots; none if nothing is new), then follows the
// checkpoints not final yet.
func (c *Checkpointer) Round(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.loadLocked(); err != nil {
		return err
	}
	return errors.Join(c.commitLocked(ctx), c.followLocked(ctx))
}

// Follow follows the checkpoints not final yet: confirmations, reorgs.
func (c *Checkpointer) Follow(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.loadLocked(); err != nil {
		return err
	}
	return c.followLocked(ctx)
}

// onChain reports whether a record is on c's chain.
func (c *Checkpointer) onChain(chainID uint64, contract string) bool {
	info := c.cfg.Chain.Info()
	return chainID == info.ChainID && strings.EqualFold(contract, info.Contract)
}

// loadLocked reads, once, which roots are covered on c's chain and which of
// its checkpoints are not final.
func (c *Checkpointer) loadLocked() error {
	if c.covered != nil {
		return nil
	}
	covered, open := map[string]bool{}, map[string]*CheckpointRecord{}
	err := scanAnchors(c.cfg.DB, "checkpoint/", func(r *store.Row) error {
		var cr CheckpointRecord
		if json.Unmarshal(r.Data, &cr) != nil || cr.Kind != RecordCheckpoint {
			return nil
		}
		c.setLast(cr)
		if !c.onChain(cr.ChainID, cr.Contract) {
			return nil // on another external chain: what it covers is checkpointed again here
		}
		for _, root := range cr.Roots {
			covered[strings.ToLower(root)] = true
		}
		if cr.Status != StatusFinal {
			open[r.RowID] = &cr
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("reading checkpoints: %w", err)
	}
	c.covered, c.open = covered, open
	return nil
}

// commitLocked checkpoints the roots not covered yet.
func (c *Checkpointer) commitLocked(ctx context.Context) error {
	var pending []string
	err := scanAnchors(c.cfg.DB, "root/", func(r *store.Row) error {
		var rr RootRecord
		if json.Unmarshal(r.Data, &rr) != nil || rr.Kind != RecordRoot || (rr.Status != StatusIncluded && rr.Status != StatusFinal) {
			return nil
		}
		root := strings.ToLower(rr.Root)
		if _, err := state.ParseHash(root); err != nil || c.covered[root] {
			return nil
		}
		pending = append(pending, root)
		return nil
	})
	if err != nil {
		return err
	}
	slices.Sort(pending)
	pending = slices.Compact(pending)
	for len(pending) > 0 {
		n := min(len(pending), MaxLeavesPerRoot)
		if err := c.checkpointLocked(ctx, pending[:n]); err != nil {
			return err
		}
		pending = pending[n:]
	}
	return nil
}

// checkpointLocked anchors the checkpoint of roots (sorted) and records it
// with an index row per root, in one write.
func (c *Checkpointer) checkpointLocked(ctx context.Context, roots []string) error {
	tree, err := checkpointTree(roots)
	if err != nil {
		return err
	}
	rcpt, err := c.cfg.Chain.AnchorRoot(ctx, tree.Root(), tree.Len())
	if err != nil {
		return fmt.Errorf("checkpointing %d roots: %w", len(roots), err)
	}
	info := c.cfg.Chain.Info()
	now := c.cfg.Clock.Now().UTC().Format(time.RFC3339)
	cr := &CheckpointRecord{Kind: RecordCheckpoint, Status: StatusIncluded, Root: HashHex(tree.Root()), Roots: slices.Clone(roots),
		RootID: rcpt.RootID, TxHash: rcpt.TxHash, Block: rcpt.Block, BlockHash: rcpt.BlockHash, ChainID: info.ChainID,
		Contract: info.Contract, RPCURL: c.cfg.RPCURL, At: now}
	if st, err := c.cfg.Chain.TxStatus(ctx, rcpt.TxHash); err == nil && st.Mined && st.Confirmations() >= c.cfg.Confirmations {
		cr.Status, cr.FinalAt = StatusFinal, now
	}
	id := CheckpointRecordID(tree.Root())
	data, _ := json.Marshal(cr)
	muts := make([]store.Mutation, 0, len(roots)+1)
	muts = append(muts, store.Mutation{Table: store.TableAnchors, RowID: id, Op: store.OpPut, Data: data})
	for _, root := range roots {
		ref, _ := json.Marshal(checkpointRef{Kind: RecordCheckpointed, Root: root, Checkpoint: cr.Root, ChainID: info.ChainID, Contract: info.Contract})
		muts = append(muts, store.Mutation{Table: store.TableAnchors, RowID: checkpointRefID(root), Op: store.OpPut, Data: ref})
	}
	if _, err := c.cfg.Writer.Write(ctx, muts...); err != nil {
		return fmt.Errorf("recording checkpoint %s: %w", cr.Root, err)
	}
	for _, root := range roots {
		c.covered[root] = true
	}
	if cr.Status != StatusFinal {
		c.open[id] = cr
	}
	c.setLast(*cr)
	c.nCheckpoints.Add(1)
	c.nRoots.Add(uint64(len(roots)))
	c.log.Info("checkpointed roots on the external chain", "roots", len(roots), "checkpoint", cr.Root, "chain_id", info.ChainID,
		"tx", rcpt.TxHash, "block", rcpt.Block)
	return nil
}

// followLocked follows every open checkpoint, as the Worker's confirmLocked
// follows roots: enough confirmations make it final; a block moved by a
// reorg is followed; a transaction no longer on the canonical chain is sent
// again (the same checkpoint root: anchoring is idempotent).
func (c *Checkpointer) followLocked(ctx context.Context) error {
	var errs []error
	for id, cr := range c.open {
		st, err := c.cfg.Chain.TxStatus(ctx, cr.TxHash)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		switch follow(st, cr.BlockHash, c.cfg.Confirmations) {
		case followReverted:
			errs = append(errs, fmt.Errorf("checkpoint %s: %w: tx %s", cr.Root, ErrReverted, cr.TxHash))
			continue
		case followWait:
			continue // waiting for confirmations
		case followFinal:
			cr.Status, cr.FinalAt = StatusFinal, c.cfg.Clock.Now().UTC().Format(time.RFC3339)
		case followMoved:
			c.log.Warn("a reorg moved a checkpoint transaction", "checkpoint", cr.Root, "tx", cr.TxHash, "from_block", cr.Block, "to_block", st.Block)
			cr.Block, cr.BlockHash = st.Block, st.BlockHash
		default:
			c.log.Warn("a reorg dropped a checkpoint transaction; sending it again", "checkpoint", cr.Root, "tx", cr.TxHash, "block", cr.Block)
			root, err := state.ParseHash(cr.Root)
			if err != nil {
				errs = append(errs, fmt.Errorf("checkpoint %s: %w", cr.Root, err))
				continue
			}
			rcpt, err := c.cfg.Chain.AnchorRoot(ctx, root, len(cr.Roots))
			if err != nil {
				errs = append(errs, fmt.Errorf("sending checkpoint %s again: %w", cr.Root, err))
				continue
			}
			cr.Resent++
			cr.RootID, cr.TxHash, cr.Block, cr.BlockHash, cr.Status = rcpt.RootID, rcpt.TxHash, rcpt.Block, rcpt.BlockHash, StatusIncluded
			if st, err := c.cfg.Chain.TxStatus(ctx, rcpt.TxHash); err == nil && st.Mined && st.Confirmations() >= c.cfg.Confirmations {
				cr.Status, cr.FinalAt = StatusFinal, c.cfg.Clock.Now().UTC().Format(time.RFC3339)
			}
		}
		data, _ := json.Marshal(cr)
		if _, err := c.cfg.Writer.Write(ctx, store.Mutation{Table: store.TableAnchors, RowID: id, Op: store.OpPut, Data: data}); err != nil {
			errs = append(errs, fmt.Errorf("recording checkpoint %s: %w", cr.Root, err))
			continue
		}
		c.setLast(*cr)
		if cr.Status == StatusFinal {
			delete(c.open, id)
		}
	}
	return errors.Join(errs...)
}
