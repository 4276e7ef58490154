package memory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	sjson "github.com/segmentio/encoding/json"

	"github.com/crow-sync/crow/clock"
	"github.com/crow-sync/crow/search"
	"github.com/crow-sync/crow/store"
)

// Options configures a Service. The zero value is usable.
type Options struct {
	// Clock stamps created_at and updated_at and bounds SearchWait (default
	// clock.System).
	Clock clock.Clock
	// Now, if set, is used instead of Clock.Now (kept for older callers).
	Now func() time.Time
	// SearchWait bounds how long Search waits for the index to catch up with earlier writes
	// (default 5s); past it Search fails rather than answer stale.
	SearchWait time.Duration
}

// Service is the memory API. It is safe for concurrent use.
type Service struct {
	db   *store.DB
	w    *store.Writer
	idx  *search.Index
	now  func() time.Time
	clk  clock.Clock
	wait time.Duration
}

// NewService returns a Service writing through w into db and searching idx (kept up to date
// by a search.Indexer the caller runs).
func NewService(db *store.DB, w *store.Writer, idx *search.Index, opts Options) *Service {
	opts.Clock = clock.Or(opts.Clock)
	if opts.Now == nil {
		opts.Now = opts.Clock.Now
	}
	if opts.SearchWait <= 0 {
		opts.SearchWait = 5 * time.Second
	}
	return &Service{db: db, w: w, idx: idx, now: opts.Now, clk: opts.Clock, wait: opts.SearchWait}
}

// Add validates in and stores a new memory durably. Bad input returns a *ValidationError.
func (s *Service) Add(ctx context.Context, in CreateInput) (Memory, error) {
	d, err := in.normalize()
	if err != nil {
		return Memory{}, err
	}
	now := s.now().UTC()
	d.ID = newID(now)
	d.Origin = s.w.InstanceID()
	d.CreatedAt = now.Truncate(time.Millisecond)
	d.UpdatedAt = d.CreatedAt
	if err := s.write(ctx, store.OpInsert, d, nil); err != nil {
		return Memory{}, fmt.Errorf("adding memory: %w", err)
	}
	return d.memory(), nil
}

func (s *Service) write(ctx context.Context, op store.Op, d rowData, check func(*store.Row) error) error {
	b, err := json.Marshal(d)
	if err != nil {
		return err
	}
	_, err = s.commit(ctx, store.Mutation{Table: store.TableMemories, RowID: d.ID, Op: op, Data: b, Check: check})
	return err
}

// Writes are paced to the searches: while a search waits for the index and the index
// trails the change queue by more than maxIndexLag changes, a write first waits (at most
// maxIndexLagWait) for it to come within that. Searches see every write committed before
// them (read-your-writes), so they wait for whatever the index trails by; writes that
// outran indexing (64 clients writing as fast as they are answered) made the searches
// wait for batches of thousands (0.5-1 s, docs/benchmarks/load.md, session 24). Writes
// with no search waiting are not paced (a bulk import runs ahead of indexing), and the
// wait is bounded, so writes go on while the index rebuilds or lags a sync's applies.
const (
	maxIndexLag     = 1024
	maxIndexLagWait = 100 * time.Millisecond
)

// commit writes muts through the Writer, paced to the searches (maxIndexLag). A Service
// without an index (some callers' tests) is not paced.
func (s *Service) commit(ctx context.Context, muts ...store.Mutation) ([]store.Row, error) {
	if s.idx == nil || !s.idx.Awaited() {
		return s.w.Write(ctx, muts...) // no search waits: not paced
	}
	if head, _ := s.db.QueueHead(); head > maxIndexLag && s.idx.Seq() < head-maxIndexLag {
		wctx, cancel := clock.WithTimeout(ctx, s.clk, maxIndexLagWait)
		_ = s.idx.WaitBehind(wctx, head-maxIndexLag) // past maxIndexLagWait: write anyway
		cancel()
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
	return s.w.Write(ctx, muts...)
}

// Get returns a live memory, or ErrNotFound (also for a deleted one).
func (s *Service) Get(ctx context.Context, id string) (Memory, error) {
	d, _, err := s.load(id)
	if err != nil {
		return Memory{}, err
	}
	ms := []Memory{d.memory()}
	if err := s.joinNumbers(ms); err != nil {
		return Memory{}, err
	}
	return ms[0], nil
}

// load reads the live row of a memory.
func (s *Service) load(id string) (rowData, store.VV, error) {
	if id == "" {
		return rowData{}, nil, ErrNotFound
	}
	r, err := s.db.Get(store.TableMemories, id)
	if err != nil {
		return rowData{}, nil, fmt.Errorf("memory %s: %w", id, err)
	}
	if r.Forgotten() {
		return rowData{}, nil, &ForgottenError{ID: id, At: store.ForgottenAt(r.Data)}
	}
	if r.Deleted {
		return rowData{}, nil, fmt.Errorf("memory %s: %w", id, ErrNotFound)
	}
	var d rowData
	if err := sjson.Unmarshal(r.Data, &d); err != nil {
		return rowData{}, nil, fmt.Errorf("decoding memory %s: %w", id, err)
	}
	return d, r.VV, nil
}

// Update applies a patch to a live memory and returns it as stored. The patch is applied
// inside the write transaction to the row as it is then, so concurrent patches all take
// effect. Bad input returns a *ValidationError; a missing or deleted memory ErrNotFound.
func (s *Service) Update(ctx context.Context, id string, p PatchInput) (Memory, error) {
	if err := p.validate(); err != nil {
		return Memory{}, err
	}
	if id == "" {
		return Memory{}, ErrNotFound
	}
	now := s.now().UTC().Truncate(time.Millisecond)
	rows, err := s.commit(ctx, store.Mutation{Table: store.TableMemories, RowID: id, Op: store.OpUpdate,
		Transform: func(existing *store.Row) (json.RawMessage, error) {
			var d rowData
			if err := sjson.Unmarshal(existing.Data, &d); err != nil {
				return nil, fmt.Errorf("decoding memory: %w", err)
			}
			d = p.apply(d)
			d.UpdatedAt = now
			return json.Marshal(d)
		}})
	if err != nil {
		return Memory{}, fmt.Errorf("updating memory %s: %w", id, err)
	}
	var d rowData
	if err := sjson.Unmarshal(rows[0].Data, &d); err != nil {
		return Memory{}, fmt.Errorf("decoding memory %s: %w", id, err)
	}
	ms := []Memory{d.memory()}
	if err := s.joinNumbers(ms); err != nil {
		return Memory{}, err
	}
	return ms[0], nil
}

// Delete tombstones a live memory; ErrNotFound if it is missing or already deleted.
func (s *Service) Delete(ctx context.Context, id string) error {
	if id == "" {
		return ErrNotFound
	}
	_, err := s.commit(ctx, store.Mutation{Table: store.TableMemories, RowID: id, Op: store.OpDelete})
	if err != nil {
		return fmt.Errorf("deleting memory %s: %w", id, err)
	}
	return nil
}

// Filter narrows List and Search. Empty fields match everything; Tags must all be present.
type Filter struct {
	Project       string
	Category      string
	MinImportance int
	Tags          []string
}

func (f Filter) match(d *rowData) bool {
	if f.Project != "" && d.Project != f.Project {
		return false
	}
	if f.Category != "" && d.Category != f.Category {
		return false
	}
	if d.Importance < f.MinImportance {
		return false
	}
	for _, t := range f.Tags {
		if !slices.Contains(d.Tags, t) {
			return false
		}
	}
	return true
}

// ListOptions selects a page of memories.
type ListOptions struct {
	Filter
	// Cursor is the NextCursor of the previous page ("" for the first).
	Cursor string
	// Limit caps the page (default 50, at most 1000).
	Limit int
	// Oldest lists oldest first; the default is newest first (ids sort by creation time).
	Oldest bool
}

// Page is a page of memories.
type Page struct {
	Memories []Memory `json:"memories"`
	// NextCursor fetches the next page; "" when this is the last.
	NextCursor string `json:"next_cursor"`
}

// List returns live memories matching the filter, by creation time.
func (s *Service) List(ctx context.Context, o ListOptions) (Page, error) {
	if o.Limit <= 0 {
		o.Limit = 50
	}
	if o.MinImportance < 0 || o.MinImportance > 10 {
		return Page{}, invalid("min_importance", "must be between 0 and 10")
	}
	rows, next, err := s.db.List(store.TableMemories, store.ListOptions{
		After: o.Cursor, Limit: o.Limit, Reverse: !o.Oldest,
		Filter: func(r *store.Row) bool {
			var d rowData
			return sjson.Unmarshal(r.Data, &d) == nil && o.Filter.match(&d)
		},
	})
	if err != nil {
		return Page{}, fmt.Errorf("listing memories: %w", err)
	}
	p := Page{Memories: make([]Memory, 0, len(rows)), NextCursor: next}
	for _, r := range rows {
		var d rowData
		if err := sjson.Unmarshal(r.Data, &d); err != nil {
			return Page{}, fmt.Errorf("decoding memory %s: %w", r.RowID, err)
		}
		p.Memories = append(p.Memories, d.memory())
	}
	if err := s.joinNumbers(p.Memories); err != nil {
		return Page{}, err
	}
	return p, nil
}

// SearchOptions is a full-text search.
type SearchOptions struct {
	Filter
	// Query is matched against content; empty lists matching memories newest first.
	Query string
	// Limit caps the results (default 20, at most 1000).
	Limit int
}

// Result is one search hit.
type Result struct {
	Memory
	Score float64 `json:"score"`
}

// Search returns memories matching o, best first. It sees every write committed before it
// was called (read-your-writes).
func (s *Service) Search(ctx context.Context, o SearchOptions) ([]Result, error) {
	if o.MinImportance < 0 || o.MinImportance > 10 {
		return nil, invalid("min_importance", "must be between 0 and 10")
	}
	head, _ := s.db.QueueHead()
	wctx, cancel := clock.WithTimeout(ctx, s.clk, s.wait)
	defer cancel()
	if err := s.idx.WaitFor(wctx, head); err != nil {
		return nil, fmt.Errorf("searching memories: %w", err)
	}
	hits, err := s.idx.Search(ctx, search.Query{Text: o.Query, Project: o.Project, Category: o.Category,
		MinImportance: o.MinImportance, Tags: o.Tags, Limit: o.Limit})
	if err != nil {
		return nil, fmt.Errorf("searching memories: %w", err)
	}
	out := make([]Result, 0, len(hits))
	ms := make([]Memory, 0, len(hits))
	err = s.db.View(func(txn *store.Txn) error {
		for _, h := range hits {
			var d rowData
			live := false
			err := txn.RowData(store.TableMemories, h.ID, func(data []byte, deleted bool) error {
				// deleted since the search: the index will drop it
				live = !deleted && sjson.Unmarshal(data, &d) == nil
				return nil
			})
			if errors.Is(err, store.ErrNotFound) || (err == nil && !live) {
				continue
			}
			if err != nil {
				return err
			}
			ms = append(ms, d.memory())
			out = append(out, Result{Score: h.Score})
		}
		// In the same read transaction: one snapshot for the hits and their numbers.
		return joinNumbersTxn(txn, ms)
	})
	if err != nil {
		return nil, fmt.Errorf("loading search hits: %w", err)
	}
	for i := range out {
		out[i].Memory = ms[i]
	}
	return out, nil
}

// numberData is the data of a memory_numbers row (written by home).
type numberData struct {
	Number    uint64  `json:"number"`
	EventHash *string `json:"event_hash"`
}

// joinNumbers fills Number and EventHash from memory_numbers.
func (s *Service) joinNumbers(ms []Memory) error {
	if len(ms) == 0 {
		return nil
	}
	if err := s.db.View(func(txn *store.Txn) error { return joinNumbersTxn(txn, ms) }); err != nil {
		return fmt.Errorf("reading memory numbers: %w", err)
	}
	return nil
}

// joinNumbersTxn is joinNumbers inside txn.
func joinNumbersTxn(txn *store.Txn, ms []Memory) error {
	for i := range ms {
		var nd numberData
		live := false
		err := txn.RowData(store.TableMemoryNumbers, ms[i].ID, func(data []byte, deleted bool) error {
			live = !deleted && sjson.Unmarshal(data, &nd) == nil && nd.Number != 0
			return nil
		})
		if errors.Is(err, store.ErrNotFound) || (err == nil && !live) {
			continue
		}
		if err != nil {
			return err
		}
		n := nd.Number
		ms[i].Number = &n
		ms[i].EventHash = nd.EventHash
	}
	return nil
}

// Counts is how many live memories there are, in total, per project and per
// category (the instance summaries of federation).
type Counts struct {
	Total      int
	Projects   map[string]int
	Categories map[string]int
}

// Count reads the store's maintained counts of live memories (store.DB.CountRows and
// CountBy, one read transaction): no scan, however many memories there are.
func (s *Service) Count(ctx context.Context) (Counts, error) {
	if err := ctx.Err(); err != nil {
		return Counts{}, err
	}
	var c Counts
	err := s.db.View(func(txn *store.Txn) error {
		rc, err := txn.CountRows(store.TableMemories)
		if err != nil {
			return err
		}
		c.Total = rc.Live
		if c.Projects, err = txn.CountBy(store.TableMemories, "project"); err != nil {
			return err
		}
		c.Categories, err = txn.CountBy(store.TableMemories, "category")
		return err
	})
	if err != nil {
		return Counts{}, fmt.Errorf("counting memories: %w", err)
	}
	return c, nil
}
