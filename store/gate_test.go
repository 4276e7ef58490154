package store

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
)

// A Writer's Gate refuses writes while it errs (nothing written, its error
// returned as is) and lets them through again once it does not.
func TestWriterGateRefusesWrites(t *testing.T) {
	db := openTest(t, t.TempDir())
	defer db.Close()
	errGate := errors.New("own feed forked")
	var closed atomic.Bool
	closed.Store(true)
	w, err := NewWriter(db, WriterOptions{InstanceID: "inst-a", Journal: &fakeJournal{}, Gate: func() error {
		if closed.Load() {
			return errGate
		}
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go w.Serve(ctx)
	m := Mutation{Table: TableMemories, RowID: "m1", Op: OpInsert, Data: []byte(`{"content":"x"}`)}
	if _, err := w.Write(ctx, m); !errors.Is(err, errGate) {
		t.Fatalf("write through a closed gate: %v", err)
	}
	if _, err := db.Get(TableMemories, "m1"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("refused write stored: %v", err)
	}
	closed.Store(false)
	if _, err := w.Write(ctx, m); err != nil {
		t.Fatalf("write through an open gate: %v", err)
	}
	if _, err := db.Get(TableMemories, "m1"); err != nil {
		t.Fatal(err)
	}
}
