package records

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/crow-sync/crow/clock"
	"github.com/crow-sync/crow/memory"
	"github.com/crow-sync/crow/search"
	"github.com/crow-sync/crow/store"
)

// ErrNotFound is returned (wrapped) for a row that does not exist or was deleted.
var ErrNotFound = store.ErrNotFound

// ErrNoTable is returned (wrapped) for a table without typed operations.
var ErrNoTable = errors.New("no typed operations for this table")

// ValidationError is returned for bad input: Field names the offending field (JSON name).
type ValidationError struct {
	Field   string
	Message string
}

func (e *ValidationError) Error() string {
	if e.Field == "" {
		return e.Message
	}
	return e.Field + ": " + e.Message
}

func invalid(field, format string, a ...any) error {
	return &ValidationError{Field: field, Message: fmt.Sprintf(format, a...)}
}

// Record is one live row of a table: its fields (the table's, extra ones, created_at and
// updated_at) and who wrote it last.
type Record struct {
	Table string `json:"table"`
	ID    string `json:"id"`
	// Data is the row's fields.
	Data map[string]json.RawMessage `json:"data"`
	// InstanceID is the instance that wrote this version.
	InstanceID string `json:"instance_id"`
}

// Page is a page of records.
type Page struct {
	Records []Record `json:"records"`
	// NextCursor fetches the next page; "" when this is the last.
	NextCursor string `json:"next_cursor"`
}

// Options configures a Service. The zero value is usable.
type Options struct {
	// Clock stamps created_at and updated_at and bounds SearchWait (default clock.System).
	Clock clock.Clock
	// SearchWait bounds how long Search waits for the index to catch up with earlier
	// writes (default 5s).
	SearchWait time.Duration
}

// Service writes and reads the rows of notes, sources, contacts, settings, blog posts and
// crow_context with their rules, and searches every indexed table. Writes go through the
// store's Writer, so they replicate and conflict like any write. Safe for concurrent use.
type Service struct {
	db   *store.DB
	w    *store.Writer
	idx  *search.Index
	clk  clock.Clock
	wait time.Duration
}

// NewService returns a Service writing through w into db and searching idx (kept up to
// date by the daemon's search.Indexer).
func NewService(db *store.DB, w *store.Writer, idx *search.Index, o Options) *Service {
	if o.SearchWait <= 0 {
		o.SearchWait = 5 * time.Second
	}
	return &Service{db: db, w: w, idx: idx, clk: clock.Or(o.Clock), wait: o.SearchWait}
}

func (s *Service) stamp() json.RawMessage {
	return mustJSON(s.clk.Now().UTC().Truncate(time.Millisecond).Format(time.RFC3339Nano))
}

// newID is a new row id: a ULID of now with random bits.
func (s *Service) newID() string {
	var d [32]byte
	rand.Read(d[:]) // never fails (crypto/rand)
	return memory.DerivedID(s.clk.Now(), d)
}

func spec(table string) (*Spec, error) {
	sp, ok := SpecOf(table)
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrNoTable, table)
	}
	return sp, nil
}

// Create validates data and stores it as a new row of table (settings: at the key, an
// existing key replaced). It returns the record as stored.
func (s *Service) Create(ctx context.Context, table string, data map[string]json.RawMessage) (Record, error) {
	sp, err := spec(table)
	if err != nil {
		return Record{}, err
	}
	data = clone(data)
	if err := sp.normalize(data, true); err != nil {
		return Record{}, err
	}
	if sp.KeyField != "" {
		var key string
		_ = json.Unmarshal(data[sp.KeyField], &key) // normalize checked it is a string
		return s.put(ctx, table, key, data)
	}
	now := s.stamp()
	data[FieldCreatedAt], data[FieldUpdatedAt] = now, now
	return s.write(ctx, store.Mutation{Table: table, RowID: s.newID(), Op: store.OpInsert, Data: mustJSON(data)})
}

// put writes data (checked) at id, keeping created_at of a live row there.
func (s *Service) put(ctx context.Context, table, id string, data map[string]json.RawMessage) (Record, error) {
	now := s.stamp()
	return s.write(ctx, store.Mutation{Table: table, RowID: id, Op: store.OpPut,
		Transform: func(existing *store.Row) (json.RawMessage, error) {
			out := clone(data)
			out[FieldCreatedAt], out[FieldUpdatedAt] = now, now
			if existing != nil && !existing.Deleted {
				var old map[string]json.RawMessage
				if json.Unmarshal(existing.Data, &old) == nil && old[FieldCreatedAt] != nil {
					out[FieldCreatedAt] = old[FieldCreatedAt]
				}
			}
			return mustJSON(out), nil
		}})
}

func (s *Service) write(ctx context.Context, m store.Mutation) (Record, error) {
	rows, err := s.w.Write(ctx, m)
	if err != nil {
		return Record{}, fmt.Errorf("writing %s %s: %w", m.Table, m.RowID, err)
	}
	return recordOf(&rows[0])
}

func recordOf(r *store.Row) (Record, error) {
	var data map[string]json.RawMessage
	if err := json.Unmarshal(r.Data, &data); err != nil {
		return Record{}, fmt.Errorf("decoding %s %s: %w", r.Table, r.RowID, err)
	}
	if data == nil {
		data = map[string]json.RawMessage{}
	}
	return Record{Table: r.Table, ID: r.RowID, Data: data, InstanceID: r.InstanceID}, nil
}

// Get returns the live row id of table; ErrNotFound (wrapped) if it is missing or deleted.
func (s *Service) Get(_ context.Context, table, id string) (Record, error) {
	if _, err := spec(table); err != nil {
		return Record{}, err
	}
	return s.get(table, id)
}

func (s *Service) get(table, id string) (Record, error) {
	if id == "" {
		return Record{}, fmt.Errorf("%s %q: %w", table, id, ErrNotFound)
	}
	r, err := s.db.Get(table, id)
	if err != nil {
		return Record{}, fmt.Errorf("%s %s: %w", table, id, err)
	}
	if r.Deleted {
		return Record{}, fmt.Errorf("%s %s: %w", table, id, ErrNotFound)
	}
	return recordOf(r)
}

// Update applies patch to the live row id of table: a field given replaces the old value,
// null removes an optional field, the others are kept. The patch is applied in the write
// transaction to the row as it is then (concurrent patches all apply), and the result must
// still satisfy the table's rules. A patch may not change the key field of a keyed table.
func (s *Service) Update(ctx context.Context, table, id string, patch map[string]json.RawMessage) (Record, error) {
	sp, err := spec(table)
	if err != nil {
		return Record{}, err
	}
	if len(patch) == 0 {
		return Record{}, invalid("", "nothing to change: give at least one field")
	}
	if sp.KeyField != "" {
		if _, ok := patch[sp.KeyField]; ok {
			return Record{}, invalid(sp.KeyField, "cannot be changed (it is the row id)")
		}
	}
	for _, k := range []string{FieldCreatedAt, FieldUpdatedAt} {
		if _, ok := patch[k]; ok {
			return Record{}, invalid(k, "is set by crow")
		}
	}
	// The patch alone must be well-formed (a clear error before the transaction).
	for k, v := range patch {
		if f := sp.Field(k); f != nil && string(v) != "null" {
			if _, err := f.check(v); err != nil {
				return Record{}, err
			}
		}
	}
	if id == "" {
		return Record{}, fmt.Errorf("%s %q: %w", table, id, ErrNotFound)
	}
	now := s.stamp()
	return s.write(ctx, store.Mutation{Table: table, RowID: id, Op: store.OpUpdate,
		Transform: func(existing *store.Row) (json.RawMessage, error) {
			var data map[string]json.RawMessage
			if err := json.Unmarshal(existing.Data, &data); err != nil || data == nil {
				data = map[string]json.RawMessage{}
			}
			created := data[FieldCreatedAt]
			delete(data, FieldCreatedAt)
			delete(data, FieldUpdatedAt)
			for k, v := range patch {
				if string(v) == "null" {
					delete(data, k)
				} else {
					data[k] = v
				}
			}
			if err := sp.normalize(data, false); err != nil {
				return nil, err
			}
			if created != nil {
				data[FieldCreatedAt] = created
			}
			data[FieldUpdatedAt] = now
			return mustJSON(data), nil
		}})
}

// Delete tombstones the live row id of table (the delete replicates); ErrNotFound if it is
// missing or already deleted.
func (s *Service) Delete(ctx context.Context, table, id string) error {
	if _, err := spec(table); err != nil {
		return err
	}
	return s.delete(ctx, table, id)
}

func (s *Service) delete(ctx context.Context, table, id string) error {
	if id == "" {
		return fmt.Errorf("%s %q: %w", table, id, ErrNotFound)
	}
	if _, err := s.w.Write(ctx, store.Mutation{Table: table, RowID: id, Op: store.OpDelete}); err != nil {
		return fmt.Errorf("deleting %s %s: %w", table, id, err)
	}
	return nil
}

// ListOptions selects a page of rows.
type ListOptions struct {
	// Cursor is the NextCursor of the previous page ("" for the first).
	Cursor string
	// Limit caps the page (default 50, at most 1000).
	Limit int
	// Desc lists in descending row id order (newest first for ULID ids).
	Desc bool
	// Match, if set, keeps only the rows whose data it accepts.
	Match func(data map[string]json.RawMessage) bool
}

// List returns live rows of table in row id order (ULIDs: creation order).
func (s *Service) List(_ context.Context, table string, o ListOptions) (Page, error) {
	if _, err := spec(table); err != nil {
		return Page{}, err
	}
	return s.list(table, o)
}

func (s *Service) list(table string, o ListOptions) (Page, error) {
	if o.Limit <= 0 {
		o.Limit = 50
	}
	lo := store.ListOptions{After: o.Cursor, Limit: o.Limit, Reverse: o.Desc}
	if o.Match != nil {
		lo.Filter = func(r *store.Row) bool {
			var data map[string]json.RawMessage
			return json.Unmarshal(r.Data, &data) == nil && o.Match(data)
		}
	}
	rows, next, err := s.db.List(table, lo)
	if err != nil {
		return Page{}, fmt.Errorf("listing %s: %w", table, err)
	}
	p := Page{Records: make([]Record, 0, len(rows)), NextCursor: next}
	for i := range rows {
		rec, err := recordOf(&rows[i])
		if err != nil {
			return Page{}, err
		}
		p.Records = append(p.Records, rec)
	}
	return p, nil
}

func clone(m map[string]json.RawMessage) map[string]json.RawMessage {
	out := make(map[string]json.RawMessage, len(m)+2)
	for k, v := range m {
		out[k] = v
	}
	return out
}
