package conflicts

import (
	"cmp"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/crow-sync/crow/store"
)

var (
	prefixConflict = []byte("n/conflicts/c/")
	prefixRow      = []byte("n/conflicts/r/")
)

func conflictKey(id string) []byte { return append(append([]byte(nil), prefixConflict...), id...) }

func rowKey(table, rowID string) []byte { return []byte(string(prefixRow) + table + "/" + rowID) }

// RowRecord is one entry of a row's record index: a record's id and its two
// vectors, which is all the apply loop needs to decide which records a new
// version supersedes (the vectors of a record never change: its id is derived
// from them).
type RowRecord struct {
	ID        string
	WinningVV store.VV
	LosingVV  store.VV
}

// The row index (n/conflicts/r/<table>/<row_id>) is stored in binary form,
// version 1:
//
//	0x01
//	uvarint   number of records, then per record, sorted by id:
//	  string  id
//	  vv      winning vector
//	  vv      losing vector
//
// where string is a uvarint length and the bytes, and vv is a uvarint count
// then (string id, uvarint counter) pairs sorted by id. A value starting with
// '[' is the JSON array of ids written by earlier builds: it is still read
// (the vectors then come from the records) and rewritten in binary form the
// next time the row's records change.
const rowIndexV1 = 0x01

var errBadRowIndex = errors.New("malformed conflict row index")

func encodeRowIndex(recs []RowRecord) []byte {
	b := make([]byte, 0, 1+len(recs)*80)
	b = append(b, rowIndexV1)
	b = binary.AppendUvarint(b, uint64(len(recs)))
	for _, r := range recs {
		b = store.AppendBytes(b, r.ID)
		b = store.AppendVV(b, r.WinningVV)
		b = store.AppendVV(b, r.LosingVV)
	}
	return b
}

// decodeRowIndex decodes a binary row index. It copies everything it keeps.
func decodeRowIndex(b []byte) ([]RowRecord, error) {
	if len(b) == 0 || b[0] != rowIndexV1 {
		return nil, errBadRowIndex
	}
	d := store.NewBinDecoder(b[1:])
	n := d.Uvarint()
	if n > uint64(len(d.Rest())) {
		return nil, errBadRowIndex
	}
	recs := make([]RowRecord, 0, n)
	for range n {
		r := RowRecord{ID: string(d.Bytes())}
		r.WinningVV = d.VV()
		r.LosingVV = d.VV()
		recs = append(recs, r)
	}
	if d.Bad() || len(d.Rest()) != 0 {
		return nil, errBadRowIndex
	}
	return recs, nil
}

// rowIndexTxn reads a row's record index, sorted by id (one key: no
// iterator, which in a read-write transaction would sort all its pending
// writes).
func (s *Store) rowIndexTxn(txn *store.Txn, table, rowID string) ([]RowRecord, error) {
	b, ok, err := txn.Get(rowKey(table, rowID))
	if err != nil {
		return nil, fmt.Errorf("reading conflicts of %s/%s: %w", table, rowID, err)
	}
	if !ok {
		return nil, nil
	}
	var recs []RowRecord
	var ids []string
	if len(b) > 0 && b[0] == '[' {
		err = json.Unmarshal(b, &ids)
	} else {
		recs, err = decodeRowIndex(b)
	}
	if err != nil {
		return nil, fmt.Errorf("decoding conflicts of %s/%s: %w", table, rowID, err)
	}
	if ids != nil { // legacy form: the vectors are in the records
		recs = make([]RowRecord, 0, len(ids))
		for _, id := range ids {
			c, err := s.GetTxn(txn, id)
			if err != nil {
				return nil, err
			}
			recs = append(recs, RowRecord{ID: id, WinningVV: c.WinningVV, LosingVV: c.LosingVV})
		}
	}
	return recs, nil
}

func setRowIndexTxn(txn *store.Txn, table, rowID string, recs []RowRecord) error {
	var err error
	if len(recs) == 0 {
		err = txn.Delete(rowKey(table, rowID))
	} else {
		err = txn.Set(rowKey(table, rowID), encodeRowIndex(recs))
	}
	if err != nil {
		return fmt.Errorf("indexing conflicts of %s/%s: %w", table, rowID, err)
	}
	return nil
}

func findRecord(recs []RowRecord, id string) (int, bool) {
	return slices.BinarySearchFunc(recs, id, func(r RowRecord, id string) int { return cmp.Compare(r.ID, id) })
}

// Store reads and writes conflict records and notifications in the instance's
// store database. It is safe for concurrent use.
type Store struct {
	db  *store.DB
	now func() time.Time
}

// NewStore returns a Store over db. now stamps created_at and is the injected
// clock, e.g. a clock.Clock's Now (nil: db.Now, the store's Options.Clock).
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
func (s *Store) PutTxn(txn *store.Txn, c *Conflict) (created bool, err error) {
	if c.ID == "" || c.TableName == "" || c.RowID == "" {
		return false, errors.New("putting conflict: missing id, table or row id")
	}
	n, err := s.UpdateRowTxn(txn, c.TableName, c.RowID, nil, []*Conflict{c})
	return n == 1, err
}

// UpdateRowTxn retracts the records with ids retract (missing ids are
// skipped), then puts each record of create as PutTxn does (all of the row
// table/rowID), inside txn, reading and writing the row index once. It is
// RetractTxn for each of retract then PutTxn for each of create, and returns
// how many records it created.
func (s *Store) UpdateRowTxn(txn *store.Txn, table, rowID string, retract []string, create []*Conflict) (created int, err error) {
	for _, c := range create {
		if c.ID == "" || c.TableName != table || c.RowID != rowID {
			return 0, fmt.Errorf("putting conflict %q: missing id, or not a record of %s/%s", c.ID, table, rowID)
		}
	}
	recs, err := s.rowIndexTxn(txn, table, rowID)
	if err != nil {
		return 0, err
	}
	changed := false
	for _, id := range retract {
		if err := txn.Delete(conflictKey(id)); err != nil {
			return 0, fmt.Errorf("deleting conflict %s: %w", id, err)
		}
		if i, found := findRecord(recs, id); found {
			recs = slices.Delete(recs, i, i+1)
			changed = true
		}
	}
	var first *Conflict
	for _, c := range create {
		_, exists, err := txn.Get(conflictKey(c.ID))
		if err != nil {
			return 0, fmt.Errorf("reading conflict %s: %w", c.ID, err)
		}
		if exists {
			continue // kept as it is
		}
		if c.CreatedAt.IsZero() {
			c.CreatedAt = s.now().UTC()
		}
		b, err := json.Marshal(c)
		if err != nil {
			return 0, fmt.Errorf("encoding conflict %s: %w", c.ID, err)
		}
		if err := txn.Set(conflictKey(c.ID), b); err != nil {
			return 0, fmt.Errorf("writing conflict %s: %w", c.ID, err)
		}
		if i, found := findRecord(recs, c.ID); !found {
			recs = slices.Insert(recs, i, RowRecord{ID: c.ID, WinningVV: c.WinningVV.Copy(), LosingVV: c.LosingVV.Copy()})
			changed = true
		}
		if first == nil {
			first = c
		}
		created++
	}
	if changed {
		if err := setRowIndexTxn(txn, table, rowID, recs); err != nil {
			return 0, err
		}
	}
	// One raise for all: after the first, an unread notification exists in
	// txn and every further raise is a no-op.
	if first != nil {
		if err := s.raiseTxn(txn, first); err != nil {
			return 0, err
		}
	}
	return created, nil
}

// DeleteTxn removes the record id and its row index entry inside txn (the
// apply loop retracts a record superseded by a newer pair). A missing id is
// not an error.
func (s *Store) DeleteTxn(txn *store.Txn, id string) error {
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
func (s *Store) RetractTxn(txn *store.Txn, c *Conflict) error {
	_, err := s.UpdateRowTxn(txn, c.TableName, c.RowID, []string{c.ID}, nil)
	return err
}

// GetTxn reads the record id inside txn, or ErrNotFound.
func (s *Store) GetTxn(txn *store.Txn, id string) (*Conflict, error) {
	b, ok, err := txn.Get(conflictKey(id))
	if err != nil {
		return nil, fmt.Errorf("reading conflict %s: %w", id, err)
	}
	if !ok {
		return nil, fmt.Errorf("conflict %s: %w", id, ErrNotFound)
	}
	c := new(Conflict)
	if err := json.Unmarshal(b, c); err != nil {
		return nil, fmt.Errorf("decoding conflict %s: %w", id, err)
	}
	return c, nil
}

// Get reads the record id with its resolution, or ErrNotFound.
func (s *Store) Get(id string) (*Conflict, error) {
	var c *Conflict
	err := s.db.View(func(txn *store.Txn) error {
		var err error
		if c, err = s.GetTxn(txn, id); err != nil {
			return err
		}
		return s.joinTxn(txn, c)
	})
	return c, err
}

// ForRowTxn returns the records of one row inside txn, ordered by id.
func (s *Store) ForRowTxn(txn *store.Txn, table, rowID string) ([]*Conflict, error) {
	recs, err := s.rowIndexTxn(txn, table, rowID)
	if err != nil {
		return nil, err
	}
	out := make([]*Conflict, 0, len(recs))
	for _, r := range recs {
		c, err := s.GetTxn(txn, r.ID)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// RowIndexTxn returns the index of one row's records inside txn, ordered by
// id: each record's id and vectors, without reading the records.
func (s *Store) RowIndexTxn(txn *store.Txn, table, rowID string) ([]RowRecord, error) {
	return s.rowIndexTxn(txn, table, rowID)
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
	err := s.db.View(func(txn *store.Txn) error {
		return txn.Iterate(prefixConflict, nil, func(k, v []byte) error {
			var c Conflict
			if err := json.Unmarshal(v, &c); err != nil {
				return fmt.Errorf("decoding conflict %s: %w", k, err)
			}
			if err := s.joinTxn(txn, &c); err != nil {
				return err
			}
			if (f.Table != "" && c.TableName != f.Table) || (f.RowID != "" && c.RowID != f.RowID) ||
				(f.Unresolved && c.Resolved) {
				return nil
			}
			out = append(out, c)
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("listing conflicts: %w", err)
	}
	sortNewest(out, func(c Conflict) (time.Time, string) { return c.CreatedAt, c.ID })
	return out, nil
}

// EraseRowTxn deletes every record of the row table/rowID and its row index inside txn,
// and returns how many it deleted: a forgotten row (SPEC §10) keeps no record, since
// records hold the winning and losing data. The row's resolutions (sync_conflicts rows:
// an action and a time, no data) stay. Records of a forgotten row are never created again
// (sync/apply's forget rule).
func (s *Store) EraseRowTxn(txn *store.Txn, table, rowID string) (int, error) {
	recs, err := s.rowIndexTxn(txn, table, rowID)
	if err != nil || len(recs) == 0 {
		return 0, err
	}
	ids := make([]string, len(recs))
	for i, r := range recs {
		ids[i] = r.ID
	}
	if _, err := s.UpdateRowTxn(txn, table, rowID, ids, nil); err != nil {
		return 0, err
	}
	return len(ids), nil
}
