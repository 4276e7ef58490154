package apply

import (
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
