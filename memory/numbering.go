package memory

import (
	"context"
	"crypto/sha3"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/crow-sync/crow/clock"
	"github.com/crow-sync/crow/state"
	"github.com/crow-sync/crow/store"
)

// Numbering (SPEC §10): the home instance gives every memory it ingests the next number
// (#1, #2, …) and its event hash, in the home-written table memory_numbers (row id = memory
// id, data {"number":N,"event_hash":"0x…"}), written through the ordinary store.Writer so
// the assignment is in home's feed and replicates to every instance.

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
// queue in order, as search.Indexer does, and numbers every memory that is live and has no
// memory_numbers row yet, in queue (arrival) order: home's own writes and the memories the
// apply loop writes from satellites' feeds alike. Run Serve only on home.
//
// The contract, in order:
//
//  1. Numbers come from this one goroutine only. At start the next number is recovered as
//     max(number in memory_numbers)+1 (every row, tombstones included), so no number is
//     reused and none is skipped.
//  2. An assignment is an insert of the memory_numbers row, up to numberBatch of them in one
//     Writer.Write (all or none). An insert over any existing row, tombstone included, fails
//     with store.ErrExists: that memory is already numbered; the Numberer recovers the next
//     number again and re-reads. A failed Write leaves nothing; after any error the
//     Numberer recovers step 1 and the position again before going on.
//  3. The queue position (the last q/ seq consumed) is stored as the store queue consumer
//     "memory-numbers", after the numbers it covers are written: a crash in between makes
//     the next start re-read entries whose memories are numbered already and skip them.
//     Registered consumers hold back store.DB.PruneQueue, so the search indexer never
//     prunes an entry the Numberer has not consumed.
//  4. First start, or any time the queue has been pruned past the position (the entry
//     after it is missing while the head is beyond it): the position is registered first
//     (pinning the queue from then on), then the queue head H is read, then every live,
//     unnumbered memory is numbered in row id order (ids are ULIDs: creation order), then
//     H is stored as the position and the queue is followed from H+1. Nothing is missed:
//     a pruned entry was committed before the registration, hence at or below H, and every
//     table read happens after H was read, so it sees that change; every change after H is
//     in the queue, which is no longer pruned past the position. Nothing is numbered
//     twice: an entry seen both ways finds its memory_numbers row and is skipped.
//
// Deleted memories: a memory that is deleted (tombstoned) when the Numberer reaches it is
// not numbered; if it is revived later, the revival is a new queue entry and it is numbered
// then. A memory numbered before it is deleted keeps its memory_numbers row, so its number
// is never reused and the total order keeps it.
type Numberer struct {
	// Clock times the linger after a change and the pause after an error (nil:
	// clock.System). Set it before Serve.
	Clock clock.Clock

	db  *store.DB
	w   *store.Writer
	log *slog.Logger
	clk clock.Clock // Clock or clock.System, set by Serve

	// Owned by the Serve goroutine.
	ready bool   // next and pos are recovered
	next  uint64 // number of the next assignment
	pos   uint64 // last q/ seq consumed
	saved uint64 // pos as stored in the store

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
		busy, err := n.step(ctx)
		var stop *stopError
		switch {
		case errors.As(err, &stop):
			return stop.err
		case ctx.Err() != nil:
			if n.ready {
				if err := n.savePos(); err != nil {
					n.log.Warn("saving the numbering position", "err", err)
				}
			}
			return nil
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

// numberLinger is how long the numberer waits after a change before numbering.
const numberLinger = 20 * time.Millisecond

// step recovers the state if needed, then numbers the memories of the next q/ entries (or
// all of them if the queue has a gap). It reports whether there was anything to read.
func (n *Numberer) step(ctx context.Context) (bool, error) {
	if !n.ready {
		if err := n.recover(); err != nil {
			return false, err
		}
		n.ready = true
	}
	if err := n.at("step"); err != nil {
		return false, err
	}
	q, err := n.readQueue()
	switch {
	case err != nil:
		return false, err
	case q.gap:
		return true, n.backfill(ctx, q.head)
	case q.last == 0:
		return false, nil
	}
	if err := n.assign(ctx, q.todo); err != nil {
		return false, err
	}
	n.pos = q.last
	return true, nil
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

// maxNumber scans memory_numbers for the highest number assigned.
func (n *Numberer) maxNumber() (uint64, error) {
	var maxNum uint64
	err := n.db.View(func(txn *store.Txn) error {
		return txn.ScanRows(store.TableMemoryNumbers, func(r *store.Row) error {
			var nd struct {
				Number uint64 `json:"number"`
			}
			if json.Unmarshal(r.Data, &nd) == nil {
				maxNum = max(maxNum, nd.Number)
			}
			return nil
		})
	})
	if err != nil {
		return 0, fmt.Errorf("reading the highest memory number: %w", err)
	}
	return maxNum, nil
}

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

// assignment is a memory to number, with its event record.
type assignment struct {
	id          string
	project     string
	contentHash string
	createdAt   time.Time
	origin      string
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
		seen := map[string]bool{}
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
			a, ok, err := n.candidateTxn(txn, e.RowID, nil)
			if err != nil || !ok {
				return err
			}
			if q.todo = append(q.todo, a); len(q.todo) == numberBatch {
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
		return err
	})
	if err != nil {
		return queueRead{}, fmt.Errorf("reading the change queue after %d: %w", n.pos, err)
	}
	if q.gap {
		return queueRead{head: q.head, gap: true}, nil
	}
	return q, nil
}

// candidateTxn returns the assignment for memory id if it is live and not numbered. row, if
// not nil, is the memory's row as already read in txn.
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
	if row.Deleted {
		return assignment{}, false, nil
	}
	switch _, err := txn.GetRow(store.TableMemoryNumbers, id); {
	case err == nil:
		return assignment{}, false, nil // numbered (even if that row were a tombstone)
	case !errors.Is(err, store.ErrNotFound):
		return assignment{}, false, err
	}
	var d rowData
	if err := json.Unmarshal(row.Data, &d); err != nil {
		// A row this build cannot read must not wedge numbering; an edit that makes it
		// readable is a new queue entry, and it is numbered then.
		n.log.Warn("not numbering an unreadable memory", "id", id, "err", err)
		return assignment{}, false, nil
	}
	return assignment{id: id, project: d.Project, contentHash: d.ContentHash,
		createdAt: d.CreatedAt, origin: d.Origin}, true, nil
}

// assign numbers as with n.next, n.next+1, … in one Writer.Write.
func (n *Numberer) assign(ctx context.Context, as []assignment) error {
	if len(as) == 0 {
		return nil
	}
	muts := make([]store.Mutation, len(as))
	for i, a := range as {
		num := n.next + uint64(i)
		data, err := json.Marshal(numberRow{Number: num,
			EventHash: EventHash(num, a.project, a.contentHash, a.createdAt, a.origin)})
		if err != nil {
			return err
		}
		muts[i] = store.Mutation{Table: store.TableMemoryNumbers, RowID: a.id, Op: store.OpInsert,
			Data: data, Check: notNumbered}
	}
	if err := n.at("assign"); err != nil {
		return err
	}
	if _, err := n.w.Write(ctx, muts...); err != nil {
		return fmt.Errorf("writing numbers %d-%d: %w", n.next, n.next+uint64(len(as))-1, err)
	}
	n.next += uint64(len(as))
	return n.at("written")
}

// notNumbered refuses an insert over a memory_numbers tombstone too: once numbered, always.
func notNumbered(existing *store.Row) error {
	if existing != nil {
		return store.ErrExists
	}
	return nil
}

// numberRow is the data of a memory_numbers row.
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
