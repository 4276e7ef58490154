package feed

import (
	"math/rand/v2"
	"testing"
)

func TestFlatTree(t *testing.T) {
	tests := []struct {
		idx        uint64
		depth      int
		start, end uint64
	}{
		{0, 0, 0, 1}, {2, 0, 1, 2}, {1, 1, 0, 2}, {3, 2, 0, 4}, {5, 1, 2, 4}, {7, 3, 0, 8}, {11, 2, 4, 8}, {9, 1, 4, 6},
	}
	for _, tt := range tests {
		if d := depthOf(tt.idx); d != tt.depth {
			t.Errorf("depthOf(%d) = %d, want %d", tt.idx, d, tt.depth)
		}
		if s, e := span(tt.idx); s != tt.start || e != tt.end {
			t.Errorf("span(%d) = [%d,%d), want [%d,%d)", tt.idx, s, e, tt.start, tt.end)
		}
		if got := blockIndex(tt.start, tt.depth); got != tt.idx {
			t.Errorf("blockIndex(%d,%d) = %d, want %d", tt.start, tt.depth, got, tt.idx)
		}
	}
	roots := map[uint64][]uint64{0: {}, 1: {0}, 2: {1}, 3: {1, 4}, 5: {3, 8}, 7: {3, 9, 12}, 8: {7}}
	for n, want := range roots {
		got := rootIndexes(n)
		if len(got) != len(want) {
			t.Fatalf("rootIndexes(%d) = %v, want %v", n, got, want)
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("rootIndexes(%d) = %v, want %v", n, got, want)
			}
		}
	}
}

func TestTreeMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	entries := randEntries(rng, 300, 40)
	l, heads := buildLog(t, rng, entries)
	for n, h := range heads {
		if want := refTreeHash(entries, n); h.TreeHash != want {
			t.Fatalf("tree hash at %d = %x, reference %x", n, h.TreeHash, want)
		}
		if err := h.Verify(); err != nil {
			t.Fatal(err)
		}
	}
	got, err := l.Read(0, 300)
	if err != nil {
		t.Fatal(err)
	}
	for i := range got {
		if string(got[i]) != string(entries[i]) {
			t.Fatalf("entry %d differs", i)
		}
	}
}

func TestProofsVerify(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	entries := randEntries(rng, 200, 20)
	l, heads := buildLog(t, rng, entries)
	var lengths []uint64
	for n := range heads {
		lengths = append(lengths, n)
	}
	b := l.Head().Length
	for iter := 0; iter < 2000; iter++ {
		start := rng.Uint64N(b + 1)
		end := start + rng.Uint64N(b-start+1)
		var since uint64
		var old Head
		if rng.IntN(2) == 0 {
			old = heads[lengths[rng.IntN(len(lengths))]]
			since = old.Length
		}
		p, err := l.Proof(start, end, since)
		if err != nil {
			t.Fatal(err)
		}
		enc, _ := p.MarshalBinary()
		var q Proof
		if err := q.UnmarshalBinary(enc); err != nil {
			t.Fatalf("decoding proof [%d,%d) since %d: %v", start, end, since, err)
		}
		if err := q.Verify(entries[start:end]); err != nil {
			t.Fatalf("proof [%d,%d) since %d of %d: %v", start, end, since, b, err)
		}
		if since > 0 {
			if err := q.VerifyUpgrade(&old, entries[start:end]); err != nil {
				t.Fatalf("upgrade proof [%d,%d) since %d: %v", start, end, since, err)
			}
		}
	}
}
