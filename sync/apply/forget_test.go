package apply

import (
	"strings"
	"testing"
	"time"

	"github.com/crow-sync/crow/store"
)

func forgetMut(id string) store.Mutation {
	return store.Mutation{Table: store.TableMemories, RowID: id, Op: store.OpDelete, Forget: true,
		Data: store.ForgetData(id, time.Unix(1e9, 0))}
}

// TestForgetWinsAndStaysForgotten: a and b edit m concurrently (a conflict); b then edits
// again many times (its lamport far above a's), while a forgets m. After a full sync, every
// node, whatever the order it saw the versions in, holds a's forget with every vector
// merged, no conflict record of m, and no apply state holding data.
func TestForgetWinsAndStaysForgotten(t *testing.T) {
	a, b, c := newNode(t, "a", t.TempDir(), nil), newNode(t, "b", t.TempDir(), nil), newNode(t, "c", t.TempDir(), nil)
	a.put(store.TableMemories, "m", `{"content":"the secret"}`)
	syncAll(t, a, b, c)
	a.put(store.TableMemories, "m", `{"content":"a's secret"}`)
	b.put(store.TableMemories, "m", `{"content":"b's secret"}`)
	// c sees the conflict first.
	pull(t, c, a, a.log.Key(), ^uint64(0))
	pull(t, c, b, b.log.Key(), ^uint64(0))
	c.catchUp()
	if len(c.conflicts()) != 1 {
		t.Fatalf("c: %d conflicts before the forget, want 1", len(c.conflicts()))
	}
	for range 5 {
		b.put(store.TableMemories, "m", `{"content":"b again"}`)
	}
	a.mustWrite(forgetMut("m"))
	syncAll(t, a, b, c)
	syncAll(t, a, b, c)
	want := a.get(store.TableMemories, "m")
	if !want.Forgotten() || want.InstanceID != "a" {
		t.Fatalf("a: row %+v", want)
	}
	for _, n := range []*node{a, b, c} {
		r := n.get(store.TableMemories, "m")
		if !r.Forgotten() || string(r.Data) != string(want.Data) || vvString(r.VV) != vvString(b.get(store.TableMemories, "m").VV) {
			t.Fatalf("%s: row %+v, want a's forget with every vector", n.id, r)
		}
		if r.VV["b"] != 6 {
			t.Fatalf("%s: vv %v lacks b's edits", n.id, r.VV)
		}
		if n != a && len(n.conflicts()) != 0 { // a's own records are the forgetter's to erase
			t.Fatalf("%s: conflicts of a forgotten row remain: %v", n.id, n.conflicts())
		}
		st, err := loadStateOf(n, "m")
		if err != nil || (st != nil && strings.Contains(string(encodeState(st)), "secret")) {
			t.Fatalf("%s: apply state %v %v", n.id, st, err)
		}
	}
	// An edit made on b before it saw the forget, arriving at a fresh node after the
	// forget, is dropped there too.
	o := newNode(t, "o", t.TempDir(), nil)
	pull(t, o, a, a.log.Key(), ^uint64(0))
	o.catchUp()
	pull(t, o, b, b.log.Key(), ^uint64(0))
	o.catchUp()
	if r := o.get(store.TableMemories, "m"); !r.Forgotten() || vvString(r.VV) != vvString(want.VV) && r.VV["b"] != 6 {
		t.Fatalf("o: row %+v", r)
	}
	if err := b.write(store.Mutation{Table: store.TableMemories, RowID: "m", Op: store.OpInsert, Data: []byte(`{"content":"x"}`)}); err == nil {
		t.Fatal("b revived a forgotten row")
	}
}

func loadStateOf(n *node, row string) (*rowState, error) {
	var st *rowState
	err := n.db.View(func(txn *store.Txn) error {
		var err error
		st, err = loadState(txn, store.TableMemories, row)
		return err
	})
	return st, err
}
