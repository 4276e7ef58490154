package memory

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha3"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"time"

	sjson "github.com/segmentio/encoding/json"

	"github.com/crow-sync/crow/clock"
	"github.com/crow-sync/crow/state"
	"github.com/crow-sync/crow/store"
)

// Numbering (SPEC §10): the home instance numbers every content version of a memory that
// becomes live (#1, #2, …, one total order over all memories and versions) and computes its
// event hash. A number names one immutable version:
//
//   - memory_versions, row id = the number as 20 digits (VersionRowID), data Version: the
//     version's content, content hash, project, category, importance, tags, source,
//     created_at (when the version became live), origin, event hash, supersedes (the
//     memory's previous number) and superseded_by (its next, set when that is numbered).
//   - memory_numbers, row id = memory id, data {"number":N,"event_hash":"0x…"}: the memory's
//     LATEST version, for the readers that join a live memory with its number.
//
// Both are written through the ordinary store.Writer, so every assignment is in home's feed
// and replicates to every instance; numbering never touches the memories row, so it cannot
// conflict with an edit.
//
// What is a version: what an event hash commits to. A memory gets a new number when its
// live content hash or its project differs from its latest version's (the event record
// holds both); an edit of category, importance or tags alone is not a version, and the
// version keeps the values it had when it was numbered. A tombstone is not a version:
// numbered versions stay readable by number after the memory is deleted (they are
// evidence), and reviving a memory with the content of its latest version numbers nothing.

// NumbererConsumer is the Numberer's name as a store queue consumer. Its position holds back
// the pruning of the q/ queue, so an instance that is not (or no longer) home, and runs no
// Numberer, drops it: db.DropConsumer(NumbererConsumer).
const NumbererConsumer = "memory-numbers"

const (
	// numberBatch caps the assignments written by one Writer.Write call.
	numberBatch = 256
	// queueScan caps the q/ entries read per step.
	queueScan = 1024
	// savePosEvery bounds how far the durable queue position may trail while busy.
	savePosEvery = 4096
	// numberRetry is the pause after a failed step.
	numberRetry = time.Second
)

// ErrNumbererRunning is returned by Numberer.Serve when another Numberer is serving the same
// store.DB in this process: two would hand out the same numbers.
var ErrNumbererRunning = errors.New("a numberer is already serving this database")

// serving holds the *store.DB of every running Numberer.
var serving sync.Map

// Numberer assigns memory numbers on the home instance. It follows the store's q/ change
// queue in order, as search.Indexer does, and numbers every memory that is live and whose
// content differs from its latest numbered version (or that has none), in queue (arrival)
// order: home's own writes and the memories the apply loop writes from satellites' feeds
// alike. Run Serve only on home.
//
// The contract, in order:
//
//  1. Numbers come from this one goroutine only. At start the next number is recovered as
//     1 + the highest number in memory_versions and memory_numbers (every row, tombstones
//     included), so no number is reused and none is skipped.
//  2. An assignment of number N to a version of memory M is, in one Writer.WriteEntry (all
//     or none, several assignments per call, journalled as batch records): the insert of
//     memory_versions N; if M has a latest version P, the update of memory_versions P
//     setting superseded_by = N; and the upsert of memory_numbers M = {N, event hash}. Each is guarded: the insert fails over
//     any existing row, tombstone included, P must not be superseded already, and
//     memory_numbers M must still name P (or be absent for a first version); a failed
//     guard is store.ErrExists: numbered under the Numberer, which recovers the next
//     number again and re-reads. A failed Write leaves nothing; after any error the
//     Numberer recovers step 1 and the position again before going on. A Write carries at
//     most numberBatch assignments and about numberBatchBytes of content.
//  3. The queue position (the last q/ seq consumed) is stored as the store queue consumer
//     "memory-numbers", after the numbers it covers are written: a crash in between makes
//     the next start re-read entries whose memories' content is numbered already and skip
//     them. Registered consumers hold back store.DB.PruneQueue, so the search indexer never
//     prunes an entry the Numberer has not consumed.
//  4. First start, or any time the queue has been pruned past the position (the entry
//     after it is missing while the head is beyond it): the position is registered first
//     (pinning the queue from then on), then the queue head H is read, then every live
//     memory whose content is not numbered is numbered in row id order (ids are ULIDs:
//     creation order), then H is stored as the position and the queue is followed from
//     H+1. Nothing is missed: a pruned entry was committed before the registration, hence
//     at or below H, and every table read happens after H was read, so it sees that change;
//     every change after H is in the queue, which is no longer pruned past the position.
//     Nothing is numbered twice: an entry seen both ways finds its content numbered and is
//     skipped.
//
// A version's event hash is EventHash(N, its project, its content hash, its created_at, the
// memory's origin), created_at being the memory's created_at for the first version and its
// updated_at (when the edit was made) for a later one.
//
// Deleted memories: a memory that is deleted (tombstoned) when the Numberer reaches it is
// not numbered; if it is revived later, the revival is a new queue entry and its content is
// numbered then if it differs from its latest version. A memory numbered before it is
// deleted keeps its memory_numbers and memory_versions rows, so its numbers are never
// reused and stay readable.
//
// Legacy numbers: a memory_numbers row written before memory_versions existed has no
// version row. When the Numberer next sees that memory live, it writes the version under
// the same number if the live row still recomputes the stored event hash (the content was
// not edited since), with no new number; otherwise it numbers the live content as a new
// version that supersedes the old number, and writes for the old number a version without
// content (number, memory id, origin, event hash, superseded_by).
type Numberer struct {
	// Clock times the linger after a change and the pause after an error (nil:
	// clock.System). Set it before Serve.
	Clock clock.Clock
	// Foreground, if set, is touched by the work the user waits for (API writes,
	// replication): after every numberYieldEvery memories numbered, the numberer waits
	// until it has paused for numberYieldPause, numberYieldMax at most, as the search
	// indexer does. Under a stream of writes numbering then trails them, in passes of
	// numberBatch, and catches up in the pauses.
	Foreground *clock.Quiet

	db  *store.DB
	w   *store.Writer
	log *slog.Logger
	clk clock.Clock // Clock or clock.System, set by Serve

	// Owned by the Serve goroutine.
	ready bool   // next and pos are recovered
	next  uint64 // number of the next assignment
	pos   uint64 // last q/ seq consumed
	saved uint64 // pos as stored in the store
	// numbered since the last wait for the foreground
	sinceYield int
	yieldEvery int // numberYieldEvery, or what a test set

	// hook, if set (tests), is called at the named points; a non-nil error stops Serve,
	// which returns it: a crash at that point.
	hook func(point string) error
}

// NewNumberer returns a Numberer writing numbers through w into db. Run Serve.
func NewNumberer(db *store.DB, w *store.Writer, log *slog.Logger) *Numberer {
	if log == nil {
		log = slog.Default()
	}
	return &Numberer{db: db, w: w, log: log}
}

// stopError carries a hook's error out of Serve.
type stopError struct{ err error }

func (e *stopError) Error() string { return e.err.Error() }

func (n *Numberer) at(point string) error {
	if n.hook == nil {
		return nil
	}
	if err := n.hook(point); err != nil {
		return &stopError{err}
	}
	return nil
}

// Serve numbers memories until ctx ends (then it returns nil). Errors while numbering are
// logged and retried. It returns ErrNumbererRunning if another Numberer serves the same DB.
func (n *Numberer) Serve(ctx context.Context) error {
	if _, busy := serving.LoadOrStore(n.db, n); busy {
		return ErrNumbererRunning
	}
	defer serving.Delete(n.db)
	n.clk = clock.Or(n.Clock)
	n.ready = false
	for {
		_, changed := n.db.QueueHead() // before reading q/, so no wake-up is lost
		if n.sinceYield >= cmp.Or(n.yieldEvery, numberYieldEvery) {
			n.sinceYield = 0
			if n.Foreground.WaitIdle(ctx, n.clk, numberYieldPause, numberYieldMax, nil) != nil {
				return n.stopped()
			}
		}
		busy, numbered, err := n.step(ctx)
		n.sinceYield += numbered
		var stop *stopError
		switch {
		case errors.As(err, &stop):
			return stop.err
		case ctx.Err() != nil:
			return n.stopped()
		case errors.Is(err, store.ErrExists):
			n.log.Warn("a memory was numbered under the numberer; re-reading", "err", err)
			n.ready = false
			continue
		case err != nil:
			n.log.Error("numbering memories", "err", err)
			n.ready = false
			if clock.Wait(ctx, n.clk, numberRetry) != nil {
				return nil
			}
			continue
		}
		if !busy || n.pos-n.saved >= savePosEvery {
			if err := n.savePos(); err != nil {
				n.log.Error("saving the numbering position", "err", err)
				n.ready = false
				continue
			}
		}
		if busy {
			// Under a steady stream of writes a pass finds only what arrived during
			// the previous one (~10 memories in TestNumbererBatchesAStream), and each
			// pass is a queue scan and a commit. After a small pass, linger as after an
			// idle wake-up, so a stream is numbered a linger's worth per pass.
			if numbered < smallPass && clock.Wait(ctx, n.clk, numberLinger) != nil {
				return nil
			}
			continue
		}
		if err := n.at("idle"); err != nil {
			return err.(*stopError).err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-changed:
		}
		// Linger so a burst of writes is numbered in one batch: one write and
		// one position save for the burst instead of two fsyncs per memory.
		if clock.Wait(ctx, n.clk, numberLinger) != nil {
			return nil
		}
	}
}

// stopped ends Serve when its ctx has ended: the position is saved if it is known.
func (n *Numberer) stopped() error {
	if n.ready {
		if err := n.savePos(); err != nil {
			n.log.Warn("saving the numbering position", "err", err)
		}
	}
	return nil
}

// numberLinger is how long the numberer waits after a change before numbering, and after
// a pass that numbered fewer than smallPass memories before the next one.
const (
	numberLinger = 20 * time.Millisecond
	smallPass    = numberBatch / 4
)

// The numberer's yield to foreground work (Numberer.Foreground): the search indexer's
// bounds, after every numberYieldEvery memories. Numbering beside a stream of writes took
// ~10 % of home's CPU; deferred to the pauses, writes went ~20-40 % faster (bulk and single
// alike; docs/BENCHMARKS.md, session 28).
const (
	numberYieldEvery = 2048
	numberYieldPause = 100 * time.Millisecond
	numberYieldMax   = time.Second
)

// step recovers the state if needed, then numbers the memories of the next q/ entries (or
// all of them if the queue has a gap). It reports whether there was anything to read, and
// how many memories it numbered (numberBatch after a backfill).
func (n *Numberer) step(ctx context.Context) (busy bool, numbered int, err error) {
	if !n.ready {
		if err := n.recover(); err != nil {
			return false, 0, err
		}
		n.ready = true
	}
	if err := n.at("step"); err != nil {
		return false, 0, err
	}
	q, err := n.readQueue()
	switch {
	case err != nil:
		return false, 0, err
	case q.gap:
		return true, numberBatch, n.backfill(ctx, q.head)
	case q.last == 0:
		return false, 0, nil
	}
	if err := n.assign(ctx, q.todo); err != nil {
		return false, 0, err
	}
	n.pos = q.last
	return true, len(q.todo), nil
}

// recover reads the next number and the stored position, registering the position (0) if
// there is none, so that the queue is pinned before it is read.
func (n *Numberer) recover() error {
	maxNum, err := n.maxNumber()
	if err != nil {
		return err
	}
	pos, ok, err := n.db.ConsumerPos(NumbererConsumer)
	if err != nil {
		return err
	}
	if !ok {
		if err := n.db.SetConsumerPos(NumbererConsumer, 0); err != nil {
			return err
		}
	}
	n.next, n.pos, n.saved = maxNum+1, pos, pos
	return nil
}

// maxNumber returns the highest number assigned.
func (n *Numberer) maxNumber() (uint64, error) { return HighestNumber(n.db) }

func (n *Numberer) savePos() error {
	if n.pos == n.saved {
		return nil
	}
	if err := n.db.SetConsumerPos(NumbererConsumer, n.pos); err != nil {
		return err
	}
	n.saved = n.pos
	return nil
}

// assignment is a version to number, with the memory's latest version before it.
type assignment struct {
	v        Version // Number and EventHash unset, but when adopt
	prev     uint64  // the memory's latest number (0: none)
	prevHeld bool    // prev has its memory_versions row (false: a legacy number)
	prevHash string  // prev's event hash (memory_numbers)
	adopt    bool    // write v under prev, a legacy number whose content is unchanged
	size     int     // about how many bytes of data the assignment writes
}

var errBatchFull = errors.New("batch full")

// queueRead is what readQueue found after the position.
type queueRead struct {
	todo []assignment // memories to number, in queue order (at most numberBatch)
	last uint64       // seq of the last entry read; 0: none
	head uint64       // the queue head at the snapshot
	gap  bool         // the entry after the position is pruned (todo and last are unset)
}

// readQueue reads the q/ entries after the position at one snapshot.
func (n *Numberer) readQueue() (queueRead, error) {
	var q queueRead
	err := n.db.View(func(txn *store.Txn) error {
		var err error
		if q.head, err = txn.QueueSeq(); err != nil || q.head <= n.pos {
			return err
		}
		// The memories changed after the position, each once, in queue order (at most
		// numberBatch of them); then their rows and numbers, read in id order (GetRows:
		// a bulk write's rows are neighbours, flushed to tables by the time they are
		// numbered).
		seen := map[string]bool{}
		var ids []string
		err = txn.ScanQueue(n.pos+1, queueScan, func(e store.QueueEntry) error {
			if q.last == 0 && e.Seq != n.pos+1 {
				q.gap = true
				return errBatchFull
			}
			q.last = e.Seq
			if e.Table != store.TableMemories || seen[e.RowID] {
				return nil
			}
			seen[e.RowID] = true
			if ids = append(ids, e.RowID); len(ids) == numberBatch {
				return errBatchFull
			}
			return nil
		})
		if errors.Is(err, errBatchFull) {
			err = nil
		}
		if err == nil && q.last == 0 {
			q.gap = true // head is past the position, but no entry is left after it
		}
		if err != nil || q.gap || len(ids) == 0 {
			return err
		}
		rows, err := readRows(txn, store.TableMemories, ids)
		if err != nil {
			return err
		}
		nums, err := readRows(txn, store.TableMemoryNumbers, ids)
		if err != nil {
			return err
		}
		for _, id := range ids {
			if rows[id] == nil {
				continue
			}
			a, ok, err := n.candidate(txn, id, rows[id], nums[id])
			if err != nil {
				return err
			}
			if ok {
				q.todo = append(q.todo, a)
			}
		}
		return nil
	})
	if err != nil {
		return queueRead{}, fmt.Errorf("reading the change queue after %d: %w", n.pos, err)
	}
	if q.gap {
		return queueRead{head: q.head, gap: true}, nil
	}
	return q, nil
}

// candidateTxn returns the assignment for memory id if it is live and its content is not
// its latest numbered version's. row, if not nil, is the memory's row as already read in
// txn.
func (n *Numberer) candidateTxn(txn *store.Txn, id string, row *store.Row) (assignment, bool, error) {
	if row == nil {
		var err error
		row, err = txn.GetRow(store.TableMemories, id)
		if errors.Is(err, store.ErrNotFound) {
			return assignment{}, false, nil
		}
		if err != nil {
			return assignment{}, false, err
		}
	}
	nr, err := txn.GetRow(store.TableMemoryNumbers, id)
	switch {
	case errors.Is(err, store.ErrNotFound):
		nr = nil
	case err != nil:
		return assignment{}, false, err
	}
	return n.candidate(txn, id, row, nr)
}

// readRows reads the rows of table with the given ids (in any order) in txn, by id: a
// missing row is absent from the map. The rows are copies.
func readRows(txn *store.Txn, table string, ids []string) (map[string]*store.Row, error) {
	sorted := slices.Sorted(slices.Values(ids))
	rows := make(map[string]*store.Row, len(ids))
	err := txn.GetRows(table, sorted, func(i int, r *store.Row) error {
		if r != nil {
			r.Data = bytes.Clone(r.Data)
			rows[sorted[i]] = r
		}
		return nil
	})
	return rows, err
}

// candidate is candidateTxn with the memory's row and its memory_numbers row (nil: none)
// already read in txn.
func (n *Numberer) candidate(txn *store.Txn, id string, row, nr *store.Row) (assignment, bool, error) {
	if row.Deleted {
		return assignment{}, false, nil
	}
	var d rowData
	if err := sjson.Unmarshal(row.Data, &d); err != nil {
		// A row this build cannot read must not wedge numbering; an edit that makes it
		// readable is a new queue entry, and it is numbered then.
		n.log.Warn("not numbering an unreadable memory", "id", id, "err", err)
		return assignment{}, false, nil
	}
	a := assignment{v: Version{MemoryID: id, Project: d.Project, Content: d.Content, ContentHash: d.ContentHash,
		Category: d.Category, Importance: d.Importance, Tags: d.Tags, Source: d.Source,
		CreatedAt: d.CreatedAt, Origin: d.Origin}}
	a.size = len(d.Content) + 1024
	if nr == nil {
		return a, true, nil // its first version
	}
	var latest numberRow
	if err := json.Unmarshal(nr.Data, &latest); err != nil || latest.Number == 0 {
		n.log.Warn("not numbering a memory with an unreadable number", "id", id, "err", err)
		return assignment{}, false, nil
	}
	a.prev, a.prevHash = latest.Number, latest.EventHash
	a.v.Supersedes = latest.Number
	a.v.CreatedAt = d.UpdatedAt // an edit became live when it was made
	if d.UpdatedAt.Before(d.CreatedAt) {
		a.v.CreatedAt = d.CreatedAt
	}
	prev, err := ReadVersion(txn, latest.Number)
	switch {
	case err == nil:
		if prev.ForgottenAt != "" || (prev.ContentHash == d.ContentHash && prev.Project == d.Project) {
			return assignment{}, false, nil // numbered (or forgotten: never renumbered)
		}
		a.prevHeld = true
		a.size += len(prev.Content)
		return a, true, nil
	case !errors.Is(err, store.ErrNotFound):
		return assignment{}, false, err
	}
	// A legacy number (see Numberer).
	if latest.EventHash == EventHash(latest.Number, d.Project, d.ContentHash, d.CreatedAt, d.Origin) {
		a.v.Number, a.v.EventHash, a.v.Supersedes, a.v.CreatedAt = latest.Number, latest.EventHash, 0, d.CreatedAt
		a.adopt = true
	}
	return a, true, nil
}

// numberBatchBytes bounds the content one Writer.Write of assignments carries (each byte is
// written twice: in the row and in the feed entry), so that it fits one transaction.
const numberBatchBytes = 1 << 20

// assign numbers as with n.next, n.next+1, …, in as few Writer.Writes as fit.
func (n *Numberer) assign(ctx context.Context, as []assignment) error {
	for len(as) > 0 {
		k, size := 0, 0
		for k < len(as) && (k == 0 || size+as[k].size <= numberBatchBytes) {
			size += as[k].size
			k++
		}
		if err := n.assignOne(ctx, as[:k]); err != nil {
			return err
		}
		as = as[k:]
	}
	return nil
}

// assignOne writes the assignments as in one Writer.Write (contract step 2).
func (n *Numberer) assignOne(ctx context.Context, as []assignment) error {
	num := n.next
	muts := make([]store.Mutation, 0, 3*len(as))
	for _, a := range as {
		v := a.v
		if !a.adopt {
			v.Number = num
			v.EventHash = EventHash(num, v.Project, v.ContentHash, v.CreatedAt, v.Origin)
			num++
		}
		data, err := json.Marshal(v)
		if err != nil {
			return err
		}
		muts = append(muts, store.Mutation{Table: store.TableMemoryVersions, RowID: VersionRowID(v.Number),
			Op: store.OpInsert, Data: data, Check: notNumbered})
		if a.adopt {
			continue
		}
		if a.prev != 0 {
			muts = append(muts, n.supersede(a, v.Number))
		}
		data, err = json.Marshal(numberRow{Number: v.Number, EventHash: v.EventHash})
		if err != nil {
			return err
		}
		muts = append(muts, store.Mutation{Table: store.TableMemoryNumbers, RowID: v.MemoryID, Op: store.OpPut,
			Data: data, Check: latestIs(a.prev)})
	}
	if err := n.at("assign"); err != nil {
		return err
	}
	if _, err := n.w.WriteEntry(ctx, muts...); err != nil {
		return fmt.Errorf("writing numbers %d-%d: %w", n.next, num-1, err)
	}
	n.next = num
	return n.at("written")
}

// supersede is the mutation marking a's previous version superseded by number by: an
// update of its row (keeping every other field, known to this build or not), or, for a
// legacy number, the insert of its version without content.
func (n *Numberer) supersede(a assignment, by uint64) store.Mutation {
	rowID := VersionRowID(a.prev)
	if !a.prevHeld {
		data, _ := json.Marshal(Version{Number: a.prev, MemoryID: a.v.MemoryID, Origin: a.v.Origin,
			EventHash: a.prevHash, SupersededBy: by})
		return store.Mutation{Table: store.TableMemoryVersions, RowID: rowID, Op: store.OpInsert, Data: data, Check: notNumbered}
	}
	return store.Mutation{Table: store.TableMemoryVersions, RowID: rowID, Op: store.OpUpdate,
		Check: func(existing *store.Row) error {
			var v struct {
				SupersededBy uint64 `json:"superseded_by"`
			}
			if existing == nil || existing.Deleted || json.Unmarshal(existing.Data, &v) != nil || v.SupersededBy != 0 {
				return fmt.Errorf("memory #%d is superseded already: %w", a.prev, store.ErrExists)
			}
			return nil
		},
		Transform: func(existing *store.Row) (json.RawMessage, error) {
			var fields map[string]json.RawMessage
			if err := json.Unmarshal(existing.Data, &fields); err != nil {
				return nil, fmt.Errorf("decoding memory #%d: %w", a.prev, err)
			}
			fields["superseded_by"] = json.RawMessage(strconv.FormatUint(by, 10))
			return json.Marshal(fields)
		}}
}

// notNumbered refuses an insert over a memory_versions tombstone too: once numbered, always.
func notNumbered(existing *store.Row) error {
	if existing != nil {
		return store.ErrExists
	}
	return nil
}

// latestIs checks that memory_numbers still names prev as the memory's latest number (is
// absent, for prev 0): otherwise the memory was numbered under the Numberer.
func latestIs(prev uint64) func(*store.Row) error {
	return func(existing *store.Row) error {
		if existing == nil || existing.Deleted {
			if prev == 0 {
				return nil
			}
			return fmt.Errorf("memory_numbers lost #%d: %w", prev, store.ErrExists)
		}
		var nr numberRow
		if json.Unmarshal(existing.Data, &nr) != nil || nr.Number != prev {
			return fmt.Errorf("memory numbered #%d under the numberer: %w", nr.Number, store.ErrExists)
		}
		return nil
	}
}

// numberRow is the data of a memory_numbers row: the memory's latest version.
type numberRow struct {
	Number    uint64 `json:"number"`
	EventHash string `json:"event_hash"`
}

// backfill numbers every live, unnumbered memory in row id order, then stores head (read
// after the position was registered, before any table read) as the position.
func (n *Numberer) backfill(ctx context.Context, head uint64) error {
	start := n.clk.Now()
	first := n.next
	n.log.Info("numbering the memories not in the change queue", "position", n.pos, "queue_head", head)
	cursor := ""
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		rows, next, err := n.db.List(store.TableMemories, store.ListOptions{After: cursor, Limit: numberBatch})
		if err != nil {
			return err
		}
		var as []assignment
		err = n.db.View(func(txn *store.Txn) error {
			for i := range rows {
				a, ok, err := n.candidateTxn(txn, rows[i].RowID, &rows[i])
				if err != nil {
					return err
				}
				if ok {
					as = append(as, a)
				}
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("reading memory numbers: %w", err)
		}
		if err := n.assign(ctx, as); err != nil {
			return err
		}
		if next == "" {
			break
		}
		cursor = next
	}
	if err := n.at("backfilled"); err != nil {
		return err
	}
	n.pos = head
	if err := n.savePos(); err != nil {
		return err
	}
	n.log.Info("numbered the memories not in the change queue", "numbered", n.next-first,
		"position", head, "took", n.clk.Since(start))
	return nil
}

// eventHashDomain separates memory event hashes from every other hash (SPEC §10).
const eventHashDomain = "CM_MEMORY_EVENT_V1"

// EventHash returns the event hash home records when it numbers a memory (SPEC §10):
// "0x" and the lowercase hex of
//
//	SHA3-256("CM_MEMORY_EVENT_V1" ‖ canonical JSON of the event record)
//
// where the event record is the object
//
//	{"content_hash":…,"created_at":…,"number":N,"origin":…,"project":…}
//
// in RFC 8785 (JCS) form: keys sorted, no whitespace, number as a plain decimal integer
// (JCS's form for integers below 2^53),
// strings escaped only where JSON requires (`"`, `\`, and U+0000–U+001F, as \b \t \n \f \r
// or \u00xx with lowercase hex; everything else, including non-ASCII, <, > and &, as UTF-8
// bytes; invalid UTF-8 becomes U+FFFD). created_at is UTC in RFC 3339 with exactly three
// fractional digits (milliseconds, truncated) and a "Z": 2026-11-29T21:00:00.123Z. origin is
// the instance id that created the memory; project and content_hash are the memory's as home
// numbers it.
//
// This format is frozen: anchors and evidence roots commit to these hashes. A change needs
// a new domain (CM_MEMORY_EVENT_V2) and leaves V1 hashes verifiable. numbering_test.go
// pins the bytes.
func EventHash(number uint64, project, contentHash string, createdAt time.Time, origin string) string {
	h := sha3.New256()
	h.Write([]byte(eventHashDomain))
	h.Write(eventRecord(number, project, contentHash, createdAt, origin))
	return "0x" + hex.EncodeToString(h.Sum(nil))
}

// eventRecord returns the canonical JSON of a memory's event record (see EventHash).
func eventRecord(number uint64, project, contentHash string, createdAt time.Time, origin string) []byte {
	b := make([]byte, 0, 160+len(project)+len(origin))
	b = append(b, `{"content_hash":`...)
	b = state.AppendCanonicalString(b, contentHash)
	b = append(b, `,"created_at":`...)
	b = state.AppendCanonicalString(b, createdAt.UTC().Format("2006-01-02T15:04:05.000Z"))
	b = append(b, `,"number":`...)
	b = strconv.AppendUint(b, number, 10)
	b = append(b, `,"origin":`...)
	b = state.AppendCanonicalString(b, origin)
	b = append(b, `,"project":`...)
	b = state.AppendCanonicalString(b, project)
	return append(b, '}')
}
