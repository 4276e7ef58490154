package conflicts

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/crow-sync/crow/store"
	"github.com/dgraph-io/badger/v4"
)

var (
	prefixConflict = []byte("n/conflicts/c/")
	prefixRow      = []byte("n/conflicts/r/")
)

func conflictKey(id string) []byte { return append(append([]byte(nil), prefixConflict...), id...) }

func rowKey(table, rowID string) []byte { return []byte(string(prefixRow) + table + "/" + rowID) }

// rowIDsTxn reads the ids of a row's records (one key: no iterator, which in a
// read-write transaction would sort all its pending writes).
func rowIDsTxn(txn *badger.Txn, table, rowID string) ([]string, error) {
	item, err := txn.Get(rowKey(table, rowID))
	if errors.Is(err, badger.ErrKeyNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading conflicts of %s/%s: %w", table, rowID, err)
	}
	var ids []string
	if err := item.Value(func(b []byte) error { return json.Unmarshal(b, &ids) }); err != nil {
		return nil, fmt.Errorf("decoding conflicts of %s/%s: %w", table, rowID, err)
	}
	return ids, nil
}

func setRowIDsTxn(txn *badger.Txn, table, rowID string, ids []string) error {
	var err error
	if len(ids) == 0 {
		err = txn.Delete(rowKey(table, rowID))
	} else {
		b, _ := json.Marshal(ids)
		err = txn.Set(rowKey(table, rowID), b)
	}
	if err != nil {
		return fmt.Errorf("indexing conflicts of %s/%s: %w", table, rowID, err)
	}
	return nil
}

// Store reads and writes conflict records and notifications in the instance's
// badger database. It is safe for concurrent use.
type Store struct {
	db  *store.DB
	now func() time.Time
}

// NewStore returns a Store over db. now stamps created_at and is the injected
// clock (nil: db.Now).
func NewStore(db *store.DB, now func() time.Time) *Store {
	if now == nil {
		now = db.Now
	}
	return &Store{db: db, now: now}
}

// PutTxn writes c inside txn unless a record with its id exists (idempotent:
// the existing record, with its created_at and resolution, is kept). c.ID
// must be the derived id (New sets it); CreatedAt is stamped if zero. For a
// new record it raises the conflict notification if none is unread. It
// reports whether the record was created.
func (s *Store) PutTxn(txn *badger.Txn, c *Conflict) (created bool, err error) {
	if c.ID == "" || c.TableName == "" || c.RowID == "" {
		return false, errors.New("putting conflict: missing id, table or row id")
	}
	_, err = txn.Get(conflictKey(c.ID))
	if err == nil {
		return false, nil
	}
	if !errors.Is(err, badger.ErrKeyNotFound) {
		return false, fmt.Errorf("reading conflict %s: %w", c.ID, err)
	}
	if c.CreatedAt.IsZero() {
		c.CreatedAt = s.now().UTC()
	}
	b, err := json.Marshal(c)
	if err != nil {
		return false, fmt.Errorf("encoding conflict %s: %w", c.ID, err)
	}
	if err := txn.Set(conflictKey(c.ID), b); err != nil {
		return false, fmt.Errorf("writing conflict %s: %w", c.ID, err)
	}
	ids, err := rowIDsTxn(txn, c.TableName, c.RowID)
	if err != nil {
		return false, err
	}
	if i, found := slices.BinarySearch(ids, c.ID); !found {
		if err := setRowIDsTxn(txn, c.TableName, c.RowID, slices.Insert(ids, i, c.ID)); err != nil {
			return false, err
		}
	}
	if err := s.raiseTxn(txn, c); err != nil {
		return false, err
	}
	return true, nil
}

// DeleteTxn removes the record id and its row index entry inside txn (the
// apply loop retracts a record superseded by a newer pair). A missing id is
// not an error.
func (s *Store) DeleteTxn(txn *badger.Txn, id string) error {
	c, err := s.GetTxn(txn, id)
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	return s.RetractTxn(txn, c)
}

// RetractTxn is DeleteTxn for a record c already read in txn (ForRowTxn):
// it removes it and its row index entry without reading it again.
func (s *Store) RetractTxn(txn *badger.Txn, c *Conflict) error {
	id := c.ID
	if err := txn.Delete(conflictKey(id)); err != nil {
		return fmt.Errorf("deleting conflict %s: %w", id, err)
	}
	ids, err := rowIDsTxn(txn, c.TableName, c.RowID)
	if err != nil {
		return err
	}
	if i, found := slices.BinarySearch(ids, id); found {
		return setRowIDsTxn(txn, c.TableName, c.RowID, slices.Delete(ids, i, i+1))
	}
	return nil
}

// GetTxn reads the record id inside txn, or ErrNotFound.
func (s *Store) GetTxn(txn *badger.Txn, id string) (*Conflict, error) {
	item, err := txn.Get(conflictKey(id))
	if errors.Is(err, badger.ErrKeyNotFound) {
		return nil, fmt.Errorf("conflict %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("reading conflict %s: %w", id, err)
	}
	c := new(Conflict)
	if err := item.Value(func(b []byte) error { return json.Unmarshal(b, c) }); err != nil {
		return nil, fmt.Errorf("decoding conflict %s: %w", id, err)
	}
	return c, nil
}

// Get reads the record id, or ErrNotFound.
func (s *Store) Get(id string) (*Conflict, error) {
	var c *Conflict
	err := s.db.View(func(txn *badger.Txn) error {
		var err error
		c, err = s.GetTxn(txn, id)
		return err
	})
	return c, err
}

// ForRowTxn returns the records of one row inside txn, ordered by id.
func (s *Store) ForRowTxn(txn *badger.Txn, table, rowID string) ([]*Conflict, error) {
	ids, err := rowIDsTxn(txn, table, rowID)
	if err != nil {
		return nil, err
	}
	out := make([]*Conflict, 0, len(ids))
	for _, id := range ids {
		c, err := s.GetTxn(txn, id)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// Filter selects records for List. Zero fields select everything.
type Filter struct {
	Table      string // only this table
	RowID      string // only this row (with Table)
	Unresolved bool   // only records not yet resolved
}

// List returns the records matching f, newest first (created_at, then id).
func (s *Store) List(f Filter) ([]Conflict, error) {
	var out []Conflict
	err := s.db.View(func(txn *badger.Txn) error {
		io := badger.DefaultIteratorOptions
		io.Prefix = prefixConflict
		it := txn.NewIterator(io)
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			var c Conflict
			if err := it.Item().Value(func(b []byte) error { return json.Unmarshal(b, &c) }); err != nil {
				return fmt.Errorf("decoding conflict %s: %w", it.Item().Key(), err)
			}
			if (f.Table != "" && c.TableName != f.Table) || (f.RowID != "" && c.RowID != f.RowID) ||
				(f.Unresolved && c.Resolved) {
				continue
			}
			out = append(out, c)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("listing conflicts: %w", err)
	}
	sortNewest(out, func(c Conflict) (time.Time, string) { return c.CreatedAt, c.ID })
	return out, nil
}
