package conflicts

import (
	"context"
	"testing"

	"github.com/crow-sync/crow/store"
	"github.com/crow-sync/crow/store/storetest"
)

// TestEraseRowTxn: every record of the row goes, with its index; other rows' stay.
func TestEraseRowTxn(t *testing.T) {
	env := storetest.Start(t, t.TempDir())
	s := NewStore(env.DB, nil)
	put := func(row, a, b string) {
		c, err := New(store.TableMemories, row,
			Version{InstanceID: "a", Lamport: 2, VV: store.VV{"a": 1}, Data: []byte(`{"content":"` + a + `"}`)},
			Version{InstanceID: "b", Lamport: 1, VV: store.VV{"b": 1}, Data: []byte(`{"content":"` + b + `"}`)}, OpUpdate)
		if err != nil {
			t.Fatal(err)
		}
		if err := env.DB.Update(context.Background(), func(txn *store.Txn) error { _, err := s.PutTxn(txn, c); return err }); err != nil {
			t.Fatal(err)
		}
	}
	put("m1", "secret a", "secret b")
	put("m2", "x", "y")
	var n int
	if err := env.DB.Update(context.Background(), func(txn *store.Txn) (err error) {
		n, err = s.EraseRowTxn(txn, store.TableMemories, "m1")
		return err
	}); err != nil || n != 1 {
		t.Fatalf("erased %d: %v", n, err)
	}
	left, err := s.List(Filter{})
	if err != nil || len(left) != 1 || left[0].RowID != "m2" {
		t.Fatalf("left %v %v", left, err)
	}
	if err := env.DB.View(func(txn *store.Txn) error {
		recs, err := s.RowIndexTxn(txn, store.TableMemories, "m1")
		if err == nil && len(recs) != 0 {
			t.Errorf("row index left: %v", recs)
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
}
