package anchor

import (
	"cmp"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/crow-sync/crow/anchor/merkle"
	"github.com/crow-sync/crow/clock"
	"github.com/crow-sync/crow/identity"
	"github.com/crow-sync/crow/memory"
	"github.com/crow-sync/crow/state"
	"github.com/crow-sync/crow/store"
)

// Anchor record kinds and statuses (rows of the anchors table).
const (
	RecordState  = "state"  // a state version: its leaf's root and proof
	RecordMemory = "memory" // a memory version: its leaf's root and proof
	RecordRoot   = "root"   // a root: its transaction and status (RootRecord)
	RecordChain  = "chain"  // the chain: contract, RPC URL, address binding (ChainRecord)

	// Statuses of a root, and so of every version it commits:
	StatusPending  = "pending"  // not on chain yet (no record, or dropped by a reorg and being sent again)
	StatusIncluded = "included" // in a block
	StatusFinal    = "final"    // in a block with the configured confirmations on top
	// StatusAnchored is the status of records written before roots (one
	// transaction per version, on the first contract); they are anchored
	// again under roots.
	StatusAnchored = "anchored"
	StatusConflict = "conflict" // (records before roots) the chain held another hash
)

// IsAnchored reports whether status says the version is on chain.
func IsAnchored(status string) bool {
	return status == StatusIncluded || status == StatusFinal || status == StatusAnchored
}

// Record is the record of which root commits a version, with the version's
// Merkle proof. Since issue 16 it is derived from the root's row
// (StateRecord, MemoryRecord, BatchRecords); before, home wrote one as an
// anchors row per version, which readers still accept. Row ids:
// "state/<project>/<version, 20 digits>" and, per memory version,
// "memory/<number>" (VersionRecordID). Records written before memories had
// versions are "memory/<memory id>" (MemoryRecordID); they count as the
// record of the number they hold.
//
// Status is the root's status when the record was written (included);
// the root's RootRecord, updated as it gets confirmations, is the current
// one (Records.Status). A record without Root predates Merkle batching.
//
// ProjectID, in a state record, is the keyed id home anchored the project
// under on chain (HashHex of identity.Seed.ProjectIDHash): how an instance
// without the seed names the project on chain (RecordedProjectID).
type Record struct {
	Kind      string `json:"kind"`
	Status    string `json:"status"`
	Project   string `json:"project,omitempty"`
	ProjectID string `json:"project_id,omitempty"` // state records; see above
	Version   uint64 `json:"version,omitempty"`
	StateHash string `json:"state_hash,omitempty"`
	// Root and Proof: the merkle.Tree root that commits this version's
	// leaf, and the leaf's proof (0x-hex hashes, leaf to root).
	Root     string   `json:"root,omitempty"`
	Proof    []string `json:"proof,omitempty"`
	RootID   uint64   `json:"root_id,omitempty"`
	AnchorID uint64   `json:"anchor_id,omitempty"` // records before roots
	MemoryID string   `json:"memory_id,omitempty"`
	Number   uint64   `json:"number,omitempty"`
	// EventHash, in a memory record, is its leaf's value.
	EventHash string `json:"event_hash,omitempty"`
	TxHash    string `json:"tx_hash,omitempty"`
	Block     uint64 `json:"block_number,omitempty"`
	ChainID   uint64 `json:"chain_id"`
	Contract  string `json:"contract"`
	Error     string `json:"error,omitempty"`
	At        string `json:"anchored_at,omitempty"` // RFC 3339, when home recorded it
	// Encryption, in a memory record, is how its content on chain is
	// encrypted: EncryptionDataKey (format 2, SealMemory). Empty: format 1
	// under the seed's memory key (records written before data keys).
	Encryption string `json:"encryption,omitempty"`
}

// RootRecord is a root's anchors row, "root/<0x root>": where its
// transaction is and how final, and what it commits (state versions or
// memory versions, by Leaves). Since issue 16 it is the only row of a
// root: Batch holds the ordered leaf inputs the tree is rebuilt from
// (batch.go) and every version's Record derives from it (StateRecord,
// MemoryRecord). Rows written before list in Items the row ids of the
// per-version records they commit; such rows keep working, and the worker
// rewrites them only as it did (status, resending).
type RootRecord struct {
	Kind      string   `json:"kind"` // RecordRoot
	Leaves    string   `json:"leaves"`
	Status    string   `json:"status"`
	Root      string   `json:"root"`
	Count     int      `json:"count"`
	RootID    uint64   `json:"root_id"`
	TxHash    string   `json:"tx_hash"`
	Block     uint64   `json:"block_number"`
	BlockHash string   `json:"block_hash"`
	ChainID   uint64   `json:"chain_id"`
	Contract  string   `json:"contract"`
	Items     []string `json:"items"`              // rows before issue 16; null since
	Batch     []byte   `json:"batch,omitempty"`    // since issue 16 (base64 in JSON)
	At        string   `json:"anchored_at"`        // when home first recorded it
	FinalAt   string   `json:"final_at,omitempty"` // when it became final
	Resent    int      `json:"resent,omitempty"`   // times sent again after a reorg
}

// RootRecordID is the anchors row id of a root.
func RootRecordID(root [32]byte) string { return "root/" + HashHex(root) }

// EncryptionDataKey is Record.Encryption of a memory sealed under its data
// key (format 2; see SealMemory).
const EncryptionDataKey = "data-key-v2"

// StateRecordID is the anchors row id of a state version.
func StateRecordID(project string, version uint64) string {
	return fmt.Sprintf("state/%s/%020d", project, version)
}

// MemoryRecordID is the anchors row id of a memory in records written
// before memories had versions (one per memory).
func MemoryRecordID(memoryID string) string { return "memory/" + memoryID }

// VersionRecordID is the anchors row id of memory version number n.
func VersionRecordID(n uint64) string { return "memory/" + strconv.FormatUint(n, 10) }

// WorkerConfig configures a Worker.
type WorkerConfig struct {
	DB     *store.DB
	Writer *store.Writer
	Chain  Chain
	Seed   identity.Seed // project ids and the data keys' wrap key
	Clock  clock.Clock   // default clock.System
	// Interval between rounds (default 5 s: memories are anchored within
	// seconds of being numbered, state versions within one interval, when
	// the instance is not busy; see Quiet).
	Interval time.Duration
	// MaxMemoriesPerRound bounds one round's memory work (default 2000).
	MaxMemoriesPerRound int
	// Confirmations is how many blocks (the including one counts) make a
	// root final (default 1: final once included, right for the embedded
	// chain, which never reorganizes).
	Confirmations uint64
	// RPCURL is the chain's public JSON-RPC endpoint, published in the
	// chain record (and so in every verification packet); "" for none.
	RPCURL string
	// Recheck follows every root at start, final ones too: a root whose
	// transaction this chain does not hold is sent again, as after a reorg
	// that dropped it (the same root, so every proof stays valid). A home
	// promoted after the old one was lost (daemon, home failover) sets it:
	// with the embedded chain its chain is a fresh one, which holds none of
	// the old home's roots.
	Recheck bool
	// Quiet, if set, paces the anchoring transactions: before each one the
	// worker waits for a pause in the instance's foreground work (API writes,
	// replication; the daemon touches it), up to the Quiet's bound. Building,
	// executing and sealing a transaction of ~200 memories is a burst of CPU
	// and I/O that otherwise lands in front of the user's writes and of the
	// satellites' catch-up. Nil: no pacing.
	Quiet  *clock.Quiet
	Logger *slog.Logger
}

// Worker anchors, on home, every state version and every numbered memory
// version (memory_versions: an edit is anchored as its own number) not
// anchored yet, and records each in the anchors table (which
// replicates, so every instance knows what is anchored). It is the only
// writer of that table.
type Worker struct {
	cfg  WorkerConfig
	log  *slog.Logger
	kick chan struct{}

	mu   sync.Mutex
	done map[string]bool // guarded by mu: state and memory record ids anchored under a root (loaded at start)
	// scanFrom is the memory_versions row id the next round's scan starts at
	// ("": the first): every version before it is anchored, forgotten or in
	// recheck, and scanBelow of them were counted then. Guarded by mu.
	scanFrom  string
	scanBelow int
	// tailCounts counts the rounds that counted the versions from the mark
	// (tests: a gapless numbering needs none).
	tailCounts int
	recheck    map[string]bool
	open       map[string]*RootRecord // guarded by mu: roots not final yet, by row id

	// capped: the last round's memories stopped at MaxMemoriesPerRound.
	capped atomic.Bool

	nStates, nMemories, failures atomic.Uint64
	lastSuccess                  atomic.Int64 // unix seconds of the last round without error
}

// WorkerStats counts the worker's work since it started.
type WorkerStats struct {
	States   uint64 `json:"states"`        // state versions anchored
	Memories uint64 `json:"memories"`      // memories anchored
	Failures uint64 `json:"failed_rounds"` // rounds that failed (retried)
	// LastSuccess is when a round last finished without error (zero: never).
	LastSuccess time.Time `json:"last_success"`
}

// Stats returns the worker's counters (for metrics).
func (w *Worker) Stats() WorkerStats {
	st := WorkerStats{States: w.nStates.Load(), Memories: w.nMemories.Load(), Failures: w.failures.Load()}
	if t := w.lastSuccess.Load(); t != 0 {
		st.LastSuccess = time.Unix(t, 0)
	}
	return st
}

// NewWorker returns a worker; run it with Serve.
func NewWorker(cfg WorkerConfig) *Worker {
	cfg.Clock = cmp.Or[clock.Clock](cfg.Clock, clock.System{})
	cfg.Interval = cmp.Or(cfg.Interval, 5*time.Second)
	cfg.MaxMemoriesPerRound = cmp.Or(cfg.MaxMemoriesPerRound, 2000)
	cfg.Confirmations = cmp.Or(cfg.Confirmations, 1)
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Worker{cfg: cfg, log: cfg.Logger, kick: make(chan struct{}, 1), recheck: map[string]bool{}}
}

// Kick asks for a round now (after a consolidation). It never blocks.
func (w *Worker) Kick() {
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

// Serve runs rounds until ctx ends; errors are logged and retried at the
// next round (the chain may be briefly unavailable).
func (w *Worker) Serve(ctx context.Context) error {
	t := w.cfg.Clock.NewTicker(w.cfg.Interval)
	defer t.Stop()
	for {
		err := w.Round(ctx)
		if err != nil && ctx.Err() == nil {
			w.failures.Add(1)
			w.log.Warn("anchoring round failed; retrying next round", "err", err)
		} else if err == nil {
			w.lastSuccess.Store(w.cfg.Clock.Now().Unix())
		}
		// A round that stopped at MaxMemoriesPerRound left a backlog: the
		// next one starts now. Each transaction still waits for a pause in
		// foreground work (Quiet), so a backlog left by a bulk import or a
		// busy stretch drains while home is idle, not at 2,000 per interval.
		if err == nil && w.capped.Load() {
			if ctx.Err() != nil {
				return nil
			}
			continue
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C():
		case <-w.kick:
		}
	}
}

func (w *Worker) load() error {
	if w.done != nil {
		return nil
	}
	done, open := map[string]bool{}, map[string]*RootRecord{}
	err := w.cfg.DB.View(func(txn *store.Txn) error {
		return txn.ScanRows(store.TableAnchors, func(r *store.Row) error {
			if r.Deleted {
				return nil
			}
			if strings.HasPrefix(r.RowID, "root/") {
				var rr RootRecord
				if json.Unmarshal(r.Data, &rr) != nil {
					return nil
				}
				if rr.Status != StatusFinal || w.cfg.Recheck {
					open[r.RowID] = &rr
				}
				if len(rr.Batch) > 0 {
					ids, err := batchItemIDs(rr)
					if err != nil {
						w.log.Error("a root record whose batch does not decode; its versions are anchored again", "row", r.RowID, "err", err)
						return nil
					}
					for _, id := range ids {
						done[id] = true
					}
				}
				return nil
			}
			var rec Record
			if json.Unmarshal(r.Data, &rec) != nil || rec.Root == "" {
				return nil // not a version record, or one from before roots: anchored again
			}
			done[r.RowID] = true
			if rec.Kind == RecordMemory && rec.Number != 0 {
				done[VersionRecordID(rec.Number)] = true // a record by memory id counts for its number
			}
			return nil
		})
	})
	if err != nil {
		return fmt.Errorf("reading anchors: %w", err)
	}
	w.done, w.open = done, open
	return nil
}

// Round anchors what is pending (state versions first, then memories),
// then follows the roots not final yet: confirmations, reorgs.
func (w *Worker) Round(ctx context.Context) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.load(); err != nil {
		return err
	}
	return errors.Join(w.chainRecordLocked(ctx), w.statesLocked(ctx), w.memoriesLocked(ctx), w.confirmLocked(ctx))
}

type pendingState struct {
	id      string
	project string
	version uint64
	hash    [32]byte
	hashHex string
}

func (w *Worker) statesLocked(ctx context.Context) error {
	var pending []pendingState
	err := w.cfg.DB.View(func(txn *store.Txn) error {
		return txn.ScanRows(store.TableStateVersions, func(r *store.Row) error {
			if r.Deleted {
				return nil
			}
			var v struct {
				Project   string `json:"project"`
				Version   uint64 `json:"version"`
				StateHash string `json:"state_hash"`
			}
			if json.Unmarshal(r.Data, &v) != nil || v.Project == "" {
				return nil
			}
			id := StateRecordID(v.Project, v.Version)
			if w.done[id] {
				return nil
			}
			h, err := state.ParseHash(v.StateHash)
			if err != nil || h == ([32]byte{}) {
				w.log.Error("state version with an unreadable hash; not anchored", "row", r.RowID, "err", err)
				return nil
			}
			pending = append(pending, pendingState{id, v.Project, v.Version, h, v.StateHash})
			return nil
		})
	})
	if err != nil {
		return err
	}
	for len(pending) > 0 {
		n := min(len(pending), MaxLeavesPerRoot)
		if err := w.anchorStatesLocked(ctx, pending[:n]); err != nil {
			return err
		}
		pending = pending[n:]
	}
	return nil
}

// anchorStatesLocked commits batch under one root and records it: the
// root's row, whose Batch lists the versions (one row, one write).
func (w *Worker) anchorStatesLocked(ctx context.Context, batch []pendingState) error {
	pids := make([][32]byte, len(batch))
	leaves := make([]merkle.Hash, len(batch))
	for i, p := range batch {
		pids[i] = w.cfg.Seed.ProjectIDHash(p.project)
		leaves[i] = merkle.StateLeaf(pids[i], p.version, p.hash)
	}
	tree, err := merkle.New(leaves)
	if err != nil {
		return err
	}
	if err := w.cfg.Quiet.Wait(ctx); err != nil {
		return err
	}
	w.log.Info("anchoring state versions", "count", len(batch), "root", HashHex(tree.Root()))
	rcpt, err := w.cfg.Chain.AnchorRoot(ctx, tree.Root(), tree.Len())
	if err != nil {
		return fmt.Errorf("anchoring %d state versions: %w", len(batch), err)
	}
	now := w.cfg.Clock.Now().UTC().Format(time.RFC3339)
	root := HashHex(tree.Root())
	ins := make([]stateLeafIn, len(batch))
	for i, p := range batch {
		ins[i] = stateLeafIn{Project: p.project, ProjectID: pids[i], Version: p.version, StateHash: p.hash}
	}
	rr := &RootRecord{Kind: RecordRoot, Leaves: RecordState, Root: root, Count: tree.Len(), Batch: encodeStateBatch(ins), At: now}
	if err := w.recordRootLocked(ctx, rr, rcpt); err != nil {
		return err
	}
	for _, p := range batch {
		w.done[p.id] = true
	}
	w.nStates.Add(uint64(len(batch)))
	w.log.Info("anchored state versions", "count", len(batch), "root", root, "tx", rcpt.TxHash, "block", rcpt.Block)
	return nil
}

// recordRootLocked fills rr from the receipt, decides its status and writes
// it (with muts, if any).
func (w *Worker) recordRootLocked(ctx context.Context, rr *RootRecord, rcpt Receipt, muts ...store.Mutation) error {
	info := w.cfg.Chain.Info()
	rr.Status, rr.RootID, rr.TxHash, rr.Block, rr.BlockHash = StatusIncluded, rcpt.RootID, rcpt.TxHash, rcpt.Block, rcpt.BlockHash
	rr.ChainID, rr.Contract = info.ChainID, info.Contract
	if st, err := w.cfg.Chain.TxStatus(ctx, rcpt.TxHash); err == nil && st.Mined && st.Confirmations() >= w.cfg.Confirmations {
		rr.Status, rr.FinalAt = StatusFinal, w.cfg.Clock.Now().UTC().Format(time.RFC3339)
	}
	data, _ := json.Marshal(rr)
	id := "root/" + rr.Root
	muts = append(muts, store.Mutation{Table: store.TableAnchors, RowID: id, Op: store.OpPut, Data: data})
	if _, err := w.cfg.Writer.Write(ctx, muts...); err != nil {
		return fmt.Errorf("recording anchors: %w", err)
	}
	if rr.Status == StatusFinal {
		delete(w.open, id)
	} else {
		w.open[id] = rr
	}
	return nil
}

func hexes(hs []merkle.Hash) []string {
	out := make([]string, len(hs))
	for i, h := range hs {
		out[i] = HashHex(h)
	}
	return out
}

type pendingMemory struct {
	id        string
	memoryID  string
	number    uint64
	eventHash string
	content   string
	anchor    MemoryAnchor
}

func (w *Worker) memoriesLocked(ctx context.Context) error {
	var pending []pendingMemory
	err := w.cfg.DB.View(func(txn *store.Txn) error {
		// The numbered versions (memory.Version rows) in number order. A full
		// scan of every version each round was O(versions) of decoding per
		// round, 10 % of home's CPU while 100k memories were written
		// (docs/bench/profiles.md). So a round scans from the mark the last one
		// reached, and looks again only at the versions before the mark that
		// were neither anchored nor forgotten then (w.recheck: pending ones,
		// those of a deleted memory, which a revival can make anchorable). If
		// the versions below the mark are not as many as that round counted (a
		// version with a lower number arrived since: an old home's numbering
		// replicated late), the scan starts from the first version again.
		//
		// Home numbers 1, 2, 3, … with no gap (memory.Numberer) and a version's
		// row id is its number (memory.VersionRowID): when the mark is version
		// n and below is n-1, every lower number is here already and none can
		// arrive late, so the count, O(versions from the mark), is skipped (it
		// walked a backlog of ~70k versions every round while 100k memories
		// were written: 2 % of home's CPU, 5 % during a full sync).
		from, below := w.scanFrom, w.scanBelow
		if from != "" && !gapless(from, below) {
			w.tailCounts++
			total, err := txn.CountRows(store.TableMemoryVersions)
			if err != nil {
				return err
			}
			tail, err := txn.CountKeysFrom(store.TableMemoryVersions, from)
			if err != nil {
				return err
			}
			if total.Total()-tail != below {
				from, below = "", 0
			}
		}
		if from == "" {
			clear(w.recheck)
		}
		w.scanFrom, w.scanBelow = from, below
		// consider adds r's version to pending if it is to anchor now, and
		// reports whether it is to be looked at again (not anchored, not
		// forgotten).
		consider := func(r *store.Row) bool {
			if r.Deleted {
				return true
			}
			// The row id is the number (memory.VersionRowID): an anchored version is
			// passed over without decoding its data.
			if n, err := strconv.ParseUint(r.RowID, 10, 64); err == nil && n > 0 && w.done[VersionRecordID(n)] {
				return false
			}
			var v memory.Version
			if json.Unmarshal(r.Data, &v) != nil || v.Number == 0 {
				return true
			}
			if w.done[VersionRecordID(v.Number)] || v.ForgottenAt != "" {
				return false
			}
			if len(pending) < w.cfg.MaxMemoriesPerRound {
				if p, ok := pendingOf(txn, v); ok {
					pending = append(pending, p)
				}
			}
			return true
		}
		for _, id := range slices.Sorted(maps.Keys(w.recheck)) {
			r, err := txn.GetRow(store.TableMemoryVersions, id)
			if errors.Is(err, store.ErrNotFound) || (err == nil && !consider(r)) {
				delete(w.recheck, id)
			} else if err != nil {
				return err
			}
		}
		k := 0
		return txn.ScanRowsFrom(store.TableMemoryVersions, from, func(r *store.Row) error {
			if len(pending) >= w.cfg.MaxMemoriesPerRound {
				return store.ErrStop
			}
			// The last round's mark (never "": row ids are not empty) was
			// settled or put in w.recheck then.
			if r.RowID != from && consider(r) {
				w.recheck[r.RowID] = true
			}
			// Every version up to r is anchored, forgotten or in w.recheck: the
			// next round starts at r, with the k versions before it in this scan.
			w.scanFrom, w.scanBelow = r.RowID, below+k
			k++
			return nil
		})
	})
	if err != nil {
		return err
	}
	w.capped.Store(len(pending) >= w.cfg.MaxMemoriesPerRound)
	if pending, err = w.seal(ctx, pending); err != nil || len(pending) == 0 {
		return err
	}
	byHash := map[[32]byte][]pendingMemory{}
	ms := make([]MemoryAnchor, 0, len(pending))
	for _, p := range pending {
		if _, dup := byHash[p.anchor.EventHash]; !dup {
			ms = append(ms, p.anchor)
		}
		byHash[p.anchor.EventHash] = append(byHash[p.anchor.EventHash], p)
	}
	for _, batch := range SplitMemories(ms) {
		if err := w.anchorMemoriesLocked(ctx, batch, byHash); err != nil {
			return err
		}
	}
	return nil
}

// gapless reports whether the mark from is the row id of version n and below
// (the versions counted before it) is n-1: numbers 1 to n-1 are all there.
func gapless(from string, below int) bool {
	n, err := strconv.ParseUint(from, 10, 64)
	return err == nil && from == memory.VersionRowID(n) && uint64(below)+1 == n
}

// pendingOf is the memory version v to anchor, unless there is nothing to
// anchor (forgotten, deleted, or a legacy number without content).
func pendingOf(txn *store.Txn, v memory.Version) (pendingMemory, bool) {
	if v.ContentHash == "" || v.ForgottenAt != "" {
		return pendingMemory{}, false
	}
	eh, err := state.ParseHash(v.EventHash)
	if err != nil {
		return pendingMemory{}, false
	}
	row, err := txn.GetRow(store.TableMemories, v.MemoryID)
	if err != nil || row.Deleted {
		return pendingMemory{}, false // deleted before it was anchored: nothing to anchor
	}
	return pendingMemory{id: VersionRecordID(v.Number), memoryID: v.MemoryID, number: v.Number,
		eventHash: v.EventHash, content: v.Content, anchor: MemoryAnchor{EventHash: eh, Category: v.Category,
			Importance: uint8(max(0, min(v.Importance, 255))), PlainLength: uint32(len(v.Content))}}, true
}

// memoryTree is the tree of a batch of memories: one leaf per event hash.
func memoryTree(batch []MemoryAnchor) (*merkle.Tree, []merkle.Hash, error) {
	leaves := make([]merkle.Hash, len(batch))
	for i, a := range batch {
		leaves[i] = merkle.HashLeaf(a.EventHash)
	}
	t, err := merkle.New(leaves)
	return t, leaves, err
}

func (w *Worker) anchorMemoriesLocked(ctx context.Context, batch []MemoryAnchor, byHash map[[32]byte][]pendingMemory) error {
	tree, _, err := memoryTree(batch)
	if err != nil {
		return err
	}
	if err := w.cfg.Quiet.Wait(ctx); err != nil {
		return err
	}
	// The batch was sealed before the round's first transaction, and the
	// wait may have lasted seconds: a memory forgotten meanwhile (its data
	// key shredded) must not go on chain, even as a ciphertext nobody can
	// open. Its batch waits for the next round, which seals without it; the
	// others stay pending (w.recheck).
	if id, err := w.shreddedIn(batch, byHash); err != nil || id != "" {
		if id != "" {
			w.log.Info("a memory of this batch was forgotten before it was sent; the batch waits for the next round", "memory", id)
		}
		return err
	}
	w.log.Info("anchoring memories", "count", len(batch), "root", HashHex(tree.Root()))
	rcpt, err := w.cfg.Chain.AnchorMemories(ctx, tree.Root(), batch)
	if err != nil {
		return fmt.Errorf("anchoring %d memories: %w", len(batch), err)
	}
	now := w.cfg.Clock.Now().UTC().Format(time.RFC3339)
	root := HashHex(tree.Root())
	var ins []memoryLeafIn
	var ids []string
	for _, a := range batch {
		for _, p := range byHash[a.EventHash] {
			ins = append(ins, memoryLeafIn{Number: p.number, EventHash: a.EventHash})
			ids = append(ids, p.id)
		}
	}
	rr := &RootRecord{Kind: RecordRoot, Leaves: RecordMemory, Root: root, Count: tree.Len(), Batch: encodeMemoryBatch(ins), At: now}
	if err := w.recordRootLocked(ctx, rr, rcpt); err != nil {
		return err
	}
	for _, id := range ids {
		w.done[id] = true
	}
	w.nMemories.Add(uint64(len(ids)))
	w.log.Info("anchored memories", "count", len(batch), "root", root, "tx", rcpt.TxHash, "block", rcpt.Block)
	return nil
}

// shreddedIn returns the id of a memory of batch whose data key was
// shredded (it was forgotten) since the batch was sealed, or "".
func (w *Worker) shreddedIn(batch []MemoryAnchor, byHash map[[32]byte][]pendingMemory) (id string, err error) {
	err = w.cfg.DB.View(func(txn *store.Txn) error {
		for _, a := range batch {
			for _, p := range byHash[a.EventHash] {
				st, err := shreddedTxn(txn, p.memoryID)
				if err != nil {
					return err
				}
				if st == KeyShredded {
					id = p.memoryID
					return nil
				}
			}
		}
		return nil
	})
	return id, err
}

// confirmLocked follows every root not final yet: enough confirmations make
// it final; a block moved by a reorg is followed; a transaction no longer on
// the canonical chain is sent again (the root and every proof stay the
// same: the contract's anchoring is idempotent).
func (w *Worker) confirmLocked(ctx context.Context) error {
	var errs []error
	for id, rr := range w.open {
		st, err := w.cfg.Chain.TxStatus(ctx, rr.TxHash)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		switch follow(st, rr.BlockHash, w.cfg.Confirmations) {
		case followReverted:
			errs = append(errs, fmt.Errorf("root %s: %w: tx %s", rr.Root, ErrReverted, rr.TxHash))
			continue
		case followWait:
			continue // waiting for confirmations
		case followFinal:
			if rr.Status == StatusFinal { // rechecked (Recheck): on this chain already
				delete(w.open, id)
				continue
			}
			rr.Status, rr.FinalAt = StatusFinal, w.cfg.Clock.Now().UTC().Format(time.RFC3339)
		case followMoved:
			// Re-included in another block after a reorg.
			w.log.Warn("a reorg moved an anchoring transaction", "root", rr.Root, "tx", rr.TxHash, "from_block", rr.Block, "to_block", st.Block)
			rr.Block, rr.BlockHash = st.Block, st.BlockHash
		default:
			w.log.Warn("a reorg dropped an anchoring transaction; sending the root again", "root", rr.Root, "tx", rr.TxHash, "block", rr.Block)
			rcpt, err := w.resendLocked(ctx, rr)
			if errors.Is(err, errRootChanged) || (err != nil && rr.Leaves == RecordMemory && errors.Is(err, merkle.ErrEmpty)) {
				w.log.Warn("memories of a dropped root changed since; anchoring them again under a new root", "root", rr.Root)
				// One row for a batch row; a row from before issue 16 takes its
				// per-version rows with it.
				muts := []store.Mutation{{Table: store.TableAnchors, RowID: id, Op: store.OpDelete}}
				for _, item := range rr.Items {
					muts = append(muts, store.Mutation{Table: store.TableAnchors, RowID: item, Op: store.OpDelete})
				}
				ids, _ := batchIDs(*rr)
				for _, item := range ids {
					delete(w.done, item)
				}
				w.scanFrom, w.scanBelow = "", 0 // versions before the mark are not anchored any more
				if _, err := w.cfg.Writer.Write(ctx, muts...); err != nil {
					errs = append(errs, err)
				}
				delete(w.open, id)
				continue
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("sending root %s again: %w", rr.Root, err))
				continue
			}
			rr.Resent++
			rr.RootID, rr.TxHash, rr.Block, rr.BlockHash = rcpt.RootID, rcpt.TxHash, rcpt.Block, rcpt.BlockHash
			rr.Status = StatusIncluded
			if st, err := w.cfg.Chain.TxStatus(ctx, rcpt.TxHash); err == nil && st.Mined && st.Confirmations() >= w.cfg.Confirmations {
				rr.Status, rr.FinalAt = StatusFinal, w.cfg.Clock.Now().UTC().Format(time.RFC3339)
			}
		}
		data, _ := json.Marshal(rr)
		if _, err := w.cfg.Writer.Write(ctx, store.Mutation{Table: store.TableAnchors, RowID: id, Op: store.OpPut, Data: data}); err != nil {
			errs = append(errs, fmt.Errorf("recording root %s: %w", rr.Root, err))
			continue
		}
		if rr.Status == StatusFinal {
			delete(w.open, id)
		}
	}
	return errors.Join(errs...)
}

// errRootChanged: a dropped memory root cannot be rebuilt as it was.
var errRootChanged = errors.New("anchor: the root's memories changed since it was anchored")

// resendLocked sends rr's root again, rebuilt from the versions it commits
// (its Batch, or the records Items names).
func (w *Worker) resendLocked(ctx context.Context, rr *RootRecord) (Receipt, error) {
	root, err := state.ParseHash(rr.Root)
	if err != nil {
		return Receipt{}, err
	}
	if rr.Leaves == RecordState {
		return w.cfg.Chain.AnchorRoot(ctx, root, rr.Count)
	}
	// Memories: seal their content again (a fresh nonce; the root is over
	// event hashes only, so it is the same root).
	var numbers []uint64
	if len(rr.Batch) > 0 {
		ms, err := decodeMemoryBatch(rr.Batch)
		if err != nil {
			return Receipt{}, err
		}
		for _, m := range ms {
			numbers = append(numbers, m.Number)
		}
	}
	var pending []pendingMemory
	err = w.cfg.DB.View(func(txn *store.Txn) error {
		for _, id := range rr.Items { // a root row from before issue 16
			ar, err := txn.GetRow(store.TableAnchors, id) // in this transaction, not one each
			var rec Record
			if err != nil || ar.Deleted || json.Unmarshal(ar.Data, &rec) != nil || rec.Number == 0 {
				continue
			}
			numbers = append(numbers, rec.Number)
		}
		for _, n := range numbers {
			row, err := txn.GetRow(store.TableMemoryVersions, memory.VersionRowID(n))
			if err != nil {
				continue
			}
			var v memory.Version
			if json.Unmarshal(row.Data, &v) != nil {
				continue
			}
			if p, ok := pendingOf(txn, v); ok {
				pending = append(pending, p)
			}
		}
		return nil
	})
	if err != nil {
		return Receipt{}, err
	}
	if pending, err = w.seal(ctx, pending); err != nil {
		return Receipt{}, err
	}
	seen := map[[32]byte]bool{}
	var batch []MemoryAnchor
	for _, p := range pending {
		if !seen[p.anchor.EventHash] {
			seen[p.anchor.EventHash] = true
			batch = append(batch, p.anchor)
		}
	}
	tree, _, err := memoryTree(batch)
	if err != nil {
		return Receipt{}, fmt.Errorf("nothing left to send (forgotten or deleted since): %w", err)
	}
	if tree.Root() != root {
		// A memory forgotten or deleted since: what is left makes another
		// root. The caller forgets this root; its memories are anchored
		// again, with new records, at the next round.
		return Receipt{}, errRootChanged
	}
	return w.cfg.Chain.AnchorMemories(ctx, tree.Root(), batch)
}

// seal encrypts each pending memory under its data key (made now for a
// memory anchored for the first time) and drops those whose key was
// shredded: a forgotten memory's content never goes on chain again. w.mu
// is held.
func (w *Worker) seal(ctx context.Context, pending []pendingMemory) ([]pendingMemory, error) {
	if len(pending) == 0 {
		return nil, nil
	}
	ids := make([]string, len(pending))
	for i, p := range pending {
		ids[i] = p.memoryID
	}
	keys, err := NewDataKeys(w.cfg.DB, w.cfg.Seed).Ensure(ctx, ids)
	if err != nil {
		return nil, err
	}
	out := pending[:0]
	for _, p := range pending {
		key, ok := keys[p.memoryID]
		if !ok {
			w.log.Info("not anchoring a memory whose data key was shredded", "memory", p.memoryID, "number", p.number)
			w.done[p.id] = true // until restart: not looked at again
			continue
		}
		ct, err := SealMemory(key, p.anchor.EventHash, []byte(p.content))
		if err != nil {
			return nil, err
		}
		p.anchor.EncryptedContent = ct
		out = append(out, p)
	}
	return out, nil
}

// ReadRecord reads the record of a version by its record id (StateRecordID,
// VersionRecordID or MemoryRecordID): its own anchors row, written before
// issue 16, or else, for a state or numbered memory version, the record
// derived from its root's batch row (StateRecord, MemoryRecord). ok is
// false if there is none, or it was deleted: pending.
func ReadRecord(db *store.DB, id string) (Record, bool, error) {
	if rest, isState := strings.CutPrefix(id, "state/"); isState {
		if i := strings.LastIndexByte(rest, '/'); i > 0 {
			if v, err := strconv.ParseUint(rest[i+1:], 10, 64); err == nil && StateRecordID(rest[:i], v) == id {
				return StateRecord(db, rest[:i], v)
			}
		}
	}
	if rest, isMemory := strings.CutPrefix(id, "memory/"); isMemory {
		if n, err := strconv.ParseUint(rest, 10, 64); err == nil && n > 0 && VersionRecordID(n) == id {
			return MemoryRecord(db, n)
		}
	}
	return readItemRow(db, id)
}

// readItemRow reads a per-version anchors row (written before issue 16).
func readItemRow(db *store.DB, id string) (Record, bool, error) {
	r, err := db.Get(store.TableAnchors, id)
	if errors.Is(err, store.ErrNotFound) || (err == nil && r.Deleted) {
		// A tombstone keeps the deleted row's data: the records of a
		// dropped root that could not be rebuilt are deleted.
		return Record{}, false, nil
	}
	if err != nil {
		return Record{}, false, err
	}
	var rec Record
	if err := json.Unmarshal(r.Data, &rec); err != nil {
		return Record{}, false, fmt.Errorf("decoding anchor record %s: %w", id, err)
	}
	return rec, true, nil
}

// HashHex formats a hash as "0x" + hex.
func HashHex(h [32]byte) string { return "0x" + hex.EncodeToString(h[:]) }
