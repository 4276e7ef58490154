package apply

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/crow-sync/crow/conflicts"
	"github.com/crow-sync/crow/feed"
	"github.com/crow-sync/crow/store"
)

// TestConvergenceProperty: three instances, each writing through its own
// store.Writer and feed.Log in its own badger directory, edit a few rows at
// random with random partial replication in between (direct or relayed
// through a third instance) and random apply points, so histories hold
// concurrent edits, merges, deletes and insert collisions. Then everyone
// syncs fully, and three fresh observers receive all feeds in random
// interleavings. All six must hold identical live rows and identical
// conflict records, equal to a brute-force reference computed from the set of
// all versions.
func TestConvergenceProperty(t *testing.T) {
	seeds := 40
	if testing.Short() {
		seeds = 3
	}
	for seed := range uint64(seeds) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			if seed%2 == 1 {
				// Every commit reads with known-absent bounds (a first sync's
				// long ranges do), not only ranges of 32 entries or more:
				// conflicts must be found the same.
				defer func(n int) { expectNewKeysFrom = n }(expectNewKeysFrom)
				expectNewKeysFrom = 1
			}
			convergenceRun(t, seed)
		})
	}
}

var propRows = []struct{ table, id string }{
	{store.TableMemories, "m0"}, {store.TableMemories, "m1"}, {store.TableMemories, "m2"},
	{store.TableNotes, "n0"}, {store.TableCrowContext, "proj:k0"}, {store.TableCrowContext, "proj:k1"},
}

var propData = []string{`{"v":"x"}`, `{"v":"y"}`, `{"v":"z","n":1}`, `{"n":1,"v":"z"}`, `{"v":"w"}`}

func convergenceRun(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 0xc0ffee))
	writers := []*node{
		newNode(t, "a", t.TempDir(), nil), newNode(t, "b", t.TempDir(), nil), newNode(t, "c", t.TempDir(), nil),
	}
	authors := []feed.PublicKey{writers[0].log.Key(), writers[1].log.Key(), writers[2].log.Key()}
	for range 80 {
		n := writers[rng.IntN(3)]
		if rng.IntN(10) < 7 {
			r := propRows[rng.IntN(len(propRows))]
			m := store.Mutation{Table: r.table, RowID: r.id, Op: store.OpPut, Data: []byte(propData[rng.IntN(len(propData))])}
			switch rng.IntN(6) {
			case 0:
				m.Op, m.Data = store.OpDelete, nil
			case 1:
				m.Op = store.OpInsert
			}
			if r.id != "m2" && r.table == store.TableMemories && rng.IntN(20) == 0 {
				// A forget (m2 is never forgotten, so some history keeps its conflicts).
				m.Op, m.Forget, m.Data = store.OpDelete, true, store.ForgetData(r.id, time.Unix(int64(1e9+rng.IntN(100)), 0))
			}
			if err := n.write(m); err != nil && !errors.Is(err, store.ErrNotFound) && !errors.Is(err, store.ErrExists) &&
				!errors.Is(err, store.ErrForgotten) {
				t.Fatal(err)
			}
			continue
		}
		src := writers[rng.IntN(3)]
		key := authors[rng.IntN(3)]
		if src != n && key != n.log.Key() {
			have, _ := n.length(key)
			pull(t, n, src, key, have+1+rng.Uint64N(6))
		}
		if rng.IntN(2) == 0 {
			n.catchUp()
		}
	}
	for _, n := range writers {
		for _, k := range rng.Perm(3) {
			if authors[k] != n.log.Key() {
				pull(t, n, writers[k], authors[k], ^uint64(0))
			}
		}
		n.catchUp()
	}
	all := slices.Clone(writers)
	for i := range 3 {
		o := newNode(t, fmt.Sprintf("o%d", i), t.TempDir(), nil) // on disk: see the report on in-memory badger
		all = append(all, o)
		for {
			var open []int
			for k, key := range authors {
				if l, _ := o.length(key); l < writers[k].log.Head().Length {
					open = append(open, k)
				}
			}
			if len(open) == 0 {
				break
			}
			k := open[rng.IntN(len(open))]
			have, _ := o.length(authors[k])
			pull(t, o, writers[rng.IntN(3)], authors[k], have+1+rng.Uint64N(4)) // maybe relayed
			if rng.IntN(3) == 0 {
				o.catchUp()
			}
		}
		o.catchUp()
	}
	expectSame(t, all...)

	rows, confs := reference(t, writers)
	if got := all[0].snapshot(); fmt.Sprint(got) != fmt.Sprint(rows) {
		t.Fatalf("live rows differ from the reference:\ngot  %v\nwant %v", got, rows)
	}
	if got := all[0].conflictSet(); strings.Join(got, "\n") != strings.Join(confs, "\n") {
		t.Fatalf("conflicts differ from the reference:\ngot\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(confs, "\n"))
	}
	for _, n := range all {
		ns, err := n.cs.Notifications()
		if err != nil {
			t.Fatal(err)
		}
		// Nobody reads them here, so exactly one per instance that ever created a record.
		if want := min(n.ap.Stats().Conflicts, 1); uint64(len(ns)) != want {
			t.Fatalf("%s: %d notifications, want %d", n.id, len(ns), want)
		}
	}
	forgotten := 0
	for _, r := range rows {
		if strings.Contains(r.Data, "forgotten_at") {
			forgotten++
		}
	}
	t.Logf("seed %d: %d rows (%d forgotten), %d conflicts, stats of o0 %+v", seed, len(rows), forgotten, len(confs), all[3].ap.Stats())
}

// reference computes live rows and conflict records from the definition,
// over every version ever written (every change record of every feed):
// live = the highest (lamport, instance id), vv = the merge of all; records =
// the non-equivalent concurrent pairs (x, y) not dominated by another
// concurrent pair (x', y') with x ≤ x', y ≤ y', x' ‖ y, y' ‖ x. A row with a
// forget among its versions: live = the highest forget, vv = the merge of all,
// no records.
func reference(t *testing.T, writers []*node) (map[string]liveRow, []string) {
	var all [][]byte
	for _, w := range writers {
		entries, err := w.log.Read(0, w.log.Head().Length)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, entries...)
	}
	return referenceOf(t, all)
}

// referenceOf is reference over the given change records.
func referenceOf(t *testing.T, entries [][]byte) (map[string]liveRow, []string) {
	byRow := map[string][]*version{}
	var order []string
	{
		for _, e := range entries {
			c, err := store.ParseChange(e)
			if err != nil {
				t.Fatal(err)
			}
			k := c.Table + "/" + c.RowID
			if byRow[k] == nil {
				order = append(order, k)
			}
			byRow[k] = append(byRow[k], versionOfChange(&c))
		}
	}
	rows := map[string]liveRow{}
	var confs []*conflicts.Conflict
	for _, k := range order {
		vs := byRow[k]
		table, id, _ := strings.Cut(k, "/")
		var win, forget *version
		vv := store.VV{}
		for _, v := range vs {
			if win == nil || v.beats(win) {
				win = v
			}
			if v.forgets() && !lwwTable(table) && (forget == nil || v.beats(forget)) {
				forget = v
			}
			vv = vv.Merge(v.VV)
		}
		if forget != nil {
			win = forget
		}
		rows[k] = liveRow{canon(t, win.Data), win.Lamport, win.Origin, vvString(vv), win.Deleted}
		if lwwTable(table) || forget != nil {
			continue
		}
		for i, x := range vs {
			for _, y := range vs[i+1:] {
				if !concurrent(x.VV, y.VV) || dominated(x, y, vs) || dominated(y, x, vs) {
					continue
				}
				c, err := pairRecord(table, id, x, y)
				if err != nil {
					t.Fatal(err)
				}
				if c != nil {
					confs = append(confs, c)
				}
			}
		}
	}
	var out []string
	for _, c := range confs {
		out = append(out, fmt.Sprintf("%s %s/%s %s win=%s@%d%s del=%v %s lose=%s@%d%s del=%v %s",
			c.ID, c.TableName, c.RowID, c.Op,
			c.WinningInstanceID, c.WinningLamportTS, vvString(c.WinningVV), c.WinningDeleted, c.WinningData,
			c.LosingInstanceID, c.LosingLamportTS, vvString(c.LosingVV), c.LosingDeleted, c.LosingData))
	}
	slices.Sort(out)
	return rows, out
}

// dominates is the reference dominance of pairs, straight from the
// definition: (x2, y2) ≠ (x, y) is a concurrent pair with x ≤ x2 and
// y ≤ y2, where x2 has seen nothing of y's history that x had not seen
// (min(x2, y) ≤ x) and y2 nothing of x's that y had not (min(y2, x) ≤ y).
func dominates(x2, y2, x, y store.VV) bool {
	ids := union(x2, y2, x, y)
	le := func(a, b store.VV) bool {
		for id := range ids {
			if a[id] > b[id] {
				return false
			}
		}
		return true
	}
	if le(x2, x) && le(y2, y) { // the same pair
		return false
	}
	if le(x2, y2) || le(y2, x2) || !le(x, x2) || !le(y, y2) {
		return false
	}
	for id := range ids {
		if min(x2[id], y[id]) > x[id] || min(y2[id], x[id]) > y[id] {
			return false
		}
	}
	return true
}

func union(vs ...store.VV) map[string]bool {
	out := map[string]bool{}
	for _, v := range vs {
		for id := range v {
			out[id] = true
		}
	}
	return out
}

func dominated(x, y *version, vs []*version) bool {
	for _, x2 := range vs {
		for _, y2 := range vs {
			if x2.same(x) && y2.same(y) {
				continue
			}
			if dominates(x2.VV, y2.VV, x.VV, y.VV) {
				return true
			}
		}
	}
	return false
}
