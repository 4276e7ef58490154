package store

import (
	"context"
	"testing"
)

// A write with BaseVV is made on that vector, not the existing row's: its
// vector is the base plus this instance's increment, so it is concurrent
// with what the base omits.
func TestWriterBaseVV(t *testing.T) {
	db := openTest(t, t.TempDir())
	defer db.Close()
	w, err := NewWriter(db, WriterOptions{InstanceID: "new", Journal: &fakeJournal{}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go w.Serve(ctx)
	if _, err := w.Write(ctx, Mutation{Table: TableMemories, RowID: "m1", Op: OpInsert, Data: []byte(`{"content":"a"}`)}); err != nil {
		t.Fatal(err)
	}
	rows, err := w.Write(ctx, Mutation{Table: TableMemories, RowID: "m1", Op: OpPut, Data: []byte(`{"content":"b"}`),
		BaseVV: VV{"old": 3, "other": 1}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := db.Get(TableMemories, "m1")
	if err != nil {
		t.Fatal(err)
	}
	want := VV{"old": 3, "other": 1, "new": 1}
	if r.VV.Compare(want) != Equal || rows[0].VV.Compare(want) != Equal || string(r.Data) != `{"content":"b"}` {
		t.Fatalf("row %+v, answer %+v", r, rows[0].VV)
	}
	if r.VV.Compare(VV{"old": 4}) != Concurrent {
		t.Fatal("not concurrent with a later version of old")
	}
}
