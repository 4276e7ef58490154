package apply

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/crow-sync/crow/store"
)

// Options.Refuse parks the entries a domain rule refuses (home failover: a
// demoted home's numbers above its successor's base) and applies the rest.
func TestRefuseParks(t *testing.T) {
	a := newNode(t, "a", "", nil)
	b := newNode(t, "b", "", func(o *Options) {
		o.Refuse = func(rec *store.ChangeRecord) string {
			if rec.Table == store.TableMemoryVersions && rec.RowID > "2" {
				return "number " + rec.RowID + " refused"
			}
			return ""
		}
	})
	for _, n := range []string{"1", "2", "3"} {
		a.put(store.TableMemoryVersions, n, `{"number":`+n+`}`)
	}
	pull(t, b, a, a.log.Key(), 100)
	if n := b.catchUp(); n != 3 {
		t.Fatalf("processed %d", n)
	}
	if b.get(store.TableMemoryVersions, "1") == nil || b.get(store.TableMemoryVersions, "2") == nil {
		t.Fatal("an accepted entry was not applied")
	}
	if b.get(store.TableMemoryVersions, "3") != nil {
		t.Fatal("the refused entry was applied")
	}
	ps, err := b.ap.Parked()
	if err != nil || len(ps) != 1 || ps[0].Index != 2 || !strings.Contains(ps[0].Reason, "number 3 refused") {
		t.Fatalf("parked %+v %v", ps, err)
	}
}

// A live row the rule refuses (this instance's own, written before it
// learned the rule) gives way to the next accepted version, with no
// conflict.
func TestRefusedLiveRowReplaced(t *testing.T) {
	refuse := func(rec *store.ChangeRecord) string {
		if rec.Table == store.TableMemoryVersions && rec.InstanceID == "b" {
			return "b is demoted"
		}
		return ""
	}
	a := newNode(t, "a", "", nil)
	b := newNode(t, "b", "", func(o *Options) { o.Refuse = refuse })
	b.put(store.TableMemoryVersions, "7", `{"number":7,"by":"b"}`)
	a.put(store.TableMemoryVersions, "7", `{"number":7,"by":"a"}`)
	pull(t, b, a, a.log.Key(), 100)
	b.catchUp()
	if got := b.get(store.TableMemoryVersions, "7"); got == nil || got.InstanceID != "a" || canon(t, got.Data) != `{"by":"a","number":7}` {
		t.Fatalf("row 7 on b = %+v", got)
	}
	if cs := b.conflicts(); len(cs) != 0 {
		t.Fatalf("conflicts: %+v", cs)
	}
}

// A batch record (home's numbering) is applied record by record in its
// entry's transaction; one refused record parks the whole entry.
func TestBatchEntryAppliedOrParkedWhole(t *testing.T) {
	a := newNode(t, "a", "", nil)
	b := newNode(t, "b", "", func(o *Options) {
		o.Refuse = func(rec *store.ChangeRecord) string {
			if rec.Table == store.TableMemoryVersions && rec.RowID == "9" {
				return "number 9 refused"
			}
			return ""
		}
	})
	ctx := context.Background()
	batch := func(rows ...string) {
		t.Helper()
		var muts []store.Mutation
		for _, r := range rows {
			muts = append(muts, store.Mutation{Table: store.TableMemoryVersions, RowID: r, Op: store.OpPut, Data: json.RawMessage(`{"number":` + r + `}`)})
		}
		muts = append(muts, store.Mutation{Table: store.TableMemoryNumbers, RowID: "m" + rows[0], Op: store.OpPut, Data: json.RawMessage(`{"number":` + rows[0] + `}`)})
		if _, err := a.w.WriteEntry(ctx, muts...); err != nil {
			t.Fatal(err)
		}
	}
	batch("1", "2")
	batch("3")
	batch("8", "9")
	batch("1") // an update of 1 and of m1 in one entry after their insert
	if got := a.log.Head().Length; got != 4 {
		t.Fatalf("a's feed has %d entries, want 4 (one per WriteEntry)", got)
	}
	pull(t, b, a, a.log.Key(), 100)
	if n := b.catchUp(); n != 4 {
		t.Fatalf("processed %d", n)
	}
	for _, r := range []string{"1", "2", "3"} {
		if b.get(store.TableMemoryVersions, r) == nil {
			t.Fatalf("version %s of an accepted batch was not applied", r)
		}
	}
	if m := b.get(store.TableMemoryNumbers, "m1"); m == nil || m.VV["a"] != 2 {
		t.Fatalf("m1 = %+v, want its second version", m)
	}
	for _, r := range []string{"8", "9"} {
		if b.get(store.TableMemoryVersions, r) != nil {
			t.Fatalf("version %s of the refused batch was applied", r)
		}
	}
	if b.get(store.TableMemoryNumbers, "m8") != nil {
		t.Fatal("a record of the refused batch was applied")
	}
	ps, err := b.ap.Parked()
	if err != nil || len(ps) != 1 || ps[0].Index != 2 || ps[0].Schema != store.BatchSchema || !strings.Contains(ps[0].Reason, "number 9 refused") {
		t.Fatalf("parked %+v %v", ps, err)
	}
}
