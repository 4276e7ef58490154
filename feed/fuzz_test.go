package feed

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

func seedEncodings(f *testing.F) (head, proof, fork []byte) {
	l, _ := OpenLog(NewMemStorage(), testKey(1))
	rng := rand.New(rand.NewPCG(1, 1))
	l.Append(randEntries(rng, 5, 8))
	h, _ := l.Append(randEntries(rng, 7, 8))
	head, _ = h.MarshalBinary()
	p, _ := l.Proof(3, 9, 5)
	proof, _ = p.MarshalBinary()
	fe := &ForkError{Key: h.Key, Held: h, Other: h}
	fork, _ = fe.MarshalBinary()
	return
}

// Every decoder accepts exactly the canonical encodings: whatever decodes
// re-encodes to the same bytes.

func FuzzHead(f *testing.F) {
	head, _, _ := seedEncodings(f)
	f.Add(head)
	f.Add(head[:10])
	f.Fuzz(func(t *testing.T, b []byte) {
		var h Head
		if h.UnmarshalBinary(b) != nil {
			return
		}
		out, _ := h.MarshalBinary()
		if !bytes.Equal(out, b) {
			t.Fatalf("re-encoding differs")
		}
		_ = h.Verify()
	})
}

func FuzzProof(f *testing.F) {
	_, proof, _ := seedEncodings(f)
	f.Add(proof)
	f.Add(proof[:200])
	f.Fuzz(func(t *testing.T, b []byte) {
		var p Proof
		if p.UnmarshalBinary(b) != nil {
			return
		}
		out, _ := p.MarshalBinary()
		if !bytes.Equal(out, b) {
			t.Fatalf("re-encoding differs")
		}
		if p.Count < 1000 {
			entries := make([][]byte, p.Count)
			_ = p.Verify(entries) // must not panic
			rs := OpenReplicas(NewMemStorage(), PublicKey{})
			_, _ = rs.Apply(&p, entries)
		}
	})
}

func FuzzForkEvidence(f *testing.F) {
	_, _, fork := seedEncodings(f)
	f.Add(fork)
	f.Fuzz(func(t *testing.T, b []byte) {
		var fe ForkError
		if fe.UnmarshalBinary(b) != nil {
			return
		}
		out, _ := fe.MarshalBinary()
		if !bytes.Equal(out, b) {
			t.Fatalf("re-encoding differs")
		}
	})
}
