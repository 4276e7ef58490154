package audit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/crow-sync/crow/anchor"
	"github.com/crow-sync/crow/state"
	"github.com/crow-sync/crow/store"
)

// TableMemoryVersions is the table of numbered memory content versions
// (row id = number as %020d). StoreSource audits it when the store knows it.
const TableMemoryVersions = "memory_versions"

// Source kinds (Report.Source).
const (
	KindVersions = "memory_versions"
	KindRows     = "memories"
)

// Cursor prefixes of StoreSource.Memories: a memories row id, a version number.
const (
	cursorRow     = "r/"
	cursorVersion = "v/"
)

// listPage is the page size of the store reads (store.List's maximum).
const listPage = 1000

// StoreSource is the Source over a store.DB: the memories, memory_numbers
// (or memory_versions), state_versions and anchors tables.
type StoreSource struct {
	DB *store.DB
	// Versions audits memory_versions; NewStoreSource sets it when the store
	// knows that table.
	Versions bool
}

// NewStoreSource returns the Source over db, auditing memory_versions if the
// store has that table.
func NewStoreSource(db *store.DB) *StoreSource {
	return &StoreSource{DB: db, Versions: store.ValidTable(TableMemoryVersions)}
}

// Kind implements Source.
func (s *StoreSource) Kind() string {
	if s.Versions {
		return KindVersions
	}
	return KindRows
}

// memoryRow is the data of a memories row, as far as the audit reads it.
type memoryRow struct {
	Project     string          `json:"project"`
	Content     string          `json:"content"`
	ContentHash string          `json:"content_hash"`
	Origin      string          `json:"origin"`
	CreatedAt   time.Time       `json:"created_at"`
	UpdatedAt   time.Time       `json:"updated_at"`
	ForgottenAt json.RawMessage `json:"forgotten_at"`
}

// versionRow is the data of a memory_versions row.
type versionRow struct {
	Number      uint64          `json:"number"`
	MemoryID    string          `json:"memory_id"`
	Project     string          `json:"project"`
	Content     string          `json:"content"`
	ContentHash string          `json:"content_hash"`
	CreatedAt   time.Time       `json:"created_at"`
	Origin      string          `json:"origin"`
	EventHash   string          `json:"event_hash"`
	ForgottenAt json.RawMessage `json:"forgotten_at"`
}

type numberRow struct {
	Number    uint64 `json:"number"`
	EventHash string `json:"event_hash"`
}

func forgotten(raw json.RawMessage) bool {
	s := strings.TrimSpace(string(raw))
	return s != "" && s != "null" && s != `""`
}

func projectOf(data []byte) string {
	var p struct {
		Project string `json:"project"`
	}
	_ = json.Unmarshal(data, &p)
	return p.Project
}

func projectFilter(project string) func(*store.Row) bool {
	if project == "" {
		return nil
	}
	return func(r *store.Row) bool { return projectOf(r.Data) == project }
}

// Memories implements Source: the memories rows ("r/" cursors), then, with
// Versions, the memory_versions rows ("v/").
func (s *StoreSource) Memories(ctx context.Context, project, after string, limit int, fn func(Memory) error) (string, error) {
	visited := 0
	left := func() int {
		if limit <= 0 {
			return listPage
		}
		return min(listPage, limit-visited)
	}
	if after == "" || strings.HasPrefix(after, cursorRow) {
		cur := strings.TrimPrefix(after, cursorRow)
		for {
			if err := ctx.Err(); err != nil {
				return "", err
			}
			rows, next, err := s.DB.List(store.TableMemories, store.ListOptions{After: cur, Limit: left(),
				IncludeDeleted: true, Filter: projectFilter(project)})
			if err != nil {
				return "", err
			}
			ms, err := s.rowsMemories(cur, rows)
			if err != nil {
				return "", err
			}
			for _, m := range ms {
				if err := fn(m); err != nil {
					return "", err
				}
			}
			visited += len(rows)
			if next == "" {
				break
			}
			cur = next
			if limit > 0 && visited >= limit {
				return cursorRow + cur, nil
			}
		}
		if !s.Versions {
			return "", nil
		}
		if limit > 0 && visited >= limit {
			return cursorVersion, nil
		}
		after = cursorVersion
	}
	if !s.Versions || !strings.HasPrefix(after, cursorVersion) {
		return "", fmt.Errorf("%w: %q", ErrBadCursor, after)
	}
	cur := strings.TrimPrefix(after, cursorVersion)
	for {
		if err := ctx.Err(); err != nil {
			return "", err
		}
		rows, next, err := s.DB.List(TableMemoryVersions, store.ListOptions{After: cur, Limit: left(),
			IncludeDeleted: true, Filter: projectFilter(project)})
		if err != nil {
			return "", err
		}
		ms, err := s.versionMemories(rows)
		if err != nil {
			return "", err
		}
		for _, m := range ms {
			if err := fn(m); err != nil {
				return "", err
			}
		}
		visited += len(rows)
		if next == "" {
			return "", nil
		}
		cur = next
		if limit > 0 && visited >= limit {
			return cursorVersion + cur, nil
		}
	}
}

// rowsMemories reads rows' memories and their memory_numbers records (rows
// are in row id order, and so are the records: one range read, no point
// reads).
func (s *StoreSource) rowsMemories(after string, rows []store.Row) ([]Memory, error) {
	if len(rows) == 0 {
		return nil, nil
	}
	last := rows[len(rows)-1].RowID
	recs, err := s.numberRange(after, last)
	if err != nil {
		return nil, err
	}
	anchors := map[string]*anchor.Record{}
	prefix := anchor.MemoryRecordID("")
	err = scanRange(s.DB, store.TableAnchors, prefix, after, last, func(r *store.Row) {
		var rec anchor.Record
		if !r.Deleted && json.Unmarshal(r.Data, &rec) == nil {
			anchors[strings.TrimPrefix(r.RowID, prefix)] = &rec
		}
	})
	if err != nil {
		return nil, fmt.Errorf("reading anchor records: %w", err)
	}
	out := make([]Memory, len(rows))
	for i := range rows {
		r := &rows[i]
		m := Memory{ID: r.RowID, Deleted: r.Deleted, Row: s.Versions}
		var d memoryRow
		if err := json.Unmarshal(r.Data, &d); err != nil {
			m.Bad = "the row does not decode: " + err.Error()
		}
		m.Project, m.Content, m.ContentHash, m.Origin = d.Project, d.Content, d.ContentHash, d.Origin
		m.CreatedAt, m.UpdatedAt, m.Forgotten = d.CreatedAt, d.UpdatedAt, forgotten(d.ForgottenAt)
		m.Anchor = anchors[r.RowID]
		if rec, ok := recs[r.RowID]; ok {
			m.Record = rec
			if !s.Versions {
				m.Number, m.EventHash = rec.Number, rec.EventHash
			}
		}
		out[i] = m
	}
	return out, nil
}

// numberRange reads the memory_numbers records of the memory ids after
// after, up to last.
func (s *StoreSource) numberRange(after, last string) (map[string]*NumberRecord, error) {
	out := map[string]*NumberRecord{}
	err := scanRange(s.DB, store.TableMemoryNumbers, "", after, last, func(r *store.Row) {
		var n numberRow
		_ = json.Unmarshal(r.Data, &n) // a bad record has number 0: the numbering check names it
		out[r.RowID] = &NumberRecord{Number: n.Number, MemoryID: r.RowID, EventHash: n.EventHash}
	})
	return out, err
}

// scanRange calls fn for the rows of table with ids after prefix+after, up
// to prefix+last (tombstones included), in order.
func scanRange(db *store.DB, table, prefix, after, last string, fn func(*store.Row)) error {
	cur, hi := prefix+after, prefix+last
	for {
		rows, next, err := db.List(table, store.ListOptions{After: cur, Limit: listPage, IncludeDeleted: true})
		if err != nil {
			return err
		}
		for i := range rows {
			if rows[i].RowID > hi {
				return nil
			}
			fn(&rows[i])
		}
		if next == "" {
			return nil
		}
		cur = next
	}
}

// versionMemories reads memory_versions rows, each with its memory's memory_numbers record.
func (s *StoreSource) versionMemories(rows []store.Row) ([]Memory, error) {
	out := make([]Memory, len(rows))
	err := s.DB.View(func(txn *store.Txn) error {
		for i := range rows {
			r := &rows[i]
			var d versionRow
			m := Memory{}
			if err := json.Unmarshal(r.Data, &d); err != nil {
				m.Bad = "the row does not decode: " + err.Error()
			} else if want := fmt.Sprintf("%020d", d.Number); r.RowID != want {
				m.Bad = fmt.Sprintf("row %s holds number %d", r.RowID, d.Number)
			}
			m.ID, m.Number, m.EventHash, m.Project = d.MemoryID, d.Number, d.EventHash, d.Project
			m.Content, m.ContentHash, m.CreatedAt, m.Origin = d.Content, d.ContentHash, d.CreatedAt, d.Origin
			m.Forgotten, m.Deleted = forgotten(d.ForgottenAt), r.Deleted
			if m.ID != "" {
				rec, err := numberRecord(txn, m.ID)
				if err != nil {
					return err
				}
				m.Record = rec
				if m.Anchor, err = versionAnchor(s.DB, m); err != nil {
					return err
				}
			}
			out[i] = m
		}
		return nil
	})
	return out, err
}

// numberRecord reads memory id's memory_numbers row (nil: none).
func numberRecord(txn *store.Txn, id string) (*NumberRecord, error) {
	r, err := txn.GetRow(store.TableMemoryNumbers, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the number of %s: %w", id, err)
	}
	var n numberRow
	_ = json.Unmarshal(r.Data, &n) // a bad record has number 0: the numbering check names it
	return &NumberRecord{Number: n.Number, MemoryID: id, EventHash: n.EventHash}, nil
}

// count counts table's rows (tombstones included) that keep passes.
func (s *StoreSource) count(table string, keep func(*store.Row) bool) (uint64, error) {
	var n uint64
	_, _, err := s.DB.List(table, store.ListOptions{IncludeDeleted: true, Filter: func(r *store.Row) bool {
		if keep == nil || keep(r) {
			n++
		}
		return false
	}})
	return n, err
}

// CountMemories implements Source.
func (s *StoreSource) CountMemories(ctx context.Context, project string) (uint64, error) {
	n, err := s.count(store.TableMemories, projectFilter(project))
	if err != nil || !s.Versions {
		return n, err
	}
	v, err := s.count(TableMemoryVersions, projectFilter(project))
	return n + v, err
}

// Numbers implements Source: memory_versions rows with Versions, else
// memory_numbers.
func (s *StoreSource) Numbers(ctx context.Context, fn func(NumberRecord) error) error {
	return s.DB.View(func(txn *store.Txn) error {
		if s.Versions {
			return txn.ScanRows(TableMemoryVersions, func(r *store.Row) error {
				var d versionRow
				_ = json.Unmarshal(r.Data, &d)
				return fn(NumberRecord{Number: d.Number, MemoryID: d.MemoryID, EventHash: d.EventHash, Project: d.Project})
			})
		}
		return txn.ScanRows(store.TableMemoryNumbers, func(r *store.Row) error {
			var d numberRow
			_ = json.Unmarshal(r.Data, &d)
			return fn(NumberRecord{Number: d.Number, MemoryID: r.RowID, EventHash: d.EventHash})
		})
	})
}

// versionDigits is the width of the version in a state_versions row id.
const versionDigits = 20

// splitStateRow splits "<project>/<version, 20 digits>".
func splitStateRow(id string) (project string, version uint64, ok bool) {
	if len(id) < versionDigits+2 || id[len(id)-versionDigits-1] != '/' {
		return "", 0, false
	}
	v, err := strconv.ParseUint(id[len(id)-versionDigits:], 10, 64)
	if err != nil {
		return "", 0, false
	}
	return id[:len(id)-versionDigits-1], v, true
}

// StateProjects implements Source.
func (s *StoreSource) StateProjects(ctx context.Context) ([]string, error) {
	var out []string
	_, _, err := s.DB.List(store.TableStateVersions, store.ListOptions{IncludeDeleted: true, Filter: func(r *store.Row) bool {
		if p, _, ok := splitStateRow(r.RowID); ok && (len(out) == 0 || out[len(out)-1] != p) {
			out = append(out, p)
		}
		return false
	}})
	return out, err
}

// StateVersions implements Source.
func (s *StoreSource) StateVersions(ctx context.Context, project string, fn func(StateRow) error) error {
	prefix := project + "/"
	cur := prefix
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		rows, next, err := s.DB.List(store.TableStateVersions, store.ListOptions{After: cur, Limit: 100, IncludeDeleted: true})
		if err != nil {
			return err
		}
		for i := range rows {
			r := &rows[i]
			if !strings.HasPrefix(r.RowID, prefix) {
				return nil
			}
			if p, _, ok := splitStateRow(r.RowID); !ok || p != project {
				continue // a version of project "<project>/…"
			}
			sr := StateRow{RowID: r.RowID, Project: project}
			if err := json.Unmarshal(r.Data, &sr.Version); err != nil {
				sr.Bad = "the row does not decode: " + err.Error()
			}
			if err := fn(sr); err != nil {
				return err
			}
		}
		if next == "" {
			return nil
		}
		cur = next
	}
}

// CountStates implements Source.
func (s *StoreSource) CountStates(ctx context.Context, project string) (uint64, error) {
	return s.count(store.TableStateVersions, func(r *store.Row) bool {
		p, _, ok := splitStateRow(r.RowID)
		return ok && (project == "" || p == project)
	})
}

// versionAnchor reads the anchor record of a version: memory/<number> or
// its root's batch row (anchor.MemoryRecord), or, for records written
// before memories had versions, memory/<memory id> — a record of another
// number is not this version's (nil: pending).
func versionAnchor(db *store.DB, m Memory) (*anchor.Record, error) {
	if rec, ok, err := anchor.MemoryRecord(db, m.Number); err != nil || ok {
		if !ok {
			return nil, err
		}
		return &rec, nil
	}
	rec, ok, err := anchor.ReadRecord(db, anchor.MemoryRecordID(m.ID))
	if err != nil || !ok || (rec.Number != 0 && rec.Number != m.Number) {
		return nil, err
	}
	return &rec, nil
}

var _ Source = (*StoreSource)(nil)

// parseHash is state.ParseHash, false for a malformed hash.
func parseHash(s string) ([32]byte, bool) {
	h, err := state.ParseHash(s)
	return h, err == nil
}
