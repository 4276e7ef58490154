package apply

import (
	"errors"
	"fmt"
	"testing"

	"github.com/crow-sync/crow/feed"
	"github.com/prometheus/client_golang/prometheus"
)

// entriesCounter reads crow_apply_entries_total{outcome}.
func entriesCounter(t *testing.T, reg *prometheus.Registry, outcome string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "crow_apply_entries_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "outcome" && l.GetValue() == outcome {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// Entries cleared in the author's feed before a replica syncs arrive as
// leaves and are stored cleared: the apply loop skips them (nothing applied,
// nothing parked), moves the checkpoint past them and counts them; the
// others are applied. Clearing an entry already applied changes nothing.
func TestClearedEntriesSkipped(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	a := newNode(t, "a", "", nil)
	b := newNode(t, "b", t.TempDir(), func(o *Options) { o.Metrics = m })
	for i := 0; i < 20; i++ {
		a.put(mem, fmt.Sprint(i), fmt.Sprintf(`{"secret":"s-%d"}`, i))
	}
	key := a.log.Key()
	if err := a.log.Clear(3, 7, 19); err != nil {
		t.Fatal(err)
	}
	pull(t, b, a, key, 20)
	if _, err := b.rs.Read(key, 3, 4); !errors.Is(err, feed.ErrCleared) {
		t.Fatalf("replica holds cleared entry 3: %v", err)
	}
	if n := b.catchUp(); n != 20 {
		t.Fatalf("processed %d", n)
	}
	for i := 0; i < 20; i++ {
		got := b.get(mem, fmt.Sprint(i)) != nil
		if want := i != 3 && i != 7 && i != 19; got != want {
			t.Fatalf("row %d applied = %v", i, got)
		}
	}
	s := b.ap.Stats()
	if s.Cleared != 3 || s.FastForward != 17 || s.Parked != 0 {
		t.Fatalf("%+v", s)
	}
	if ps, err := b.ap.Parked(); err != nil || len(ps) != 0 {
		t.Fatalf("parked %v %+v", err, ps)
	}
	if v := entriesCounter(t, reg, "cleared"); v != 3 {
		t.Fatalf("crow_apply_entries_total{outcome=cleared} = %v", v)
	}
	st, _ := b.db.SyncState()
	if st.Applied[key.String()] != 20 {
		t.Fatalf("checkpoint %v", st.Applied)
	}
	// After a restart nothing is reprocessed; a clear of an applied entry
	// does not bring the loop back.
	b.reopen()
	if err := b.rs.Clear(key, 4); err != nil {
		t.Fatal(err)
	}
	a.put(mem, "20", `{"v":20}`)
	pull(t, b, a, key, 21)
	if n := b.catchUp(); n != 1 || b.get(mem, "20") == nil || b.get(mem, "4") == nil {
		t.Fatalf("processed %d", n)
	}
}
