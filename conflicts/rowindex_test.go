package conflicts

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/crow-sync/crow/store"
)

func TestRowIndexCodec(t *testing.T) {
	for _, recs := range [][]RowRecord{
		{},
		{{ID: "a", WinningVV: store.VV{}, LosingVV: store.VV{"x": 0}}},
		{{ID: "0a", WinningVV: store.VV{"a": 3, "b": 1}, LosingVV: store.VV{"b": 2}},
			{ID: "0b", WinningVV: store.VV{"inst-" + string(make([]byte, 300)): 1 << 40}, LosingVV: store.VV{"c": 1}}},
	} {
		b := encodeRowIndex(recs)
		got, err := decodeRowIndex(b)
		if err != nil || !reflect.DeepEqual(got, recs) {
			t.Fatalf("round trip of %+v: %+v, %v", recs, got, err)
		}
		for i := range b {
			if _, err := decodeRowIndex(b[:i]); err == nil {
				t.Fatalf("truncated index (%d of %d bytes) decoded", i, len(b))
			}
		}
		if _, err := decodeRowIndex(append(slices.Clone(b), 0)); err == nil {
			t.Fatal("index with trailing bytes decoded")
		}
	}
}

// TestUpdateRowTxnAgainstModel: random retracts and puts, one at a time
// (PutTxn, DeleteTxn) and in groups (UpdateRowTxn), keep the records, the
// row index (ids and vectors) and the notifications as a plain model says.
func TestUpdateRowTxnAgainstModel(t *testing.T) {
	db, err := store.Open("", store.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	s := NewStore(db, func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) })
	rng := rand.New(rand.NewPCG(1, 2))
	var pool []*Conflict
	for i := range 12 {
		w := Version{InstanceID: "b", Lamport: uint64(10 + i), VV: store.VV{"b": uint64(i + 1), "a": uint64(i % 3)},
			Data: json.RawMessage(fmt.Sprintf(`{"v":%d}`, i))}
		l := Version{InstanceID: "a", Lamport: uint64(i + 1), VV: store.VV{"a": uint64(i%3 + 1)}, Data: json.RawMessage(`{"v":"a"}`)}
		c, err := New("memories", "r1", w, l, OpUpdate)
		if err != nil {
			t.Fatal(err)
		}
		pool = append(pool, c)
	}
	model := map[string]*Conflict{}
	for step := range 300 {
		var retract []string
		var create []*Conflict
		for range rng.IntN(3) {
			retract = append(retract, pool[rng.IntN(len(pool))].ID)
		}
		for range rng.IntN(3) {
			c := *pool[rng.IntN(len(pool))]
			create = append(create, &c)
		}
		wantCreated := 0
		for _, id := range retract {
			delete(model, id)
		}
		for _, c := range create {
			if model[c.ID] == nil {
				model[c.ID] = c
				wantCreated++
			}
		}
		created := 0
		err := db.Update(context.Background(), func(txn *store.Txn) error {
			if step%2 == 0 {
				var err error
				created, err = s.UpdateRowTxn(txn, "memories", "r1", retract, create)
				return err
			}
			for _, id := range retract {
				if err := s.DeleteTxn(txn, id); err != nil {
					return err
				}
			}
			for _, c := range create {
				ok, err := s.PutTxn(txn, c)
				if err != nil {
					return err
				}
				if ok {
					created++
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if created != wantCreated {
			t.Fatalf("step %d: created %d, want %d", step, created, wantCreated)
		}
		var idx []RowRecord
		var recs []*Conflict
		if err := db.View(func(txn *store.Txn) error {
			var err error
			if idx, err = s.RowIndexTxn(txn, "memories", "r1"); err != nil {
				return err
			}
			recs, err = s.ForRowTxn(txn, "memories", "r1")
			return err
		}); err != nil {
			t.Fatal(err)
		}
		all, err := s.List(Filter{})
		if err != nil {
			t.Fatal(err)
		}
		if len(idx) != len(model) || len(recs) != len(model) || len(all) != len(model) {
			t.Fatalf("step %d: index %d, records %d, stored %d; model %d", step, len(idx), len(recs), len(all), len(model))
		}
		for i, r := range idx {
			m := model[r.ID]
			if m == nil || recs[i].ID != r.ID || (i > 0 && idx[i-1].ID >= r.ID) ||
				!reflect.DeepEqual(r.WinningVV, m.WinningVV) || !reflect.DeepEqual(r.LosingVV, m.LosingVV) ||
				!reflect.DeepEqual(recs[i].WinningVV, m.WinningVV) {
				t.Fatalf("step %d: index entry %d %+v; model %+v", step, i, r, m)
			}
		}
	}
	if ns, _ := s.Notifications(); len(ns) != 1 {
		t.Fatalf("%d notifications, want 1 (none read)", len(ns))
	}
	if _, err := s.UpdateRowTxn(nil, "memories", "r2", nil, []*Conflict{pool[0]}); err == nil {
		t.Fatal("a record of another row was accepted")
	}
}

// TestLegacyRowIndex: a row index in the JSON form of earlier builds (an array
// of ids) is read with the records' vectors and rewritten in binary form.
func TestLegacyRowIndex(t *testing.T) {
	db, err := store.Open("", store.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	s := NewStore(db, nil)
	mk := func(n uint64) *Conflict {
		c, err := New("memories", "r1", Version{InstanceID: "b", Lamport: n + 1, VV: store.VV{"b": n}, Data: []byte(`{"v":"b"}`)},
			Version{InstanceID: "a", Lamport: 1, VV: store.VV{"a": 1}, Data: []byte(`{"v":"a"}`)}, OpInsert)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	c1, c2, c3 := mk(1), mk(2), mk(3)
	ids := []string{c1.ID, c2.ID}
	slices.Sort(ids)
	legacy, _ := json.Marshal(ids)
	if err := db.Update(context.Background(), func(txn *store.Txn) error {
		for _, c := range []*Conflict{c1, c2} {
			if _, err := s.PutTxn(txn, c); err != nil {
				return err
			}
		}
		return txn.Set(rowKey("memories", "r1"), legacy)
	}); err != nil {
		t.Fatal(err)
	}
	check := func(want ...*Conflict) {
		t.Helper()
		slices.SortFunc(want, func(a, b *Conflict) int {
			if a.ID < b.ID {
				return -1
			}
			return 1
		})
		var idx []RowRecord
		if err := db.View(func(txn *store.Txn) error {
			var err error
			idx, err = s.RowIndexTxn(txn, "memories", "r1")
			return err
		}); err != nil {
			t.Fatal(err)
		}
		if len(idx) != len(want) {
			t.Fatalf("index %+v, want %d records", idx, len(want))
		}
		for i, c := range want {
			if idx[i].ID != c.ID || !reflect.DeepEqual(idx[i].WinningVV, c.WinningVV) || !reflect.DeepEqual(idx[i].LosingVV, c.LosingVV) {
				t.Fatalf("index entry %d %+v, want %s %v %v", i, idx[i], c.ID, c.WinningVV, c.LosingVV)
			}
		}
	}
	check(c1, c2)
	if err := db.Update(context.Background(), func(txn *store.Txn) error {
		_, err := s.UpdateRowTxn(txn, "memories", "r1", []string{c1.ID}, []*Conflict{c3})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	check(c2, c3)
	if err := db.View(func(txn *store.Txn) error {
		b, _, err := txn.Get(rowKey("memories", "r1"))
		if err != nil {
			return err
		}
		if len(b) == 0 || b[0] != rowIndexV1 {
			t.Fatalf("index not rewritten in binary form: %q", b)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}
