package feed

import (
	"crypto/sha256"
	"encoding/binary"
	"hash"
)

// Hash prefixes. Frozen: changing any of them changes every tree hash.
const (
	leafPrefix   = 0x00
	parentPrefix = 0x01
	rootPrefix   = 0x02
)

// HashSize is the size of every hash in a feed (SHA-256).
const HashSize = sha256.Size

// Node is one node of a feed's Merkle tree.
type Node struct {
	Index uint64         // flat-tree index
	Size  uint64         // bytes of entry data the node covers
	Hash  [HashSize]byte // leaf, parent or (for roots) the hash signed over
}

// hasher computes leaf, parent and tree hashes with one reused SHA-256 state.
// Not safe for concurrent use; the zero value is not usable (newHasher).
type hasher struct {
	h   hash.Hash
	buf [1 + 8 + 2*HashSize]byte
	sum [HashSize]byte
}

func newHasher() *hasher { return &hasher{h: sha256.New()} }

// leaf returns H(0x00 ‖ uint64BE(len(data)) ‖ data).
func (x *hasher) leaf(data []byte) [HashSize]byte {
	x.h.Reset()
	x.buf[0] = leafPrefix
	binary.BigEndian.PutUint64(x.buf[1:9], uint64(len(data)))
	x.h.Write(x.buf[:9])
	x.h.Write(data)
	x.h.Sum(x.sum[:0])
	return x.sum
}

// parent returns H(0x01 ‖ uint64BE(size) ‖ left ‖ right).
func (x *hasher) parent(size uint64, left, right *[HashSize]byte) [HashSize]byte {
	x.h.Reset()
	x.buf[0] = parentPrefix
	binary.BigEndian.PutUint64(x.buf[1:9], size)
	copy(x.buf[9:], left[:])
	copy(x.buf[9+HashSize:], right[:])
	x.h.Write(x.buf[:])
	x.h.Sum(x.sum[:0])
	return x.sum
}

// tree returns H(0x02 ‖ for each root: hash ‖ uint64BE(index) ‖ uint64BE(size)).
// roots must be the canonical roots of the tree, left to right.
func (x *hasher) tree(roots []Node) [HashSize]byte {
	x.h.Reset()
	x.buf[0] = rootPrefix
	x.h.Write(x.buf[:1])
	var b [HashSize + 16]byte
	for i := range roots {
		copy(b[:], roots[i].Hash[:])
		binary.BigEndian.PutUint64(b[HashSize:], roots[i].Index)
		binary.BigEndian.PutUint64(b[HashSize+8:], roots[i].Size)
		x.h.Write(b[:])
	}
	x.h.Sum(x.sum[:0])
	return x.sum
}

// LeafHash returns the hash of one entry (its leaf node's hash).
func LeafHash(data []byte) [HashSize]byte { return newHasher().leaf(data) }

// ParentHash returns the hash of a parent covering size bytes.
func ParentHash(size uint64, left, right [HashSize]byte) [HashSize]byte {
	return newHasher().parent(size, &left, &right)
}

// TreeHash returns the hash signed over for a tree with these roots.
func TreeHash(roots []Node) [HashSize]byte { return newHasher().tree(roots) }
