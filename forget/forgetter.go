package forget

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/crow-sync/crow/clock"
	"github.com/crow-sync/crow/conflicts"
	"github.com/crow-sync/crow/feed"
	"github.com/crow-sync/crow/memory"
	"github.com/crow-sync/crow/search"
	"github.com/crow-sync/crow/store"
	"github.com/crow-sync/crow/sync/apply"
)

// Consumer is the Forgetter's name as a store queue consumer.
const Consumer = "forget"

// Options configures New.
type Options struct {
	DB       *store.DB      // required
	Writer   *store.Writer  // required: home's version rewrites, own-feed clears (Writer.Do)
	Own      *feed.Log      // required: this instance's feed
	Replicas *feed.Replicas // required: the replicas of every other feed
	// Conflicts holds the conflict records to erase (required).
	Conflicts *conflicts.Store
	// Index is the search index to compact (nil: none).
	Index *search.Index
	// Home: this instance is home. Home rewrites the memory_versions rows of a forgotten
	// memory without content (replicated writes) and destroys its data key (Shred).
	Home bool
	// Shred destroys a memory's data key (home: anchor.ShredMemoryKey). nil: none.
	Shred func(memoryID string) error
	// Debounce is how long after the last erasure compaction waits (default 2s), so a
	// burst of forgets is compacted once.
	Debounce time.Duration
	// Rescan is how often the feeds are scanned for new entries carrying forgotten content
	// while any memory is forgotten (default 1s); Notify scans at once.
	Rescan time.Duration
	Clock  clock.Clock
	Logger *slog.Logger
}

// Stats counts the Forgetter's work since it started.
type Stats struct {
	Forgotten   uint64        // memories erased
	Cleared     uint64        // feed entries cleared
	Redacted    uint64        // memory_versions rows erased
	Republished uint64        // rows re-published from cleared batch entries (home)
	Compactions uint64        // compactions run
	LastCompact time.Duration // how long the last one took
	LastScan    time.Duration // how long the last full feed scan took
}

// Forgetter carries out forgets on this instance. See the package doc.
type Forgetter struct {
	o    Options
	log  *slog.Logger
	clk  clock.Clock
	wake chan struct{}

	// Owned by Serve.
	pos     uint64            // q/ position consumed
	ids     map[string]string // forgotten memory id → forgotten_at (erased or pending)
	pending map[string]bool   // forgotten ids whose erasure is not complete
	dirty   bool              // an erasure since the last compaction
	lastErs time.Time         // the last erasure
	// scanned is, per feed, the next entry index to scan (loaded lazily); saved is what
	// n/forget/feed/ holds. A lost position only makes a restart scan again (clearing is
	// idempotent), so it is saved when a scan cleared something, every savePosEvery
	// entries, and when Serve returns: not once per write.
	scanned, saved map[feed.PublicKey]uint64

	forgotten, cleared, redacted, compactions, republished atomic.Uint64
	lastCompact, lastScan                                  atomic.Int64

	idle func() // tests: called when Serve waits
}

// New returns a Forgetter. Run Serve.
func New(o Options) (*Forgetter, error) {
	if o.DB == nil || o.Writer == nil || o.Own == nil || o.Replicas == nil || o.Conflicts == nil {
		return nil, errors.New("new forgetter: DB, Writer, Own, Replicas and Conflicts are required")
	}
	if o.Debounce <= 0 {
		o.Debounce = 2 * time.Second
	}
	if o.Rescan <= 0 {
		o.Rescan = time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return &Forgetter{o: o, log: o.Logger.With("component", "forget"), clk: clock.Or(o.Clock), wake: make(chan struct{}, 1),
		scanned: map[feed.PublicKey]uint64{}, saved: map[feed.PublicKey]uint64{}}, nil
}

// Notify tells the Forgetter a replica grew (new entries may carry forgotten content). It
// never blocks.
func (f *Forgetter) Notify() {
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

// Stats returns the counters.
func (f *Forgetter) Stats() Stats {
	return Stats{Forgotten: f.forgotten.Load(), Cleared: f.cleared.Load(), Redacted: f.redacted.Load(),
		Republished: f.republished.Load(), Compactions: f.compactions.Load(), LastCompact: time.Duration(f.lastCompact.Load()),
		LastScan: time.Duration(f.lastScan.Load())}
}

// retryPause is the pause after a failed step.
const retryPause = time.Second

// Serve follows the change queue and the feeds until ctx ends (then it returns nil).
// Errors are logged and the step retried.
func (f *Forgetter) Serve(ctx context.Context) error {
	if err := f.recover(); err != nil {
		return err
	}
	tick := f.clk.NewTicker(f.o.Rescan)
	defer tick.Stop()
	defer func() {
		if err := f.savePositions(false); err != nil {
			f.log.Warn("saving the feed scan positions", "err", err)
		}
	}()
	for {
		head, changed := f.o.DB.QueueHead()
		before := f.pos
		if err := f.step(ctx); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			f.log.Error("forgetting", "err", err)
			if clock.Wait(ctx, f.clk, retryPause) != nil {
				return nil
			}
			continue
		}
		if f.pos > before && f.pos < head && ctx.Err() == nil {
			// A step reads at most queueScan entries: read on without
			// waiting for the next change (after a bulk catch-up the queue
			// may not change again for a long time).
			continue
		}
		var compactIn <-chan time.Time
		stop := func() bool { return false }
		if f.dirty {
			wait := f.o.Debounce - f.clk.Since(f.lastErs)
			if wait <= 0 {
				f.compact(ctx)
				continue
			}
			t := f.clk.NewTimer(wait)
			stop, compactIn = t.Stop, t.C()
		}
		var rescan <-chan time.Time
		if len(f.ids) > 0 {
			rescan = tick.C()
		}
		if f.idle != nil {
			f.idle()
		}
		select {
		case <-ctx.Done():
			return nil
		case <-changed:
		case <-f.wake:
		case <-rescan:
		case <-compactIn:
		}
		stop()
	}
}

// Keys under n/forget/ (never replicated).
var (
	prefixID   = "n/forget/id/"   // <memory id> → JSON idState
	prefixFeed = "n/forget/feed/" // <feed hex> → next entry index scanned, uint64 BE
	keyDirty   = []byte("n/forget/compact")
)

type idState struct {
	At   string `json:"at"`
	Done bool   `json:"done"`
}

// recover loads the forgotten ids and registers the queue position; on a first start it
// finds the memories forgotten before (the queue may have been pruned past them).
func (f *Forgetter) recover() error {
	f.ids, f.pending = map[string]string{}, map[string]bool{}
	err := f.o.DB.View(func(txn *store.Txn) error {
		if _, ok, err := txn.Get(keyDirty); err != nil || ok {
			f.dirty = ok
			return err
		}
		return nil
	})
	if err != nil {
		return err
	}
	err = f.o.DB.View(func(txn *store.Txn) error {
		return txn.Iterate([]byte(prefixID), nil, func(k, v []byte) error {
			var st idState
			if err := json.Unmarshal(v, &st); err != nil {
				return fmt.Errorf("decoding %s: %w", k, err)
			}
			id := string(k[len(prefixID):])
			f.ids[id] = st.At
			if !st.Done {
				f.pending[id] = true
			}
			return nil
		})
	})
	if err != nil {
		return fmt.Errorf("loading forgotten memories: %w", err)
	}
	pos, ok, err := f.o.DB.ConsumerPos(Consumer)
	if err != nil {
		return err
	}
	if ok {
		f.pos = pos
		return nil
	}
	if err := f.o.DB.SetConsumerPos(Consumer, 0); err != nil {
		return err
	}
	var head uint64
	err = f.o.DB.View(func(txn *store.Txn) error {
		var err error
		if head, err = txn.QueueSeq(); err != nil {
			return err
		}
		return txn.ScanRows(store.TableMemories, func(r *store.Row) error {
			if r.Forgotten() {
				f.found(r.RowID, store.ForgottenAt(r.Data))
			}
			return nil
		})
	})
	if err != nil {
		return fmt.Errorf("finding forgotten memories: %w", err)
	}
	f.pos = head
	return f.o.DB.SetConsumerPos(Consumer, head)
}

// found records a forgotten memory (in memory; step stores it).
func (f *Forgetter) found(id, at string) {
	if _, ok := f.ids[id]; !ok {
		f.ids[id] = at
		f.pending[id] = true
	}
}

// step reads the queue, erases what is new, and scans the feeds.
func (f *Forgetter) step(ctx context.Context) error {
	versions, last, err := f.readQueue()
	if err != nil {
		return err
	}
	if len(f.pending) > 0 {
		if err := f.savePending(); err != nil {
			return err
		}
	}
	for id := range f.pending {
		if err := f.eraseLocal(ctx, id); err != nil {
			return err
		}
	}
	for _, v := range versions {
		if err := f.redact(ctx, v.rowID, f.ids[v.memoryID]); err != nil {
			return err
		}
	}
	if len(f.ids) > 0 {
		if err := f.scanFeeds(ctx); err != nil {
			return err
		}
	}
	if len(f.pending) > 0 {
		if err := f.markDone(); err != nil {
			return err
		}
	}
	if last > f.pos {
		if err := f.o.DB.SetConsumerPos(Consumer, last); err != nil {
			return err
		}
		f.pos = last
	}
	return nil
}

type versionRef struct{ rowID, memoryID string }

// queueScan caps the q/ entries read per step.
const queueScan = 4096

// readQueue reads the q/ entries after the position: forgotten memories, and
// memory_versions rows of forgotten memories that hold content.
func (f *Forgetter) readQueue() (vs []versionRef, last uint64, err error) {
	err = f.o.DB.View(func(txn *store.Txn) error {
		return txn.ScanQueue(f.pos+1, queueScan, func(e store.QueueEntry) error {
			last = e.Seq
			switch e.Table {
			case store.TableMemories:
				if forgotten, known := e.Forgotten(); known && !forgotten {
					return nil // the entry says it: no row to read
				}
				r, err := txn.GetRow(e.Table, e.RowID)
				if errors.Is(err, store.ErrNotFound) {
					return nil
				}
				if err != nil {
					return err
				}
				if r.Forgotten() {
					f.found(e.RowID, store.ForgottenAt(r.Data))
				}
			case store.TableMemoryVersions:
				if len(f.ids) == 0 {
					// No memory is being forgotten: no version to look at (a read and
					// a decode of every version written was ~4 % of home's CPU
					// while it took 100k writes, docs/bench/profiles.md).
					return nil
				}
				r, err := txn.GetRow(e.Table, e.RowID)
				if errors.Is(err, store.ErrNotFound) {
					return nil
				}
				if err != nil {
					return err
				}
				var v struct {
					MemoryID string `json:"memory_id"`
					Content  string `json:"content"`
				}
				if json.Unmarshal(r.Data, &v) == nil && v.Content != "" {
					if _, ok := f.ids[v.MemoryID]; ok && !f.pending[v.MemoryID] {
						vs = append(vs, versionRef{e.RowID, v.MemoryID}) // pending ones: eraseLocal
					}
				}
			}
			return nil
		})
	})
	if err != nil {
		return nil, 0, fmt.Errorf("reading the change queue after %d: %w", f.pos, err)
	}
	return vs, last, nil
}

func (f *Forgetter) savePending() error {
	return f.o.DB.Update(context.Background(), func(txn *store.Txn) error {
		for id := range f.pending {
			b, _ := json.Marshal(idState{At: f.ids[id]})
			if err := txn.Set([]byte(prefixID+id), b); err != nil {
				return err
			}
		}
		return nil
	})
}

func (f *Forgetter) markDone() error {
	err := f.o.DB.Update(context.Background(), func(txn *store.Txn) error {
		for id := range f.pending {
			b, _ := json.Marshal(idState{At: f.ids[id], Done: true})
			if err := txn.Set([]byte(prefixID+id), b); err != nil {
				return err
			}
		}
		return txn.Set(keyDirty, []byte{1})
	})
	if err != nil {
		return err
	}
	f.forgotten.Add(uint64(len(f.pending)))
	for id := range f.pending {
		f.log.Info("forgot memory", "id", id, "forgotten_at", f.ids[id])
	}
	f.pending = map[string]bool{}
	f.touched()
	return nil
}

func (f *Forgetter) touched() { f.dirty, f.lastErs = true, f.clk.Now() }

// eraseLocal erases a newly forgotten memory's conflict records and apply state, its
// versions' content, and (home) its data key. The feeds are scanned after.
func (f *Forgetter) eraseLocal(ctx context.Context, id string) error {
	err := f.o.DB.Update(ctx, func(txn *store.Txn) error {
		if _, err := f.o.Conflicts.EraseRowTxn(txn, store.TableMemories, id); err != nil {
			return err
		}
		return apply.EraseRowStateTxn(txn, store.TableMemories, id)
	})
	if err != nil {
		return fmt.Errorf("erasing the conflict records of %s: %w", id, err)
	}
	nums, err := memory.VersionNumbers(f.o.DB, id)
	if err != nil {
		return err
	}
	for _, n := range nums {
		if err := f.redact(ctx, memory.VersionRowID(n), f.ids[id]); err != nil {
			return err
		}
	}
	if f.o.Home && f.o.Shred != nil {
		if err := f.o.Shred(id); err != nil {
			return err
		}
	}
	return nil
}

var errErased = errors.New("erased already")

// redact erases the content of memory_versions row rowID. Home rewrites it through the
// Writer (a replicated update); elsewhere the row is rewritten in place, keeping its
// envelope (no new version: home's rewrite, with the same data, replaces it when it comes).
func (f *Forgetter) redact(ctx context.Context, rowID, at string) error {
	if f.o.Home {
		_, err := f.o.Writer.Write(ctx, store.Mutation{Table: store.TableMemoryVersions, RowID: rowID, Op: store.OpUpdate,
			Check: func(existing *store.Row) error {
				if _, changed, err := memory.ForgetVersion(existing.Data, at); err != nil || !changed {
					return errErased
				}
				return nil
			},
			Transform: func(existing *store.Row) (json.RawMessage, error) {
				out, _, err := memory.ForgetVersion(existing.Data, at)
				return out, err
			}})
		switch {
		case errors.Is(err, errErased) || errors.Is(err, store.ErrNotFound):
			return nil
		case err != nil:
			return fmt.Errorf("erasing memory version %s: %w", rowID, err)
		}
		f.redacted.Add(1)
		return nil
	}
	changed := false
	err := f.o.DB.Update(ctx, func(txn *store.Txn) error {
		r, err := txn.GetRow(store.TableMemoryVersions, rowID)
		if errors.Is(err, store.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		out, ch, err := memory.ForgetVersion(r.Data, at)
		if err != nil || !ch {
			return err
		}
		r.Data, changed = out, true
		_, err = txn.PutRow(r)
		return err
	})
	if err != nil {
		return fmt.Errorf("erasing memory version %s: %w", rowID, err)
	}
	if changed {
		f.redacted.Add(1)
	}
	return nil
}

// scanChunk is how many entries are read at a time.
const scanChunk = 1024

// scanFeeds clears, in the own feed and every replica, the entries that carry a forgotten
// memory's content: from 0 if a memory was newly forgotten, else from where the last scan
// stopped.
func (f *Forgetter) scanFeeds(ctx context.Context) error {
	start := f.clk.Now()
	full := len(f.pending) > 0
	ids := make([][]byte, 0, len(f.ids))
	for id := range f.ids {
		ids = append(ids, []byte(id))
	}
	feeds, err := f.o.Replicas.List()
	if err != nil {
		return err
	}
	type target struct {
		key    feed.PublicKey
		length uint64
	}
	targets := []target{{f.o.Own.Key(), f.o.Own.Head().Length}}
	for _, fi := range feeds {
		if fi.Key != f.o.Own.Key() {
			targets = append(targets, target{fi.Key, fi.State.Length})
		}
	}
	for _, t := range targets {
		if err := ctx.Err(); err != nil {
			return err
		}
		from, err := f.feedPos(t.key)
		if err != nil {
			return err
		}
		if full {
			from = 0
		}
		if from >= t.length {
			continue
		}
		if err := f.scanFeed(ctx, t.key, from, t.length, ids); err != nil {
			return fmt.Errorf("scanning feed %s: %w", t.key, err)
		}
	}
	if full {
		f.lastScan.Store(int64(f.clk.Since(start)))
	}
	return nil
}

func feedKey(key feed.PublicKey) []byte { return []byte(prefixFeed + key.String()) }

func (f *Forgetter) feedPos(key feed.PublicKey) (uint64, error) {
	if pos, ok := f.scanned[key]; ok {
		return pos, nil
	}
	var pos uint64
	err := f.o.DB.View(func(txn *store.Txn) error {
		b, ok, err := txn.Get(feedKey(key))
		if ok && len(b) == 8 {
			pos = binary.BigEndian.Uint64(b)
		}
		return err
	})
	if err == nil {
		f.scanned[key], f.saved[key] = pos, pos
	}
	return pos, err
}

// savePosEvery bounds how many scanned entries a position may trail by on disk.
const savePosEvery = 1 << 14

// savePositions stores the scan positions that moved (lagging: only those that trail by
// savePosEvery or more).
func (f *Forgetter) savePositions(lagging bool) error {
	var keys []feed.PublicKey
	for k, pos := range f.scanned {
		if pos != f.saved[k] && (!lagging || pos-f.saved[k] >= savePosEvery) {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return nil
	}
	err := f.o.DB.Update(context.Background(), func(txn *store.Txn) error {
		for _, k := range keys {
			if err := txn.Set(feedKey(k), binary.BigEndian.AppendUint64(nil, f.scanned[k])); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, k := range keys {
		f.saved[k] = f.scanned[k]
	}
	return nil
}

func (f *Forgetter) scanFeed(ctx context.Context, key feed.PublicKey, from, to uint64, ids [][]byte) error {
	own := key == f.o.Own.Key()
	for from < to {
		end := min(to, from+scanChunk)
		var data [][]byte
		var err error
		if own {
			data, _, err = f.o.Own.ReadSparse(from, end)
		} else {
			data, _, err = f.o.Replicas.ReadSparse(key, from, end)
		}
		if err != nil {
			return err
		}
		var clear []uint64
		var keep []store.ChangeRecord // the other records of the batch entries cleared
		for i, e := range data {
			if e == nil {
				continue
			}
			recs, hit := f.carries(e, ids)
			if !hit {
				continue
			}
			clear = append(clear, from+uint64(i))
			if own && f.o.Home && len(recs) > 1 {
				for _, r := range recs {
					if !f.recordCarries(&r) {
						keep = append(keep, r)
					}
				}
			}
		}
		if len(keep) > 0 {
			if err := f.republish(ctx, keep); err != nil {
				return err
			}
		}
		if len(clear) > 0 {
			if own {
				err = f.o.Writer.Do(ctx, func() error { return f.o.Own.Clear(clear...) })
			} else {
				err = f.o.Replicas.Clear(key, clear...)
			}
			if err != nil {
				return fmt.Errorf("clearing %d entries: %w", len(clear), err)
			}
			f.cleared.Add(uint64(len(clear)))
			f.touched()
		}
		f.scanned[key] = max(f.scanned[key], end)
		if err := f.savePositions(len(clear) == 0); err != nil {
			return err
		}
		from = end
	}
	return nil
}

// carries reports whether entry e holds a change record carrying a forgotten memory's
// content (recordCarries), and returns its records when it parsed them.
func (f *Forgetter) carries(e []byte, ids [][]byte) ([]store.ChangeRecord, bool) {
	hit := false
	for _, id := range ids {
		if bytes.Contains(e, id) {
			hit = true
			break
		}
	}
	if !hit {
		return nil, false
	}
	recs, err := store.ParseChanges(e)
	if err != nil {
		return nil, false
	}
	for i := range recs {
		if f.recordCarries(&recs[i]) {
			return recs, true
		}
	}
	return recs, false
}

// recordCarries reports whether c carries a forgotten memory's content: of its memories
// row (not the forget itself), or of one of its memory_versions rows with content.
func (f *Forgetter) recordCarries(c *store.ChangeRecord) bool {
	switch c.Table {
	case store.TableMemories:
		_, ok := f.ids[c.RowID]
		return ok && !c.Forgets()
	case store.TableMemoryVersions:
		var v struct {
			MemoryID string `json:"memory_id"`
			Content  string `json:"content"`
		}
		if json.Unmarshal(c.Data, &v) != nil {
			return false
		}
		_, ok := f.ids[v.MemoryID]
		return ok && v.Content != ""
	}
	return false
}

// republish writes again, on home, the rows of records that share a batch entry (home's
// numbering) with a forgotten memory's content, before that entry is cleared: their
// current versions go in new entries, so a peer that had not received the batch, or
// enrols later, still gets them. Rows written since are re-written as they are now.
func (f *Forgetter) republish(ctx context.Context, recs []store.ChangeRecord) error {
	seen := map[string]bool{}
	var muts []store.Mutation
	for _, r := range recs {
		k := r.Table + "/" + r.RowID
		if seen[k] {
			continue
		}
		seen[k] = true
		muts = append(muts, store.Mutation{Table: r.Table, RowID: r.RowID, Op: store.OpUpdate,
			Transform: func(existing *store.Row) (json.RawMessage, error) { return existing.Data, nil }})
	}
	for len(muts) > 0 {
		n := min(len(muts), republishBatch)
		_, err := f.o.Writer.WriteEntry(ctx, muts[:n]...)
		if errors.Is(err, store.ErrNotFound) { // a row deleted since: the others one by one
			for _, m := range muts[:n] {
				if _, err = f.o.Writer.Write(ctx, m); err != nil && !errors.Is(err, store.ErrNotFound) {
					break
				}
				err = nil
			}
		}
		if err != nil {
			return fmt.Errorf("re-publishing %d rows of cleared batch entries: %w", n, err)
		}
		f.republished.Add(uint64(n))
		muts = muts[n:]
	}
	return nil
}

// republishBatch caps the rows re-published per write.
const republishBatch = 256

// compact runs the store's and the index's compaction.
func (f *Forgetter) compact(ctx context.Context) {
	start := f.clk.Now()
	if f.o.Index != nil {
		head, _ := f.o.DB.QueueHead()
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := f.o.Index.WaitFor(wctx, head) // the index has deleted the documents
		cancel()
		if err == nil {
			err = f.o.Index.Compact(ctx)
		}
		if err != nil && ctx.Err() == nil {
			f.log.Warn("compacting the search index after a forget", "err", err)
		}
	}
	st, err := f.o.DB.Compact(ctx)
	if err != nil {
		if ctx.Err() == nil {
			f.log.Error("compacting the store after a forget", "err", err)
			f.lastErs = f.clk.Now() // retry after the debounce
		}
		return
	}
	if err := f.o.DB.Update(ctx, func(txn *store.Txn) error { return txn.Delete(keyDirty) }); err != nil {
		f.log.Warn("clearing the compaction mark", "err", err)
	}
	f.dirty = false
	f.compactions.Add(1)
	took := f.clk.Since(start)
	f.lastCompact.Store(int64(took))
	f.log.Info("compacted after forgetting", "took", took, "padded", st.Padded, "value_log_rewrites", st.ValueLogRewrites)
}
