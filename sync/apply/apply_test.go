package apply

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/crow-sync/crow/clock"
	"github.com/crow-sync/crow/conflicts"
	"github.com/crow-sync/crow/store"
)

const mem = store.TableMemories

// bump makes n's Lamport clock advance by k writes to an unrelated row.
func bump(n *node, k int) {
	for i := range k {
		n.put(store.TableNotes, "bump-"+n.id, fmt.Sprintf(`{"i":%d}`, i))
	}
}

func expectConflicts(t *testing.T, n *node, want int) []conflicts.Conflict {
	t.Helper()
	cs := n.conflicts()
	if len(cs) != want {
		t.Fatalf("%s: %d conflicts, want %d: %+v", n.id, len(cs), want, cs)
	}
	return cs
}

func expectSame(t *testing.T, nodes ...*node) {
	t.Helper()
	s0, c0 := nodes[0].snapshot(), nodes[0].conflictSet()
	for _, n := range nodes[1:] {
		s, c := n.snapshot(), n.conflictSet()
		if fmt.Sprint(s) != fmt.Sprint(s0) {
			t.Fatalf("live rows differ:\n%s: %v\n%s: %v", nodes[0].id, s0, n.id, s)
		}
		if strings.Join(c, "\n") != strings.Join(c0, "\n") {
			t.Fatalf("conflicts differ:\n%s:\n%s\n%s:\n%s", nodes[0].id, strings.Join(c0, "\n"), n.id, strings.Join(c, "\n"))
		}
	}
}

func TestRules(t *testing.T) {
	tests := []struct {
		name string
		run  func(t *testing.T, a, b, c *node)
	}{
		{"fast-forward", func(t *testing.T, a, b, c *node) {
			a.put(mem, "m", `{"v":1}`)
			syncAll(t, a, b)
			b.put(mem, "m", `{"v":2}`)
			syncAll(t, a, b)
			if r := a.get(mem, "m"); string(r.Data) != `{"v":2}` || r.InstanceID != "b" || vvString(r.VV) != "[a:1 b:1]" {
				t.Fatalf("a: %+v", r)
			}
			if s := a.ap.Stats(); s.FastForward != 1 || s.Concurrent != 0 || s.Conflicts != 0 {
				t.Fatalf("a stats %+v", s)
			}
			expectConflicts(t, a, 0)
			expectSame(t, a, b)
		}},
		{"stale duplicate skipped", func(t *testing.T, a, b, c *node) {
			a.put(mem, "m", `{"v":1}`)
			syncAll(t, a, b)
			b.put(mem, "m", `{"v":2}`)
			// c gets b's update (which saw a's insert) before a's insert.
			pull(t, c, b, b.log.Key(), 100)
			c.catchUp()
			pull(t, c, a, a.log.Key(), 100)
			c.catchUp()
			if s := c.ap.Stats(); s.Stale != 1 || s.FastForward != 1 {
				t.Fatalf("c stats %+v", s)
			}
			if r := c.get(mem, "m"); string(r.Data) != `{"v":2}` {
				t.Fatalf("c: %s", r.Data)
			}
			syncAll(t, a, b, c)
			expectConflicts(t, c, 0)
			expectSame(t, a, b, c)
		}},
		{"concurrent: higher lamport wins", func(t *testing.T, a, b, c *node) {
			a.put(mem, "m", `{"v":0}`)
			syncAll(t, a, b)
			bump(a, 3)
			a.put(mem, "m", `{"v":"a"}`) // lamport higher than b's
			b.put(mem, "m", `{"v":"b"}`)
			syncAll(t, a, b)
			for _, n := range []*node{a, b} {
				if r := n.get(mem, "m"); string(r.Data) != `{"v":"a"}` || vvString(r.VV) != "[a:2 b:1]" {
					t.Fatalf("%s: %+v", n.id, r)
				}
				cs := expectConflicts(t, n, 1)
				if c := cs[0]; c.WinningInstanceID != "a" || c.LosingInstanceID != "b" || c.Op != conflicts.OpUpdate ||
					string(c.LosingData) != `{"v":"b"}` || string(c.WinningData) != `{"v":"a"}` || c.Resolved || c.ResolvedAt != nil {
					t.Fatalf("%s: %+v", n.id, c)
				}
			}
			expectSame(t, a, b)
		}},
		{"concurrent: equal lamport, higher instance id wins; insert collision", func(t *testing.T, a, b, c *node) {
			a.put(mem, "m", `{"v":"a"}`)
			b.put(mem, "m", `{"v":"b"}`) // both lamport 1
			syncAll(t, a, b)
			for _, n := range []*node{a, b} {
				if r := n.get(mem, "m"); string(r.Data) != `{"v":"b"}` || r.InstanceID != "b" {
					t.Fatalf("%s: %+v", n.id, r)
				}
				cs := expectConflicts(t, n, 1)
				if c := cs[0]; c.WinningInstanceID != "b" || c.Op != conflicts.OpInsert {
					t.Fatalf("%s: %+v", n.id, c)
				}
			}
			expectSame(t, a, b)
		}},
		{"noise: equivalent versions merge without a conflict", func(t *testing.T, a, b, c *node) {
			a.put(mem, "m", `{"v":0}`)
			syncAll(t, a, b)
			a.put(mem, "m", `{"x":1,"y":[1,2]}`)
			b.put(mem, "m", `{ "y": [1, 2], "x": 1 }`)
			syncAll(t, a, b)
			expectConflicts(t, a, 0)
			expectConflicts(t, b, 0)
			if r := a.get(mem, "m"); vvString(r.VV) != "[a:2 b:1]" {
				t.Fatalf("vv not merged: %v", r.VV)
			}
			if s := a.ap.Stats(); s.Concurrent != 1 {
				t.Fatalf("a stats %+v", s)
			}
			expectSame(t, a, b)
		}},
		{"delete concurrent with update", func(t *testing.T, a, b, c *node) {
			a.put(mem, "m", `{"v":0}`)
			syncAll(t, a, b)
			bump(b, 2)
			a.del(mem, "m")
			b.put(mem, "m", `{"v":"b"}`) // higher lamport: the update wins over the delete
			syncAll(t, a, b)
			for _, n := range []*node{a, b} {
				r := n.get(mem, "m")
				if r.Deleted || string(r.Data) != `{"v":"b"}` {
					t.Fatalf("%s: %+v", n.id, r)
				}
				cs := expectConflicts(t, n, 1)
				if c := cs[0]; c.Op != conflicts.OpDelete || !c.LosingDeleted || c.LosingInstanceID != "a" {
					t.Fatalf("%s: %+v", n.id, c)
				}
			}
			expectSame(t, a, b)
		}},
		{"tombstone not resurrected by an old update", func(t *testing.T, a, b, c *node) {
			a.put(mem, "m", `{"v":0}`)
			syncAll(t, a, b)
			b.put(mem, "m", `{"v":"old"}`)
			syncAll(t, a, b)
			a.del(mem, "m")
			// c was offline: it gets a's feed (insert, delete) first, then b's old update.
			pull(t, c, a, a.log.Key(), 100)
			c.catchUp()
			pull(t, c, b, b.log.Key(), 100)
			c.catchUp()
			if r := c.get(mem, "m"); !r.Deleted {
				t.Fatalf("resurrected: %+v", r)
			}
			syncAll(t, a, b, c)
			expectConflicts(t, c, 0)
			expectSame(t, a, b, c)
		}},
		{"crow_context: last write wins, never a conflict", func(t *testing.T, a, b, c *node) {
			a.put(store.TableCrowContext, "proj:k", `{"v":0}`)
			syncAll(t, a, b)
			bump(b, 2)
			a.put(store.TableCrowContext, "proj:k", `{"v":"a"}`)
			b.put(store.TableCrowContext, "proj:k", `{"v":"b"}`)
			a.put(store.TableCrowContext, "proj:j", `{"v":"a"}`)
			b.put(store.TableCrowContext, "proj:j", `{"v":"b"}`) // insert collision: LWW too
			syncAll(t, a, b)
			for _, n := range []*node{a, b} {
				if r := n.get(store.TableCrowContext, "proj:k"); string(r.Data) != `{"v":"b"}` || vvString(r.VV) != "[a:2 b:1]" {
					t.Fatalf("%s: %+v", n.id, r)
				}
				expectConflicts(t, n, 0)
			}
			expectSame(t, a, b)
		}},
		{"three concurrent versions: every pair recorded, same everywhere", func(t *testing.T, a, b, c *node) {
			a.put(mem, "m", `{"v":0}`)
			syncAll(t, a, b, c)
			bump(c, 2)
			a.put(mem, "m", `{"v":"a"}`)
			b.put(mem, "m", `{"v":"b"}`)
			c.put(mem, "m", `{"v":"c"}`)
			// different arrival orders
			pull(t, a, b, b.log.Key(), 100)
			a.catchUp()
			pull(t, a, c, c.log.Key(), 100)
			a.catchUp()
			pull(t, b, c, c.log.Key(), 100)
			b.catchUp()
			pull(t, b, a, a.log.Key(), 100)
			b.catchUp()
			pull(t, c, b, b.log.Key(), 100) // c gets a's version through b
			pull(t, c, b, a.log.Key(), 100)
			c.catchUp()
			for _, n := range []*node{a, b, c} {
				if r := n.get(mem, "m"); string(r.Data) != `{"v":"c"}` {
					t.Fatalf("%s: %s", n.id, r.Data)
				}
				expectConflicts(t, n, 3)
			}
			expectSame(t, a, b, c)
		}},
		{"a newer version of one side supersedes the older pair", func(t *testing.T, a, b, c *node) {
			a.put(mem, "m", `{"v":0}`)
			syncAll(t, a, b)
			a.put(mem, "m", `{"v":"a1"}`)
			b.put(mem, "m", `{"v":"b1"}`)
			b.put(mem, "m", `{"v":"b2"}`)
			// a sees b1 first (pair a1/b1), then b2 (pair a1/b2 replaces it).
			pull(t, a, b, b.log.Key(), 2)
			a.catchUp()
			expectConflicts(t, a, 1)
			syncAll(t, a, b)
			expectConflicts(t, a, 1)
			if s := a.ap.Stats(); s.Superseded != 1 {
				t.Fatalf("a stats %+v", s)
			}
			expectSame(t, a, b)
		}},
		{"a merged version arriving first does not hide the pair it merged", func(t *testing.T, a, b, c *node) {
			a.put(mem, "m", `{"v":"a"}`)
			b.put(mem, "m", `{"v":"b"}`)
			syncAll(t, a, b)
			a.put(mem, "m", `{"v":"merged"}`) // saw both
			// c gets the merge before either side.
			pull(t, c, a, a.log.Key(), 100)
			pull(t, c, b, b.log.Key(), 100)
			c.catchUp()
			expectConflicts(t, c, 1)
			syncAll(t, a, b, c)
			expectSame(t, a, b, c)
			// Both sides stay in the row's state beside the merge: a later
			// version that saw b but not a would pair with a (the merge,
			// which saw b, does not continue a against it).
			var st *rowState
			_ = c.db.View(func(txn *store.Txn) error { var err error; st, err = loadState(txn, mem, "m"); return err })
			if st == nil || len(st.Versions) != 3 {
				t.Fatalf("state: %+v", st)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, b, c := newNode(t, "a", "", nil), newNode(t, "b", "", nil), newNode(t, "c", "", nil)
			tt.run(t, a, b, c)
		})
	}
}

func TestOnAppliedAndNotify(t *testing.T) {
	a := newNode(t, "a", "", nil)
	var b *node
	got := make(chan string, 100)
	b = newNode(t, "b", "", func(o *Options) {
		o.Rescan = time.Hour // only Notify wakes it
		o.OnApplied = func(table string, r *store.Row) { got <- table + "/" + r.RowID }
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.ap.Serve(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	a.put(store.TableCrowInstances, "a", `{"name":"a"}`)
	pull(t, b, a, a.log.Key(), 100)
	b.ap.Notify()
	select {
	case s := <-got:
		if s != "crow_instances/a" {
			t.Fatal(s)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("not applied after Notify")
	}
}

// TestRescanOnClock: without a Notify, Serve applies what the replicas hold
// at the next Rescan tick of its clock, and not before.
func TestRescanOnClock(t *testing.T) {
	a := newNode(t, "a", "", nil)
	clk := clock.NewFake(testEpoch)
	idle := make(chan struct{}, 1)
	got := make(chan string, 100)
	b := newNode(t, "b", "", func(o *Options) {
		o.Rescan, o.Clock = time.Minute, clk
		o.OnApplied = func(table string, r *store.Row) { got <- table + "/" + r.RowID }
	})
	b.ap.idle = func() {
		select {
		case idle <- struct{}{}:
		default:
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.ap.Serve(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	<-idle // the first pass is over: only a tick or a Notify wakes Serve now
	a.put(store.TableCrowInstances, "a", `{"name":"a"}`)
	pull(t, b, a, a.log.Key(), 100)
	clk.Advance(time.Minute - time.Nanosecond)
	select {
	case s := <-got:
		t.Fatalf("applied %s before the rescan tick", s)
	default:
	}
	if p := clk.Pending(); len(p) != 1 || p[0] != time.Nanosecond {
		t.Fatalf("pending %v, want the rescan ticker due in 1ns", p)
	}
	clk.Advance(time.Nanosecond)
	if s := <-got; s != "crow_instances/a" {
		t.Fatalf("applied %s", s)
	}
}

func TestNotificationPerBurst(t *testing.T) {
	a, b := newNode(t, "a", "", nil), newNode(t, "b", "", nil)
	for i := range 5 {
		a.put(mem, fmt.Sprint(i), `{"v":"a"}`)
		b.put(mem, fmt.Sprint(i), `{"v":"b"}`)
	}
	syncAll(t, a, b)
	expectConflicts(t, a, 5)
	ns, err := a.cs.Notifications()
	if err != nil || len(ns) != 1 {
		t.Fatalf("%v %+v", err, ns)
	}
	n := ns[0]
	if n.Kind != conflicts.KindSyncConflict || n.Priority != conflicts.PriorityHigh || n.Link != "/ui/conflicts" || n.Read {
		t.Fatalf("%+v", n)
	}
	if err := a.cs.MarkRead(n.ID); err != nil {
		t.Fatal(err)
	}
	// More conflicts after it was read: one new notification for the new burst.
	for i := range 3 {
		a.put(mem, fmt.Sprint(i), `{"v":"a2"}`)
		b.put(mem, fmt.Sprint(i), `{"v":"b2"}`)
	}
	syncAll(t, a, b)
	ns, _ = a.cs.Notifications()
	if len(ns) != 2 || ns[0].Read || !ns[1].Read {
		t.Fatalf("%+v", ns)
	}
	if err := a.cs.MarkRead("nope"); !errors.Is(err, conflicts.ErrNotFound) {
		t.Fatal(err)
	}
	// Filters.
	all, _ := a.cs.List(conflicts.Filter{Table: mem, Unresolved: true})
	if len(all) != 8 {
		t.Fatalf("%d", len(all))
	}
	if c, err := a.cs.Get(all[0].ID); err != nil || c.ID != all[0].ID {
		t.Fatal(err)
	}
}

func TestUnknownSchemaParked(t *testing.T) {
	a, b := newNode(t, "a", "", nil), newNode(t, "b", "", nil)
	a.put(mem, "1", `{"v":1}`)
	future := []byte(`{"schema":2,"type":"memory_frobnicate","table":"memories","row_id":"1","op":"frob"}`)
	if _, err := a.log.Append([][]byte{future, []byte("not json")}); err != nil {
		t.Fatal(err)
	}
	a.put(mem, "2", `{"v":2}`)
	pull(t, b, a, a.log.Key(), 100)
	if n := b.catchUp(); n != 4 {
		t.Fatalf("processed %d", n)
	}
	ps, err := b.ap.Parked()
	if err != nil || len(ps) != 2 {
		t.Fatalf("%v %+v", err, ps)
	}
	if ps[0].Index != 1 || ps[0].Schema != 2 || !strings.Contains(ps[0].Reason, "schema") || string(ps[0].Entry) != string(future) {
		t.Fatalf("%+v", ps[0])
	}
	if ps[1].Index != 2 || ps[1].Reason == "" {
		t.Fatalf("%+v", ps[1])
	}
	if b.get(mem, "2") == nil {
		t.Fatal("entry after the parked ones not applied")
	}
	if s := b.ap.Stats(); s.Parked != 2 || s.FastForward != 2 {
		t.Fatalf("%+v", s)
	}
	st, _ := b.db.SyncState()
	if st.Applied[a.log.Key().String()] != 4 {
		t.Fatalf("checkpoint %v", st.Applied)
	}
	if b.catchUp() != 0 {
		t.Fatal("parked entries reprocessed")
	}
}

// TestCrashMidApply kills the applier (a failure before commit, then a
// reopen of the database) after N entries and checks that the final state
// equals an uninterrupted run's and that no entry was applied twice or
// skipped.
func TestCrashMidApply(t *testing.T) {
	for _, batch := range []int{1, 16, 4096} {
		for _, failAt := range []int{1, 37, 77, 199} {
			t.Run(fmt.Sprintf("batch%d/fail%d", batch, failAt), func(t *testing.T) {
				a, b := newNode(t, "a", "", nil), newNode(t, "b", "", nil)
				for i := range 100 {
					a.put(mem, fmt.Sprint(i%20), fmt.Sprintf(`{"i":%d}`, i))
					b.put(mem, fmt.Sprint(i%15), fmt.Sprintf(`{"j":%d}`, i))
				}
				ref := newNode(t, "ref", "", nil)
				pull(t, ref, a, a.log.Key(), 1000)
				pull(t, ref, b, b.log.Key(), 1000)
				ref.catchUp()

				crash := errors.New("crash")
				x := newNode(t, "x", t.TempDir(), func(o *Options) { o.MaxBatch = batch })
				x.ap.hook = func(n int) error {
					if n >= failAt { // a crashed process does nothing more
						return crash
					}
					return nil
				}
				pull(t, x, a, a.log.Key(), 1000)
				pull(t, x, b, b.log.Key(), 1000)
				if _, err := x.ap.CatchUp(context.Background()); !errors.Is(err, crash) {
					t.Fatalf("want crash, got %v", err)
				}
				first := x.ap.Stats()
				firstApplied := len(x.applied)
				st, _ := x.db.SyncState()
				done := st.Applied[a.log.Key().String()] + st.Applied[b.log.Key().String()]
				if committed := first.FastForward + first.Concurrent + first.Stale; done >= uint64(failAt) || committed != done {
					t.Fatalf("checkpoints cover %d entries, %d counted as committed, failure at %d", done, committed, failAt)
				}
				if batch == 1 && done != uint64(failAt-1) {
					t.Fatalf("checkpoints cover %d entries, want %d", done, failAt-1)
				}
				x.reopen()
				x.catchUp()
				second := x.ap.Stats()
				total := first.FastForward + first.Concurrent + first.Stale + second.FastForward + second.Concurrent + second.Stale
				if total != 200 {
					t.Fatalf("processed %d entries in total, want 200 (%+v, %+v)", total, first, second)
				}
				if len(x.applied) != len(ref.applied) || firstApplied > len(ref.applied) {
					t.Fatalf("%d row writes, reference %d", len(x.applied), len(ref.applied))
				}
				expectSame(t, ref, x)
				if x.catchUp() != 0 {
					t.Fatal("re-applied after catching up")
				}
			})
		}
	}
}

var _ = json.Marshal

// TestBatchTooBigForOneTransaction: with transactions far smaller than
// MaxBatch entries, batches are split and the batch size adapts; the result
// equals a reference applier's, nothing is applied twice or skipped.
func TestBatchTooBigForOneTransaction(t *testing.T) {
	// On disk: in-memory badger caps values (feed chunks) at 4 KiB.
	a, b := newNode(t, "a", t.TempDir(), nil), newNode(t, "b", t.TempDir(), nil)
	big := strings.Repeat("x", 2000)
	for i := range 300 {
		a.put(mem, fmt.Sprint(i%50), fmt.Sprintf(`{"i":%d,"pad":"%s"}`, i, big))
		b.put(mem, fmt.Sprint(i%40), fmt.Sprintf(`{"j":%d,"pad":"%s"}`, i, big))
	}
	ref := newNode(t, "ref", t.TempDir(), nil)
	pull(t, ref, a, a.log.Key(), 1000)
	pull(t, ref, b, b.log.Key(), 1000)
	ref.catchUp()

	x := &node{tb: t, id: "x", dir: t.TempDir(), memTable: 1 << 20} // badger: ~150 KiB per transaction
	x.opts = func(o *Options) { o.MaxBatch = 4096 }
	x.open()
	t.Cleanup(x.close)
	pull(t, x, a, a.log.Key(), 1000)
	pull(t, x, b, b.log.Key(), 1000)
	if n := x.catchUp(); n != 600 {
		t.Fatalf("processed %d", n)
	}
	if x.ap.batchCap >= 300 {
		t.Fatalf("batch size did not adapt: %d", x.ap.batchCap)
	}
	s := x.ap.Stats()
	if s.FastForward+s.Concurrent+s.Stale != 600 || len(x.applied) != len(ref.applied) {
		t.Fatalf("%+v, %d row writes, reference %d", s, len(x.applied), len(ref.applied))
	}
	expectSame(t, ref, x)
}
