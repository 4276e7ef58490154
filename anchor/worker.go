package anchor

import (
	"cmp"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/crow-sync/crow/clock"
	"github.com/crow-sync/crow/identity"
	"github.com/crow-sync/crow/memory"
	"github.com/crow-sync/crow/state"
	"github.com/crow-sync/crow/store"
)

// Anchor record kinds and statuses (rows of the anchors table).
const (
	RecordState  = "state"
	RecordMemory = "memory"

	StatusPending  = "pending"  // not on chain yet (no row)
	StatusAnchored = "anchored" // on chain
	StatusConflict = "conflict" // the chain holds another hash for this version
)

// Record is an anchors row: the home-written, synced record of what was
// anchored where. Row ids: "state/<project>/<version, 20 digits>" and, per
// memory version, "memory/<number>" (VersionRecordID). Records written
// before memories had versions are "memory/<memory id>" (MemoryRecordID);
// they count as the record of the number they hold.
//
// ProjectID, in a state record, is the keyed id home anchored the project
// under on chain (HashHex of identity.Seed.ProjectIDHash; a conflict record
// has it too): how an instance without the seed names the project on chain
// (RecordedProjectID). Records written before the field existed have none.
type Record struct {
	Kind      string `json:"kind"`
	Status    string `json:"status"`
	Project   string `json:"project,omitempty"`
	ProjectID string `json:"project_id,omitempty"` // state records; see above
	Version   uint64 `json:"version,omitempty"`
	StateHash string `json:"state_hash,omitempty"`
	AnchorID  uint64 `json:"anchor_id,omitempty"`
	MemoryID  string `json:"memory_id,omitempty"`
	Number    uint64 `json:"number,omitempty"`
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
	// seconds of being numbered, state versions within one interval).
	Interval time.Duration
	// MaxMemoriesPerRound bounds one round's memory work (default 2000).
	MaxMemoriesPerRound int
	Logger              *slog.Logger
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
	done map[string]bool // anchors row ids written (loaded at start)

	nStates, nMemories, failures atomic.Uint64
	lastSuccess                  atomic.Int64 // unix seconds of the last round without error
}

// WorkerStats counts the worker's work since it started.
type WorkerStats struct {
	States   uint64 // state versions anchored
	Memories uint64 // memories anchored
	Failures uint64 // rounds that failed (retried)
	// LastSuccess is when a round last finished without error (zero: never).
	LastSuccess time.Time
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
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Worker{cfg: cfg, log: cfg.Logger, kick: make(chan struct{}, 1)}
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
		if err := w.Round(ctx); err != nil && ctx.Err() == nil {
			w.failures.Add(1)
			w.log.Warn("anchoring round failed; retrying next round", "err", err)
		} else if err == nil {
			w.lastSuccess.Store(w.cfg.Clock.Now().Unix())
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
	done := map[string]bool{}
	err := w.cfg.DB.View(func(txn *store.Txn) error {
		return txn.ScanRows(store.TableAnchors, func(r *store.Row) error {
			if r.Deleted {
				return nil
			}
			done[r.RowID] = true
			var rec Record
			if strings.HasPrefix(r.RowID, "memory/") && json.Unmarshal(r.Data, &rec) == nil && rec.Number != 0 {
				done[VersionRecordID(rec.Number)] = true // a record by memory id counts for its number
			}
			return nil
		})
	})
	if err != nil {
		return fmt.Errorf("reading anchors: %w", err)
	}
	w.done = done
	return nil
}

// Round anchors what is pending: state versions first, then memories.
func (w *Worker) Round(ctx context.Context) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.load(); err != nil {
		return err
	}
	return errors.Join(w.states(ctx), w.memories(ctx))
}

type pendingState struct {
	id      string
	project string
	version uint64
	hash    [32]byte
	hashHex string
}

func (w *Worker) states(ctx context.Context) error {
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
			if err != nil {
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
		n := min(len(pending), MaxStatesPerTx)
		batch := pending[:n]
		pending = pending[n:]
		if err := w.anchorStates(ctx, batch); err != nil {
			return err
		}
	}
	return nil
}

func (w *Worker) anchorStates(ctx context.Context, batch []pendingState) error {
	in := make([]StateAnchor, len(batch))
	for i, p := range batch {
		in[i] = StateAnchor{ProjectID: w.cfg.Seed.ProjectIDHash(p.project), Version: p.version, StateHash: p.hash}
	}
	rec, err := w.cfg.Chain.AnchorStates(ctx, in)
	if errors.Is(err, ErrAlreadyAnchored) && len(batch) > 1 {
		// One of them contradicts the chain: anchor them one at a time.
		var errs []error
		for i := range batch {
			errs = append(errs, w.anchorStates(ctx, batch[i:i+1]))
		}
		return errors.Join(errs...)
	}
	info := w.cfg.Chain.Info()
	now := w.cfg.Clock.Now().UTC().Format(time.RFC3339)
	muts := make([]store.Mutation, 0, len(batch))
	for i, p := range batch {
		r := Record{Kind: RecordState, Project: p.project, ProjectID: HashHex(in[i].ProjectID), Version: p.version, StateHash: p.hashHex,
			ChainID: info.ChainID, Contract: info.Contract, At: now}
		switch {
		case errors.Is(err, ErrAlreadyAnchored):
			r.Status, r.Error = StatusConflict, err.Error()
			w.log.Error("security: the chain holds another hash for this state version", "project", p.project, "version", p.version)
		case err != nil:
			return fmt.Errorf("anchoring %d state versions: %w", len(batch), err)
		default:
			r.Status, r.AnchorID, r.TxHash, r.Block = StatusAnchored, rec.AnchorIDs[i], rec.TxHash, rec.Block
		}
		data, _ := json.Marshal(r)
		muts = append(muts, store.Mutation{Table: store.TableAnchors, RowID: p.id, Op: store.OpPut, Data: data})
	}
	if _, err := w.cfg.Writer.Write(ctx, muts...); err != nil {
		return fmt.Errorf("recording anchors: %w", err)
	}
	for _, p := range batch {
		w.done[p.id] = true
	}
	if err == nil {
		w.nStates.Add(uint64(len(batch)))
	}
	w.log.Info("anchored state versions", "count", len(batch), "tx", rec.TxHash, "block", rec.Block)
	return nil
}

type pendingMemory struct {
	id        string
	memoryID  string
	number    uint64
	eventHash string
	content   string
	anchor    MemoryAnchor
}

func (w *Worker) memories(ctx context.Context) error {
	var pending []pendingMemory
	err := w.cfg.DB.View(func(txn *store.Txn) error {
		// Every numbered version, in number order (memory.Version rows).
		return txn.ScanRows(store.TableMemoryVersions, func(r *store.Row) error {
			if r.Deleted || len(pending) >= w.cfg.MaxMemoriesPerRound {
				return nil
			}
			var v memory.Version
			if json.Unmarshal(r.Data, &v) != nil || v.Number == 0 || w.done[VersionRecordID(v.Number)] {
				return nil
			}
			if v.ContentHash == "" || v.ForgottenAt != "" {
				return nil // no content held (forgotten, or a legacy number): nothing to anchor
			}
			eh, err := state.ParseHash(v.EventHash)
			if err != nil {
				return nil
			}
			row, err := txn.GetRow(store.TableMemories, v.MemoryID)
			if err != nil || row.Deleted {
				return nil // deleted before it was anchored: nothing to anchor
			}
			pending = append(pending, pendingMemory{id: VersionRecordID(v.Number), memoryID: v.MemoryID, number: v.Number,
				eventHash: v.EventHash, content: v.Content, anchor: MemoryAnchor{EventHash: eh, Category: v.Category,
					Importance: uint8(max(0, min(v.Importance, 255))), PlainLength: uint32(len(v.Content))}})
			return nil
		})
	})
	if err != nil {
		return err
	}
	if pending, err = w.seal(ctx, pending); err != nil || len(pending) == 0 {
		return err
	}
	byHash := map[[32]byte][]pendingMemory{}
	ms := make([]MemoryAnchor, len(pending))
	for i, p := range pending {
		ms[i] = p.anchor
		byHash[p.anchor.EventHash] = append(byHash[p.anchor.EventHash], p)
	}
	info := w.cfg.Chain.Info()
	for _, batch := range SplitMemories(ms) {
		rec, err := w.cfg.Chain.AnchorMemories(ctx, batch)
		if err != nil {
			return fmt.Errorf("anchoring %d memories: %w", len(batch), err)
		}
		now := w.cfg.Clock.Now().UTC().Format(time.RFC3339)
		var muts []store.Mutation
		var ids []string
		for _, a := range batch {
			for _, p := range byHash[a.EventHash] {
				data, _ := json.Marshal(Record{Kind: RecordMemory, Status: StatusAnchored, MemoryID: p.memoryID, Number: p.number,
					EventHash: p.eventHash, TxHash: rec.TxHash, Block: rec.Block, ChainID: info.ChainID, Contract: info.Contract, At: now,
					Encryption: EncryptionDataKey})
				muts = append(muts, store.Mutation{Table: store.TableAnchors, RowID: p.id, Op: store.OpPut, Data: data})
				ids = append(ids, p.id)
			}
		}
		if _, err := w.cfg.Writer.Write(ctx, muts...); err != nil {
			return fmt.Errorf("recording memory anchors: %w", err)
		}
		for _, id := range ids {
			w.done[id] = true
		}
		w.nMemories.Add(uint64(len(ids)))
		w.log.Info("anchored memories", "count", len(batch), "tx", rec.TxHash, "block", rec.Block)
	}
	return nil
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

// ReadRecord reads an anchors row (ok false if there is none: pending).
func ReadRecord(db *store.DB, id string) (Record, bool, error) {
	r, err := db.Get(store.TableAnchors, id)
	if errors.Is(err, store.ErrNotFound) {
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
