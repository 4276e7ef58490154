package conflicts

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/crow-sync/crow/store"
)

func TestIDOrderIndependentAndDistinct(t *testing.T) {
	a := Version{InstanceID: "a", Lamport: 3, VV: store.VV{"a": 2, "b": 1}, Data: []byte(`{"x":1}`)}
	b := Version{InstanceID: "b", Lamport: 3, VV: store.VV{"b": 1, "z": 0}, Data: []byte(`{"x":2}`)}
	if ID("memories", "r", a, b) != ID("memories", "r", b, a) {
		t.Fatal("id depends on argument order")
	}
	b2 := b
	b2.VV = store.VV{"b": 2}
	for _, other := range []string{ID("notes", "r", a, b), ID("memories", "r2", a, b), ID("memories", "r", a, b2)} {
		if other == ID("memories", "r", a, b) {
			t.Fatal("distinct pairs share an id")
		}
	}
}

func TestEquivalentAndClassify(t *testing.T) {
	v := func(id string, vv store.VV, del bool, data string) Version {
		return Version{InstanceID: id, VV: vv, Deleted: del, Data: []byte(data)}
	}
	if eq, _ := Equivalent(v("a", nil, false, `{"a":1,"b":[1,2]}`), v("b", nil, false, `{ "b":[1,2], "a":1 }`)); !eq {
		t.Fatal("key order made a difference")
	}
	if eq, _ := Equivalent(v("a", nil, true, `{"a":1}`), v("b", nil, true, `{"a":2}`)); !eq {
		t.Fatal("two tombstones are noise")
	}
	if eq, _ := Equivalent(v("a", nil, true, `{"a":1}`), v("b", nil, false, `{"a":1}`)); eq {
		t.Fatal("delete vs live is not noise")
	}
	ins := Classify(v("a", store.VV{"a": 2}, false, `{}`), v("b", store.VV{"b": 1}, false, `{}`))
	upd := Classify(v("a", store.VV{"a": 2, "b": 1}, false, `{}`), v("b", store.VV{"b": 2}, false, `{}`))
	del := Classify(v("a", store.VV{"a": 2}, true, `{}`), v("b", store.VV{"b": 1}, false, `{}`))
	if ins != OpInsert || upd != OpUpdate || del != OpDelete {
		t.Fatal(ins, upd, del)
	}
}

func TestPutIdempotentAndNotifyOnce(t *testing.T) {
	db, err := store.Open("", store.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	s := NewStore(db, func() time.Time { return now })
	mk := func(row string) *Conflict {
		c, err := New("memories", row, Version{InstanceID: "b", Lamport: 2, VV: store.VV{"b": 1}, Data: []byte(`{"v":"b"}`)},
			Version{InstanceID: "a", Lamport: 1, VV: store.VV{"a": 1}, Data: []byte(`{"v":"a"}`)}, OpInsert)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	put := func(c *Conflict) (created bool) {
		err := db.Update(context.Background(), func(txn *store.Txn) error {
			var err error
			created, err = s.PutTxn(txn, c)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return created
	}
	if !put(mk("r1")) || put(mk("r1")) || !put(mk("r2")) {
		t.Fatal("put not idempotent")
	}
	got, err := s.Get(mk("r1").ID)
	if err != nil || !got.CreatedAt.Equal(now) || got.Resolved || got.ResolvedAt != nil {
		t.Fatalf("%v %+v", err, got)
	}
	ns, _ := s.Notifications()
	if len(ns) != 1 {
		t.Fatalf("%d notifications", len(ns))
	}
	var row []*Conflict
	_ = db.View(func(txn *store.Txn) error { row, err = s.ForRowTxn(txn, "memories", "r1"); return err })
	if len(row) != 1 {
		t.Fatal(len(row))
	}
	if err := db.Update(context.Background(), func(txn *store.Txn) error { return s.DeleteTxn(txn, row[0].ID) }); err != nil {
		t.Fatal(err)
	}
	if all, _ := s.List(Filter{Unresolved: true}); len(all) != 1 || all[0].RowID != "r2" {
		t.Fatalf("%+v", all)
	}
}

func TestEquivalentIgnoresUpdatedAt(t *testing.T) {
	a := Version{InstanceID: "a", Lamport: 3, Data: json.RawMessage(`{"content":"x","updated_at":"2026-11-29T10:00:00Z"}`)}
	b := Version{InstanceID: "b", Lamport: 4, Data: json.RawMessage(`{"updated_at":"2026-11-29T10:00:07Z","content":"x"}`)}
	if eq, err := Equivalent(a, b); err != nil || !eq {
		t.Fatalf("Equivalent = %v, %v; want true: only updated_at differs", eq, err)
	}
	b.Data = json.RawMessage(`{"content":"y","updated_at":"2026-11-29T10:00:00Z"}`)
	if eq, _ := Equivalent(a, b); eq {
		t.Fatal("versions with different content are equivalent")
	}
}

// TestNewUnlessEquivalentMatches: the one-decode constructor agrees with
// Equivalent, then New with Classify.
func TestNewUnlessEquivalentMatches(t *testing.T) {
	datas := []string{``, `{}`, `null`, `{"a":1}`, `{ "a" : 1 }`, `{"a":1,"updated_at":"x"}`, `{"updated_at":"y","a":1}`,
		`{"a":1.50}`, `{"a":1.5}`, `{"h":"<&>"}`, `{"h":"\u003c&>"}`, `[1,2]`, `"s"`, `{"a":{"updated_at":1}}`, `{"a":{"updated_at":2}}`}
	vvs := []store.VV{{"a": 1}, {"a": 1, "b": 1}, {"b": 2}}
	n := 0
	for _, wd := range datas {
		for _, ld := range datas {
			for _, del := range [][2]bool{{false, false}, {true, false}, {false, true}, {true, true}} {
				w := Version{InstanceID: "b", Lamport: 5, VV: vvs[n%3], Deleted: del[0], Data: json.RawMessage(wd)}
				l := Version{InstanceID: "a", Lamport: 4, VV: vvs[(n+1)%3], Deleted: del[1], Data: json.RawMessage(ld)}
				n++
				got, err := NewUnlessEquivalent("memories", "r", w, l)
				if err != nil {
					t.Fatal(err)
				}
				eq, err := Equivalent(w, l)
				if err != nil {
					t.Fatal(err)
				}
				if eq != (got == nil) {
					t.Fatalf("%s vs %s %v: equivalent %v, got %+v", wd, ld, del, eq, got)
				}
				if eq {
					continue
				}
				want, err := New("memories", "r", w, l, Classify(w, l))
				if err != nil {
					t.Fatal(err)
				}
				gb, _ := json.Marshal(got)
				wb, _ := json.Marshal(want)
				if string(gb) != string(wb) {
					t.Fatalf("\ngot  %s\nwant %s", gb, wb)
				}
			}
		}
	}
}

// TestRaiseOnePerKindUntilRead: other kinds of notification (a feed fork)
// are deduplicated per kind like conflicts, independently of them.
func TestRaiseOnePerKindUntilRead(t *testing.T) {
	db, err := store.Open("", store.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	s := NewStore(db, time.Now)
	for range 3 {
		if err := s.Raise(KindFeedFork, "A feed forked", "laptop's feed has two histories", InstancesLink); err != nil {
			t.Fatal(err)
		}
	}
	ns, err := s.Notifications()
	if err != nil || len(ns) != 1 || ns[0].Kind != KindFeedFork || ns[0].Priority != PriorityHigh || ns[0].Read {
		t.Fatalf("after three raises: %v %+v", err, ns)
	}
	if err := s.MarkRead(ns[0].ID); err != nil {
		t.Fatal(err)
	}
	if err := s.Raise(KindFeedFork, "A feed forked", "again", InstancesLink); err != nil {
		t.Fatal(err)
	}
	if ns, _ = s.Notifications(); len(ns) != 2 || ns[0].Read || !ns[1].Read {
		t.Fatalf("a raise after reading did not make a new unread notification: %+v", ns)
	}
}
