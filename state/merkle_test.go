package state

import (
	"crypto/sha3"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func leaf(h [32]byte) [32]byte { return sha3.Sum256(append([]byte{0}, h[:]...)) }

func parent(l, r [32]byte) [32]byte {
	return sha3.Sum256(append(append([]byte{1}, l[:]...), r[:]...))
}

func fill(b byte) (h [32]byte) {
	for i := range h {
		h[i] = b
	}
	return h
}

// TestEvidenceRootShapes composes the expected roots by hand from the construction in the
// package doc.
func TestEvidenceRootShapes(t *testing.T) {
	h := make([][32]byte, 6)
	l := make([][32]byte, 6)
	for i := range h {
		h[i] = fill(byte(0x10 * (i + 1))) // ascending
		l[i] = leaf(h[i])
	}
	x := func(n [32]byte) string { return hex0x(n[:]) }
	cases := []struct {
		name string
		in   [][32]byte
		want string
	}{
		{"none", nil, ""},
		{"one", h[:1], x(l[0])},
		{"two", h[:2], x(parent(l[0], l[1]))},
		{"two reversed", [][32]byte{h[1], h[0]}, x(parent(l[0], l[1]))},
		{"duplicates dropped", [][32]byte{h[1], h[0], h[1], h[0]}, x(parent(l[0], l[1]))},
		{"three", [][32]byte{h[2], h[0], h[1]}, x(parent(parent(l[0], l[1]), l[2]))},
		{"four", h[:4], x(parent(parent(l[0], l[1]), parent(l[2], l[3])))},
		{"five", h[:5], x(parent(parent(parent(l[0], l[1]), parent(l[2], l[3])), l[4]))},
		{"six", h[:6], x(parent(parent(parent(l[0], l[1]), parent(l[2], l[3])), parent(l[4], l[5])))},
	}
	for _, c := range cases {
		if got := EvidenceRoot(c.in); got != c.want {
			t.Errorf("%s: got %s, want %s", c.name, got, c.want)
		}
	}
}

// refRoot is a naive Merkle root: a new slice per level, no reuse.
func refRoot(hashes [][32]byte) string {
	set := map[[32]byte]bool{}
	var sorted [][32]byte
	for _, h := range hashes {
		if !set[h] {
			set[h] = true
			sorted = append(sorted, h)
		}
	}
	slices.SortFunc(sorted, func(a, b [32]byte) int { return slices.Compare(a[:], b[:]) })
	var level [][32]byte
	for _, h := range sorted {
		level = append(level, leaf(h))
	}
	for len(level) > 1 {
		var next [][32]byte
		for i := 0; i+1 < len(level); i += 2 {
			next = append(next, parent(level[i], level[i+1]))
		}
		if len(level)%2 == 1 {
			next = append(next, level[len(level)-1])
		}
		level = next
	}
	return hex0x(level[0][:])
}

// TestEvidenceRootMatchesReference compares random sets, with duplicates, against refRoot,
// and checks that EvidenceRoot does not reorder its argument.
func TestEvidenceRootMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 500 {
		n := 1 + r.IntN(40)
		var in [][32]byte
		for range n {
			in = append(in, eventHash(uint64(1+r.IntN(30))))
		}
		before := slices.Clone(in)
		if got, want := EvidenceRoot(in), refRoot(in); got != want {
			t.Fatalf("%d hashes: got %s, want %s", n, got, want)
		}
		if !slices.Equal(in, before) {
			t.Fatal("EvidenceRoot modified its argument")
		}
	}
}

func TestParseHash(t *testing.T) {
	h := eventHash(7)
	for _, s := range []string{hex0x(h[:]), "0x" + strings.ToUpper(hex0x(h[:])[2:])} {
		got, err := ParseHash(s)
		if err != nil || got != h {
			t.Errorf("ParseHash(%s) = %x, %v", s, got, err)
		}
	}
	for _, bad := range []string{"", "0x", hex0x(h[:])[2:], hex0x(h[:31]), hex0x(h[:]) + "00", "0x" + strings.Repeat("g", 64), "0X" + hex0x(h[:])[2:]} {
		if _, err := ParseHash(bad); err == nil {
			t.Errorf("ParseHash(%q) accepted", bad)
		}
	}
}

func TestEvidenceFunc(t *testing.T) {
	ev := EvidenceFunc(func(n uint64) (MemoryRef, bool) {
		return MemoryRef{Number: n, Project: testProject, EventHash: eventHash(n), HasEventHash: true}, n == 3
	})
	v, err := applyOneWith(t, ev, `{"op":"add_risk","title":"t","severity":"low","evidence_memory_ids":[3]}`)
	if err != "" || v.State.Risks[0].EvidenceRoot != rootOf(3) {
		t.Fatal(err)
	}
	if _, err := applyOneWith(t, ev, `{"op":"add_risk","title":"t","severity":"low","evidence_memory_ids":[4]}`); err != "memory #4 does not exist" {
		t.Fatal(err)
	}
}

func applyOneWith(t *testing.T, ev Evidence, op string) (*Version, string) {
	t.Helper()
	res, err := Apply(nil, testProject, Request{Ops: raws(op), GeneratedAt: testTime}, ev, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rejected) > 0 {
		return nil, res.Rejected[0].Error
	}
	return res.Version, ""
}
