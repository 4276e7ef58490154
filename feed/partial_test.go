package feed

import (
	"errors"
	"math/rand/v2"
	"testing"
)

// TestPartialPrefixSinceStart replicates one feed among an author and
// several replicas the way package sync does: a replica asks a holder for
// [its stored length, +batch) and the holder proves that prefix against its
// own newest head with Since = start (it does not know the head the
// requester holds). Replicas thus hold prefixes of heads longer than what
// they store, get ranges under newer heads (the author appended meanwhile)
// and under older ones (a relay that has less), and serve onward. Every
// honest range must be accepted, and every replica must end with the feed.
func TestPartialPrefixSinceStart(t *testing.T) {
	reproved, stale := 0, 0
	for seed := uint64(0); seed < 60; seed++ {
		rng := rand.New(rand.NewPCG(seed, 11))
		entries := randEntries(rng, 300, 12)
		a, err := OpenLog(NewMemStorage(), testKey(1))
		if err != nil {
			t.Fatal(err)
		}
		reps := make([]*Replicas, 4)
		for i := range reps {
			reps[i] = OpenReplicas(NewMemStorage(), PublicKey{byte(i + 2)})
		}
		state := func(j int) State { // j = -1 is the author
			if j < 0 {
				h := a.Head()
				return State{Head: h, Length: h.Length}
			}
			s, err := reps[j].State(a.Key())
			if errors.Is(err, ErrNotFound) {
				return State{}
			}
			if err != nil {
				t.Fatal(err)
			}
			return s
		}
		serve := func(j int, start, end uint64) (*Proof, [][]byte) {
			if j < 0 {
				p, err := a.Proof(start, end, start)
				if err != nil {
					t.Fatal(err)
				}
				es, _ := a.Read(start, end)
				return p, es
			}
			p, err := reps[j].Proof(a.Key(), start, end, start)
			if err != nil {
				t.Fatalf("seed %d: replica %d (%+v) proving [%d,%d) since %d: %v", seed, j, state(j), start, end, start, err)
			}
			es, err := reps[j].Read(a.Key(), start, end)
			if err != nil {
				t.Fatal(err)
			}
			return p, es
		}
		appended := 0
		pull := func(i, from int, batch uint64) {
			mine, theirs := state(i), state(from)
			if theirs.Length <= mine.Length {
				return
			}
			start := mine.Length
			end := min(theirs.Length, start+batch)
			p, es := serve(from, start, end)
			if err := p.Verify(es); err != nil {
				t.Fatalf("seed %d: served proof does not verify: %v", seed, err)
			}
			got, err := reps[i].Apply(p, es)
			if errors.Is(err, ErrStaleHead) && p.Head.Length < mine.Head.Length {
				// A relay with an older head may lack the nodes to tie the
				// range to the held head: retried from another holder.
				stale++
				return
			}
			if err != nil {
				t.Fatalf("seed %d: replica %d holding %d of head %d: apply [%d,%d) against head %d from %d: %v",
					seed, i, mine.Length, mine.Head.Length, start, end, p.Head.Length, from, err)
			}
			if end < mine.Head.Length && p.Head.Length != mine.Head.Length {
				reproved++
			}
			if got.Length != end {
				t.Fatalf("seed %d: stored length %d after [%d,%d)", seed, got.Length, start, end)
			}
			if got.Head.Length < end || (got.Head.Length != mine.Head.Length && got.Head.Length != p.Head.Length) {
				t.Fatalf("seed %d: head %d after head %d and proof head %d", seed, got.Head.Length, mine.Head.Length, p.Head.Length)
			}
		}
		for steps := 0; steps < 300; steps++ {
			if appended < len(entries) && rng.IntN(3) == 0 {
				n := min(1+rng.IntN(20), len(entries)-appended)
				if _, err := a.Append(entries[appended : appended+n]); err != nil {
					t.Fatal(err)
				}
				appended += n
			}
			i := rng.IntN(len(reps))
			from := rng.IntN(len(reps)+1) - 1
			if from == i {
				continue
			}
			pull(i, from, 1+rng.Uint64N(12))
		}
		if _, err := a.Append(entries[appended:]); err != nil {
			t.Fatal(err)
		}
		for i := range reps {
			for state(i).Length < uint64(len(entries)) {
				pull(i, -1, 50)
			}
			got, err := reps[i].Read(a.Key(), 0, uint64(len(entries)))
			if err != nil {
				t.Fatal(err)
			}
			for k := range got {
				if string(got[k]) != string(entries[k]) {
					t.Fatalf("seed %d: replica %d entry %d differs", seed, i, k)
				}
			}
			if s := state(i); s.Head != a.Head() {
				t.Fatalf("seed %d: replica %d ends at head %d, author %d", seed, i, s.Head.Length, a.Head().Length)
			}
		}
	}
	t.Logf("ranges re-proved against the held head: %d; refused as stale: %d", reproved, stale)
	if reproved == 0 {
		t.Fatal("no range exercised the re-proving path")
	}
}

// TestUnderHeldHeadForkAndTamper: a range re-proved against the held head is
// refused when tampered (nothing stored), and reported as a fork when a
// validly signed other history contradicts the held head.
func TestUnderHeldHeadForkAndTamper(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	entries := randEntries(rng, 120, 16)
	other := randEntries(rng, 120, 16)
	a, _ := OpenLog(NewMemStorage(), testKey(1))
	a.Append(entries[:100])
	rs := OpenReplicas(NewMemStorage(), PublicKey{7})
	p, _ := a.Proof(0, 10, 0)
	if _, err := rs.Apply(p, entries[:10]); err != nil {
		t.Fatal(err)
	}
	a.Append(entries[100:])
	// Tampered entry under the newer head, since = start: rejected.
	p, _ = a.Proof(10, 20, 10)
	bad := append([][]byte(nil), entries[10:20]...)
	bad[3] = append([]byte{1}, bad[3]...)
	if _, err := rs.Apply(p, bad); !errors.Is(err, ErrInvalidProof) {
		t.Fatalf("tampered: %v", err)
	}
	if st, _ := rs.State(a.Key()); st.Length != 10 || st.Head.Length != 100 {
		t.Fatalf("state moved: %+v", st)
	}
	// Honest: stored under the held head.
	if st, err := rs.Apply(p, entries[10:20]); err != nil || st.Length != 20 || st.Head.Length != 100 {
		t.Fatalf("honest: %+v %v", st, err)
	}
	// A clone with the same key that wrote other entries from 15 on.
	b, _ := OpenLog(NewMemStorage(), testKey(1))
	b.Append(entries[:15])
	b.Append(other[15:110])
	p, _ = b.Proof(20, 30, 20)
	_, err := rs.Apply(p, other[20:30])
	var fe *ForkError
	if !errors.As(err, &fe) || fe.Held.Length != 100 || fe.Other.Length != 110 {
		t.Fatalf("fork not reported: %v", err)
	}
	if err := fe.Verify(); err != nil {
		t.Fatal(err)
	}
	if f, _ := rs.Fork(a.Key()); f == nil {
		t.Fatal("fork not recorded")
	}
	if st, _ := rs.State(a.Key()); st.Length != 20 {
		t.Fatalf("fork stored entries: %+v", st)
	}
}
