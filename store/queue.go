package store

import (
	"context"
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/dgraph-io/badger/v4"
)

// The q/ queue records, in commit order, every row change (q/<seq> → "<table>/<row_id>"):
// seqs are allocated from s/seq inside the row-writing transactions, which conflict on it, so
// above its pruned prefix the queue has no holes, and entry seq+1 is never visible before
// entry seq. Derived state
// follows it: the search index (which prunes it, PruneQueue) and the consumers registered
// with SetConsumerPos (home's memory numberer), each keeping a durable position. PruneQueue
// never deletes past the lowest registered position (consumers.go).

// QueueEntry is one q/ record: the row changed at Seq.
type QueueEntry struct {
	Seq   uint64
	Table string
	RowID string
	flags byte // queueFlagsKnown and what it says of the row written; 0 for entries written before flags
}

// A q/ value is "<table>/<row_id>", then (since flags) a NUL, which no row id holds, and one
// flags byte about the row version written, so a follower can pass over rows without reading
// them (the forgetter reads only forgotten memories).
const (
	queueFlagsKnown     = 1 << 7
	queueFlagForgotten  = 1 << 0
	queueFlagsSeparator = "\x00"
)

// Forgotten reports whether the row version the entry records is a forget's tombstone, and
// whether the entry knows it (entries written before flags do not: read the row).
func (e QueueEntry) Forgotten() (forgotten, known bool) {
	return e.flags&queueFlagForgotten != 0, e.flags&queueFlagsKnown != 0
}

// queueValue is the q/ value of a write of row.
func queueValue(row *Row) []byte {
	flags := byte(queueFlagsKnown)
	if row.Forgotten() {
		flags |= queueFlagForgotten
	}
	v := make([]byte, 0, len(row.Table)+len(row.RowID)+3)
	v = append(v, row.Table...)
	v = append(v, '/')
	v = append(v, row.RowID...)
	v = append(v, queueFlagsSeparator...)
	return append(v, flags)
}

// scanQueue is Txn.ScanQueue.
func scanQueue(txn *badger.Txn, from uint64, limit int, fn func(QueueEntry) error) error {
	io := badger.DefaultIteratorOptions
	io.Prefix = prefixQueue
	it := txn.NewIterator(io)
	defer it.Close()
	n := 0
	for it.Seek(queueKey(from)); it.Valid(); it.Next() {
		if limit > 0 && n == limit {
			return nil
		}
		k := it.Item().Key()
		if len(k) != len(prefixQueue)+8 {
			return fmt.Errorf("bad queue key %q", k)
		}
		e := QueueEntry{Seq: binary.BigEndian.Uint64(k[len(prefixQueue):])}
		err := it.Item().Value(func(v []byte) error {
			if i := len(v) - 2; i >= 0 && v[i] == 0 && v[i+1]&queueFlagsKnown != 0 {
				e.flags, v = v[i+1], v[:i]
			}
			table, id, ok := strings.Cut(string(v), "/")
			if !ok {
				return fmt.Errorf("bad queue value %q at seq %d", v, e.Seq)
			}
			e.Table, e.RowID = table, id
			return nil
		})
		if err != nil {
			return err
		}
		if err := fn(e); err != nil {
			return err
		}
		n++
	}
	return nil
}

// pruneChunk is the number of q/ entries PruneQueue deletes per transaction.
const pruneChunk = 1000

// PruneQueue deletes q/ entries with seq ≤ upto, clamped to the lowest registered consumer
// position: it deletes the entries with seq ≤ min(upto, ConsumerPos of every consumer), so
// a registered consumer (SetConsumerPos) never loses an entry it has not consumed. The search
// indexer, which owns the queue, calls it with its durable index position; other consumers
// register a position instead of pruning.
//
// Each chunk of deletions is one read-write transaction that reads the consumer positions
// and s/queue-consumers-gen, which SetConsumerPos bumps when it registers a consumer or moves
// one back: a registration committed while a chunk is in flight makes that chunk conflict,
// and it is re-run with the new floor. So once SetConsumerPos has returned, no entry above
// that position is deleted.
func (db *DB) PruneQueue(upto uint64) error {
	_, err := db.PruneQueueFrom(0, upto)
	return err
}

// PruneQueueFrom is PruneQueue for a caller that knows every q/ entry below from is
// already deleted (the next it returned last time): the deletion starts there instead of at
// the queue's first key, so it does not walk the tombstones of earlier prunes (which badger
// keeps until a compaction) again and again. It returns where the next call may start: every
// entry below it is deleted.
func (db *DB) PruneQueueFrom(from, upto uint64) (next uint64, err error) {
	next = from
	for {
		var n int
		var last uint64
		_, err := db.update(context.Background(), func(txn *Txn) error {
			var err error
			n, last, err = pruneQueueChunk(txn.txn, next, upto)
			return err
		})
		if err != nil {
			return next, fmt.Errorf("pruning queue up to %d: %w", upto, err)
		}
		if n < pruneChunk {
			return max(next, last), nil
		}
		next = last
	}
}

// pruneQueueChunk deletes up to pruneChunk q/ entries with from ≤ seq ≤ min(upto, consumer
// floor) in txn and returns how many it deleted and the seq after the last one it covered:
// with fewer than pruneChunk deletions, every entry below that seq is deleted.
func pruneQueueChunk(txn *badger.Txn, from, upto uint64) (int, uint64, error) {
	floor, ok, err := consumersFloorTxn(txn)
	if err != nil {
		return 0, 0, err
	}
	if ok {
		upto = min(upto, floor)
	}
	// Every entry below the position the last prune stored is deleted: start
	// there, not at the tombstones of all the earlier prunes, which badger
	// keeps until a compaction (at start-up, with next still 0, walking them
	// cost ~90 ms of CPU at 300k entries, during the restart catch-up).
	pruned, err := getUint(txn, keyQueuePruned)
	if err != nil {
		return 0, 0, err
	}
	from = max(from, pruned)
	var keys [][]byte
	io := badger.DefaultIteratorOptions
	io.Prefix = prefixQueue
	io.PrefetchValues = false
	it := txn.NewIterator(io)
	for it.Seek(queueKey(from)); it.Valid() && len(keys) < pruneChunk; it.Next() {
		k := it.Item().KeyCopy(nil)
		if binary.BigEndian.Uint64(k[len(prefixQueue):]) > upto {
			break
		}
		keys = append(keys, k)
	}
	it.Close()
	for _, k := range keys {
		if err := txn.Delete(k); err != nil {
			return 0, 0, fmt.Errorf("deleting %x: %w", k, txnErr(err))
		}
	}
	next := max(from, upto+1)
	if len(keys) == pruneChunk {
		next = binary.BigEndian.Uint64(keys[len(keys)-1][len(prefixQueue):]) + 1
	}
	if next > pruned {
		if err := setUint(txn, keyQueuePruned, next); err != nil {
			return 0, 0, err
		}
	}
	return len(keys), next, nil
}

// keyQueuePruned holds a seq below which every q/ entry is deleted, written
// by each prune in the transaction of its deletions.
var keyQueuePruned = []byte("s/queue-pruned")
