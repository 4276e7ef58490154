package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/dgraph-io/badger/v4"
)

// Row is the envelope stored under t/<table>/<row_id> (docs/ARCHITECTURE.md). Data is the
// whole row as its table defines it; a delete keeps the envelope with Deleted set and the last
// data (a tombstone), so a long-offline peer cannot resurrect it.
type Row struct {
	RowID      string          `json:"row_id"`
	Table      string          `json:"table"`
	Data       json.RawMessage `json:"data"`
	LamportTS  uint64          `json:"lamport_ts"`
	InstanceID string          `json:"instance_id"`
	VV         VV              `json:"vv"`
	Deleted    bool            `json:"deleted"`
	UpdatedAt  time.Time       `json:"updated_at"`

	// Seq is the q/ sequence number of the change that produced this version. It is set on
	// rows returned by Writer.Write, Txn.PutRow and TxnBatch.PutRow and is not stored in the envelope.
	Seq uint64 `json:"-"`
}

func validRowID(id string) bool {
	return id != "" && len(id) <= 512 && !strings.ContainsAny(id, "\x00")
}

func decodeRow(item *badger.Item) (*Row, error) {
	r := new(Row)
	err := item.Value(func(b []byte) error { return decodeRowValue(item.Key(), b, r) })
	if err != nil {
		return nil, fmt.Errorf("decoding row %s: %w", item.Key(), err)
	}
	return r, nil
}

// getRow reads a row inside txn (see Txn.GetRow).
func getRow(txn *badger.Txn, table, rowID string) (*Row, error) {
	item, err := rowItem(txn, table, rowID)
	if err != nil {
		return nil, err
	}
	return decodeRow(item)
}

// rowItem looks up the stored envelope of a row inside txn (ErrNotFound if there is none).
func rowItem(txn *badger.Txn, table, rowID string) (*badger.Item, error) {
	if !ValidTable(table) {
		return nil, fmt.Errorf("%w: %q", ErrInvalidTable, table)
	}
	item, err := txn.Get(rowKey(table, rowID))
	if errors.Is(err, badger.ErrKeyNotFound) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("reading row %s/%s: %w", table, rowID, err)
	}
	return item, nil
}

// Get reads a row. See Txn.GetRow.
func (db *DB) Get(table, rowID string) (*Row, error) {
	var r *Row
	err := db.bdb.View(func(txn *badger.Txn) error {
		var err error
		r, err = getRow(txn, table, rowID)
		return err
	})
	return r, err
}

// putRowSeq writes row's envelope and its q/ record at seq into txn.
func putRowSeq(txn *badger.Txn, row *Row, seq uint64) error {
	b, err := encodeRowFor(row)
	if err != nil {
		return err
	}
	return putEncodedRow(txn, row, b, seq)
}

// encodeRowFor checks row's table and id and returns its stored form (putEncodedRow's b).
func encodeRowFor(row *Row) ([]byte, error) {
	if !ValidTable(row.Table) {
		return nil, fmt.Errorf("%w: %q", ErrInvalidTable, row.Table)
	}
	if !validRowID(row.RowID) {
		return nil, fmt.Errorf("%w: bad row id %q", ErrInvalidMutation, row.RowID)
	}
	b, err := encodeRow(nil, row)
	if err != nil {
		return nil, fmt.Errorf("encoding row %s/%s: %w", row.Table, row.RowID, err)
	}
	return b, nil
}

// putEncodedRow is putRowSeq with the row already encoded (b, from encodeRowFor).
func putEncodedRow(txn *badger.Txn, row *Row, b []byte, seq uint64) error {
	if err := txn.Set(rowKey(row.Table, row.RowID), b); err != nil {
		return fmt.Errorf("writing row %s/%s: %w", row.Table, row.RowID, txnErr(err))
	}
	if err := txn.Set(queueKey(seq), queueValue(row)); err != nil {
		return fmt.Errorf("queueing row %s/%s: %w", row.Table, row.RowID, txnErr(err))
	}
	return nil
}

// ListOptions selects a page of rows.
type ListOptions struct {
	// After is the cursor: only rows whose id sorts after it (before it when Reverse) are
	// returned. Empty starts at the beginning (end when Reverse).
	After string
	// Limit caps the page (default 100, at most 1000).
	Limit int
	// IncludeDeleted also returns tombstones.
	IncludeDeleted bool
	// Reverse lists in descending row id order.
	Reverse bool
	// Filter, if set, keeps only rows for which it returns true. It must not retain the row.
	Filter func(*Row) bool
}

// List returns a page of rows of table in row id order, and the cursor of the next page
// ("" when this is the last page).
func (db *DB) List(table string, opts ListOptions) ([]Row, string, error) {
	if !ValidTable(table) {
		return nil, "", fmt.Errorf("%w: %q", ErrInvalidTable, table)
	}
	if opts.Limit <= 0 {
		opts.Limit = 100
	}
	opts.Limit = min(opts.Limit, 1000)
	var rows []Row
	next := ""
	err := db.bdb.View(func(txn *badger.Txn) error {
		prefix := tablePrefix(table)
		io := badger.DefaultIteratorOptions
		io.Prefix = prefix
		io.Reverse = opts.Reverse
		it := txn.NewIterator(io)
		defer it.Close()
		start := prefix
		switch {
		case opts.Reverse && opts.After == "":
			start = append(bytes.Clone(prefix), 0xff)
		case opts.Reverse:
			start = []byte(string(prefix) + opts.After) // seek lands on it or before
		case opts.After != "":
			start = append([]byte(string(prefix)+opts.After), 0) // first key after it
		}
		for it.Seek(start); it.ValidForPrefix(prefix); it.Next() {
			id := string(it.Item().Key()[len(prefix):])
			if opts.After != "" && id == opts.After {
				continue
			}
			r, err := decodeRow(it.Item())
			if err != nil {
				return err
			}
			if r.Deleted && !opts.IncludeDeleted {
				continue
			}
			if opts.Filter != nil && !opts.Filter(r) {
				continue
			}
			if len(rows) == opts.Limit {
				next = rows[len(rows)-1].RowID
				return nil
			}
			rows = append(rows, *r)
		}
		return nil
	})
	if err != nil {
		return nil, "", fmt.Errorf("listing %s: %w", table, err)
	}
	return rows, next, nil
}

// scanRows is Txn.ScanRows.
func scanRows(txn *badger.Txn, table string, fn func(*Row) error) error {
	return scanRowsFrom(txn, table, "", fn)
}

// scanRowsFrom is scanRows from the first row id ≥ from; fn returning ErrStop
// ends it with nil.
func scanRowsFrom(txn *badger.Txn, table, from string, fn func(*Row) error) error {
	if !ValidTable(table) {
		return fmt.Errorf("%w: %q", ErrInvalidTable, table)
	}
	io := badger.DefaultIteratorOptions
	io.Prefix = tablePrefix(table)
	it := txn.NewIterator(io)
	defer it.Close()
	for it.Seek(rowKey(table, from)); it.Valid(); it.Next() {
		r, err := decodeRow(it.Item())
		if err != nil {
			return err
		}
		if err := fn(r); errors.Is(err, ErrStop) {
			return nil
		} else if err != nil {
			return err
		}
	}
	return nil
}

// countKeysFrom counts the keys of table's rows with id ≥ from (tombstones
// included), reading no values.
func countKeysFrom(txn *badger.Txn, table, from string) (int, error) {
	if !ValidTable(table) {
		return 0, fmt.Errorf("%w: %q", ErrInvalidTable, table)
	}
	it := txn.NewIterator(badger.IteratorOptions{Prefix: tablePrefix(table)})
	defer it.Close()
	n := 0
	for it.Seek(rowKey(table, from)); it.Valid(); it.Next() {
		n++
	}
	return n, nil
}

// LastRows returns up to n live rows of table whose id starts with prefix, in descending row
// id order, keeping only those for which filter (if set) returns true; it must not retain
// the row. It reads only keys under the prefix, from the last one down: the newest rows of
// a keyspace whose ids sort by age, without a scan of the table.
func (db *DB) LastRows(table, prefix string, n int, filter func(*Row) bool) ([]Row, error) {
	if !ValidTable(table) {
		return nil, fmt.Errorf("%w: %q", ErrInvalidTable, table)
	}
	var rows []Row
	err := db.bdb.View(func(txn *badger.Txn) error {
		p := append(tablePrefix(table), prefix...)
		io := badger.DefaultIteratorOptions
		io.Prefix, io.Reverse, io.PrefetchValues = p, true, false
		it := txn.NewIterator(io)
		defer it.Close()
		// Above every id under the prefix: ids are at most 512 bytes.
		start := append(bytes.Clone(p), bytes.Repeat([]byte{0xff}, 513)...)
		for it.Seek(start); it.ValidForPrefix(p) && len(rows) < n; it.Next() {
			r, err := decodeRow(it.Item())
			if err != nil {
				return err
			}
			if r.Deleted || (filter != nil && !filter(r)) {
				continue
			}
			rows = append(rows, *r)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading the last rows of %s/%s: %w", table, prefix, err)
	}
	return rows, nil
}
