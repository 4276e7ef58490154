// Package merkle builds OpenZeppelin's StandardMerkleTree
// (@openzeppelin/merkle-tree, v1) in Go, for the leaves crow anchors (SPEC
// §11): a root commits a batch of (project id, version, state hash) values
// in one transaction, and a proof shows one value is in it.
//
// The construction is OpenZeppelin's, exactly, so a third party checks a
// crow proof with that library (StandardMerkleTree.verify) or with
// Solidity's MerkleProof.verify, no crow code:
//
//   - leaf = keccak256(keccak256(abi.encode(values...))) (double hashed, so
//     a leaf can never be mistaken for an inner node);
//   - leaves are sorted by hash, then laid out as a complete binary tree in
//     an array (tree[len-1-i] = leaf i, node i's children are 2i+1, 2i+2);
//   - an inner node is keccak256 of its two children sorted (commutative),
//     so a proof is just the sibling hashes from leaf to root;
//   - a tree of one leaf has that leaf as root and an empty proof.
//
// Golden vectors made by the JavaScript library (testdata/, written by
// tools/verify-js/vectors.mjs) pin this package to it.
//
// Hand-written rather than imported: no Go port of StandardMerkleTree is
// among the well-kept modules, and the construction is forty lines; the
// verifier side (docs/VERIFY.md) uses OpenZeppelin's own library.
package merkle

import (
	"bytes"
	"encoding/binary"
	"errors"
	"slices"

	"golang.org/x/crypto/sha3"
)

// Hash is a 32-byte keccak256 value: a leaf, an inner node or a root.
type Hash = [32]byte

// Leaf types of crow's trees (the StandardMerkleTree leaf encodings).
var (
	// StateTypes are the types of a state version leaf:
	// (bytes32 projectId, uint64 version, bytes32 stateHash).
	StateTypes = []string{"bytes32", "uint64", "bytes32"}
	// HashTypes are the types of a leaf that is one bytes32: a memory event
	// hash, or a root committed by a checkpoint.
	HashTypes = []string{"bytes32"}
)

// ErrEmpty is returned by New for no leaves.
var ErrEmpty = errors.New("merkle: a tree needs at least one leaf")

func keccak(parts ...[]byte) (h Hash) {
	k := sha3.NewLegacyKeccak256()
	for _, p := range parts {
		k.Write(p)
	}
	k.Sum(h[:0])
	return h
}

// StateLeaf is the leaf of a state version: the hash of the ABI encoding
// of (bytes32 projectID, uint64 version, bytes32 stateHash), hashed twice.
func StateLeaf(projectID [32]byte, version uint64, stateHash [32]byte) Hash {
	var enc [96]byte
	copy(enc[0:32], projectID[:])
	binary.BigEndian.PutUint64(enc[56:64], version) // uint64 is left-padded to 32 bytes
	copy(enc[64:96], stateHash[:])
	inner := keccak(enc[:])
	return keccak(inner[:])
}

// HashLeaf is the leaf of a single bytes32 value (HashTypes).
func HashLeaf(v [32]byte) Hash {
	inner := keccak(v[:])
	return keccak(inner[:])
}

// pair hashes two nodes in sorted order.
func pair(a, b Hash) Hash {
	if bytes.Compare(a[:], b[:]) > 0 {
		a, b = b, a
	}
	return keccak(a[:], b[:])
}

// Tree is a built tree. It is immutable and safe for concurrent reads.
type Tree struct {
	nodes []Hash       // OpenZeppelin's array layout; nodes[0] is the root
	index map[Hash]int // leaf -> its position in nodes
}

// New builds the tree of leaves (leaf hashes, e.g. from StateLeaf), sorting
// them as the library does. Duplicate leaves are kept, as the library keeps
// them; Proof returns one of their proofs.
func New(leaves []Hash) (*Tree, error) {
	if len(leaves) == 0 {
		return nil, ErrEmpty
	}
	sorted := slices.Clone(leaves)
	slices.SortFunc(sorted, func(a, b Hash) int { return bytes.Compare(a[:], b[:]) })
	n := len(sorted)
	nodes := make([]Hash, 2*n-1)
	index := make(map[Hash]int, n)
	for i, l := range sorted {
		pos := len(nodes) - 1 - i
		nodes[pos] = l
		if _, dup := index[l]; !dup {
			index[l] = pos
		}
	}
	for i := len(nodes) - 1 - n; i >= 0; i-- {
		nodes[i] = pair(nodes[2*i+1], nodes[2*i+2])
	}
	return &Tree{nodes: nodes, index: index}, nil
}

// Root is the tree's root: what the contract's anchorRoot commits.
func (t *Tree) Root() Hash { return t.nodes[0] }

// Len is the number of leaves.
func (t *Tree) Len() int { return (len(t.nodes) + 1) / 2 }

// Proof returns the sibling hashes from leaf up to the root (empty for a
// tree of one leaf); ok is false if leaf is not in the tree.
func (t *Tree) Proof(leaf Hash) (proof []Hash, ok bool) {
	i, ok := t.index[leaf]
	if !ok {
		return nil, false
	}
	proof = []Hash{}
	for i > 0 {
		sib := i + 1
		if i%2 == 0 {
			sib = i - 1
		}
		proof = append(proof, t.nodes[sib])
		i = (i - 1) / 2
	}
	return proof, true
}

// RootOf folds proof into leaf: the root the proof leads to.
func RootOf(leaf Hash, proof []Hash) Hash {
	h := leaf
	for _, p := range proof {
		h = pair(h, p)
	}
	return h
}

// Verify reports whether proof shows leaf is in the tree of root.
func Verify(root, leaf Hash, proof []Hash) bool { return RootOf(leaf, proof) == root }
