package feed

import (
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/crow-sync/crow/internal/testhold"
)

// TestTamperRejected flips bits in every part of a proof and its entries and
// expects each change to be rejected.
func TestTamperRejected(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	entries := randEntries(rng, 64, 16)
	l, heads := buildLog(t, rng, entries)
	var old Head
	for n, h := range heads {
		if n > 10 && n < 40 {
			old = h
		}
	}
	for iter := 0; iter < 300; iter++ {
		b := l.Head().Length
		start := rng.Uint64N(b)
		end := start + 1 + rng.Uint64N(b-start)
		p, err := l.Proof(start, end, old.Length)
		if err != nil {
			t.Fatal(err)
		}
		es := make([][]byte, end-start)
		for i := range es {
			es[i] = append([]byte(nil), entries[start+uint64(i)]...)
		}
		if err := p.Verify(es); err != nil {
			t.Fatal(err)
		}
		q := *p
		q.Nodes = append([]Node(nil), p.Nodes...)
		what := rng.IntN(8)
		switch what {
		case 0: // a bit of an entry
			e := es[rng.IntN(len(es))]
			if len(e) == 0 {
				es[0] = append(es[0], 1)
			} else {
				e[rng.IntN(len(e))] ^= 1 << rng.IntN(8)
			}
		case 1: // a node hash
			if len(q.Nodes) == 0 {
				continue
			}
			q.Nodes[rng.IntN(len(q.Nodes))].Hash[rng.IntN(32)] ^= 1 << rng.IntN(8)
		case 2: // a node size
			if len(q.Nodes) == 0 {
				continue
			}
			q.Nodes[rng.IntN(len(q.Nodes))].Size ^= 1 << rng.IntN(64)
		case 3: // the signature
			q.Head.Signature[rng.IntN(64)] ^= 1 << rng.IntN(8)
		case 4: // the head length
			q.Head.Length ^= 1 << rng.IntN(6)
		case 5: // the tree hash
			q.Head.TreeHash[rng.IntN(32)] ^= 1 << rng.IntN(8)
		case 6: // the start
			q.Start ^= 1 << rng.IntN(6)
		case 7: // drop an entry
			es = es[:len(es)-1]
		}
		if err := q.Verify(es); err == nil {
			t.Fatalf("tamper %d on [%d,%d) accepted", what, start, end)
		}
		rs := OpenReplicas(NewMemStorage(), PublicKey{})
		q.Since = 0
		if _, err := rs.Apply(&q, es); err == nil && q.Start == 0 {
			t.Fatalf("tamper %d on [%d,%d) applied", what, start, end)
		}
		if got, _ := rs.List(); len(got) != 0 {
			t.Fatalf("tamper %d stored something: %v", what, got)
		}
	}
}

// TestReplicaFollows replicates a growing feed in random steps (ranges of
// random sizes under heads ahead of them, upgrades without entries, re-sent
// ranges) and checks the replica ends equal and serves valid proofs.
func TestReplicaFollows(t *testing.T) {
	for seed := uint64(0); seed < 20; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		entries := randEntries(rng, 150, 24)
		a, err := OpenLog(NewMemStorage(), testKey(1))
		if err != nil {
			t.Fatal(err)
		}
		rs := OpenReplicas(NewMemStorage(), PublicKey{9})
		// a second-hop replica served by rs
		rs2 := OpenReplicas(NewMemStorage(), PublicKey{9})
		appended := 0
		for steps := 0; steps < 400; steps++ {
			if appended < len(entries) && rng.IntN(3) == 0 {
				n := min(1+rng.IntN(10), len(entries)-appended)
				if _, err := a.Append(entries[appended : appended+n]); err != nil {
					t.Fatal(err)
				}
				appended += n
			}
			st, _ := rs.State(a.Key())
			b := a.Head().Length
			if b == 0 {
				continue
			}
			c := st.Length
			if c > b {
				t.Fatalf("replica ahead")
			}
			start := c
			if c > 0 && rng.IntN(5) == 0 {
				start = rng.Uint64N(c + 1) // overlap with what is held
			}
			end := start + rng.Uint64N(b-start+1)
			p, err := a.Proof(start, end, st.Head.Length)
			if err != nil {
				t.Fatal(err)
			}
			got, err := rs.Apply(p, entries[start:end])
			if err != nil {
				t.Fatalf("seed %d: apply [%d,%d) head %d since %d: %v", seed, start, end, b, st.Head.Length, err)
			}
			if got.Length != max(c, end) || got.Head.Length != b {
				t.Fatalf("state %+v after [%d,%d) head %d", got, start, end, b)
			}
			// serve onward from rs
			st2, _ := rs2.State(a.Key())
			if st2.Length < got.Length {
				p2, err := rs.Proof(a.Key(), st2.Length, got.Length, st2.Head.Length)
				if err != nil {
					t.Fatalf("proof from replica: %v", err)
				}
				es, err := rs.Read(a.Key(), st2.Length, got.Length)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := rs2.Apply(p2, es); err != nil {
					t.Fatalf("second hop: %v", err)
				}
			}
		}
		st, _ := rs.State(a.Key())
		// finish
		p, _ := a.Proof(st.Length, a.Head().Length, st.Head.Length)
		if _, err := rs.Apply(p, entries[st.Length:a.Head().Length]); err != nil {
			t.Fatal(err)
		}
		got, err := rs.Read(a.Key(), 0, a.Head().Length)
		if err != nil {
			t.Fatal(err)
		}
		for i := range got {
			if string(got[i]) != string(entries[i]) {
				t.Fatalf("entry %d differs", i)
			}
		}
		// random-access proofs served by the replica verify
		for k := 0; k < 50; k++ {
			b := a.Head().Length
			s := rng.Uint64N(b + 1)
			e := s + rng.Uint64N(b-s+1)
			p, err := rs.Proof(a.Key(), s, e, rng.Uint64N(b+1))
			if err != nil {
				t.Fatal(err)
			}
			if err := p.Verify(entries[s:e]); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func TestReplicaErrors(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 9))
	entries := randEntries(rng, 40, 10)
	a, _ := OpenLog(NewMemStorage(), testKey(1))
	a.Append(entries[:20])
	h20 := a.Head()
	rs := OpenReplicas(NewMemStorage(), pk(testKey(2)))

	p, _ := a.Proof(5, 10, 0)
	if _, err := rs.Apply(p, entries[5:10]); !errors.Is(err, ErrNotContiguous) {
		t.Fatalf("gap: %v", err)
	}
	p, _ = a.Proof(0, 10, 0)
	if _, err := rs.Apply(p, entries[0:10]); err != nil {
		t.Fatal(err)
	}
	a.Append(entries[20:])
	// Since 0 does not cut the tree at the held head 20, but the entries
	// reach it: the walk rebuilds the tree at 20 and checks the extension.
	p, _ = a.Proof(10, 30, 0)
	if st, err := rs.Apply(p, entries[10:30]); err != nil || st.Head.Length != 40 || st.Length != 30 {
		t.Fatalf("upgrade through the entries: %+v %v", st, err)
	}
	// An older head beyond what is held: the entries are re-proved against
	// the held head (40) with the stored right-hand nodes.
	rs2 := OpenReplicas(NewMemStorage(), PublicKey{})
	p, _ = a.Proof(0, 5, 0)
	rs2.Apply(p, entries[:5])
	b, _ := OpenLog(NewMemStorage(), testKey(1))
	b.Append(entries[:20])
	if b.Head() != h20 {
		t.Fatal("same entries, other head")
	}
	p, _ = b.Proof(5, 10, 5)
	if st, err := rs2.Apply(p, entries[5:10]); err != nil || st.Head.Length != 40 || st.Length != 10 {
		t.Fatalf("older head re-proved: %+v %v", st, err)
	}
	if err := rs2.ObserveHead(h20); err != nil {
		t.Fatal(err)
	}
	// ... unless the nodes to do so are not held: stale. Held: 31 of 97;
	// the older head 52 proves [31,34) with [34,52), but the held head
	// needs [52,64), which only its node [32,64) covers.
	long := randEntries(rng, 97, 10)
	c, _ := OpenLog(NewMemStorage(), testKey(3))
	c.Append(long[:52])
	pOld, _ := c.Proof(31, 34, 31)
	c.Append(long[52:])
	rs3 := OpenReplicas(NewMemStorage(), PublicKey{})
	p, _ = c.Proof(0, 31, 0)
	if _, err := rs3.Apply(p, long[:31]); err != nil {
		t.Fatal(err)
	}
	if _, err := rs3.Apply(pOld, long[31:34]); !errors.Is(err, ErrStaleHead) {
		t.Fatalf("stale: %v", err)
	}
	if st, _ := rs3.State(c.Key()); st.Length != 31 || st.Head.Length != 97 {
		t.Fatalf("stale range moved the state: %+v", st)
	}
	// entry count must match the proof
	p, _ = a.Proof(0, 5, 0)
	if _, err := rs2.Apply(p, entries[:4]); !errors.Is(err, ErrInvalidProof) {
		t.Fatalf("short entries: %v", err)
	}
	// own feed refused
	own := OpenReplicas(NewMemStorage(), a.Key())
	p, _ = a.Proof(0, 1, 0)
	if _, err := own.Apply(p, entries[:1]); !errors.Is(err, ErrWrongFeed) {
		t.Fatalf("own: %v", err)
	}
}

// TestFork signs two histories with one key (a cloned machine) and checks
// each way a replica can learn of it.
func TestFork(t *testing.T) {
	rng := rand.New(rand.NewPCG(10, 11))
	common := randEntries(rng, 10, 10)
	forkA := randEntries(rng, 10, 10)
	forkB := randEntries(rng, 14, 10)
	mk := func(tail [][]byte) (*Log, [][]byte) {
		l, _ := OpenLog(NewMemStorage(), testKey(1))
		all := append(append([][]byte(nil), common...), tail...)
		l.Append(common)
		l.Append(tail)
		return l, all
	}
	a, ea := mk(forkA)
	b, eb := mk(forkB)

	cases := []struct {
		name string
		run  func(rs *Replicas) error
	}{
		{"same length", func(rs *Replicas) error {
			b2, _ := OpenLog(NewMemStorage(), testKey(1))
			b2.Append(common)
			b2.Append(eb[10:20])
			p, _ := b2.Proof(20, 20, 0)
			_, err := rs.Apply(p, nil)
			return err
		}},
		{"upgrade", func(rs *Replicas) error {
			p, _ := b.Proof(20, 24, 20)
			_, err := rs.Apply(p, eb[20:24])
			return err
		}},
		{"overlapping range", func(rs *Replicas) error {
			p, _ := b.Proof(15, 24, 20)
			_, err := rs.Apply(p, eb[15:24])
			return err
		}},
		{"observed head", func(rs *Replicas) error {
			b2, _ := OpenLog(NewMemStorage(), testKey(1))
			b2.Append(common)
			h, _ := b2.Append(eb[10:15])
			return rs.ObserveHead(h)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := NewMemStorage()
			rs := OpenReplicas(st, PublicKey{})
			p, _ := a.Proof(0, 20, 0)
			if _, err := rs.Apply(p, ea[:20]); err != nil {
				t.Fatal(err)
			}
			err := tc.run(rs)
			var fe *ForkError
			if !errors.As(err, &fe) || !errors.Is(err, ErrForked) {
				t.Fatalf("want fork, got %v", err)
			}
			if fe.Verify() != nil || fe.Held.TreeHash == fe.Other.TreeHash {
				t.Fatalf("bad evidence %+v", fe)
			}
			// persisted: a fresh Replicas on the same storage refuses too
			rs2 := OpenReplicas(st, PublicKey{})
			p, _ = a.Proof(20, 20, 0)
			if _, err := rs2.Apply(p, nil); !errors.As(err, &fe) {
				t.Fatalf("after reopen: %v", err)
			}
			list, _ := rs2.List()
			if len(list) != 1 || !list[0].Forked {
				t.Fatalf("list %+v", list)
			}
			for i, r := range []*Replicas{rs, rs2} { // the one that recorded it, the reopened one
				held, err := r.Held()
				if err != nil || len(held) != 1 || !held[0].Forked || held[0].State != list[0].State {
					t.Fatalf("replicas %d: held %+v, %v; want %+v", i, held, err, list)
				}
				if got, err := r.Fork(a.Key()); err != nil || got == nil || got.Other != fe.Other {
					t.Fatalf("replicas %d: Fork %v, %v; want %v", i, got, err, fe)
				}
			}
			// the operator deletes the replica; it starts over
			if err := rs2.Delete(a.Key()); err != nil {
				t.Fatal(err)
			}
			if held, _ := rs2.Held(); len(held) != 0 {
				t.Fatalf("held after delete: %+v", held)
			}
			if got, err := rs2.Fork(a.Key()); got != nil || err != nil {
				t.Fatalf("Fork after delete: %v, %v", got, err)
			}
			p, _ = b.Proof(0, 24, 0)
			if _, err := rs2.Apply(p, eb); err != nil {
				t.Fatal(err)
			}
			held, _ := rs2.Held()
			if len(held) != 1 || held[0].Forked || held[0].State.Length != 24 || held[0].State.Head != b.Head() {
				t.Fatalf("held after starting over: %+v", held)
			}
		})
	}
	_ = b
}

// TestConcurrentServe reads and proves while the author appends and a
// replica applies (run with -race).
func TestConcurrentServe(t *testing.T) {
	rng := rand.New(rand.NewPCG(20, 21))
	entries := randEntries(rng, 400, 16)
	st := NewMemStorage()
	a, _ := OpenLog(st, testKey(1))
	a.Append(entries[:1])
	rs := OpenReplicas(NewMemStorage(), PublicKey{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 1; i < len(entries); i += 3 {
			a.Append(entries[i:min(i+3, len(entries))])
		}
	}()
	for k := 0; k < 200; k++ {
		h := a.Head()
		p, err := a.Proof(0, h.Length, 0)
		if err != nil {
			t.Fatal(err)
		}
		if p.Head.Length != h.Length {
			continue // the author appended between Head and Proof: the proof is of [0, h.Length) under a longer head
		}
		es, err := a.Read(0, p.Head.Length)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Verify(es); err != nil {
			t.Fatal(err)
		}
		s, _ := rs.State(a.Key())
		p, err = a.Proof(s.Length, p.Head.Length, s.Head.Length)
		if err != nil {
			t.Fatal(err)
		}
		if p.Head.Length > uint64(len(es)) {
			continue // the author appended in between
		}
		if _, err := rs.Apply(p, es[s.Length:p.Head.Length]); err != nil {
			t.Fatal(err)
		}
	}
	<-done
}

// gatedStorage is a Storage whose Write can be held (hold.Arm).
type gatedStorage struct {
	Storage
	hold *testhold.Point
}

func (g *gatedStorage) Write(b *Batch) error {
	g.hold.Here()
	return g.Storage.Write(b)
}

// TestHeldDoesNotWaitForApply: Held and Fork answer from memory while an
// Apply holds the replicas' lock through its storage write, with the state
// stored before it; once the write is done they answer with the new state,
// the same as List.
func TestHeldDoesNotWaitForApply(t *testing.T) {
	rng := rand.New(rand.NewPCG(12, 13))
	entries := randEntries(rng, 30, 16)
	l, _ := buildLog(t, rng, entries)
	g := &gatedStorage{Storage: NewMemStorage(), hold: testhold.New()}
	t.Cleanup(g.hold.Release)
	rs := OpenReplicas(g, PublicKey{})
	if held, err := rs.Held(); err != nil || len(held) != 0 {
		t.Fatalf("held at start: %+v, %v", held, err)
	}
	p, _ := l.Proof(0, 10, 0)
	if _, err := rs.Apply(p, entries[:10]); err != nil {
		t.Fatal(err)
	}
	before, _ := rs.List()

	g.hold.Arm()
	done := make(chan error, 1)
	go func() {
		p, _ := l.Proof(10, 30, 10)
		_, err := rs.Apply(p, entries[10:30])
		done <- err
	}()
	<-g.hold.Entered() // the Apply holds rs.mu, inside its write
	held, err := rs.Held()
	if err != nil || len(held) != 1 || held[0] != before[0] {
		t.Fatalf("held during the apply: %+v, %v; want %+v", held, err, before)
	}
	if fe, err := rs.Fork(l.Key()); fe != nil || err != nil {
		t.Fatalf("Fork during the apply: %v, %v", fe, err)
	}
	g.hold.Release()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	after, _ := rs.List()
	held, _ = rs.Held()
	if len(held) != 1 || held[0] != after[0] || held[0].State.Length != 30 {
		t.Fatalf("held after the apply: %+v; list %+v", held, after)
	}
}
