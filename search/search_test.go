package search

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/search/query"

	"github.com/crow-sync/crow/clock"
	"github.com/crow-sync/crow/store"
	"github.com/crow-sync/crow/store/storetest"
)

type mem struct {
	ID         string    `json:"id"`
	Content    string    `json:"content"`
	Project    string    `json:"project"`
	Category   string    `json:"category"`
	Tags       []string  `json:"tags"`
	Importance int       `json:"importance"`
	CreatedAt  time.Time `json:"created_at"`
}

func put(t *testing.T, w *store.Writer, op store.Op, m mem) uint64 {
	t.Helper()
	b, _ := json.Marshal(m)
	rows, err := w.Write(context.Background(), store.Mutation{Table: store.TableMemories, RowID: m.ID, Op: op, Data: b})
	if err != nil {
		t.Fatal(err)
	}
	return rows[0].Seq
}

func del(t *testing.T, w *store.Writer, id string) uint64 {
	t.Helper()
	rows, err := w.Write(context.Background(), store.Mutation{Table: store.TableMemories, RowID: id, Op: store.OpDelete})
	if err != nil {
		t.Fatal(err)
	}
	return rows[0].Seq
}

// runIndexer opens the index in dir and runs an Indexer until the returned stop is called.
func runIndexer(t *testing.T, db *store.DB, dir string) (*Index, func()) {
	t.Helper()
	ix, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- NewIndexer(db, ix).Serve(ctx) }()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("indexer: %v", err)
		}
		ix.Close()
	}
	t.Cleanup(stop)
	return ix, stop
}

func caughtUp(t *testing.T, db *store.DB, ix *Index) {
	t.Helper()
	head, _ := db.QueueHead()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := ix.WaitFor(ctx, head); err != nil {
		t.Fatal(err)
	}
}

// persisted waits until the index has persisted what it serves.
func persisted(t *testing.T, ix *Index) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := ix.WaitDurable(ctx, ix.Seq()); err != nil {
		t.Fatal(err)
	}
}

func ids(t *testing.T, ix *Index, q Query) []string {
	t.Helper()
	hits, err := ix.Search(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, h := range hits {
		out = append(out, h.ID)
	}
	slices.Sort(out)
	return out
}

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func corpus() []mem {
	return []mem{
		{ID: "m1", Content: "Decided to use badger for the embedded store", Project: "crow", Category: "decision", Tags: []string{"db", "storage"}, Importance: 8, CreatedAt: t0},
		{ID: "m2", Content: "Bleve indexes memories for full-text search", Project: "crow", Category: "note", Tags: []string{"search"}, Importance: 5, CreatedAt: t0.Add(time.Hour)},
		{ID: "m3", Content: "Buy milk and coffee beans", Project: "home", Category: "todo", Tags: []string{"shopping"}, Importance: 2, CreatedAt: t0.Add(2 * time.Hour)},
		{ID: "m4", Content: "The storage layer fsyncs every batch", Project: "crow", Category: "note", Tags: []string{"db"}, Importance: 6, CreatedAt: t0.Add(3 * time.Hour)},
	}
}

func TestSearchAndFilters(t *testing.T) {
	env := storetest.Start(t, t.TempDir())
	ix, _ := runIndexer(t, env.DB, filepath.Join(t.TempDir(), "index"))
	for _, m := range corpus() {
		put(t, env.Writer, store.OpInsert, m)
	}
	// A row of another table is indexed as a record (records_test.go) and never found by a
	// memory search, whatever its fields.
	if _, err := env.Writer.Write(context.Background(), store.Mutation{Table: store.TableNotes, RowID: "n", Op: store.OpInsert, Data: json.RawMessage(`{"content":"badger"}`)}); err != nil {
		t.Fatal(err)
	}
	caughtUp(t, env.DB, ix)

	cases := []struct {
		q    Query
		want []string
	}{
		{Query{Text: "badger"}, []string{"m1"}},
		{Query{Text: "stores"}, []string{"m1"}}, // stemming: stores → store
		{Query{Text: "memory"}, []string{"m2"}}, // memories → memory
		{Query{Project: "crow"}, []string{"m1", "m2", "m4"}},
		{Query{Text: "storage", Category: "note"}, []string{"m4"}},
		{Query{Text: "storage badger"}, []string{"m1", "m4"}},
		{Query{MinImportance: 6}, []string{"m1", "m4"}},
		{Query{Tags: []string{"db"}}, []string{"m1", "m4"}},
		{Query{Tags: []string{"db", "storage"}}, []string{"m1"}},
		{Query{Text: "milk", Project: "crow"}, nil},
		{Query{}, []string{"m1", "m2", "m3", "m4"}},
	}
	for _, c := range cases {
		if got := ids(t, ix, c.q); !slices.Equal(got, c.want) {
			t.Errorf("%+v → %v, want %v", c.q, got, c.want)
		}
	}
	hits, err := ix.Search(context.Background(), Query{Limit: 2})
	if err != nil || len(hits) != 2 || hits[0].ID != "m4" || hits[1].ID != "m3" {
		t.Fatalf("no text: newest first, limited: %+v %v", hits, err)
	}
	hits, _ = ix.Search(context.Background(), Query{Text: "storage fsyncs badger"})
	if len(hits) != 2 || hits[0].ID != "m4" || hits[0].Score <= hits[1].Score {
		t.Fatalf("ranking: %+v", hits)
	}

	// Update and delete are reflected.
	m := corpus()[2]
	m.Content = "Buy tea"
	put(t, env.Writer, store.OpUpdate, m)
	seq := del(t, env.Writer, "m1")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := ix.WaitFor(ctx, seq); err != nil {
		t.Fatal(err)
	}
	if got := ids(t, ix, Query{Text: "badger"}); got != nil {
		t.Errorf("deleted memory still found: %v", got)
	}
	if got := ids(t, ix, Query{Text: "tea"}); !slices.Equal(got, []string{"m3"}) {
		t.Errorf("updated memory: %v", got)
	}
	if got := ids(t, ix, Query{Text: "milk"}); got != nil {
		t.Errorf("old content still found: %v", got)
	}
	if n, _ := ix.Count(); n != 3+1 { // and the note
		t.Errorf("count %d", n)
	}
}

func queueLen(t *testing.T, db *store.DB) int {
	n := 0
	err := db.View(func(txn *store.Txn) error {
		return txn.ScanQueue(0, 0, func(store.QueueEntry) error { n++; return nil })
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestCrashCatchUpAndRebuild: rows written while no indexer runs are caught up from the
// recorded position; a deleted or corrupt index directory is rebuilt from the table.
func TestCrashCatchUpAndRebuild(t *testing.T) {
	dbDir, ixDir := t.TempDir(), filepath.Join(t.TempDir(), "index")
	env := storetest.Start(t, dbDir)
	cs := corpus()
	put(t, env.Writer, store.OpInsert, cs[0])
	put(t, env.Writer, store.OpInsert, cs[1])

	ix, stop := runIndexer(t, env.DB, ixDir)
	caughtUp(t, env.DB, ix)
	if got := ids(t, ix, Query{}); !slices.Equal(got, []string{"m1", "m2"}) {
		t.Fatalf("first run: %v", got)
	}
	stop() // "crash" of the indexer: the store goes on without it
	put(t, env.Writer, store.OpInsert, cs[2])
	put(t, env.Writer, store.OpInsert, cs[3])
	del(t, env.Writer, "m1")
	if q := queueLen(t, env.DB); q < 3 {
		t.Fatalf("queue has %d entries, want the 3 unindexed ones", q)
	}
	env.Close()

	// Reopen everything: the index catches up from its own recorded position.
	env = storetest.Start(t, dbDir)
	ix, stop = runIndexer(t, env.DB, ixDir)
	if ix.fresh {
		t.Fatal("existing index treated as fresh")
	}
	caughtUp(t, env.DB, ix)
	if got := ids(t, ix, Query{}); !slices.Equal(got, []string{"m2", "m3", "m4"}) {
		t.Fatalf("after catch-up: %v", got)
	}
	stop()
	if q := queueLen(t, env.DB); q != 0 {
		t.Errorf("queue not pruned: %d entries", q)
	}

	// Index directory lost: rebuilt from the table (tombstones stay out).
	if err := os.RemoveAll(ixDir); err != nil {
		t.Fatal(err)
	}
	ix, stop = runIndexer(t, env.DB, ixDir)
	caughtUp(t, env.DB, ix)
	if got := ids(t, ix, Query{}); !slices.Equal(got, []string{"m2", "m3", "m4"}) {
		t.Fatalf("after rebuild: %v", got)
	}
	head, _ := env.DB.QueueHead()
	if ix.Seq() != head {
		t.Fatalf("rebuilt position %d, head %d", ix.Seq(), head)
	}
	stop()

	// Corrupt index: rebuilt too.
	entries, _ := os.ReadDir(ixDir)
	for _, e := range entries {
		if err := os.WriteFile(filepath.Join(ixDir, e.Name()), []byte("garbage"), 0o600); err != nil && !e.IsDir() {
			t.Fatal(err)
		}
	}
	ix, _ = runIndexer(t, env.DB, ixDir)
	caughtUp(t, env.DB, ix)
	if got := ids(t, ix, Query{Text: "bleve"}); !slices.Equal(got, []string{"m2"}) {
		t.Fatalf("after corrupt rebuild: %v", got)
	}
}

// TestInterruptedRebuild: an index without a recorded position is rebuilt.
func TestInterruptedRebuild(t *testing.T) {
	env := storetest.Start(t, t.TempDir())
	ixDir := filepath.Join(t.TempDir(), "index")
	for _, m := range corpus() {
		put(t, env.Writer, store.OpInsert, m)
	}
	ix, err := Open(ixDir, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Simulate a crash after a partial rebuild batch: one doc, no position.
	b := ix.bi.NewBatch()
	if err := b.Index("m1", memoryDoc{Content: "stale"}.fields()); err != nil {
		t.Fatal(err)
	}
	if err := ix.bi.Batch(b); err != nil {
		t.Fatal(err)
	}
	ix.Close()
	ix, _ = runIndexer(t, env.DB, ixDir)
	caughtUp(t, env.DB, ix)
	if got := ids(t, ix, Query{Text: "stale"}); got != nil {
		t.Fatalf("partial rebuild survived: %v", got)
	}
	if n, _ := ix.Count(); n != 4 {
		t.Fatalf("count %d", n)
	}
}

func TestWaitFor(t *testing.T) {
	env := storetest.Start(t, t.TempDir())
	ix, err := Open(filepath.Join(t.TempDir(), "index"), nil)
	if err != nil {
		t.Fatal(err)
	}
	seq := put(t, env.Writer, store.OpInsert, corpus()[0])
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := ix.WaitFor(ctx, seq); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("no indexer: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- ix.WaitFor(context.Background(), seq) }()
	sctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- NewIndexer(env.DB, ix).Serve(sctx) }()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	stop()
	<-served
	ix.Close()
	if err := ix.WaitFor(context.Background(), seq+1); !errors.Is(err, ErrClosed) {
		t.Fatalf("after close: %v", err)
	}
}

func TestManyChangesBatches(t *testing.T) {
	env := storetest.Start(t, t.TempDir())
	ix, _ := runIndexer(t, env.DB, filepath.Join(t.TempDir(), "index"))
	var muts []store.Mutation
	for i := range 1500 {
		b, _ := json.Marshal(mem{ID: fmt.Sprint(i), Content: fmt.Sprintf("item number %d", i), Importance: 1 + i%10, CreatedAt: t0})
		muts = append(muts, store.Mutation{Table: store.TableMemories, RowID: fmt.Sprint(i), Op: store.OpInsert, Data: b})
		if len(muts) == 100 {
			if _, err := env.Writer.Write(context.Background(), muts...); err != nil {
				t.Fatal(err)
			}
			muts = nil
		}
	}
	caughtUp(t, env.DB, ix)
	if n, _ := ix.Count(); n != 1500 {
		t.Fatalf("count %d", n)
	}
	hits, _ := ix.Search(context.Background(), Query{MinImportance: 10, Limit: 1000})
	if len(hits) != 150 {
		t.Fatalf("importance 10: %d", len(hits))
	}
}

// TestLingerCutShortByWaitingSearch: a lingering indexer (here for an hour)
// still answers a search that waits for read-your-writes at once.
func TestLingerCutShortByWaitingSearch(t *testing.T) {
	env := storetest.Start(t, t.TempDir())
	ix, err := Open(filepath.Join(t.TempDir(), "index"), nil)
	if err != nil {
		t.Fatal(err)
	}
	x := NewIndexer(env.DB, ix)
	x.Linger = time.Hour
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- x.Serve(ctx) }()
	defer func() { stop(); <-served; ix.Close() }()

	caughtUp(t, env.DB, ix) // the initial pass does not linger
	for i, m := range corpus()[:3] {
		seq := put(t, env.Writer, store.OpInsert, m)
		wctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := ix.WaitFor(wctx, seq)
		cancel()
		if err != nil {
			t.Fatalf("write %d: a waiting search did not cut the linger short: %v", i, err)
		}
	}
	if got := ids(t, ix, Query{Limit: 10}); len(got) != 3 {
		t.Fatalf("index holds %v, want 3 memories", got)
	}
}

// TestLingerOnFakeClock: after a change the indexer waits Linger on its
// clock, so a burst of writes is indexed together once the clock reaches it.
func TestLingerOnFakeClock(t *testing.T) {
	env := storetest.Start(t, t.TempDir())
	ix, err := Open(filepath.Join(t.TempDir(), "index"), nil)
	if err != nil {
		t.Fatal(err)
	}
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	x := NewIndexer(env.DB, ix)
	x.Linger, x.Clock = 10*time.Second, clk
	idle := serveIndexer(t, x, ix)
	<-idle // caught up (the initial pass does not linger) and waiting for a change

	var last uint64
	for i, m := range corpus()[:3] {
		last = put(t, env.Writer, store.OpInsert, m)
		if i == 0 {
			clk.BlockUntil(1) // the first write started the linger
		}
	}
	if p := clk.Pending(); len(p) != 1 || p[0] != x.Linger {
		t.Fatalf("pending timers %v, want the linger alone", p)
	}
	clk.Advance(x.Linger - time.Nanosecond)
	if seq := ix.Seq(); seq != 0 {
		t.Fatalf("indexed up to %d before the linger ended", seq)
	}
	clk.Advance(time.Nanosecond)
	caughtUp(t, env.DB, ix)
	if got := ids(t, ix, Query{Limit: 10}); len(got) != 3 || ix.Seq() != last {
		t.Fatalf("after the linger the index holds %v at %d, want 3 memories at %d", got, ix.Seq(), last)
	}
}

// TestIndexerYieldsToForeground: while the foreground (API writes,
// replication) keeps touching, the indexer waits for a pause of YieldPause
// before a batch, for YieldMax at most; a search waiting for read-your-writes
// does not wait for either.
func TestIndexerYieldsToForeground(t *testing.T) {
	env := storetest.Start(t, t.TempDir())
	ix, err := Open(filepath.Join(t.TempDir(), "index"), nil)
	if err != nil {
		t.Fatal(err)
	}
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	fg := clock.NewQuiet(clk, time.Hour, time.Hour) // only Idle is used
	x := NewIndexer(env.DB, ix)
	x.Linger, x.Clock, x.Foreground = 0, clk, fg
	x.YieldPause, x.YieldMax = 100*time.Millisecond, time.Second
	idle := serveIndexer(t, x, ix)
	<-idle // nothing touched yet: caught up without waiting

	ms := corpus()
	// A pause: the batch waits YieldPause after the last touch.
	fg.Touch()
	seq := put(t, env.Writer, store.OpInsert, ms[0])
	clk.BlockUntil(1)
	clk.Advance(99 * time.Millisecond)
	if got := ix.Seq(); got >= seq {
		t.Fatalf("indexed %d before the foreground paused", got)
	}
	clk.Advance(time.Millisecond)
	<-idle
	if got := ix.Seq(); got < seq {
		t.Fatalf("index at %d after the pause, want %d", got, seq)
	}

	// No pause: the batch waits YieldMax. The foreground touches every 50 ms
	// of the fake clock while the indexer holds the change.
	fg.Touch()
	start := clk.Now()
	seq = put(t, env.Writer, store.OpInsert, ms[1])
	deadline := time.Now().Add(10 * time.Second)
	for ix.Seq() < seq {
		if time.Now().After(deadline) {
			t.Fatalf("not indexed after %v of the fake clock", clk.Since(start))
		}
		if len(clk.Pending()) == 0 { // the indexer is between timers (or indexing)
			time.Sleep(time.Millisecond)
			continue
		}
		clk.Advance(50 * time.Millisecond)
		fg.Touch()
	}
	if took := clk.Since(start); took < time.Second || took > time.Second+100*time.Millisecond {
		t.Fatalf("indexed %v after the change under constant touches, want YieldMax (1 s)", took)
	}

	// A waiting search: no wait at all, the clock standing still.
	fg.Touch()
	seq = put(t, env.Writer, store.OpInsert, ms[2])
	wctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := ix.WaitFor(wctx, seq); err != nil {
		t.Fatalf("a waiting search was held by the yield: %v", err)
	}
}

// serveIndexer runs x.Serve until the test ends (then closes ix) and returns
// a channel that receives when the indexer, caught up, starts waiting for a
// change.
func serveIndexer(t *testing.T, x *Indexer, ix *Index) <-chan struct{} {
	idle := make(chan struct{}, 1)
	x.idle = func() {
		select {
		case idle <- struct{}{}:
		default:
		}
	}
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- x.Serve(ctx) }()
	t.Cleanup(func() { stop(); <-served; ix.Close() })
	return idle
}

// TestOneWordSearchScoresAsMatchQuery: a one-word text is searched with a term query
// (textQuery), not bleve's match query; the hits, their order and their scores must be the
// match query's, with and without filters, and a text of several words (or of words the
// analyser drops) must still be the match query itself.
func TestOneWordSearchScoresAsMatchQuery(t *testing.T) {
	env := storetest.Start(t, t.TempDir())
	ix, _ := runIndexer(t, env.DB, filepath.Join(t.TempDir(), "index"))
	words := []string{"badger", "bleve", "storage", "store", "search", "memory", "sync", "fsync"}
	for i := range 60 {
		var content []string
		for j := range 3 + i%7 {
			content = append(content, words[(i*7+j*3)%len(words)])
		}
		put(t, env.Writer, store.OpInsert, mem{ID: fmt.Sprintf("m%02d", i), Content: strings.Join(content, " "),
			Project: fmt.Sprintf("p%d", i%3), CreatedAt: t0.Add(time.Duration(i) * time.Minute)})
	}
	caughtUp(t, env.DB, ix)
	matchHits := func(text, project string) []Hit {
		t.Helper()
		mq := bleve.NewMatchQuery(text)
		mq.SetField("content")
		var q query.Query = mq
		if project != "" {
			tq := bleve.NewTermQuery(project)
			tq.SetField("project")
			q = bleve.NewConjunctionQuery(mq, tq)
		}
		res, err := ix.bi.Search(bleve.NewSearchRequestOptions(q, 20, 0, false))
		if err != nil {
			t.Fatal(err)
		}
		var out []Hit
		for _, h := range res.Hits {
			out = append(out, Hit{ID: h.ID, Score: h.Score})
		}
		return out
	}
	for _, text := range []string{"badger", "Storage", "  sync ", "stores", "nothing", "the"} {
		for _, project := range []string{"", "p1"} {
			got, err := ix.Search(context.Background(), Query{Text: text, Project: project, Limit: 20})
			if err != nil {
				t.Fatal(err)
			}
			want := matchHits(text, project)
			if len(want) == 0 && text != "nothing" && text != "the" {
				t.Fatalf("%q: the match query finds nothing: the corpus does not test this", text)
			}
			if !slices.Equal(got, want) {
				t.Errorf("%q project %q:\n got %v\nwant %v", text, project, got, want)
			}
		}
	}
	if _, ok := ix.textQuery("content", "badger").(*query.TermQuery); !ok {
		t.Errorf("one word: %T, want a term query", ix.textQuery("content", "badger"))
	}
	for _, text := range []string{"badger store", "the"} {
		if _, ok := ix.textQuery("content", text).(*query.MatchQuery); !ok {
			t.Errorf("%q: %T, want the match query", text, ix.textQuery("content", text))
		}
	}
}

// TestKeywordTermsSortAsTheirValues checks the one-term encodings of mapping version 4:
// created_at's text sorts as the times do (the newest-first listing sorts by it), whatever
// their zone and down to the nanosecond, and importance is clamped to the terms a
// minimum-importance filter asks for.
func TestKeywordTermsSortAsTheirValues(t *testing.T) {
	east := time.FixedZone("east", 5*3600+1800)
	base := time.Date(2026, 12, 7, 3, 0, 0, 0, time.UTC)
	times := []time.Time{
		time.Date(1999, 12, 31, 23, 59, 59, 999999999, time.UTC),
		base,
		base.Add(time.Nanosecond),
		base.Add(time.Microsecond).In(east),
		base.Add(time.Second).In(east),
		base.Add(time.Hour),
		time.Date(2026, 12, 7, 9, 0, 0, 1, east), // 03:30:00.000000001 UTC
		time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC),
	}
	for i := range times {
		for j := range times {
			a, b := createdAtTerm(times[i]), createdAtTerm(times[j])
			if len(a) != len(b) || (a < b) != times[i].Before(times[j]) || (a == b) != times[i].Equal(times[j]) {
				t.Errorf("%v → %q and %v → %q do not sort as the times", times[i], a, times[j], b)
			}
		}
	}
	for i, want := range map[int]string{-3: "0", 0: "0", 1: "1", 7: "7", 10: "10", 11: "10", 500: "10"} {
		if got := importanceTerm(i); got != want {
			t.Errorf("importanceTerm(%d) = %q, want %q", i, got, want)
		}
	}
}

// TestOlderMappingIsRebuilt: an index written under another mapping version (as every index
// of mapping 3, whose importance and created_at were numeric terms, when this build opens
// it) is rebuilt from the table, and answers the filters of the current mapping.
func TestOlderMappingIsRebuilt(t *testing.T) {
	dbDir, ixDir := t.TempDir(), filepath.Join(t.TempDir(), "index")
	env := storetest.Start(t, dbDir)
	for _, m := range corpus() {
		put(t, env.Writer, store.OpInsert, m)
	}
	ix, stop := runIndexer(t, env.DB, ixDir)
	caughtUp(t, env.DB, ix)
	stop()

	bi, err := bleve.Open(ixDir)
	if err != nil {
		t.Fatal(err)
	}
	// Written as create() writes the version: in a batch whose persistence is waited for
	// (scorch persists in the background, and Close does not wait for it).
	b := bi.NewBatch()
	b.SetInternal(keyMapping, []byte("3"))
	persisted := make(chan error, 1)
	b.SetPersistedCallback(func(err error) { persisted <- err })
	if err := bi.Batch(b); err != nil {
		t.Fatal(err)
	}
	if err := <-persisted; err != nil {
		t.Fatal(err)
	}
	if err := bi.Close(); err != nil {
		t.Fatal(err)
	}

	ix, _ = runIndexer(t, env.DB, ixDir)
	if !ix.fresh {
		t.Fatal("an index of mapping 3 was opened as it is, not rebuilt")
	}
	caughtUp(t, env.DB, ix)
	if got := ids(t, ix, Query{MinImportance: 6}); !slices.Equal(got, []string{"m1", "m4"}) {
		t.Fatalf("importance ≥ 6 after the rebuild: %v", got)
	}
	hits, err := ix.Search(context.Background(), Query{Limit: 2})
	if err != nil || len(hits) != 2 || hits[0].ID != "m4" || hits[1].ID != "m3" {
		t.Fatalf("newest first after the rebuild: %+v %v", hits, err)
	}
}

// TestCatchUpOfManyChangesInOneBatch: one batch of queue entries whose rows the
// indexer reads in id order (store.GetRows), not queue order: inserts written
// in descending id order, then updates of some and deletes of others in the
// same transaction. The index holds each row as it is at the end.
func TestCatchUpOfManyChangesInOneBatch(t *testing.T) {
	env := storetest.Start(t, t.TempDir())
	ix, _ := runIndexer(t, env.DB, filepath.Join(t.TempDir(), "index"))
	caughtUp(t, env.DB, ix)
	id := func(i int) string { return fmt.Sprintf("01M984JG29HQ4SPVGG%04d", i) }
	var muts []store.Mutation
	for i := 299; i >= 0; i-- {
		b, _ := json.Marshal(mem{ID: id(i), Content: fmt.Sprintf("first words %d", i), Importance: 1, CreatedAt: t0})
		muts = append(muts, store.Mutation{Table: store.TableMemories, RowID: id(i), Op: store.OpInsert, Data: b})
	}
	var updated, deleted, live []string
	for i := range 300 {
		switch {
		case i%5 == 0:
			muts = append(muts, store.Mutation{Table: store.TableMemories, RowID: id(i), Op: store.OpDelete})
			deleted = append(deleted, id(i))
		case i%3 == 0:
			b, _ := json.Marshal(mem{ID: id(i), Content: fmt.Sprintf("second thoughts %d", i), Importance: 1, CreatedAt: t0})
			muts = append(muts, store.Mutation{Table: store.TableMemories, RowID: id(i), Op: store.OpUpdate, Data: b})
			updated = append(updated, id(i))
			live = append(live, id(i))
		default:
			live = append(live, id(i))
		}
	}
	if _, err := env.Writer.Write(context.Background(), muts...); err != nil {
		t.Fatal(err)
	}
	caughtUp(t, env.DB, ix)
	if n, _ := ix.Count(); n != uint64(len(live)) {
		t.Errorf("count %d, want %d live memories", n, len(live))
	}
	if got := ids(t, ix, Query{Text: "second thoughts", Limit: 1000}); !slices.Equal(got, updated) {
		t.Errorf("updated memories found: %v, want %v", got, updated)
	}
	first := ids(t, ix, Query{Text: "first words", Limit: 1000})
	for _, d := range append(slices.Clone(deleted), updated...) {
		if slices.Contains(first, d) {
			t.Errorf("%s found by its first content after its update or delete", d)
		}
	}
	if want := len(live) - len(updated); len(first) != want {
		t.Errorf("%d memories found by their first content, want %d", len(first), want)
	}
}

// TestBacklogOfMemoriesOnly: a backlog of memories with nothing between them (a
// peer's writes) is indexed in batches of at most maxBatchDocs documents, and
// whole.
func TestBacklogOfMemoriesOnly(t *testing.T) {
	env := storetest.Start(t, t.TempDir())
	dir := filepath.Join(t.TempDir(), "index")
	first, stop := runIndexer(t, env.DB, dir)
	put(t, env.Writer, store.OpInsert, mem{ID: "00first", Content: "before the backlog", CreatedAt: t0})
	caughtUp(t, env.DB, first)
	persisted(t, first) // a position on disk: the next start catches up from the queue
	stop()
	const n = 3*maxBatchDocs + 100
	for lo := 0; lo < n; lo += 500 {
		var muts []store.Mutation
		for i := lo; i < min(lo+500, n); i++ {
			id := fmt.Sprintf("01M984JG29HQ4SPVGG%05d", i)
			b, _ := json.Marshal(mem{ID: id, Content: fmt.Sprintf("backlog item %d", i), Importance: 1 + i%10, CreatedAt: t0})
			muts = append(muts, store.Mutation{Table: store.TableMemories, RowID: id, Op: store.OpInsert, Data: b})
		}
		if _, err := env.Writer.Write(context.Background(), muts...); err != nil {
			t.Fatal(err)
		}
	}
	ix, _ := runIndexer(t, env.DB, dir)
	caughtUp(t, env.DB, ix)
	if c, _ := ix.Count(); c != n+1 {
		t.Fatalf("count %d, want %d", c, n+1)
	}
	hits, _ := ix.Search(context.Background(), Query{MinImportance: 10, Limit: 1000})
	if len(hits) != n/10 {
		t.Fatalf("importance 10: %d hits, want %d", len(hits), n/10)
	}
}
