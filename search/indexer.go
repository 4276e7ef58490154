package search

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/blevesearch/bleve/v2"
	sjson "github.com/segmentio/encoding/json"

	"github.com/crow-sync/crow/clock"
	"github.com/crow-sync/crow/store"
)

const (
	// catchUpBatch is the number of q/ entries applied per bleve batch, at first;
	// while the queue holds more (a backlog: a full sync, a bulk import) each
	// batch doubles, up to maxCatchUpBatch: fewer, larger segments for scorch to
	// merge. Once the indexer is caught up it starts at catchUpBatch again, so a
	// search waiting for its own write waits for a small batch.
	catchUpBatch    = 512
	maxCatchUpBatch = 8192
	// maxBatchDocs caps the documents of one bleve batch: a backlog of memories alone (a
	// peer's writes, with no numbering between them) made batches of 8,192 documents, whose
	// analysis held three times the heap of the usual mix under a satellite's memory limit.
	// 512, not 2,048: a batch's analysis is held in the heap until its segment is built, and
	// while a satellite indexes a first sync its heap is at its limit; with 512 the sync of
	// 200k was searchable ~1.7 s sooner on average with ~8 % less of the satellite's CPU, and
	// issue 13's load did not move (docs/BENCHMARKS.md, session 30).
	maxBatchDocs = 512
	// rebuildBatch is the number of rows per bleve batch during a rebuild.
	rebuildBatch = 1000
)

// Indexer keeps an Index in step with a store's q/ change queue. See the package doc.
type Indexer struct {
	db  *store.DB
	ix  *Index
	log *slog.Logger

	// Linger is how long the indexer waits after a change before indexing
	// it, unless a search is waiting (default DefaultLinger; 0 indexes at once).
	Linger time.Duration
	// Clock times the linger and the pause after an error (nil:
	// clock.System). Set it before Serve.
	Clock clock.Clock
	// Foreground, if set, is touched by the work the user waits for (API
	// writes, replication): before each bleve batch the indexer waits until
	// it has paused for YieldPause, for YieldMax at most, unless a search
	// waits for the index (read-your-writes cuts the wait short). Indexing
	// then takes what those leave of the CPU, in larger batches.
	Foreground *clock.Quiet
	// YieldPause and YieldMax (defaults DefaultYieldPause, DefaultYieldMax).
	YieldPause, YieldMax time.Duration

	// owned by the pruner goroutine (then by Serve, once it has stopped)
	pruned uint64 // every q/ entry below pruned+1 is deleted
	next   uint64 // where the next PruneQueueFrom starts
	// owned by the Serve goroutine
	clk   clock.Clock
	batch int // q/ entries read for the next bleve batch (0: catchUpBatch)

	// SpaceCheck, if set (the store's DB.CheckSpace), is called before each bleve batch.
	// While it fails the indexer writes nothing to the index and retries every
	// retryPause; it catches up from the change queue once the check passes.
	SpaceCheck func() error

	// idle, if set (tests), is called each time Serve, caught up, starts
	// waiting for a change.
	idle func()
}

// errBatchFull ends a queue scan that has read a batch's worth of documents.
var errBatchFull = errors.New("batch full")

// errNoSpace wraps SpaceCheck's error: the indexer pauses.
var errNoSpace = errors.New("search index paused")

// checkSpace returns SpaceCheck's error wrapped in errNoSpace, or nil.
func (x *Indexer) checkSpace() error {
	if x.SpaceCheck == nil {
		return nil
	}
	if err := x.SpaceCheck(); err != nil {
		return fmt.Errorf("%w: %w", errNoSpace, err)
	}
	return nil
}

// pausedForSpace logs the first of a run of refused batches, marks the index paused
// and waits retryPause; it returns false when ctx ended.
func (x *Indexer) pausedForSpace(ctx context.Context, err error) bool {
	if !x.ix.noSpaceNow() {
		x.log.Warn("search indexing paused until space returns", "err", err)
		x.ix.setNoSpace(true)
	}
	return clock.Wait(ctx, x.clk, retryPause) == nil
}

// NewIndexer returns an Indexer feeding ix from db. Run Serve.
func NewIndexer(db *store.DB, ix *Index) *Indexer {
	return &Indexer{db: db, ix: ix, log: ix.log, Linger: DefaultLinger}
}

// DefaultLinger is the Indexer's default Linger.
const DefaultLinger = 50 * time.Millisecond

// The defaults of YieldPause and YieldMax: the index may trail a busy
// instance's writes by about a second when nothing searches.
const (
	DefaultYieldPause = 100 * time.Millisecond
	DefaultYieldMax   = time.Second
)

// yield waits, before a batch, for a pause in the foreground work (see
// Foreground). It returns ctx's error if ctx ends.
func (x *Indexer) yield(ctx context.Context) error {
	return x.Foreground.WaitIdle(ctx, x.clk, cmp.Or(x.YieldPause, DefaultYieldPause),
		cmp.Or(x.YieldMax, DefaultYieldMax), x.ix.hurry)
}

// retryPause is the Indexer's pause after a failed step.
const retryPause = time.Second

// Serve rebuilds the index if Open found it missing or unusable, then applies q/ entries as
// they are committed until ctx ends. Errors while indexing are logged and retried.
func (x *Indexer) Serve(ctx context.Context) error {
	x.clk = clock.Or(x.Clock)
	for x.ix.fresh {
		err := x.rebuild(ctx)
		switch {
		case err == nil:
			x.ix.fresh = false
		case ctx.Err() != nil:
			return nil // shut down mid-rebuild: the next start rebuilds again
		case errors.Is(err, errNoSpace):
			if !x.pausedForSpace(ctx, err) {
				return nil
			}
		default:
			return err
		}
	}
	x.pruned, x.next = 0, 0
	pctx, stopPruner := context.WithCancel(ctx)
	pruner := make(chan struct{})
	go func() { defer close(pruner); x.pruneLoop(pctx) }()
	defer func() { stopPruner(); <-pruner; x.shutdown() }()
	for {
		_, changed := x.db.QueueHead() // before reading q/, so no wake-up is lost
		if x.yield(ctx) != nil {
			return nil
		}
		n, err := x.catchUp()
		if errors.Is(err, errNoSpace) {
			if !x.pausedForSpace(ctx, err) {
				return nil
			}
			continue
		}
		if err == nil && x.ix.noSpaceNow() {
			x.log.Info("search indexing resumed")
			x.ix.setNoSpace(false)
		}
		if err != nil {
			x.log.Error("indexing change queue", "err", err)
			if clock.Wait(ctx, x.clk, retryPause) != nil {
				return nil
			}
			continue
		}
		if n > 0 {
			continue
		}
		if x.idle != nil {
			x.idle()
		}
		select {
		case <-ctx.Done():
			return nil
		case <-changed:
		}
		// Linger so a burst of changes becomes one bleve batch. A search
		// waiting for read-your-writes cuts the linger short.
		if x.Linger > 0 {
			t := x.clk.NewTimer(x.Linger)
			select {
			case <-ctx.Done():
				t.Stop()
				return nil
			case <-t.C():
			case <-x.ix.hurry:
				t.Stop()
			}
		}
	}
}

// pruneLoop prunes the change queue each time the index persisted more of it, until ctx
// ends. It runs beside the indexing loop: a prune (badger transactions, each with its fsync,
// retried on conflicts with the numberer's position) must never hold up indexing, which the
// searches wait for.
func (x *Indexer) pruneLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-x.ix.persisted:
		}
		x.prune()
	}
}

// shutdown waits (a few seconds at most) for the persister to write what the index serves and
// prunes the queue up to it, so a clean stop leaves nothing to re-index. The pruner has
// stopped.
func (x *Indexer) shutdown() {
	ctx, cancel := context.WithTimeout(context.Background(), closeFlushWait)
	defer cancel()
	if err := x.ix.WaitDurable(ctx, x.ix.Seq()); err == nil {
		x.prune()
	}
}

// prune deletes the q/ entries the index has persisted (never those only searchable: a crash
// before the persist re-indexes them).
func (x *Indexer) prune() {
	seq := x.ix.Durable()
	if seq <= x.pruned {
		return
	}
	next, err := x.db.PruneQueueFrom(x.next, seq)
	x.next = next
	if err != nil {
		x.log.Warn("pruning change queue", "err", err)
		return
	}
	x.pruned = seq
}

// catchUp applies up to x.batch q/ entries after the index position in one bleve batch
// and returns how many it applied. The batch is searchable when it returns; its persisted
// callback advances the durable position.
func (x *Indexer) catchUp() (int, error) {
	from := x.ix.Seq() + 1
	limit := max(x.batch, catchUpBatch)
	b := x.ix.bi.NewBatch()
	var last uint64
	n, full := 0, false
	err := x.db.View(func(txn *store.Txn) error {
		// The rows changed by these entries, each once, by table; then read
		// table by table in id order (GetRows: neighbours share a block).
		ids := map[string][]string{}
		seen := map[string]bool{}
		err := txn.ScanQueue(from, limit, func(e store.QueueEntry) error {
			n++
			last = e.Seq
			id := docID(e.Table, e.RowID)
			if !Searchable(e.Table) || seen[id] {
				return nil
			}
			seen[id] = true
			ids[e.Table] = append(ids[e.Table], e.RowID)
			if len(seen) == maxBatchDocs {
				return errBatchFull
			}
			return nil
		})
		if errors.Is(err, errBatchFull) {
			full, err = true, nil
		}
		if err != nil {
			return err
		}
		for _, table := range slices.Sorted(maps.Keys(ids)) {
			rows := ids[table]
			slices.Sort(rows)
			err := txn.GetRows(table, rows, func(i int, row *store.Row) error {
				return stageRow(b, table, rows[i], row)
			})
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("reading change queue from %d: %w", from, err)
	}
	if n == 0 {
		return 0, nil
	}
	if n == limit || full {
		x.batch = min(2*limit, maxCatchUpBatch)
	} else {
		x.batch = catchUpBatch
	}
	if err := x.checkSpace(); err != nil {
		return 0, err
	}
	// Before the batch is published: an index seen caught up is not
	// reported paused for space (TestIndexerPausesOnFullDisk raced here).
	if x.ix.noSpaceNow() {
		x.log.Info("search indexing resumed")
		x.ix.setNoSpace(false)
	}
	x.ix.seal(b, last)
	if err := x.ix.bi.Batch(b); err != nil {
		return 0, fmt.Errorf("applying index batch up to %d: %w", last, err)
	}
	x.ix.setSeq(last)
	return n, nil
}

// seal records seq as the position in b (so the documents and the position are persisted
// together) and has its persist advance the durable position.
func (ix *Index) seal(b *bleve.Batch, seq uint64) {
	b.SetInternal(keySeq, binary.BigEndian.AppendUint64(nil, seq))
	b.SetPersistedCallback(func(err error) {
		if err == nil {
			ix.setDurable(seq)
		}
	})
}

// stage adds to b the operation that makes the index reflect row (nil = missing).
func stage(b *bleve.Batch, id string, row *store.Row) error {
	if row == nil || row.Deleted {
		b.Delete(id)
		return nil
	}
	var d memoryDoc
	if err := sjson.Unmarshal(row.Data, &d); err != nil { // segmentio's: 1.2 % of a satellite's CPU in a sync with encoding/json's
		// A row this build cannot read (say, from a newer peer) must not wedge the indexer.
		b.Delete(id)
		return nil
	}
	return b.Index(id, d.fields())
}

// rebuild indexes every live memory at one badger snapshot and records that snapshot's queue
// head as the position, in the last batch. Until then the index has no position, so a crash
// mid-way makes the next Open rebuild again.
func (x *Indexer) rebuild(ctx context.Context) error {
	start := x.clk.Now()
	var head uint64
	count := 0
	err := x.db.View(func(txn *store.Txn) error {
		var err error
		head, err = txn.QueueSeq()
		if err != nil {
			return err
		}
		b := x.ix.bi.NewBatch()
		for _, table := range append([]string{store.TableMemories}, RecordTables...) {
			if err := x.rebuildTable(ctx, txn, b, table, &count); err != nil {
				return err
			}
		}
		if err := x.checkSpace(); err != nil {
			return err
		}
		x.ix.seal(b, head)
		return x.ix.bi.Batch(b)
	})
	if err != nil {
		return fmt.Errorf("rebuilding search index: %w", err)
	}
	x.ix.setSeq(head)
	x.log.Info("rebuilt search index", "documents", count, "seq", head, "took", x.clk.Since(start))
	return nil
}

// rebuildTable stages every live row of table into b, applying b each rebuildBatch rows.
func (x *Indexer) rebuildTable(ctx context.Context, txn *store.Txn, b *bleve.Batch, table string, count *int) error {
	return txn.ScanRows(table, func(r *store.Row) error {
		if r.Deleted {
			return nil
		}
		if err := stageRow(b, table, r.RowID, r); err != nil {
			return err
		}
		*count++
		if b.Size() >= rebuildBatch {
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := x.checkSpace(); err != nil {
				return err
			}
			if err := x.ix.bi.Batch(b); err != nil {
				return err
			}
			b.Reset()
		}
		return nil
	})
}
