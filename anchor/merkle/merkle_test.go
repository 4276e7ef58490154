package merkle

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
)

func leafN(i int) Hash {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(i))
	return keccak(b[:])
}

// TestProofsVerify: every leaf's proof leads to the root, for trees of 1 to
// 70 leaves (complete and not), and a changed leaf or proof does not.
func TestProofsVerify(t *testing.T) {
	for n := 1; n <= 70; n++ {
		leaves := make([]Hash, n)
		for i := range leaves {
			leaves[i] = StateLeaf(leafN(i), uint64(i), leafN(i+1000))
		}
		tree, err := New(leaves)
		if err != nil {
			t.Fatal(err)
		}
		if tree.Len() != n {
			t.Fatalf("n=%d: Len %d", n, tree.Len())
		}
		for i, l := range leaves {
			proof, ok := tree.Proof(l)
			if !ok {
				t.Fatalf("n=%d: leaf %d not found", n, i)
			}
			if !Verify(tree.Root(), l, proof) {
				t.Fatalf("n=%d: proof of leaf %d does not verify", n, i)
			}
			if n == 1 && (len(proof) != 0 || tree.Root() != l) {
				t.Fatalf("a tree of one leaf: root must be the leaf, proof empty; got %d hashes", len(proof))
			}
			other := StateLeaf(leafN(i), uint64(i)+1, leafN(i+1000))
			if Verify(tree.Root(), other, proof) {
				t.Fatalf("n=%d: a leaf with another version verifies with leaf %d's proof", n, i)
			}
			if len(proof) > 0 {
				bad := append([]Hash(nil), proof...)
				bad[0][0] ^= 1
				if Verify(tree.Root(), l, bad) {
					t.Fatalf("n=%d: a corrupted proof verifies", n)
				}
			}
		}
	}
	if _, err := New(nil); err != ErrEmpty {
		t.Fatalf("New(nil) = %v, want ErrEmpty", err)
	}
}

// TestOrderIndependent: the root does not depend on the order leaves are
// given in (the library sorts them).
func TestOrderIndependent(t *testing.T) {
	leaves := []Hash{leafN(3), leafN(1), leafN(2), leafN(9), leafN(5)}
	a, _ := New(leaves)
	rev := []Hash{leaves[4], leaves[3], leaves[2], leaves[1], leaves[0]}
	b, _ := New(rev)
	if a.Root() != b.Root() {
		t.Fatal("the root depends on the leaves' order")
	}
}

// TestStateLeafEncoding pins the leaf of a state version to
// keccak256(keccak256(abi.encode(bytes32, uint64, bytes32))).
func TestStateLeafEncoding(t *testing.T) {
	pid, sh := leafN(1), leafN(2)
	enc := make([]byte, 0, 96)
	enc = append(enc, pid[:]...)
	enc = append(enc, bytes.Repeat([]byte{0}, 24)...)
	enc = binary.BigEndian.AppendUint64(enc, 7)
	enc = append(enc, sh[:]...)
	inner := keccak(enc)
	if got, want := StateLeaf(pid, 7, sh), keccak(inner[:]); got != want {
		t.Fatalf("StateLeaf = %x, want %x", got, want)
	}
}

// vectors is testdata/standard-merkle-tree.json, written by
// tools/verify-js/vectors.mjs with @openzeppelin/merkle-tree.
type vectors struct {
	Trees []struct {
		Types  []string `json:"types"`
		Values [][]any  `json:"values"`
		Root   string   `json:"root"`
		Leaves []struct {
			Value []any    `json:"value"`
			Hash  string   `json:"hash"`
			Proof []string `json:"proof"`
		} `json:"leaves"`
	} `json:"trees"`
}

func mustHash(t *testing.T, s string) Hash {
	t.Helper()
	b, err := hex.DecodeString(strings.TrimPrefix(s, "0x"))
	if err != nil || len(b) != 32 {
		t.Fatalf("bad hash %q", s)
	}
	return Hash(b)
}

// TestOpenZeppelinVectors: the same values give the library's leaf hashes,
// root and proofs.
func TestOpenZeppelinVectors(t *testing.T) {
	raw, err := os.ReadFile("testdata/standard-merkle-tree.json")
	if err != nil {
		t.Fatal(err)
	}
	var v vectors
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	if len(v.Trees) < 5 {
		t.Fatalf("only %d trees in the vectors", len(v.Trees))
	}
	for ti, tr := range v.Trees {
		leaves := make([]Hash, len(tr.Leaves))
		for i, l := range tr.Leaves {
			var got Hash
			switch strings.Join(tr.Types, ",") {
			case strings.Join(StateTypes, ","):
				var ver uint64
				switch x := l.Value[1].(type) {
				case string:
					if _, err := fmtSscan(x, &ver); err != nil {
						t.Fatalf("tree %d: version %q", ti, x)
					}
				case float64:
					ver = uint64(x)
				}
				got = StateLeaf(mustHash(t, l.Value[0].(string)), ver, mustHash(t, l.Value[2].(string)))
			case strings.Join(HashTypes, ","):
				got = HashLeaf(mustHash(t, l.Value[0].(string)))
			default:
				t.Fatalf("tree %d: types %v", ti, tr.Types)
			}
			if want := mustHash(t, l.Hash); got != want {
				t.Fatalf("tree %d leaf %d: hash %x, the library's %x", ti, i, got, want)
			}
			leaves[i] = got
		}
		tree, err := New(leaves)
		if err != nil {
			t.Fatal(err)
		}
		if want := mustHash(t, tr.Root); tree.Root() != want {
			t.Fatalf("tree %d (%d leaves): root %x, the library's %x", ti, len(leaves), tree.Root(), want)
		}
		for i, l := range tr.Leaves {
			proof, _ := tree.Proof(leaves[i])
			if len(proof) != len(l.Proof) {
				t.Fatalf("tree %d leaf %d: proof of %d hashes, the library's %d", ti, i, len(proof), len(l.Proof))
			}
			for j := range proof {
				if proof[j] != mustHash(t, l.Proof[j]) {
					t.Fatalf("tree %d leaf %d: proof differs at %d", ti, i, j)
				}
			}
		}
	}
}

func fmtSscan(s string, v *uint64) (int, error) { return fmt.Sscan(s, v) }
