package apply

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/crow-sync/crow/clock"
	"github.com/crow-sync/crow/conflicts"
	"github.com/crow-sync/crow/feed"
	"github.com/crow-sync/crow/store"
)

// Options configures New.
type Options struct {
	DB        *store.DB        // required
	Replicas  *feed.Replicas   // required: the verified replicas to apply
	Conflicts *conflicts.Store // required: where conflict records go
	Self      feed.PublicKey   // this instance's own feed: never applied
	// InstanceID is this instance's id (required).
	InstanceID string
	// FeedTrust, if set, says what the registry knows of a feed key's
	// membership certificate: the trust and, for TrustCertified, the
	// instance id the key is certified for. It is called once per feed
	// before each batch (so a revocation stops a feed at its next batch),
	// with the applier's lock held: it must be cheap and must not call back
	// into the Applier. A feed that is not TrustCertified is skipped: nothing
	// of it is applied or parked and its checkpoint stays, so it resumes
	// from there once certified (call Notify after the registry changes).
	// The registry must keep a revoked key revoked. For a certified feed, an
	// entry whose change record names another instance id is parked: a feed
	// speaks only for the instance it is certified for. nil: every feed is
	// applied, without an author check.
	FeedTrust func(key feed.PublicKey) (trust Trust, instanceID string)
	// Refuse, if set, is a domain rule over the change records of a
	// certified feed: a non-empty reason parks the entry instead of applying
	// it (home failover: the numbers a demoted home wrote above its
	// successor's base, registry.RefusesNumber). A live row it refuses
	// (asked as the change record that would carry it: that home's own
	// rows, written before it learned) is replaced by the next accepted
	// version of the row, with no conflict. It is called with the
	// applier's lock held: it must be cheap and must not call back into the
	// Applier.
	Refuse func(rec *store.ChangeRecord) string
	// OnApplied, if set, is called after each transaction commits, in order,
	// for every row the transaction changed (table and the new envelope). It
	// runs on the applying goroutine and must not block for long.
	OnApplied func(table string, row *store.Row)
	// Metrics (nil: unregistered collectors).
	Metrics *Metrics
	// Logger (default slog.Default()).
	Logger *slog.Logger
	// MaxBatch caps the consecutive entries of one feed applied in one
	// transaction (default 4096; 1 gives one transaction per entry). A batch
	// too big for one badger transaction is split in halves, and the
	// following batches start from the size that fit (growing back by an
	// eighth per batch that fits).
	MaxBatch int
	// Rescan is the safety-net interval at which Serve rescans every replica
	// without a Notify (default 1 minute).
	Rescan time.Duration
	// Clock paces the rescans (default clock.System).
	Clock clock.Clock
}

// Applier is the apply loop (InstanceSyncManager's apply side). See the
// package doc for the contract.
type Applier struct {
	db        *store.DB
	rs        *feed.Replicas
	cs        *conflicts.Store
	self      feed.PublicKey
	rules     rules
	onApplied func(string, *store.Row)
	feedTrust func(feed.PublicKey) (Trust, string)
	refuse    func(*store.ChangeRecord) string
	m         *Metrics
	log       *slog.Logger
	maxBatch  int
	// batchCap (guarded by mu) is the batch size in use: halved when a batch
	// does not fit in one badger transaction, grown back by an eighth after
	// each batch that fits, up to maxBatch.
	batchCap int
	rescan   time.Duration
	clk      clock.Clock
	idle     func()        // if set (tests), called each time Serve starts waiting
	wake     chan struct{} // capacity 1: a pending value means "rescan"

	mu sync.Mutex // serialises CatchUp (and so every write this applier makes)
	st stats
	// trust (guarded by mu) is the last trust seen per feed key (FeedTrust
	// set), to log and count changes once.
	trust map[feed.PublicKey]feedTrust

	// hook, if set (tests), runs after each entry is staged, with the number
	// of entries staged by this applier so far; an error aborts the
	// transaction as a crash before commit would.
	hook func(staged int) error
	// staged is guarded by mu.
	staged int
}

// New returns an Applier. Run Serve to start it.
func New(o Options) (*Applier, error) {
	if o.DB == nil || o.Replicas == nil || o.Conflicts == nil || o.InstanceID == "" {
		return nil, errors.New("new applier: DB, Replicas, Conflicts and InstanceID are required")
	}
	if o.Metrics == nil {
		o.Metrics, _ = NewMetrics(nil)
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.MaxBatch <= 0 {
		o.MaxBatch = 4096
	}
	if o.Rescan <= 0 {
		o.Rescan = time.Minute
	}
	return &Applier{
		db: o.DB, rs: o.Replicas, cs: o.Conflicts, self: o.Self, rules: rules{self: o.InstanceID}, feedTrust: o.FeedTrust, refuse: o.Refuse,
		onApplied: o.OnApplied, m: o.Metrics, log: o.Logger.With("component", "sync.apply"),
		maxBatch: o.MaxBatch, batchCap: o.MaxBatch, rescan: o.Rescan, clk: clock.Or(o.Clock), wake: make(chan struct{}, 1),
		trust: make(map[feed.PublicKey]feedTrust),
	}, nil
}

// Notify tells the applier that a replica grew. It never blocks; calls made
// while a scan is pending coalesce.
func (a *Applier) Notify() {
	select {
	case a.wake <- struct{}{}:
	default:
	}
}

// Serve applies everything held, then again after every Notify and every
// Rescan interval, until ctx ends (it then returns nil). Errors of one pass
// are logged; the next pass retries from the checkpoints.
func (a *Applier) Serve(ctx context.Context) error {
	t := a.clk.NewTicker(a.rescan)
	defer t.Stop()
	for {
		if _, err := a.CatchUp(ctx); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			a.log.Error("apply pass failed", "err", err)
		}
		if a.idle != nil {
			a.idle()
		}
		select {
		case <-ctx.Done():
			return nil
		case <-a.wake:
		case <-t.C():
		}
	}
}

// CatchUp applies every entry held in the replicas of certified feeds
// beyond their checkpoints and returns how many entries it processed. Calls
// are serialised. An error in one feed does not stop the others; the errors
// are joined.
func (a *Applier) CatchUp(ctx context.Context) (int, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	feeds, err := a.rs.Held()
	if err != nil {
		return 0, fmt.Errorf("apply: %w", err)
	}
	if len(a.trust) > 0 {
		held := make(map[feed.PublicKey]bool, len(feeds))
		for _, f := range feeds {
			held[f.Key] = true
		}
		a.forgetTrustLocked(held)
	}
	total := 0
	var errs []error
	for _, f := range feeds {
		if f.Key == a.self {
			continue
		}
		n, err := a.applyFeedLocked(ctx, f.Key)
		total += n
		if err != nil {
			if ctx.Err() != nil {
				return total, ctx.Err()
			}
			errs = append(errs, fmt.Errorf("applying feed %s: %w", f.Key, err))
		}
	}
	return total, errors.Join(errs...)
}

// applyFeedLocked applies feed key batch by batch while it is certified.
func (a *Applier) applyFeedLocked(ctx context.Context, key feed.PublicKey) (int, error) {
	total := 0
	for {
		if err := ctx.Err(); err != nil {
			return total, err
		}
		tr := a.trustLocked(key)
		if tr.trust != TrustCertified {
			return total, nil
		}
		var next uint64
		if err := a.db.View(func(txn *store.Txn) error {
			var err error
			next, err = txn.Applied(key[:])
			return err
		}); err != nil {
			return total, err
		}
		st, err := a.rs.State(key)
		if err != nil {
			return total, err
		}
		if next >= st.Length {
			return total, nil
		}
		end := min(st.Length, next+uint64(a.batchCap))
		// A cleared entry (a forgotten memory's change) reads as nil.
		entries, _, err := a.rs.ReadSparse(key, next, end)
		if err != nil {
			return total, err
		}
		// A full disk stops the pass before badger can fault; the checkpoint stays, so
		// the next pass (a Notify or the Rescan tick) retries once space returns.
		if err := a.db.CheckSpace(); err != nil {
			return total, err
		}
		if err := a.commitLocked(key, tr.instance, next, entries); err != nil {
			return total, err
		}
		total += len(entries)
	}
}

// errMoved: the checkpoint is not where the batch starts (another writer of
// it); the caller re-reads it.
var errMoved = errors.New("checkpoint moved")

// commitLocked applies entries [start, start+len) of feed key, certified
// for instance author ("": no author check), in one transaction
// (store.DB.Update re-runs it on conflicts with the local writer), splitting
// batches too big for one transaction, then runs the post-commit effects.
// Update publishes the queue head after the commit.
func (a *Applier) commitLocked(key feed.PublicKey, author string, start uint64, entries [][]byte) error {
	var eff *effects
	var staged time.Time
	began := time.Now()
	err := a.db.Update(context.Background(), func(txn *store.Txn) error {
		var err error
		eff, err = a.stageLocked(txn, key, author, start, entries)
		staged = time.Now()
		return err
	})
	if err == nil {
		a.st.commitNanos.Add(uint64(time.Since(staged)))
		a.log.Debug("entries applied", "feed", key, "start", start, "entries", len(entries),
			"staged_in", staged.Sub(began), "committed_in", time.Since(staged))
	}
	switch {
	case errors.Is(err, store.ErrTooLarge) && len(entries) > 1:
		half := len(entries) / 2
		a.batchCap = max(1, min(a.batchCap, half))
		if err := a.commitLocked(key, author, start, entries[:half]); err != nil {
			return err
		}
		return a.commitLocked(key, author, start+uint64(half), entries[half:])
	case errors.Is(err, errMoved):
		return nil
	case err != nil:
		return err
	}
	if len(entries) >= a.batchCap && a.batchCap < a.maxBatch {
		a.batchCap = min(a.maxBatch, a.batchCap+a.batchCap/8+1)
	}
	a.account(eff)
	if a.onApplied != nil {
		for _, r := range eff.rows {
			a.onApplied(r.table, r.r)
		}
	}
	return nil
}

// stageLocked stages entries [start, start+len) of feed key (certified for
// author) and their checkpoint into txn.
func (a *Applier) stageLocked(txn *store.Txn, key feed.PublicKey, author string, start uint64, entries [][]byte) (*effects, error) {
	cp, err := txn.Applied(key[:])
	if err != nil {
		return nil, err
	}
	if cp != start {
		return nil, errMoved
	}
	if len(entries) >= expectNewKeysFrom {
		// A long range (a first sync, a catch-up) mostly creates rows this
		// replica has never held: their reads miss, and are answered
		// without a lookup (store.Txn.ExpectNewKeys).
		txn.ExpectNewKeys()
	}
	b, err := txn.BeginBatch()
	if err != nil {
		return nil, err
	}
	eff := &effects{}
	for i, e := range entries {
		idx := start + uint64(i)
		if e == nil {
			// Cleared: nothing to apply or park, the checkpoint moves past it.
			eff.cleared++
		} else if err := a.stageEntry(txn, b, key, author, idx, e, eff); err != nil {
			return nil, err
		}
		a.staged++
		if a.hook != nil {
			if err := a.hook(a.staged); err != nil {
				return nil, err
			}
		}
	}
	// The checkpoint, the Lamport clock and the queue seq are written once:
	// the transaction commits all its entries or none, and only the last
	// value of a key in it is committed, so this is the per-entry update.
	end := start + uint64(len(entries))
	if err := txn.SetApplied(key[:], end); err != nil {
		return nil, err
	}
	if err := b.Flush(); err != nil {
		return nil, err
	}
	return eff, nil
}

// refusesLive reports whether Options.Refuse refuses the live row as it
// would refuse a change record carrying it.
func (a *Applier) refusesLive(live *store.Row) bool {
	if a.refuse == nil || live == nil {
		return false
	}
	return a.refuse(&store.ChangeRecord{Table: live.Table, RowID: live.RowID, Data: live.Data, InstanceID: live.InstanceID}) != ""
}

// lwwTable reports tables applied last-write-wins without conflict records:
// crow_context (SPEC §5) and sync_conflicts (resolutions; never conflicts
// about conflicts).
func lwwTable(t string) bool { return t == store.TableCrowContext || t == store.TableSyncConflicts }

// stageEntry applies one entry of feed key, certified for instance author
// ("": no author check), inside txn (not its checkpoint): its change record,
// or a batch record's records in order. An entry with one record the rules
// refuse is parked whole.
func (a *Applier) stageEntry(txn *store.Txn, b *store.TxnBatch, key feed.PublicKey, author string, idx uint64, e []byte, eff *effects) error {
	recs, err := store.ParseChanges(e)
	reason, schema := "", 0
	if err != nil {
		reason = err.Error()
		var probe struct {
			Schema int `json:"schema"`
		}
		if json.Unmarshal(e, &probe) == nil {
			schema = probe.Schema
		}
	}
	for i := range recs {
		if reason = a.refusal(&recs[i], author); reason != "" {
			schema = recs[i].Schema
			if len(recs) > 1 {
				reason = fmt.Sprintf("batch record, record %d: %s", i, reason)
				schema = store.BatchSchema
			}
			break
		}
	}
	if reason != "" {
		eff.parked++
		a.log.Warn("parking feed entry", "feed", key, "index", idx, "reason", reason)
		return parkTxn(txn, &Parked{Feed: hex.EncodeToString(key[:]), Index: idx, Schema: schema,
			Reason: reason, Entry: e}, key)
	}
	for i := range recs {
		if err := a.stageRecord(txn, b, idx, &recs[i], eff); err != nil {
			return err
		}
	}
	return nil
}

// refusal is why rec, from a feed certified for author, is not applied ("":
// it is).
func (a *Applier) refusal(rec *store.ChangeRecord, author string) string {
	switch {
	case rec.InstanceID == a.rules.self:
		return "change record of this instance's own id in another feed"
	case rec.RowID == "" || rec.VV[rec.InstanceID] == 0:
		return "change record without a row id or without its origin in its version vector"
	case author != "" && rec.InstanceID != author:
		return "change record names instance " + rec.InstanceID + ", but this feed is certified for instance " + author
	case a.refuse != nil:
		return a.refuse(rec)
	}
	return ""
}

// stageRecord applies one change record of entry idx inside txn.
func (a *Applier) stageRecord(txn *store.Txn, b *store.TxnBatch, idx uint64, rec *store.ChangeRecord, eff *effects) error {
	b.ObserveLamport(rec.Lamport)
	live, err := txn.GetRow(rec.Table, rec.RowID)
	if errors.Is(err, store.ErrNotFound) {
		live, err = nil, nil
	}
	if err != nil {
		return err
	}
	lww := lwwTable(rec.Table)
	var st *rowState
	if !lww {
		if st, err = loadState(txn, rec.Table, rec.RowID); err != nil {
			return err
		}
	}
	var d decision
	if a.refusesLive(live) {
		// The live version is one the rule refuses (a demoted home's number,
		// written here before it learned of its successor): the accepted
		// incoming version replaces it, with no conflict.
		in := versionOfChange(rec)
		d = decision{outcome: outFastForward, stateChanged: st != nil, row: &store.Row{
			RowID: rec.RowID, Table: rec.Table, Data: in.Data, LamportTS: in.Lamport, InstanceID: in.Origin,
			VV: live.VV.Merge(in.VV), Deleted: in.Deleted, UpdatedAt: time.Unix(in.TS, 0).UTC()}}
	} else if d, err = a.rules.decide(rec.Table, rec.RowID, live, st, versionOfChange(rec), lww,
		func() ([]conflicts.RowRecord, error) { return a.cs.RowIndexTxn(txn, rec.Table, rec.RowID) }); err != nil {
		return fmt.Errorf("applying %s/%s from entry %d: %w", rec.Table, rec.RowID, idx, err)
	}
	eff.byOutcome[d.outcome]++
	if d.row != nil {
		if _, err := b.PutRow(d.row); err != nil {
			return err
		}
		eff.rows = append(eff.rows, &row{table: rec.Table, r: d.row})
	}
	if d.stateChanged {
		if err := saveState(txn, rec.Table, rec.RowID, d.state); err != nil {
			return err
		}
	}
	if len(d.retract) == 0 && len(d.create) == 0 {
		return nil
	}
	created, err := a.cs.UpdateRowTxn(txn, rec.Table, rec.RowID, d.retract, d.create)
	if err != nil {
		return err
	}
	eff.superseded += uint64(len(d.retract))
	eff.conflicts += uint64(created)
	return nil
}

// expectNewKeysFrom is the number of entries from which a commit turns on known-absent
// reads: below it the one reverse seek per table they cost is more than the misses save.
// (A variable: TestConvergenceProperty turns them on for every commit in half its runs.)
var expectNewKeysFrom = 32

func stateKey(table, rowID string) []byte { return []byte(statePrefix(table) + rowID) }

func statePrefix(table string) string { return "n/apply/r/" + table + "/" }

func loadState(txn *store.Txn, table, rowID string) (*rowState, error) {
	b, ok, err := txn.GetIn([]byte(statePrefix(table)), stateKey(table, rowID))
	if err != nil {
		return nil, fmt.Errorf("reading apply state of %s/%s: %w", table, rowID, err)
	}
	if !ok {
		return nil, nil
	}
	st, err := decodeState(b)
	if err != nil {
		return nil, fmt.Errorf("decoding apply state of %s/%s: %w", table, rowID, err)
	}
	return st, nil
}

func saveState(txn *store.Txn, table, rowID string, st *rowState) error {
	k := stateKey(table, rowID)
	if st == nil {
		if err := txn.Delete(k); err != nil {
			return fmt.Errorf("deleting apply state of %s/%s: %w", table, rowID, err)
		}
		return nil
	}
	if err := txn.Set(k, encodeState(st)); err != nil {
		return fmt.Errorf("writing apply state of %s/%s: %w", table, rowID, err)
	}
	return nil
}

// EraseRowStateTxn deletes the apply state of a row inside txn (package forget, for a row
// forgotten locally: the versions kept there hold data). The forget rule keeps no state for
// a forgotten row, so deleting it changes no later decision.
func EraseRowStateTxn(txn *store.Txn, table, rowID string) error {
	return saveState(txn, table, rowID, nil)
}
