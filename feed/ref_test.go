package feed

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/binary"
	"math/rand/v2"
	"testing"
)

// Naive reference: hashes spelled out with sha256.Sum256 and trees rebuilt
// from the leaves on every call.

func refLeaf(data []byte) [32]byte {
	b := []byte{0}
	b = binary.BigEndian.AppendUint64(b, uint64(len(data)))
	return sha256.Sum256(append(b, data...))
}

func refNode(entries [][]byte, idx uint64) Node {
	if idx%2 == 0 {
		e := entries[idx/2]
		return Node{Index: idx, Size: uint64(len(e)), Hash: refLeaf(e)}
	}
	l, r := children(idx)
	ln, rn := refNode(entries, l), refNode(entries, r)
	b := []byte{1}
	b = binary.BigEndian.AppendUint64(b, ln.Size+rn.Size)
	b = append(b, ln.Hash[:]...)
	b = append(b, rn.Hash[:]...)
	return Node{Index: idx, Size: ln.Size + rn.Size, Hash: sha256.Sum256(b)}
}

// refRoots returns the roots of the first n entries, computed from scratch.
func refRoots(entries [][]byte, n uint64) []Node {
	var roots []Node
	// Greedy: largest power of two that fits, from the left.
	p := uint64(0)
	for p < n {
		d := 0
		for p+(uint64(1)<<(d+1)) <= n && p%(uint64(1)<<(d+1)) == 0 {
			d++
		}
		roots = append(roots, refNode(entries, 2*p+(uint64(1)<<d)-1))
		p += uint64(1) << d
	}
	return roots
}

func refTreeHash(entries [][]byte, n uint64) [32]byte {
	b := []byte{2}
	for _, r := range refRoots(entries, n) {
		b = append(b, r.Hash[:]...)
		b = binary.BigEndian.AppendUint64(b, r.Index)
		b = binary.BigEndian.AppendUint64(b, r.Size)
	}
	return sha256.Sum256(b)
}

func testKey(seed byte) ed25519.PrivateKey {
	var s [32]byte
	s[0] = seed
	return ed25519.NewKeyFromSeed(s[:])
}

func randEntries(rng *rand.Rand, n int, maxLen int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		e := make([]byte, rng.IntN(maxLen+1))
		for j := range e {
			e[j] = byte(rng.Uint32())
		}
		out[i] = e
	}
	return out
}

func pk(priv ed25519.PrivateKey) PublicKey {
	var k PublicKey
	copy(k[:], priv.Public().(ed25519.PublicKey))
	return k
}

// buildLog appends entries to a fresh in-memory log in random batches and
// returns it with the heads signed along the way (index = length).
func buildLog(t testing.TB, rng *rand.Rand, entries [][]byte) (*Log, map[uint64]Head) {
	t.Helper()
	l, err := OpenLog(NewMemStorage(), testKey(1))
	if err != nil {
		t.Fatal(err)
	}
	heads := map[uint64]Head{}
	for i := 0; i < len(entries); {
		n := 1 + rng.IntN(8)
		if i+n > len(entries) {
			n = len(entries) - i
		}
		h, err := l.Append(entries[i : i+n])
		if err != nil {
			t.Fatal(err)
		}
		heads[h.Length] = h
		i += n
	}
	return l, heads
}
