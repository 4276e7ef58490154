package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
)

// scanCounts is the reference: a full scan of table, each row classified on its own, the
// live ones grouped by their data's project and category as memory.Service.Count did.
type scanCounts struct {
	rows       RowCounts
	projects   map[string]int
	categories map[string]int
}

func scanCountsOf(t *testing.T, db *DB, table string) scanCounts {
	t.Helper()
	c := scanCounts{projects: map[string]int{}, categories: map[string]int{}}
	err := db.View(func(txn *Txn) error {
		return txn.ScanRows(table, func(r *Row) error {
			switch {
			case r.Deleted && strings.Contains(string(r.Data), `"forgotten_at"`):
				c.rows.Forgotten++
			case r.Deleted:
				c.rows.Deleted++
			default:
				c.rows.Live++
				var d struct {
					Project  string `json:"project"`
					Category string `json:"category"`
				}
				if err := json.Unmarshal(r.Data, &d); err != nil {
					return err
				}
				c.projects[d.Project]++
				c.categories[d.Category]++
			}
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// checkCountsMatch fails t unless every table's maintained counts equal a scan.
func checkCountsMatch(t *testing.T, db *DB, when string) {
	t.Helper()
	for _, table := range Tables() {
		want := scanCountsOf(t, db, table)
		got, err := db.CountRows(table)
		if err != nil {
			t.Fatal(err)
		}
		if got != want.rows {
			t.Fatalf("%s: %s counts %+v, a scan counts %+v", when, table, got, want.rows)
		}
		if table != TableMemories {
			continue
		}
		for field, w := range map[string]map[string]int{"project": want.projects, "category": want.categories} {
			g, err := db.CountBy(table, field)
			if err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(g, w) {
				t.Fatalf("%s: %s per %s %v, a scan counts %v", when, table, field, g, w)
			}
		}
	}
}

// logRecorder keeps the messages logged through it.
type logRecorder struct {
	mu   sync.Mutex
	msgs []string
}

func (l *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (l *logRecorder) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.msgs = append(l.msgs, r.Message)
	return nil
}
func (l *logRecorder) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logRecorder) WithGroup(string) slog.Handler      { return l }

func (l *logRecorder) rebuilds() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, m := range l.msgs {
		if strings.Contains(m, "rebuilt the maintained row counts") {
			n++
		}
	}
	return n
}

func openLogged(t *testing.T, dir string) (*DB, *logRecorder) {
	t.Helper()
	rec := &logRecorder{}
	db, err := Open(dir, Options{Logger: slog.New(rec)})
	if err != nil {
		t.Fatal(err)
	}
	return db, rec
}

// countsWorld generates random row versions over a small set of ids, projects and
// categories, so that writes often land on existing rows and move them between states
// and groups.
type countsWorld struct {
	rng *rand.Rand
	n   int // version counter
}

func (w *countsWorld) id() string { return fmt.Sprintf("m%02d", w.rng.IntN(40)) }

func (w *countsWorld) memData() json.RawMessage {
	w.n++
	return json.RawMessage(fmt.Sprintf(`{"content":"v%d","project":"p%d","category":"c%d","importance":%d}`,
		w.n, w.rng.IntN(4), w.rng.IntN(3), w.rng.IntN(10)))
}

// mutation is a random local write, of memories mostly, some of which the Writer refuses.
func (w *countsWorld) mutation() Mutation {
	table := TableMemories
	if w.rng.IntN(5) == 0 {
		table = TableNotes
	}
	m := Mutation{Table: table, RowID: w.id(), Data: w.memData()}
	switch w.rng.IntN(10) {
	case 0, 1:
		m.Op = OpInsert
	case 2, 3, 4:
		m.Op = OpPut
	case 5, 6:
		m.Op = OpUpdate
	case 7, 8:
		m.Op, m.Data = OpDelete, nil
	default:
		m.Op, m.Forget, m.Data = OpDelete, true, ForgetData(m.RowID, time.Unix(1_800_000_000, 0))
	}
	return m
}

// row is a random replicated version (live, tombstone or forget).
func (w *countsWorld) row(instance string) *Row {
	table := TableMemories
	if w.rng.IntN(5) == 0 {
		table = TableSyncConflicts
	}
	r := &Row{RowID: w.id(), Table: table, Data: w.memData(), LamportTS: uint64(w.n), InstanceID: instance,
		VV: VV{instance: uint64(w.n)}, UpdatedAt: time.Unix(1_800_000_000, 0).UTC()}
	switch w.rng.IntN(6) {
	case 0:
		r.Deleted = true
	case 1:
		r.Deleted, r.Data = true, ForgetData(r.RowID, time.Unix(1_800_000_000, 0))
	}
	return r
}

// The maintained counts equal a full scan after every batch of random local writes
// (concurrent, so the Writer batches them; some refused), replicated applies through
// TxnBatch, single Txn.PutRow writes, and transactions that fail after writing rows; and
// after a reopen, which does not rebuild them.
func TestCountsMatchScan(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	dir := t.TempDir()
	db, rec := openLogged(t, dir)
	w := &countsWorld{rng: rand.New(rand.NewPCG(seed, 1))}
	wr := startWriterOn(t, db)
	ctx := context.Background()
	errBoom := errors.New("boom")
	var reached RowCounts
	for round := range 60 {
		switch round % 4 {
		case 0, 1: // local writes, several callers at once
			var calls [][]Mutation
			for range 1 + w.rng.IntN(6) {
				muts := make([]Mutation, 1+w.rng.IntN(3))
				for i := range muts {
					muts[i] = w.mutation()
				}
				calls = append(calls, muts)
			}
			var wg sync.WaitGroup
			for _, muts := range calls {
				wg.Go(func() {
					if _, err := wr.Write(ctx, muts...); err != nil && !errors.Is(err, ErrNotFound) &&
						!errors.Is(err, ErrExists) && !errors.Is(err, ErrForgotten) {
						t.Error(err)
					}
				})
			}
			wg.Wait()
		case 2: // a replicated apply: many rows, some twice, in one transaction
			rows := make([]*Row, 1+w.rng.IntN(20))
			for i := range rows {
				rows[i] = w.row("inst-b")
			}
			err := db.Update(ctx, func(txn *Txn) error {
				b, err := txn.BeginBatch()
				if err != nil {
					return err
				}
				for _, r := range rows {
					b.ObserveLamport(r.LamportTS)
					if w.rng.IntN(2) == 0 { // as the apply loop reads the row first
						if _, err := txn.GetRow(r.Table, r.RowID); err != nil && !errors.Is(err, ErrNotFound) {
							return err
						}
					}
					if _, err := b.PutRow(r); err != nil {
						return err
					}
				}
				return b.Flush()
			})
			if err != nil {
				t.Fatal(err)
			}
		case 3: // Txn.PutRow (the forgetter's path), then a transaction that fails
			r := w.row("inst-c")
			if err := db.Update(ctx, func(txn *Txn) error { _, err := txn.PutRow(r); return err }); err != nil {
				t.Fatal(err)
			}
			err := db.Update(ctx, func(txn *Txn) error {
				if _, err := txn.PutRow(w.row("inst-c")); err != nil {
					return err
				}
				return errBoom
			})
			if !errors.Is(err, errBoom) {
				t.Fatalf("failing update: %v", err)
			}
		}
		checkCountsMatch(t, db, fmt.Sprintf("round %d", round))
		// Which states the rows were in after some round (a later round may forget
		// every tombstone a seed made: the end alone is not the test's coverage).
		c, _ := db.CountRows(TableMemories)
		reached.Live = max(reached.Live, c.Live)
		reached.Deleted = max(reached.Deleted, c.Deleted)
		reached.Forgotten = max(reached.Forgotten, c.Forgotten)
	}
	if c := reached; c.Live == 0 || c.Deleted == 0 || c.Forgotten == 0 {
		t.Errorf("the random writes did not reach every state (most rows seen in each): %+v", c)
	}
	if n := rec.rebuilds(); n != 1 {
		t.Errorf("%d rebuilds for a new store, want 1", n)
	}
	stopWriter(t, wr)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db, rec = openLogged(t, dir)
	defer db.Close()
	checkCountsMatch(t, db, "after reopening")
	if n := rec.rebuilds(); n != 0 {
		t.Errorf("reopening rebuilt the counts %d times, want 0", n)
	}
}

// startWriterOn runs a Writer on db; stopWriter stops it (before Close).
func startWriterOn(t *testing.T, db *DB) *Writer {
	t.Helper()
	w, err := NewWriter(db, WriterOptions{InstanceID: "inst-a", Journal: &fakeJournal{}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := w.Serve(ctx); err != nil {
			t.Errorf("serve: %v", err)
		}
	}()
	writerStops.Store(w, func() { cancel(); <-done })
	t.Cleanup(func() { stopWriter(t, w) })
	return w
}

var writerStops sync.Map // *Writer → func()

func stopWriter(t *testing.T, w *Writer) {
	t.Helper()
	if stop, ok := writerStops.LoadAndDelete(w); ok {
		stop.(func())()
	}
}

// fillRandom writes rows of every state into db through the Writer and TxnBatch.
func fillRandom(t *testing.T, db *DB, seed uint64) {
	t.Helper()
	w := &countsWorld{rng: rand.New(rand.NewPCG(seed, 2))}
	wr := startWriterOn(t, db)
	for range 200 {
		m := w.mutation()
		if _, err := wr.Write(context.Background(), m); err != nil && !errors.Is(err, ErrNotFound) &&
			!errors.Is(err, ErrExists) && !errors.Is(err, ErrForgotten) {
			t.Fatal(err)
		}
	}
	stopWriter(t, wr)
	err := db.Update(context.Background(), func(txn *Txn) error {
		b, err := txn.BeginBatch()
		if err != nil {
			return err
		}
		for range 50 {
			if _, err := b.PutRow(w.row("inst-b")); err != nil {
				return err
			}
		}
		return b.Flush()
	})
	if err != nil {
		t.Fatal(err)
	}
}

// Open rebuilds counts that are missing (a store from before counts), of another layout,
// stale, or that do not cover rows an older build wrote (s/seq moved past m/count/seq); it
// leaves current ones alone.
func TestCountsRebuild(t *testing.T) {
	for name, spoil := range map[string]func(txn *badger.Txn) error{
		"no counts": func(txn *badger.Txn) error {
			it := txn.NewIterator(badger.IteratorOptions{Prefix: []byte("m/count")})
			var keys [][]byte
			for it.Rewind(); it.Valid(); it.Next() {
				keys = append(keys, it.Item().KeyCopy(nil))
			}
			it.Close()
			for _, k := range keys {
				if err := txn.Delete(k); err != nil {
					return err
				}
			}
			return nil
		},
		"another layout": func(txn *badger.Txn) error {
			if err := setUint(txn, []byte(countStateKey(TableMemories, "live")), 12345); err != nil {
				return err
			}
			return setUint(txn, keyCounts, countsVersion+1)
		},
		"rows written by a build without counts": func(txn *badger.Txn) error {
			seq, err := getUint(txn, keySeq)
			if err != nil {
				return err
			}
			for i := range 5 {
				seq++
				r := &Row{RowID: fmt.Sprintf("old%d", i), Table: TableMemories, Data: json.RawMessage(`{"project":"old","category":"x"}`),
					LamportTS: 1, InstanceID: "inst-old", VV: VV{"inst-old": 1}}
				if err := putRowSeq(txn, r, seq); err != nil {
					return err
				}
			}
			return setUint(txn, keySeq, seq)
		},
		"a stale group": func(txn *badger.Txn) error {
			if err := setUint(txn, []byte(countGroupPrefix(TableMemories, "project")+"ghost"), 7); err != nil {
				return err
			}
			return txn.Delete(keyCountSeq) // what tells Open to rebuild
		},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			db, _ := openLogged(t, dir)
			fillRandom(t, db, uint64(len(name)))
			checkCountsMatch(t, db, "before")
			if err := db.bdb.Update(spoil); err != nil {
				t.Fatal(err)
			}
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			db, rec := openLogged(t, dir)
			defer db.Close()
			if n := rec.rebuilds(); n != 1 {
				t.Errorf("%d rebuilds at open, want 1", n)
			}
			checkCountsMatch(t, db, "after reopening")
			ghost, err := db.CountBy(TableMemories, "project")
			if err != nil || ghost["ghost"] != 0 {
				t.Errorf("a stale group survived the rebuild: %v %v", ghost, err)
			}
		})
	}
}

// LoadSnapshot rebuilds the counts from the rows it loaded, whatever counts the snapshot
// carried.
func TestCountsAfterLoadSnapshot(t *testing.T) {
	src := openTest(t, t.TempDir())
	defer src.Close()
	fillRandom(t, src, 7)
	// Counts that disagree with the rows, as a snapshot of a damaged store would carry.
	if err := src.bdb.Update(func(txn *badger.Txn) error {
		return setUint(txn, []byte(countStateKey(TableMemories, "live")), 99999)
	}); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := src.Snapshot(&buf, nil); err != nil {
		t.Fatal(err)
	}
	dst, rec := openLogged(t, t.TempDir())
	defer dst.Close()
	if _, err := dst.LoadSnapshot(&buf); err != nil {
		t.Fatal(err)
	}
	checkCountsMatch(t, dst, "after loading the snapshot")
	if n := rec.rebuilds(); n != 2 { // the new store's, the load's
		t.Errorf("%d rebuilds, want 2", n)
	}
	if c, err := dst.CountRows(TableMemories); err != nil || c.Total() == 0 {
		t.Fatalf("no memories loaded: %+v %v", c, err)
	}
}

// CountBy answers only for counted fields; CountRows only for known tables.
func TestCountsErrors(t *testing.T) {
	db := openTest(t, t.TempDir())
	defer db.Close()
	if _, err := db.CountBy(TableMemories, "content"); !errors.Is(err, ErrNotCounted) {
		t.Errorf("uncounted field: %v", err)
	}
	if _, err := db.CountRows("nope"); !errors.Is(err, ErrInvalidTable) {
		t.Errorf("unknown table: %v", err)
	}
	for table, fields := range countedFields {
		if len(fields) > maxCounted {
			t.Errorf("%s counts %d fields, a tally holds %d (raise maxCounted)", table, len(fields), maxCounted)
		}
	}
}

// groupValues finds the same values as a full decode into a map, for random objects with
// repeated, nested, escaped, non-string and non-ASCII members.
func TestGroupValuesMatchesDecode(t *testing.T) {
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 3))
	keys := []string{"project", "category", "content", "Project", `proj\u0065ct`, "tags", "x"}
	vals := []string{`"crow"`, `"c\"q"`, `"h\u00e9"`, `"hé"`, `""`, `12`, `-1.5e3`, `true`, `null`,
		`["a","]",{"b":"}"}]`, `{"project":"inner","n":[1,2]}`, `"\u0000"`, `" spaced "`}
	fields := []string{"project", "category"}
	for i := range 5000 {
		var b strings.Builder
		b.WriteString("{")
		for j := range rng.IntN(6) {
			if j > 0 {
				b.WriteString([]string{",", " , ", ",\n"}[rng.IntN(3)])
			}
			fmt.Fprintf(&b, `"%s"%s%s`, keys[rng.IntN(len(keys))], []string{":", " : "}[rng.IntN(2)], vals[rng.IntN(len(vals))])
		}
		b.WriteString([]string{"}", " }\n"}[rng.IntN(2)])
		data := json.RawMessage(b.String())
		if !json.Valid(data) {
			t.Fatalf("generated invalid JSON %s", data)
		}
		want := make([]string, 2)
		var m map[string]json.RawMessage
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatal(err)
		}
		for k, f := range fields {
			var s string
			if json.Unmarshal(m[f], &s) == nil {
				want[k] = s
			}
		}
		got := make([]string, 2)
		groupValues(data, fields, got)
		if !slices.Equal(got, want) {
			t.Fatalf("case %d: groupValues(%s) = %q, a decode gives %q", i, data, got, want)
		}
	}
	typical := json.RawMessage(`{"id":"m1","project":"crow","content":"a \"quoted\" memory","category":"decision","importance":5,"tags":["a"],"created_at":"2026-12-01T00:00:00Z"}`)
	if got := make([]string, 2); !groupValuesFast(typical, fields, got) || got[0] != "crow" || got[1] != "decision" {
		t.Errorf("the fast path does not read a typical memory: %q", got)
	}
	for _, bad := range []string{``, `[]`, `{"project":"a"`, `{"project":"a"}x`, `{"project":,}`, `nope`} {
		got := []string{"stale", "stale"}
		groupValues(json.RawMessage(bad), fields, got)
		if got[0] != "" || got[1] != "" {
			t.Errorf("groupValues(%q) = %q, want empty", bad, got)
		}
	}
}
