package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

func ins(id, data string) Mutation {
	return Mutation{Table: TableNotes, RowID: id, Op: OpInsert, Data: json.RawMessage(data)}
}

func TestWriteGetDelete(t *testing.T) {
	db := openTest(t, t.TempDir())
	defer db.Close()
	j := &fakeJournal{}
	w := startWriter(t, db, j)
	ctx := context.Background()

	rows, err := w.Write(ctx, ins("n1", `{"text":"hello"}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0].LamportTS != 1 || rows[0].VV["inst-a"] != 1 || rows[0].Seq != 1 {
		t.Fatalf("rows = %+v", rows)
	}
	got, err := db.Get(TableNotes, "n1")
	if err != nil || string(got.Data) != `{"text":"hello"}` || got.InstanceID != "inst-a" {
		t.Fatalf("get = %+v, %v", got, err)
	}
	if _, err := w.Write(ctx, ins("n1", `{}`)); !errors.Is(err, ErrExists) {
		t.Fatalf("second insert: %v, want ErrExists", err)
	}
	if _, err := w.Write(ctx, Mutation{Table: TableNotes, RowID: "nope", Op: OpUpdate, Data: json.RawMessage(`{}`)}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("update missing: %v, want ErrNotFound", err)
	}
	if _, err := w.Write(ctx, Mutation{Table: TableNotes, RowID: "n1", Op: OpDelete}); err != nil {
		t.Fatal(err)
	}
	got, err = db.Get(TableNotes, "n1")
	if err != nil || !got.Deleted || string(got.Data) != `{"text":"hello"}` || got.VV["inst-a"] != 2 {
		t.Fatalf("tombstone = %+v, %v", got, err)
	}
	if _, err := w.Write(ctx, Mutation{Table: TableNotes, RowID: "n1", Op: OpDelete}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("double delete: %v", err)
	}
	// Put over a tombstone revives it as an insert.
	rows, err = w.Write(ctx, Mutation{Table: TableNotes, RowID: "n1", Op: OpPut, Data: json.RawMessage(`{"v":2}`)})
	if err != nil || rows[0].Deleted || rows[0].VV["inst-a"] != 3 {
		t.Fatalf("put = %+v, %v", rows, err)
	}
	if _, err := db.Get(TableNotes, "missing"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("get missing: %v", err)
	}
	if _, err := w.Write(ctx, Mutation{Table: "bogus", RowID: "x", Op: OpInsert, Data: json.RawMessage(`{}`)}); !errors.Is(err, ErrInvalidTable) {
		t.Fatalf("bad table: %v", err)
	}
	if _, err := w.Write(ctx, Mutation{Table: TableNotes, RowID: "x", Op: OpInsert, Data: json.RawMessage(`[1]`)}); !errors.Is(err, ErrInvalidMutation) {
		t.Fatalf("bad data: %v", err)
	}

	// Journal got one record per committed mutation, in order.
	ents := journalEntries(t, db)
	if len(ents) != 3 || j.head() != 3 {
		t.Fatalf("journal has %d entries, head %d", len(ents), j.head())
	}
	types := []string{"note_insert", "note_delete", "note_insert"}
	for i, e := range ents {
		c, err := ParseChange(e)
		if err != nil {
			t.Fatal(err)
		}
		if c.Type != types[i] || c.Lamport != uint64(i+1) || c.VV["inst-a"] != uint64(i+1) {
			t.Errorf("entry %d = %+v", i, c)
		}
	}
	st, err := db.SyncState()
	if err != nil || st.LocalCounter != 3 || st.UpdatedAt.IsZero() {
		t.Fatalf("sync state = %+v, %v", st, err)
	}
}

func newReq(muts ...Mutation) *request {
	r := &request{muts: muts, resp: make(chan outcome, 1)}
	r.state.Store(reqClaimed)
	return r
}

// TestBatchIsolation drives one batch directly: a caller whose Check fails drops out without
// leaking its earlier mutations, and later callers in the batch see earlier survivors.
func TestBatchIsolation(t *testing.T) {
	db := openTest(t, t.TempDir())
	defer db.Close()
	j := &fakeJournal{}
	w, _ := NewWriter(db, WriterOptions{InstanceID: "inst-a", Journal: j})
	errBoom := errors.New("boom")
	var seen *Row
	reqs := []*request{
		newReq(ins("a", `{"n":1}`)),
		newReq(ins("b", `{"n":2}`), Mutation{Table: TableNotes, RowID: "c", Op: OpInsert,
			Data: json.RawMessage(`{}`), Check: func(*Row) error { return errBoom }}),
		newReq(Mutation{Table: TableNotes, RowID: "b", Op: OpUpdate, Data: json.RawMessage(`{}`)}),
		newReq(Mutation{Table: TableNotes, RowID: "a", Op: OpUpdate, Data: json.RawMessage(`{"n":3}`),
			Check: func(e *Row) error { seen = e; return nil }}),
		newReq(ins("d", `{}`), ins("d", `{}`)), // second insert sees the first
	}
	w.commitBatch(reqs)
	outs := make([]outcome, len(reqs))
	for i, r := range reqs {
		outs[i] = <-r.resp
	}
	if outs[0].err != nil || outs[3].err != nil {
		t.Fatalf("good callers failed: %v %v", outs[0].err, outs[3].err)
	}
	if !errors.Is(outs[1].err, errBoom) || !errors.Is(outs[2].err, ErrNotFound) || !errors.Is(outs[4].err, ErrExists) {
		t.Fatalf("errors = %v / %v / %v", outs[1].err, outs[2].err, outs[4].err)
	}
	if seen == nil || string(seen.Data) != `{"n":1}` {
		t.Fatalf("check saw %+v, want the batch's earlier insert", seen)
	}
	for _, id := range []string{"b", "c", "d"} {
		if _, err := db.Get(TableNotes, id); !errors.Is(err, ErrNotFound) {
			t.Errorf("%s leaked: %v", id, err)
		}
	}
	a, err := db.Get(TableNotes, "a")
	if err != nil || string(a.Data) != `{"n":3}` || a.LamportTS != 2 || a.VV["inst-a"] != 2 {
		t.Fatalf("a = %+v, %v", a, err)
	}
	if st := w.Stats(); st.Commits != 1 || st.Mutations != 2 {
		t.Fatalf("stats = %+v, want one commit of two mutations", st)
	}
	if n := len(journalEntries(t, db)); n != 2 {
		t.Fatalf("journal entries = %d", n)
	}
}

func TestJournalErrorAbortsBatch(t *testing.T) {
	db := openTest(t, t.TempDir())
	defer db.Close()
	j := &fakeJournal{}
	w := startWriter(t, db, j)
	errJ := errors.New("journal full")
	j.setFail(errJ)
	if _, err := w.Write(context.Background(), ins("a", `{}`), ins("b", `{}`)); !errors.Is(err, errJ) {
		t.Fatalf("write: %v, want journal error", err)
	}
	for _, id := range []string{"a", "b"} {
		if _, err := db.Get(TableNotes, id); !errors.Is(err, ErrNotFound) {
			t.Errorf("%s visible after aborted batch: %v", id, err)
		}
	}
	st, _ := db.SyncState()
	if st.LocalCounter != 0 || j.head() != 0 {
		t.Fatalf("lamport %d head %d after abort", st.LocalCounter, j.head())
	}
	if head, _ := db.QueueHead(); head != 0 {
		t.Fatalf("queue head %d after abort", head)
	}
	j.setFail(nil)
	rows, err := w.Write(context.Background(), ins("a", `{}`))
	if err != nil || rows[0].LamportTS != 1 {
		t.Fatalf("after recovery: %+v %v", rows, err)
	}
}

func TestLamportPersistsAcrossReopen(t *testing.T) {
	dir := t.TempDir()
	db := openTest(t, dir)
	ctx, cancel := context.WithCancel(context.Background())
	w, _ := NewWriter(db, WriterOptions{InstanceID: "inst-a", Journal: &fakeJournal{}})
	done := make(chan error)
	go func() { done <- w.Serve(ctx) }()
	for i := range 5 {
		if _, err := w.Write(ctx, ins(fmt.Sprint(i), `{}`)); err != nil {
			t.Fatal(err)
		}
	}
	cancel()
	<-done
	if _, err := w.Write(context.Background(), ins("late", `{}`)); !errors.Is(err, ErrClosed) {
		t.Fatalf("write after stop: %v", err)
	}
	db.Close()

	db = openTest(t, dir)
	defer db.Close()
	w2 := startWriter(t, db, &fakeJournal{})
	rows, err := w2.Write(context.Background(), ins("x", `{}`))
	if err != nil || rows[0].LamportTS != 6 || rows[0].Seq != 6 {
		t.Fatalf("after reopen: %+v %v", rows, err)
	}
	if head, _ := db.QueueHead(); head != 6 {
		t.Fatalf("queue head %d", head)
	}
}

func TestConcurrentWriters(t *testing.T) {
	db := openTest(t, t.TempDir())
	defer db.Close()
	j := &fakeJournal{}
	w := startWriter(t, db, j)
	const writers, each = 32, 20
	var wg sync.WaitGroup
	var mu sync.Mutex
	lamports := map[uint64]bool{}
	errs := make(chan error, writers*each)
	for g := range writers {
		wg.Go(func() {
			for i := range each {
				rows, err := w.Write(context.Background(), ins(fmt.Sprintf("g%02d-%02d", g, i), `{}`))
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				if lamports[rows[0].LamportTS] {
					errs <- fmt.Errorf("duplicate lamport %d", rows[0].LamportTS)
				}
				lamports[rows[0].LamportTS] = true
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	rows, next, err := db.List(TableNotes, ListOptions{Limit: 1000})
	if err != nil || len(rows) != writers*each || next != "" {
		t.Fatalf("list: %d rows, next %q, %v", len(rows), next, err)
	}
	if j.head() != writers*each {
		t.Fatalf("journal head %d", j.head())
	}
	st := w.Stats()
	t.Logf("%d mutations in %d commits", st.Mutations, st.Commits)
	if st.Mutations != writers*each || st.Commits > st.Mutations {
		t.Fatalf("stats %+v", st)
	}
}

func TestCancelBeforeBatched(t *testing.T) {
	db := openTest(t, t.TempDir())
	defer db.Close()
	w, _ := NewWriter(db, WriterOptions{InstanceID: "inst-a", Journal: &fakeJournal{}})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := w.Write(ctx, ins("a", `{}`)); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("write without server: %v", err)
	}
	// A request taken but cancelled before its batch is claimed is dropped.
	r := &request{muts: []Mutation{ins("b", `{}`)}, resp: make(chan outcome, 1)}
	r.state.Store(reqCancelled)
	sctx, stop := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- w.Serve(sctx) }()
	w.reqs <- r
	if _, err := w.Write(context.Background(), ins("c", `{}`)); err != nil {
		t.Fatal(err)
	}
	stop()
	<-done
	for _, id := range []string{"a", "b"} {
		if _, err := db.Get(TableNotes, id); !errors.Is(err, ErrNotFound) {
			t.Errorf("%s written after cancellation: %v", id, err)
		}
	}
	select {
	case o := <-r.resp:
		t.Fatalf("cancelled request answered: %+v", o)
	default:
	}
}

func TestListPagination(t *testing.T) {
	db := openTest(t, t.TempDir())
	defer db.Close()
	w := startWriter(t, db, &fakeJournal{})
	ctx := context.Background()
	var muts []Mutation
	for i := range 25 {
		muts = append(muts, ins(fmt.Sprintf("r%02d", i), fmt.Sprintf(`{"i":%d}`, i)))
	}
	if _, err := w.Write(ctx, muts...); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(ctx, Mutation{Table: TableNotes, RowID: "r03", Op: OpDelete}); err != nil {
		t.Fatal(err)
	}
	collect := func(opts ListOptions) []string {
		var ids []string
		for {
			rows, next, err := db.List(TableNotes, opts)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range rows {
				ids = append(ids, r.RowID)
			}
			if next == "" {
				return ids
			}
			opts.After = next
		}
	}
	ids := collect(ListOptions{Limit: 10})
	if len(ids) != 24 || ids[0] != "r00" || ids[3] != "r04" || ids[23] != "r24" {
		t.Fatalf("asc = %v", ids)
	}
	ids = collect(ListOptions{Limit: 7, Reverse: true, IncludeDeleted: true})
	if len(ids) != 25 || ids[0] != "r24" || ids[24] != "r00" {
		t.Fatalf("desc = %v", ids)
	}
	ids = collect(ListOptions{Limit: 3, Filter: func(r *Row) bool { return r.RowID >= "r20" }})
	if len(ids) != 5 {
		t.Fatalf("filtered = %v", ids)
	}
	// Other tables are separate keyspaces.
	if rows, _, err := db.List(TableMemories, ListOptions{}); err != nil || len(rows) != 0 {
		t.Fatalf("memories = %v %v", rows, err)
	}
}

func TestTxnAPIAndQueue(t *testing.T) {
	db := openTest(t, t.TempDir())
	defer db.Close()
	feedKey := []byte{0xab, 0xcd}
	_, ch := db.QueueHead()
	err := db.Update(context.Background(), func(txn *Txn) error {
		lam, err := txn.ObserveLamport(41)
		if err != nil {
			return err
		}
		if lam != 42 {
			return fmt.Errorf("lamport %d", lam)
		}
		row := &Row{RowID: "k", Table: TableSettings, Data: json.RawMessage(`{"v":1}`), LamportTS: lam,
			InstanceID: "remote", VV: VV{"remote": 7}, UpdatedAt: time.Unix(100, 0).UTC()}
		if _, err := txn.PutRow(row); err != nil {
			return err
		}
		if _, err := txn.PutRow(&Row{RowID: "m", Table: TableMemories, Data: json.RawMessage(`{}`)}); err != nil {
			return err
		}
		got, err := txn.GetRow(TableSettings, "k")
		if err != nil || got.VV["remote"] != 7 {
			return fmt.Errorf("get in txn: %+v %v", got, err)
		}
		return txn.SetApplied(feedKey, 10)
	})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-ch:
	default:
		t.Fatal("queue watchers not woken by Update")
	}
	if head, _ := db.QueueHead(); head != 2 {
		t.Fatalf("head %d", head)
	}
	st, err := db.SyncState()
	if err != nil || st.LocalCounter != 42 || st.Applied["abcd"] != 10 {
		t.Fatalf("sync state %+v %v", st, err)
	}
	scan := func(from uint64) []QueueEntry {
		var es []QueueEntry
		err := db.View(func(txn *Txn) error {
			return txn.ScanQueue(from, 0, func(e QueueEntry) error { es = append(es, e); return nil })
		})
		if err != nil {
			t.Fatal(err)
		}
		return es
	}
	es := scan(0)
	same := func(e QueueEntry, seq uint64, table, id string) bool {
		return e.Seq == seq && e.Table == table && e.RowID == id
	}
	if len(es) != 2 || !same(es[0], 1, TableSettings, "k") || !same(es[1], 2, TableMemories, "m") {
		t.Fatalf("queue = %+v", es)
	}
	if err := db.PruneQueue(1); err != nil {
		t.Fatal(err)
	}
	if es := scan(0); len(es) != 1 || es[0].Seq != 2 {
		t.Fatalf("after prune = %+v", es)
	}
	err = db.Update(context.Background(), func(txn *Txn) error {
		_, err := txn.PutRow(&Row{RowID: "x", Table: "nope"})
		return err
	})
	if !errors.Is(err, ErrInvalidTable) {
		t.Fatalf("bad table: %v", err)
	}
}

func TestChangeRecordGolden(t *testing.T) {
	r := &Row{RowID: "01J", Table: TableMemories, Data: json.RawMessage(`{"content":"x"}`), LamportTS: 42,
		InstanceID: "inst-a", VV: VV{"inst-b": 1, "inst-a": 3}, UpdatedAt: time.Unix(1711000000, 0)}
	b, err := changeFor(r, OpInsert).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	const golden = `{"schema":1,"type":"memory_insert","table":"memories","row_id":"01J","op":"insert",` +
		`"data":{"content":"x"},"lamport":42,"instance_id":"inst-a","timestamp":1711000000,"vv":{"inst-a":3,"inst-b":1}}`
	if string(b) != golden {
		t.Fatalf("change record bytes changed:\n got %s\nwant %s", b, golden)
	}
	c, err := ParseChange(b)
	if err != nil || c.Row().LamportTS != 42 || c.Row().Deleted {
		t.Fatalf("parse: %+v %v", c, err)
	}
	if _, err := ParseChange([]byte(`{"schema":2,"whatever":[1]}`)); !errors.Is(err, ErrUnknownSchema) {
		t.Fatalf("schema 2: %v", err)
	}
	if _, err := ParseChange([]byte(`{"schema":2,"lamport":"x"}`)); !errors.Is(err, ErrUnknownSchema) {
		t.Fatalf("schema 2 odd fields: %v", err)
	}
	if ChangeType(TableBlogPosts, OpUpdate) != "blog_update" || ChangeType(TableCrowContext, OpDelete) != "crow_context_delete" {
		t.Fatal("change types")
	}
}

func TestTransformIsReadModifyWrite(t *testing.T) {
	db := openTest(t, t.TempDir())
	defer db.Close()
	w := startWriter(t, db, &fakeJournal{})
	ctx := context.Background()
	if _, err := w.Write(ctx, ins("ctr", `{"n":0}`)); err != nil {
		t.Fatal(err)
	}
	incr := Mutation{Table: TableNotes, RowID: "ctr", Op: OpUpdate, Transform: func(e *Row) (json.RawMessage, error) {
		var v struct{ N int }
		if err := json.Unmarshal(e.Data, &v); err != nil {
			return nil, err
		}
		return json.RawMessage(fmt.Sprintf(`{"n":%d}`, v.N+1)), nil
	}}
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			if _, err := w.Write(ctx, incr); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	r, _ := db.Get(TableNotes, "ctr")
	if string(r.Data) != `{"n":50}` {
		t.Fatalf("counter = %s, want 50 increments", r.Data)
	}
	bad := Mutation{Table: TableNotes, RowID: "ctr", Op: OpUpdate, Transform: func(*Row) (json.RawMessage, error) {
		return json.RawMessage(`[]`), nil
	}}
	if _, err := w.Write(ctx, bad); !errors.Is(err, ErrInvalidMutation) {
		t.Fatalf("bad transform: %v", err)
	}
}

func TestTooBigBatchesSplit(t *testing.T) {
	db, err := Open(t.TempDir(), Options{MemTableSize: 1 << 20}) // ~157 KB per txn
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	w, _ := NewWriter(db, WriterOptions{InstanceID: "inst-a", Journal: &fakeJournal{}, MaxBatchBytes: 64 << 20})
	val := json.RawMessage(`{"v":"` + strings.Repeat("a", 3000) + `"}`)
	var reqs []*request
	for i := range 8 {
		var muts []Mutation
		for k := range 10 {
			muts = append(muts, ins(fmt.Sprintf("r%d-%d", i, k), string(val)))
		}
		reqs = append(reqs, newReq(muts...))
	}
	w.commitBatch(reqs)
	for i, r := range reqs {
		if o := <-r.resp; o.err != nil {
			t.Fatalf("request %d: %v", i, o.err)
		}
	}
	if st := w.Stats(); st.Mutations != 80 || st.Commits < 2 {
		t.Fatalf("stats %+v: want 80 mutations split over several commits", st)
	}
	var muts []Mutation
	for k := range 200 {
		muts = append(muts, ins(fmt.Sprintf("big-%d", k), string(val)))
	}
	big := newReq(muts...)
	w.commitBatch([]*request{big})
	if o := <-big.resp; !errors.Is(o.err, ErrTooLarge) {
		t.Fatalf("oversized write: %v, want ErrTooLarge", o.err)
	}
	if _, err := db.Get(TableNotes, "big-0"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("oversized write leaked: %v", err)
	}
}
