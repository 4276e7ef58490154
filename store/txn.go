package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/dgraph-io/badger/v4"
)

// maxAttempts is how often DB.Update runs a transaction that keeps conflicting. With
// the backoff between attempts (see update) 50 attempts span up to about 1.5 s of
// contention: enough for a storm of writers on a loaded machine (20 quick ones were
// not), while a transaction that can never commit still fails.
const maxAttempts = 50

// Txn is one transaction on the DB. DB.View and DB.Update pass it to their fn; it is valid
// only during fn and is not safe for concurrent use.
//
// Rows and sync_state are read and written through its row methods (GetRow, PutRow,
// ObserveLamport, SetApplied, ...). Packages that keep their own data in the database (feed
// under f/, the others under n/) use the raw key methods (Get, Set, Delete, Iterate,
// IterateKeys) under their own prefixes; store's prefixes (t/, s/, q/, m/) are refused with
// ErrReservedKey.
type Txn struct {
	db  *DB
	txn *badger.Txn
	// seq is the highest q/ seq this transaction allocated (0: none); Update publishes it
	// as the queue head once committed.
	seq uint64
	// counts holds the changes of the maintained row counts (counts.go) made by the rows
	// this transaction wrote; update writes them in just before committing.
	counts countDeltas
	// seen holds, in a read-write transaction, the counts of each row as GetRow read it or
	// a PutRow wrote it in this transaction, so PutRow need not read the row again.
	seen map[string]tally
	// above holds the known-absent bounds once ExpectNewKeys turned them on (above.go).
	above *aboveBounds
}

// View runs fn in a read-only transaction.
func (db *DB) View(fn func(txn *Txn) error) error {
	return db.bdb.View(func(txn *badger.Txn) error { return fn(&Txn{db: db, txn: txn}) })
}

// Update runs fn in a read-write transaction and commits it. If the commit conflicts with
// another transaction (one that committed a key fn read after fn's transaction started) it
// re-runs fn in a new transaction, up to 20 times in all, so fn must be safe to re-run and
// must not act on the outcome before Update returns. It is the only retry loop over badger's
// conflicts; everything in store that writes goes through it.
//
// On a full disk (DB.CheckSpace) fn is not run and a wrapped ErrDiskFull is returned: every
// writer of the database (replica appends, registry, conflicts, anchor records, the
// forgetter, ...) is refused before badger could fault, and retries once space returns.
// Store's own bookkeeping (queue pruning, consumer positions) bypasses the guard: it is
// small, and pruning is what lets space be reclaimed.
//
// Errors: what fn returned (nothing is committed); ErrConflict if every attempt conflicted;
// ErrTooLarge (wrapped) if the writes do not fit in one transaction; ctx.Err() if ctx ended
// before an attempt. After a successful commit Update publishes the new queue head, so rows
// written with PutRow or a TxnBatch reach queue watchers (the search indexer) at once.
func (db *DB) Update(ctx context.Context, fn func(txn *Txn) error) error {
	if err := db.CheckSpace(); err != nil {
		return err
	}
	seq, err := db.update(ctx, fn)
	if err != nil {
		return err
	}
	db.publishQueue(seq)
	return nil
}

// update is Update without publishing the queue head: it returns the highest q/ seq the
// committed transaction allocated (0: none).
func (db *DB) update(ctx context.Context, fn func(txn *Txn) error) (uint64, error) {
	for attempt := range maxAttempts {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		if attempt >= 2 {
			// Every row write allocates from s/seq, so concurrent writers
			// conflict by design; after two quick retries, back off a
			// random while (up to 1 ms, doubling, capped at 32 ms) so a storm
			// of writers spreads out instead of failing. Real time: this
			// paces contention, it schedules nothing.
			backoff := time.Duration(rand.Int64N(int64(time.Millisecond<<min(attempt-2, 5)) + 1)) // < 32 ms
			select {
			case <-ctx.Done():
				return 0, ctx.Err()
			case <-time.After(backoff):
			}
		}
		t := &Txn{db: db, txn: db.bdb.NewTransaction(true), seen: map[string]tally{}}
		err := fn(t)
		if err == nil {
			err = t.flushCounts()
		}
		if err == nil {
			db.gate.RLock()
			err = t.txn.Commit()
			db.gate.RUnlock()
			if err != nil && !errors.Is(err, badger.ErrConflict) {
				err = fmt.Errorf("committing: %w", txnErr(err))
			}
		}
		t.txn.Discard()
		if err == nil {
			return t.seq, nil
		}
		if !errors.Is(err, badger.ErrConflict) {
			return 0, err
		}
	}
	return 0, fmt.Errorf("%w (%d attempts)", ErrConflict, maxAttempts)
}

// txnErr translates badger's errors about a transaction's writes into store's.
func txnErr(err error) error {
	if errors.Is(err, badger.ErrTxnTooBig) {
		return ErrTooLarge
	}
	return err
}

// Rows and sync_state.

// GetRow reads a row. It returns ErrNotFound if the row does not exist; a tombstone is
// returned as a row with Deleted set.
func (t *Txn) GetRow(table, rowID string) (*Row, error) {
	r, err := t.readRow(table, rowID)
	if err != nil {
		return nil, err
	}
	if t.seen != nil {
		t.seen[string(rowKey(table, rowID))] = tallyOf(r)
	}
	if r == nil {
		return nil, ErrNotFound
	}
	return r, nil
}

// readRow reads a row (nil: there is none), answered from the known-absent bounds when
// they are on (above.go). Unlike GetRow it leaves seen alone: the writer passes the row
// it read to the counts itself.
func (t *Txn) readRow(table, rowID string) (*Row, error) {
	if !ValidTable(table) {
		return nil, fmt.Errorf("%w: %q", ErrInvalidTable, table)
	}
	absent, err := t.knownAbsent(tablePrefix(table), rowKey(table, rowID))
	if err != nil || absent {
		return nil, err
	}
	r, err := getRow(t.txn, table, rowID)
	if errors.Is(err, ErrNotFound) {
		return nil, nil
	}
	return r, err
}

// RowData calls fn with the data of a row and whether it is deleted, without decoding (or
// checking) the rest of it (version vector, Lamport clock, origin): the lean read for
// callers that need only the content, such as a search loading its hits (about a quarter
// fewer allocations per search, memory.BenchmarkServiceSearch). data is valid only during
// fn. It returns ErrNotFound for a missing row. Unlike GetRow it does not spare a later
// PutRow of the same row its read (use GetRow before writing).
func (t *Txn) RowData(table, rowID string, fn func(data []byte, deleted bool) error) error {
	item, err := rowItem(t.txn, table, rowID)
	if err != nil {
		return err
	}
	var ferr error
	err = item.Value(func(b []byte) error {
		data, deleted, err := rowValueData(b)
		if err != nil {
			return err
		}
		ferr = fn(data, deleted)
		return nil
	})
	if err != nil {
		return fmt.Errorf("decoding row %s/%s: %w", table, rowID, err)
	}
	return ferr
}

// PutRow writes row (validated and stamped as given; the caller owns lamport, vv and instance
// id) and queues a q/ record for it. It returns the row's queue seq, also set in row.Seq.
// It keeps the row counts (CountRows) in step with the row's previous version, read unless
// a GetRow or PutRow of it in this transaction already did.
// Because it allocates the seq from s/seq, any two transactions that write rows conflict and
// are serialised (DB.Update re-runs the later one): queue order is commit order.
func (t *Txn) PutRow(row *Row) (uint64, error) {
	seq, err := getUint(t.txn, keySeq)
	if err != nil {
		return 0, err
	}
	seq++
	old, err := t.prevTally(row.Table, row.RowID)
	if err != nil {
		return 0, err
	}
	if err := putRowSeq(t.txn, row, seq); err != nil {
		return 0, err
	}
	t.countTallies(old, row)
	if err := setUint(t.txn, keySeq, seq); err != nil {
		return 0, err
	}
	row.Seq = seq
	t.seq = max(t.seq, seq)
	return seq, nil
}

// ScanRows calls fn for every row of table (tombstones included) in row id order. fn must
// not retain the row past the call unless it copies it (the Row itself is fresh).
func (t *Txn) ScanRows(table string, fn func(*Row) error) error { return scanRows(t.txn, table, fn) }

// ScanRowsFrom is ScanRows from the first row whose id sorts at or after from; fn returning
// ErrStop ends the scan with nil.
func (t *Txn) ScanRowsFrom(table, from string, fn func(*Row) error) error {
	return scanRowsFrom(t.txn, table, from, fn)
}

// CountKeysFrom is the number of rows of table (tombstones included) whose id sorts at or
// after from. It reads keys only.
func (t *Txn) CountKeysFrom(table, from string) (int, error) {
	return countKeysFrom(t.txn, table, from)
}

// ScanQueue calls fn for q/ entries with seq ≥ from, in seq order, stopping after limit
// entries (limit ≤ 0: no limit) or when fn returns an error.
func (t *Txn) ScanQueue(from uint64, limit int, fn func(QueueEntry) error) error {
	return scanQueue(t.txn, from, limit, fn)
}

// QueueSeq returns the last allocated q/ seq.
func (t *Txn) QueueSeq() (uint64, error) { return getUint(t.txn, keySeq) }

// Lamport reads the Lamport counter.
func (t *Txn) Lamport() (uint64, error) { return getUint(t.txn, keyLamport) }

// ObserveLamport advances the Lamport counter on receipt of a remote change stamped remote:
// the counter becomes max(local, remote)+1, which it returns.
func (t *Txn) ObserveLamport(remote uint64) (uint64, error) {
	local, err := getUint(t.txn, keyLamport)
	if err != nil {
		return 0, err
	}
	next := max(local, remote) + 1
	if err := setUint(t.txn, keyLamport, next); err != nil {
		return 0, err
	}
	return next, t.db.touch(t.txn)
}

// Applied returns the next index to apply from the feed with key feedKey (0 if none yet).
func (t *Txn) Applied(feedKey []byte) (uint64, error) { return getUint(t.txn, appliedKey(feedKey)) }

// SetApplied records next as the next index to apply from feedKey, so the checkpoint commits
// with the rows it covers.
func (t *Txn) SetApplied(feedKey []byte, next uint64) error {
	if err := setUint(t.txn, appliedKey(feedKey), next); err != nil {
		return err
	}
	return t.db.touch(t.txn)
}

// Raw keys.

// ErrStop, returned by the fn of Iterate or IterateKeys, ends the iteration early; the
// method then returns nil.
var ErrStop = errors.New("stop iteration")

// reserved reports whether key lies in one of store's own prefixes.
func reserved(key []byte) bool {
	return len(key) >= 2 && key[1] == '/' && bytes.IndexByte([]byte("tsqm"), key[0]) >= 0
}

func checkKey(key []byte) error {
	if reserved(key) {
		return fmt.Errorf("%w: %q", ErrReservedKey, key)
	}
	return nil
}

// Get returns a copy of key's value; ok is false if key is not set.
func (t *Txn) Get(key []byte) (val []byte, ok bool, err error) {
	if err := checkKey(key); err != nil {
		return nil, false, err
	}
	item, err := t.txn.Get(key)
	if errors.Is(err, badger.ErrKeyNotFound) {
		return nil, false, nil
	}
	if err == nil {
		val, err = item.ValueCopy(nil)
	}
	if err != nil {
		return nil, false, fmt.Errorf("reading %q: %w", key, err)
	}
	return val, true, nil
}

// Set sets key to val. The transaction keeps val until it ends: the caller must not modify
// it. Writes that no longer fit in the transaction fail with ErrTooLarge (wrapped).
func (t *Txn) Set(key, val []byte) error {
	if err := checkKey(key); err != nil {
		return err
	}
	if err := t.txn.Set(key, val); err != nil {
		return fmt.Errorf("writing %q: %w", key, txnErr(err))
	}
	t.raiseAbove(key)
	return nil
}

// Delete deletes key (deleting a key that is not set does nothing). It fails like Set.
func (t *Txn) Delete(key []byte) error {
	if err := checkKey(key); err != nil {
		return err
	}
	if err := t.txn.Delete(key); err != nil {
		return fmt.Errorf("deleting %q: %w", key, txnErr(err))
	}
	return nil
}

// Iterate calls fn, in key order, with each key that starts with prefix and sorts at or
// after from (nil: from the first), and its value. key and val are valid only during fn. An
// error from fn ends the iteration and is returned, except ErrStop, which ends it with nil.
// Values are read as fn is called (no read-ahead), so stopping early reads nothing more.
func (t *Txn) Iterate(prefix, from []byte, fn func(key, val []byte) error) error {
	return t.iterate(prefix, from, func(item *badger.Item) error {
		return item.Value(func(val []byte) error { return fn(item.Key(), val) })
	})
}

// IterateKeys is Iterate without the values, which are not read at all.
func (t *Txn) IterateKeys(prefix, from []byte, fn func(key []byte) error) error {
	return t.iterate(prefix, from, func(item *badger.Item) error { return fn(item.Key()) })
}

func (t *Txn) iterate(prefix, from []byte, fn func(*badger.Item) error) error {
	if err := checkKey(prefix); err != nil {
		return err
	}
	if len(prefix) < 2 {
		return fmt.Errorf("%w: iterating prefix %q spans store's keys", ErrReservedKey, prefix)
	}
	if from == nil || bytes.Compare(from, prefix) < 0 {
		from = prefix
	}
	it := t.txn.NewIterator(badger.IteratorOptions{Prefix: prefix})
	defer it.Close()
	for it.Seek(from); it.Valid(); it.Next() {
		if err := fn(it.Item()); errors.Is(err, ErrStop) {
			return nil
		} else if err != nil {
			return err
		}
	}
	return nil
}

// WriteBatch writes many keys outside a transaction, committing them in as many badger
// transactions as it needs: a crash or error can leave any prefix of its writes. It is for
// bulk data whose readers tolerate that (feed entries beyond the state that reaches them).
// Like Txn's raw methods it refuses store's own prefixes. Not safe for concurrent use.
type WriteBatch struct {
	wb   *badger.WriteBatch
	db   *DB
	held bool // db.gate is held shared until Flush or Cancel
}

// NewWriteBatch returns an empty WriteBatch. Flush or Cancel it. Until then it holds back
// DB.Compact's memtable flush (which would fail its commits).
func (db *DB) NewWriteBatch() *WriteBatch {
	db.gate.RLock()
	return &WriteBatch{wb: db.bdb.NewWriteBatch(), db: db, held: true}
}

func (b *WriteBatch) release() {
	if b.held {
		b.held = false
		b.db.gate.RUnlock()
	}
}

// Set queues key = val. The batch keeps val until flushed: the caller must not modify it.
// On a full disk (DB.CheckSpace) it returns a wrapped ErrDiskFull and queues nothing; the
// caller cancels the batch (what it already committed is a prefix, as after any error).
func (b *WriteBatch) Set(key, val []byte) error {
	if err := checkKey(key); err != nil {
		return err
	}
	if err := b.db.CheckSpace(); err != nil {
		return err
	}
	if err := b.wb.Set(key, val); err != nil {
		return fmt.Errorf("writing %q: %w", key, err)
	}
	return nil
}

// Delete queues the deletion of key.
func (b *WriteBatch) Delete(key []byte) error {
	if err := checkKey(key); err != nil {
		return err
	}
	if err := b.wb.Delete(key); err != nil {
		return fmt.Errorf("deleting %q: %w", key, err)
	}
	return nil
}

// Flush commits what is queued and waits for it. The batch cannot be used afterwards.
func (b *WriteBatch) Flush() error {
	defer b.release()
	if err := b.wb.Flush(); err != nil {
		return fmt.Errorf("flushing write batch: %w", err)
	}
	return nil
}

// Cancel drops what is not yet committed. It may be called after Flush (then it does
// nothing), so `defer b.Cancel()` is the usual pattern.
func (b *WriteBatch) Cancel() {
	b.wb.Cancel()
	b.release()
}
