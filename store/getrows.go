package store

import (
	"bytes"
	"errors"
	"fmt"
	"slices"

	"github.com/dgraph-io/badger/v4"
)

// Reading many rows by id.
//
// A point read (GetRow) of a row already flushed to a table decompresses the
// 32 KiB block that holds it; badger's block cache is small (8 MiB) and does
// not admit a block on its first read, so rows read one by one in id order pay
// that for every row: the search indexer catching up after a first sync spent
// more of its time reading rows than bleve spent indexing them. One iterator
// walking forward from row to row decompresses each block once.

const (
	// getRowsPointReads is the number of ids below which GetRows reads each row
	// with a point lookup: a few scattered rows cost less through the bloom
	// filters than through an iterator's seeks (which read a block of every
	// level's table).
	getRowsPointReads = 32
	// getRowsWalk is the most keys GetRows steps over to reach the next id
	// before it seeks instead.
	getRowsWalk = 64
)

// GetRows calls fn(i, row) for each ids[i], in order, with the row (a tombstone
// has Deleted set) or nil when there is none. ids must sort ascending without
// repeats (an error otherwise, before fn is called). fn must not retain the row
// past the call unless it copies it (as ScanRows). An error from fn ends the
// reads and is returned (ErrStop: nil).
//
// Unlike GetRow it does not spare a later PutRow of a row its read: it is for
// readers (the search indexer) that want many rows of one table, typically
// neighbours, at one snapshot.
func (t *Txn) GetRows(table string, ids []string, fn func(i int, r *Row) error) error {
	if !ValidTable(table) {
		return fmt.Errorf("%w: %q", ErrInvalidTable, table)
	}
	for i := 1; i < len(ids); i++ {
		if ids[i-1] >= ids[i] {
			return fmt.Errorf("reading rows of %s: ids not ascending at %d (%q, %q)", table, i, ids[i-1], ids[i])
		}
	}
	err := getRows(t.txn, table, ids, fn)
	if errors.Is(err, ErrStop) {
		return nil
	}
	return err
}

func getRows(txn *badger.Txn, table string, ids []string, fn func(i int, r *Row) error) error {
	if len(ids) < getRowsPointReads {
		for i, id := range ids {
			r, err := getRow(txn, table, id)
			if errors.Is(err, ErrNotFound) {
				r, err = nil, nil
			}
			if err != nil {
				return err
			}
			if err := fn(i, r); err != nil {
				return err
			}
		}
		return nil
	}
	prefix := tablePrefix(table)
	it := txn.NewIterator(badger.IteratorOptions{Prefix: prefix})
	defer it.Close()
	want := slices.Clone(prefix)
	for i, id := range ids {
		want = append(want[:len(prefix)], id...)
		if i == 0 {
			it.Seek(want)
		}
		for n := 0; it.Valid() && bytes.Compare(it.Item().Key(), want) < 0; n++ {
			if n == getRowsWalk {
				it.Seek(want)
				break
			}
			it.Next()
		}
		var r *Row
		if it.Valid() && bytes.Equal(it.Item().Key(), want) {
			var err error
			if r, err = decodeRow(it.Item()); err != nil {
				return err
			}
		}
		if err := fn(i, r); err != nil {
			return err
		}
	}
	return nil
}
