package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestForgetRewritesATombstone: a forget is written over a live row and over a tombstone
// (which no other op may rewrite), keeps only id and forgotten_at, is a delete change record,
// and a forgotten row cannot be revived.
func TestForgetRewritesATombstone(t *testing.T) {
	ctx := context.Background()
	db := openTest(t, t.TempDir())
	defer db.Close()
	j := &fakeJournal{}
	w := startWriter(t, db, j)
	at := time.Date(2026, 11, 29, 21, 0, 0, 0, time.UTC)
	fd := ForgetData("m1", at)
	if string(fd) != `{"id":"m1","forgotten_at":"2026-11-29T21:00:00Z"}` {
		t.Fatalf("forget data %s", fd)
	}
	if _, err := w.Write(ctx, Mutation{Table: TableMemories, RowID: "m0", Op: OpDelete, Forget: true, Data: ForgetData("m0", at)}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("forget of a missing row: %v", err)
	}
	for _, m := range []Mutation{
		{Table: TableMemories, RowID: "m1", Op: OpInsert, Data: []byte(`{"content":"secret"}`)},
		{Table: TableMemories, RowID: "m1", Op: OpDelete},
	} {
		if _, err := w.Write(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.Write(ctx, Mutation{Table: TableMemories, RowID: "m1", Op: OpDelete}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("delete over a tombstone: %v", err)
	}
	if _, err := w.Write(ctx, Mutation{Table: TableMemories, RowID: "m1", Op: OpDelete, Forget: true, Data: []byte(`{"id":"m1"}`)}); !errors.Is(err, ErrInvalidMutation) {
		t.Fatalf("forget without forgotten_at: %v", err)
	}
	rows, err := w.Write(ctx, Mutation{Table: TableMemories, RowID: "m1", Op: OpDelete, Forget: true, Data: fd})
	if err != nil {
		t.Fatal(err)
	}
	r := rows[0]
	if !r.Forgotten() || string(r.Data) != string(fd) || r.VV["inst-a"] != 3 {
		t.Fatalf("forgotten row %+v", r)
	}
	for _, op := range []Op{OpInsert, OpPut} {
		if _, err := w.Write(ctx, Mutation{Table: TableMemories, RowID: "m1", Op: op, Data: []byte(`{"content":"back"}`)}); !errors.Is(err, ErrForgotten) {
			t.Fatalf("%s over a forgotten row: %v", op, err)
		}
	}
	es := journalEntries(t, db)
	c, err := ParseChange(es[len(es)-1])
	if err != nil {
		t.Fatal(err)
	}
	if !c.Forgets() || c.Type != "memory_delete" || bytes.Contains(es[len(es)-1], []byte("secret")) {
		t.Fatalf("forget record %s", es[len(es)-1])
	}
}

// TestWriterDoRunsBetweenBatches: Do's fn never runs while a batch is staged (the journal
// sees no Stage during fn), and writes go on around it.
func TestWriterDoRunsBetweenBatches(t *testing.T) {
	ctx := context.Background()
	db := openTest(t, t.TempDir())
	defer db.Close()
	j := &busyJournal{}
	w := startWriter(t, db, j)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for k := range 20 {
				if _, err := w.Write(ctx, Mutation{Table: TableNotes, RowID: fmt.Sprintf("n%d-%d", i, k), Op: OpInsert, Data: []byte(`{}`)}); err != nil {
					t.Error(err)
				}
			}
		})
	}
	for range 20 {
		err := w.Do(ctx, func() error {
			if j.busy.Load() {
				return errors.New("a Stage is pending during Do")
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := w.Do(cctx, func() error { t.Error("ran after its ctx ended"); return nil }); !errors.Is(err, context.Canceled) {
		t.Fatalf("Do with an ended ctx: %v", err)
	}
}

// TestCompactLeavesNoOldValueOnDisk: a unique string written in a row (small and large, so
// both in the tables and in the value log), then overwritten, is in the database's files
// until Compact, and in none after it.
func TestCompactLeavesNoOldValueOnDisk(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db := openTest(t, dir)
	defer db.Close()
	w := startWriter(t, db, &fakeJournal{})
	const secret = "zq-forget-me-7f3a9c"
	big := strings.Repeat("x", 8<<10) // above the value threshold: in the value log
	for i, d := range []string{`{"c":"` + secret + `"}`, `{"c":"` + secret + big + `"}`} {
		id := fmt.Sprint("r", i)
		if _, err := w.Write(ctx, Mutation{Table: TableNotes, RowID: id, Op: OpInsert, Data: []byte(d)}); err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(ctx, Mutation{Table: TableNotes, RowID: id, Op: OpUpdate, Data: []byte(`{"c":"gone` + big + `"}`)}); err != nil {
			t.Fatal(err)
		}
	}
	// The fake journal holds the records: overwrite them too.
	if err := db.Update(ctx, func(txn *Txn) error {
		return txn.Iterate([]byte("x/j/"), nil, func(k, _ []byte) error { return txn.Set(bytes.Clone(k), []byte("cleared")) })
	}); err != nil {
		t.Fatal(err)
	}
	if files := filesHolding(t, dir, secret); len(files) == 0 {
		t.Fatal("the string is in no file before Compact: the scan proves nothing")
	}
	st, err := db.Compact(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("compact: %+v", st)
	if files := filesHolding(t, dir, secret); len(files) != 0 {
		t.Fatalf("after Compact the string is still in %v", files)
	}
	r, err := db.Get(TableNotes, "r1")
	if err != nil || !strings.HasPrefix(string(r.Data), `{"c":"gone`) {
		t.Fatalf("row after Compact: %v %v", r, err)
	}
}

// filesHolding returns the files under dir whose bytes contain s.
func filesHolding(t testing.TB, dir, s string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		if bytes.Contains(b, []byte(s)) {
			out = append(out, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// busyJournal is fakeJournal that reports whether a Stage is uncommitted.
type busyJournal struct {
	fakeJournal
	busy atomic.Bool
}

func (j *busyJournal) Stage(txn *Txn, entries [][]byte) (func(), error) {
	commit, err := j.fakeJournal.Stage(txn, entries)
	if err != nil {
		return nil, err
	}
	j.busy.Store(true)
	return func() { commit(); j.busy.Store(false) }, nil
}
