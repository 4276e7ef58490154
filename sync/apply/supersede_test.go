package apply

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/crow-sync/crow/store"
)

// TestMergeThenContinuation is the record-loss case: A ‖ B (B loses), E
// merges both, then A2 continues A without seeing B or E. B's losing data
// must stay in a record whatever the arrival order, and every order must
// give the same records as the reference. Four authors, so all 24 orders of
// A, B, E, A2 can happen; the observer applies after every arrival.
func TestMergeThenContinuation(t *testing.T) {
	for _, bWins := range []bool{false, true} {
		t.Run(fmt.Sprintf("bWins=%v", bWins), func(t *testing.T) {
			a, b := newNode(t, "a", "", nil), newNode(t, "b", "", nil)
			c, d := newNode(t, "c", "", nil), newNode(t, "d", "", nil)
			a.put(mem, "m", `{"v":"base"}`)
			syncAll(t, a, b, c, d)
			if bWins {
				bump(b, 3)
			} else {
				bump(a, 3)
			}
			a.put(mem, "m", `{"v":"A"}`)
			b.put(mem, "m", `{"v":"B"}`)
			pull(t, d, a, a.log.Key(), 100) // d: base and A only
			d.catchUp()
			pull(t, c, a, a.log.Key(), 100) // c: A and B
			pull(t, c, b, b.log.Key(), 100)
			c.catchUp()
			c.put(mem, "m", `{"v":"E"}`)
			d.put(mem, "m", `{"v":"A2"}`)

			writers := []*node{a, b, c, d}
			_, want := reference(t, writers)
			if len(want) != 2 {
				t.Fatalf("reference: %d records, want (A2,B) and (A2,E):\n%s", len(want), strings.Join(want, "\n"))
			}
			keep := func(recs []string) {
				t.Helper()
				var hasB, hasE bool
				for _, r := range recs {
					hasB = hasB || strings.Contains(r, `{"v":"B"}`)
					hasE = hasE || strings.Contains(r, `{"v":"E"}`)
				}
				if !hasB || !hasE {
					t.Fatalf("B's or E's version is in no record:\n%s", strings.Join(recs, "\n"))
				}
			}
			keep(want)

			feeds := []int{0, 1, 2, 3} // authors of A (with the base), B, E, A2
			perm := [][]int{}
			var gen func(p []int, rest []int)
			gen = func(p, rest []int) {
				if len(rest) == 0 {
					perm = append(perm, slices.Clone(p))
					return
				}
				for i := range rest {
					gen(append(p, rest[i]), append(slices.Clone(rest[:i]), rest[i+1:]...))
				}
			}
			gen(nil, feeds)
			var all []*node
			for i, order := range perm {
				o := newNode(t, fmt.Sprintf("o%d", i), "", nil)
				for _, k := range order {
					w := writers[k]
					pull(t, o, w, w.log.Key(), ^uint64(0))
					o.catchUp()
					// After each arrival the records are the reference over
					// what the observer holds, and once A and B
					// are both held B is live or in a record.
					var held [][]byte
					for _, h := range writers {
						if n, _ := o.length(h.log.Key()); n > 0 {
							es, err := o.rs.Read(h.log.Key(), 0, n)
							if err != nil {
								t.Fatal(err)
							}
							held = append(held, es...)
						}
					}
					_, now := referenceOf(t, held)
					got := o.conflictSet()
					if strings.Join(got, "\n") != strings.Join(now, "\n") {
						t.Fatalf("order %v, after %d:\ngot\n%s\nwant\n%s", order, k, strings.Join(got, "\n"), strings.Join(now, "\n"))
					}
					na, _ := o.length(a.log.Key())
					if nb, _ := o.length(b.log.Key()); na > 0 && nb > 0 && string(o.get(mem, "m").Data) != `{"v":"B"}` &&
						!slices.ContainsFunc(got, func(r string) bool { return strings.Contains(r, `{"v":"B"}`) }) {
						t.Fatalf("order %v, after %d: B is neither live nor in a record: %v", order, k, got)
					}
				}
				if got := o.conflictSet(); strings.Join(got, "\n") != strings.Join(want, "\n") {
					t.Fatalf("order %v:\ngot\n%s\nwant\n%s", order, strings.Join(got, "\n"), strings.Join(want, "\n"))
				}
				all = append(all, o)
			}
			expectSame(t, all...)
			if r := all[0].get(mem, "m"); r == nil || vvString(r.VV) != vvString(store.VV{"a": 2, "b": 1, "c": 1, "d": 1}) {
				t.Fatalf("live row %+v", r)
			}
		})
	}
}
