package search

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis/lang/en"
	"github.com/blevesearch/bleve/v2/mapping"
	"github.com/blevesearch/bleve/v2/search/query"

	"github.com/crow-sync/crow/store"
)

// mappingVersion is bumped whenever the index mapping changes; an index built with another
// version is rebuilt. 2: the table and text fields (records, records.go). 3: no term vectors
// and no doc values but created_at's (newMapping). 4: importance and created_at are one
// keyword term each (importanceTerm, createdAtTerm), not 16 numeric prefix terms each.
const mappingVersion = "4"

var (
	keySeq     = []byte("crow_seq")
	keyMapping = []byte("crow_mapping")
)

// ErrClosed is returned by WaitFor and Search after the Index is closed.
var ErrClosed = errors.New("search index closed")

// Index is the bleve index of memories. It is safe for concurrent use.
//
// Batches are near-real-time: the scorch index runs with unsafe_batch, so a batch is
// searchable as soon as it is introduced (in memory) and persisted by scorch's persister in
// the background. Two positions follow the q/ queue: Seq, what searches see, and Durable,
// what is on disk (advanced by the batch's persisted callback). The change queue is pruned
// only up to Durable, so a crash before a persist loses nothing: the next Open reads the
// persisted position and the Indexer re-indexes from there.
type Index struct {
	bi     bleve.Index
	dir    string
	log    *slog.Logger
	fresh  bool          // created empty at Open; the Indexer rebuilds it from the table
	closed chan struct{} // closed by Close

	mu sync.Mutex // guards seq, durable, seqCh, durableCh
	// seq is the highest q/ seq reflected in the index (searchable, maybe not yet persisted).
	seq uint64
	// durable is the highest q/ seq persisted in the index (≤ seq).
	durable uint64
	// seqCh is closed (and replaced) when seq advances; durableCh when durable does (so a
	// persist does not wake the searches waiting for read-your-writes).
	seqCh, durableCh chan struct{}
	// hurry (capacity 1) tells a lingering Indexer that a search waits.
	hurry chan struct{}
	// noSpace is set while the Indexer is paused for a full disk: WaitFor does not wait
	// for changes it cannot index (a search answers from the index as it is).
	noSpace bool
	// persisted (capacity 1) tells the Indexer that durable advanced (it prunes the queue).
	persisted chan struct{}
	// waiting counts the WaitFor calls waiting (searches waiting for read-your-writes).
	waiting atomic.Int32

	cfg       map[string]any // scorch runtime configuration
	closeOnce sync.Once
}

// closeFlushWait bounds how long Close waits for the persister to catch up.
const closeFlushWait = 10 * time.Second

// persisterNap is how long scorch's persister naps after each persist, so the segments
// introduced meanwhile (one per indexer batch: under load, one per search waiting for
// read-your-writes) are merged in memory and written as one file: one persist, its fsyncs
// and one file for the merger per nap, not one per batch. Under BenchmarkLoad64 (about 50
// batches a second) the mean rate was 1,504 req/s without a nap (10 runs), 1,695 with
// 200 ms (9), 1,770 with 500 ms (3) and 1,773 with 1 s (9), interleaved; search p50 ~55 →
// ~39 ms (docs/benchmarks/load.md, session 19). Searches do not wait for it (a batch is
// searchable once introduced); the change queue is pruned up to what is persisted, so a
// crash re-indexes at most a nap's worth; a clean stop waits for the nap to end (Close,
// the Indexer's shutdown), so it is kept short.
const persisterNap = 500 * time.Millisecond

// scorchConfig is the runtime configuration of the scorch index; tests add to it (an
// extra "scorchPersisterOptions" replaces persisterNap's).
func scorchConfig(extra map[string]any) map[string]any {
	cfg := map[string]any{
		"unsafe_batch": true,
		"scorchPersisterOptions": map[string]any{
			"PersisterNapTimeMSec": int(persisterNap / time.Millisecond),
		},
	}
	for k, v := range extra {
		cfg[k] = v
	}
	return cfg
}

// Open opens the index in dir, creating it if missing. An index that cannot be opened, has
// another mapping version or no recorded position is removed and recreated empty (marked for
// rebuild by the Indexer). logger may be nil.
func Open(dir string, logger *slog.Logger) (*Index, error) {
	return open(dir, logger, nil)
}

// open is Open with extra scorch configuration (tests).
func open(dir string, logger *slog.Logger, extra map[string]any) (*Index, error) {
	if logger == nil {
		logger = slog.Default()
	}
	ix := &Index{dir: dir, log: logger.With("component", "search"), closed: make(chan struct{}),
		seqCh: make(chan struct{}), durableCh: make(chan struct{}), hurry: make(chan struct{}, 1), persisted: make(chan struct{}, 1),
		cfg: scorchConfig(extra)}
	bi, err := bleve.OpenUsing(dir, ix.cfg)
	switch {
	case errors.Is(err, bleve.ErrorIndexPathDoesNotExist):
		return ix.create()
	case err != nil:
		ix.log.Warn("search index unreadable, rebuilding", "dir", dir, "err", err)
		return ix.recreate()
	}
	ix.bi = bi
	mv, err := bi.GetInternal(keyMapping)
	if err != nil || string(mv) != mappingVersion {
		ix.log.Warn("search index has another mapping version, rebuilding", "dir", dir, "version", string(mv))
		bi.Close()
		return ix.recreate()
	}
	sb, err := bi.GetInternal(keySeq)
	if err != nil || len(sb) != 8 {
		ix.log.Warn("search index has no recorded position (interrupted rebuild?), rebuilding", "dir", dir)
		bi.Close()
		return ix.recreate()
	}
	ix.seq = binary.BigEndian.Uint64(sb)
	ix.durable = ix.seq
	return ix, nil
}

func (ix *Index) recreate() (*Index, error) {
	if err := os.RemoveAll(ix.dir); err != nil {
		return nil, fmt.Errorf("removing search index %s: %w", ix.dir, err)
	}
	return ix.create()
}

func (ix *Index) create() (*Index, error) {
	bi, err := bleve.NewUsing(ix.dir, newMapping(), bleve.Config.DefaultIndexType, bleve.Config.DefaultKVStore, ix.cfg)
	if err != nil {
		return nil, fmt.Errorf("creating search index in %s: %w", ix.dir, err)
	}
	// bleve wrote its mapping in a batch of its own, persisted in the background: this one,
	// persisted after it, is waited for, so the new index is on disk whole (a crash later
	// finds it without a position and rebuilds it).
	b := bi.NewBatch()
	b.SetInternal(keyMapping, []byte(mappingVersion))
	persisted := make(chan error, 1)
	b.SetPersistedCallback(func(err error) { persisted <- err })
	err = bi.Batch(b)
	if err == nil {
		err = <-persisted
	}
	if err != nil {
		bi.Close()
		return nil, fmt.Errorf("creating search index in %s: %w", ix.dir, err)
	}
	ix.bi, ix.fresh = bi, true
	return ix, nil
}

func newMapping() mapping.IndexMapping {
	// Nothing is stored (hits are ids; rows come from the store). Term vectors (each
	// token's positions) serve phrase queries and highlighting, neither of which crow runs:
	// match and term queries score by term frequency and norm alone. Doc values serve
	// sorting and facets: only created_at sorts (a listing without text). Without the two the
	// index is smaller and cheaper to build and merge (docs/BENCHMARKS.md, session 12).
	text := bleve.NewTextFieldMapping()
	text.Analyzer = en.AnalyzerName
	text.Store, text.IncludeInAll = false, false
	text.IncludeTermVectors, text.DocValues = false, false
	kw := func() *mapping.FieldMapping {
		f := bleve.NewKeywordFieldMapping()
		f.Store, f.IncludeInAll = false, false
		f.IncludeTermVectors, f.DocValues = false, false
		return f
	}
	// importance and created_at are keywords, one term per memory: bleve indexes a number
	// or a date as 16 prefix-coded terms (precision step 4) for range queries, and crow
	// runs none on either: importance is filtered by "at least", a disjunction of at most
	// ten terms (importanceTerm), and created_at only sorts, by its doc values, which
	// createdAtTerm's fixed-width text orders as the time does. Those 32 terms were as many
	// as a memory's words (most of them unique per memory, so dictionaries as large as the
	// corpus) and about a third of the index's build time (docs/BENCHMARKS.md, session 25).
	sorted := kw()
	sorted.DocValues = true

	dm := bleve.NewDocumentStaticMapping()
	dm.AddFieldMappingsAt("content", text)
	dm.AddFieldMappingsAt("project", kw())
	dm.AddFieldMappingsAt("category", kw())
	dm.AddFieldMappingsAt("tags", kw())
	dm.AddFieldMappingsAt("importance", kw())
	dm.AddFieldMappingsAt("created_at", sorted)
	dm.AddFieldMappingsAt("table", kw())
	dm.AddFieldMappingsAt("text", text)

	im := bleve.NewIndexMapping()
	im.DefaultMapping = dm
	im.DefaultAnalyzer = en.AnalyzerName
	im.StoreDynamic = false
	im.IndexDynamic = false
	im.DocValuesDynamic = false
	return im
}

// Close closes the index. Stop the Indexer first. It waits (a few seconds at most) for the
// persister to write what searches already see, so a clean stop does not re-index at the
// next start; what it could not persist is re-indexed from the change queue then.
func (ix *Index) Close() error {
	var err error
	ix.closeOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), closeFlushWait)
		if werr := ix.WaitDurable(ctx, ix.Seq()); werr != nil {
			ix.log.Warn("closing search index before its last changes were persisted; they are re-indexed at the next start", "err", werr)
		}
		cancel()
		close(ix.closed)
		err = ix.bi.Close()
	})
	if err != nil {
		return fmt.Errorf("closing search index: %w", err)
	}
	return nil
}

// Seq returns the highest q/ seq reflected in the index: every change up to it is
// searchable (it may not be persisted yet, see Durable).
func (ix *Index) Seq() uint64 {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	return ix.seq
}

// Durable returns the highest q/ seq persisted in the index: after a crash the index
// reopens at least there.
func (ix *Index) Durable() uint64 {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	return ix.durable
}

func (ix *Index) setSeq(seq uint64) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if seq > ix.seq {
		ix.seq = seq
		close(ix.seqCh)
		ix.seqCh = make(chan struct{})
	}
}

func (ix *Index) noSpaceNow() bool {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	return ix.noSpace
}

// setNoSpace records whether the Indexer is paused for a full disk and wakes WaitFor.
func (ix *Index) setNoSpace(v bool) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if ix.noSpace != v {
		ix.noSpace = v
		close(ix.seqCh)
		ix.seqCh = make(chan struct{})
	}
}

// setDurable records that the index persisted every change up to seq (scorch's persisted
// callback, on the persister's goroutine).
func (ix *Index) setDurable(seq uint64) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if seq > ix.durable {
		ix.durable = seq
		close(ix.durableCh)
		ix.durableCh = make(chan struct{})
		select {
		case ix.persisted <- struct{}{}:
		default:
		}
	}
}

// WaitDurable blocks until the index has persisted every change up to seq, ctx ends or the
// index is closed.
func (ix *Index) WaitDurable(ctx context.Context, seq uint64) error {
	for {
		ix.mu.Lock()
		cur, ch := ix.durable, ix.durableCh
		ix.mu.Unlock()
		if cur >= seq {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("waiting for search index to persist %d (at %d): %w", seq, cur, ctx.Err())
		case <-ix.closed:
			return ErrClosed
		}
	}
}

// WaitFor blocks until the index reflects (makes searchable) every change up to seq, ctx ends
// or the index is closed. It does not wait for a persist. While the Indexer is paused for a
// full disk it returns at once (the index lags until space returns).
func (ix *Index) WaitFor(ctx context.Context, seq uint64) error {
	ix.waiting.Add(1)
	defer ix.waiting.Add(-1)
	return ix.waitFor(ctx, seq)
}

// Awaited reports whether a WaitFor is waiting: a search waits for the index.
func (ix *Index) Awaited() bool { return ix.waiting.Load() > 0 }

// WaitBehind is WaitFor for a writer pacing itself to the index (memory.Service): it
// does not count as a search waiting (Awaited).
func (ix *Index) WaitBehind(ctx context.Context, seq uint64) error { return ix.waitFor(ctx, seq) }

func (ix *Index) waitFor(ctx context.Context, seq uint64) error {
	for {
		ix.mu.Lock()
		cur, ch, noSpace := ix.seq, ix.seqCh, ix.noSpace
		ix.mu.Unlock()
		if cur >= seq || noSpace {
			return nil
		}
		select {
		case ix.hurry <- struct{}{}:
		default:
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("waiting for search index to reach %d (at %d): %w", seq, cur, ctx.Err())
		case <-ix.closed:
			return ErrClosed
		}
	}
}

// Count returns the number of indexed documents (memories and records).
func (ix *Index) Count() (uint64, error) {
	n, err := ix.bi.DocCount()
	if err != nil {
		return 0, fmt.Errorf("counting search index: %w", err)
	}
	return n, nil
}

// Query is a search over memories. Empty filters match everything.
type Query struct {
	// Text is matched against content (English analysis: stemming, stop words). Empty matches
	// all memories, newest first.
	Text          string
	Project       string
	Category      string
	MinImportance int
	// Tags: a memory must carry every one of them.
	Tags []string
	// Limit caps the hits (default 20, at most 1000).
	Limit int
}

// Hit is one search result.
type Hit struct {
	ID    string
	Score float64
}

// Search runs q and returns memory ids, best first.
func (ix *Index) Search(ctx context.Context, q Query) ([]Hit, error) {
	select {
	case <-ix.closed:
		return nil, ErrClosed
	default:
	}
	limit := q.Limit
	if limit <= 0 {
		limit = 20
	}
	limit = min(limit, 1000)
	var must []query.Query
	text := strings.TrimSpace(q.Text)
	if text != "" {
		must = append(must, ix.textQuery("content", text))
	}
	term := func(field, v string) {
		tq := bleve.NewTermQuery(v)
		tq.SetField(field)
		must = append(must, tq)
	}
	if q.Project != "" {
		term("project", q.Project)
	}
	if q.Category != "" {
		term("category", q.Category)
	}
	for _, t := range q.Tags {
		term("tags", t)
	}
	if q.MinImportance > 0 {
		// A minimum above maxImportanceTerm (the API refuses one) is taken as it.
		var atLeast []query.Query
		for i := min(q.MinImportance, maxImportanceTerm); i <= maxImportanceTerm; i++ {
			tq := bleve.NewTermQuery(importanceTerm(i))
			tq.SetField("importance")
			atLeast = append(atLeast, tq)
		}
		must = append(must, bleve.NewDisjunctionQuery(atLeast...))
	}
	var bq query.Query
	switch len(must) {
	case 0:
		// Every memory, and no record (records.go).
		tq := bleve.NewTermQuery(store.TableMemories)
		tq.SetField("table")
		bq = tq
	case 1:
		bq = must[0]
	default:
		bq = bleve.NewConjunctionQuery(must...)
	}
	req := bleve.NewSearchRequestOptions(bq, limit, 0, false)
	if text == "" {
		req.SortBy([]string{"-created_at", "_id"})
	}
	res, err := ix.bi.SearchInContext(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("searching: %w", err)
	}
	hits := make([]Hit, len(res.Hits))
	for i, h := range res.Hits {
		hits[i] = Hit{ID: h.ID, Score: h.Score}
	}
	return hits, nil
}

// textQuery matches text in field as bleve's match query does (any of its
// analysed words), but a text of one word is a term query: the match query
// wraps even one word in a disjunction, whose bookkeeping per matching
// document is ~15 % of a one-word search.
func (ix *Index) textQuery(field, text string) query.Query {
	m := ix.bi.Mapping()
	if a := m.AnalyzerNamed(m.AnalyzerNameForPath(field)); a != nil {
		if toks := a.Analyze([]byte(text)); len(toks) == 1 {
			tq := bleve.NewTermQuery(string(toks[0].Term))
			tq.SetField(field)
			return tq
		}
	}
	mq := bleve.NewMatchQuery(text)
	mq.SetField(field)
	return mq
}

// memoryDoc is what the index stores of a memories row. The field names are those of the
// memories row data (package memory).
type memoryDoc struct {
	Content    string    `json:"content"`
	Project    string    `json:"project"`
	Category   string    `json:"category"`
	Tags       []string  `json:"tags"`
	Importance int       `json:"importance"`
	CreatedAt  time.Time `json:"created_at"`
}

// maxImportanceTerm is the highest importance term: memories' importance is 1–10
// (memory's validation); a higher one (a row written some other way) is indexed as 10,
// so "at least 10" still finds it.
const maxImportanceTerm = 10

// importanceTerm is the importance field's term for importance i: its decimal digits,
// i clamped to 0–maxImportanceTerm.
func importanceTerm(i int) string {
	return strconv.Itoa(min(max(i, 0), maxImportanceTerm))
}

// createdAtTerm is the created_at field's term for t: UTC, fixed width to the
// nanosecond, so that its text sorts as the time does (years 0–9999).
func createdAtTerm(t time.Time) string {
	return t.UTC().Format("2006-01-02T15:04:05.000000000Z")
}

func (d memoryDoc) fields() map[string]any {
	m := map[string]any{
		"content":    d.Content,
		"project":    d.Project,
		"category":   d.Category,
		"importance": importanceTerm(d.Importance),
		"created_at": createdAtTerm(d.CreatedAt),
		"table":      store.TableMemories,
	}
	if len(d.Tags) > 0 {
		m["tags"] = d.Tags
	}
	return m
}
