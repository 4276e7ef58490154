package store

import (
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/dgraph-io/badger/v4"
)

// QueueEntry is one q/ record: the row changed at Seq.
type QueueEntry struct {
	Seq   uint64
	Table string
	RowID string
}

// ScanQueueTxn calls fn for q/ entries with seq ≥ from, in seq order, stopping after limit
// entries (limit ≤ 0: no limit) or when fn returns an error.
func (db *DB) ScanQueueTxn(txn *badger.Txn, from uint64, limit int, fn func(QueueEntry) error) error {
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

// PruneQueue deletes q/ entries with seq ≤ upto. Only the consumer of the queue (the search
// indexer) calls it, once those entries are durably reflected in its index.
func (db *DB) PruneQueue(upto uint64) error {
	for {
		var keys [][]byte
		err := db.bdb.View(func(txn *badger.Txn) error {
			io := badger.DefaultIteratorOptions
			io.Prefix = prefixQueue
			io.PrefetchValues = false
			it := txn.NewIterator(io)
			defer it.Close()
			for it.Rewind(); it.Valid() && len(keys) < 1000; it.Next() {
				k := it.Item().KeyCopy(nil)
				if binary.BigEndian.Uint64(k[len(prefixQueue):]) > upto {
					break
				}
				keys = append(keys, k)
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("scanning queue to prune: %w", err)
		}
		if len(keys) == 0 {
			return nil
		}
		wb := db.bdb.NewWriteBatch()
		for _, k := range keys {
			if err := wb.Delete(k); err != nil {
				wb.Cancel()
				return fmt.Errorf("pruning queue: %w", err)
			}
		}
		if err := wb.Flush(); err != nil {
			return fmt.Errorf("pruning queue: %w", err)
		}
		if len(keys) < 1000 {
			return nil
		}
	}
}

// QueueSeqTxn returns the last allocated q/ seq as seen by txn.
func (db *DB) QueueSeqTxn(txn *badger.Txn) (uint64, error) { return getUint(txn, keySeq) }
