package feed

import "math/bits"

// Flat-tree indexing (as in Hypercore): leaf i has index 2i, a parent has an
// odd index, and the node at depth d and offset o has index
// (o << (d+1)) | (1<<d - 1). A node of depth d covers the 2^d leaves
// [o·2^d, (o+1)·2^d).

// maxLength bounds feed lengths so that every flat index fits in a uint64.
const maxLength = 1 << 62

// depthOf returns the depth of flat index i (its trailing one bits).
func depthOf(i uint64) int { return bits.TrailingZeros64(^i) }

// blockIndex returns the flat index of the aligned block [p, p+2^d).
func blockIndex(p uint64, d int) uint64 { return 2*p + (uint64(1) << d) - 1 }

// span returns the leaves [start, end) covered by flat index i.
func span(i uint64) (start, end uint64) {
	d := depthOf(i)
	start = (i >> (d + 1)) << d
	return start, start + uint64(1)<<d
}

// children returns the two children of a parent index (depth > 0).
func children(i uint64) (left, right uint64) {
	half := uint64(1) << (depthOf(i) - 1)
	return i - half, i + half
}

// nextBlock returns the depth of the largest aligned block that starts at p
// and ends at or before q (p < q).
func nextBlock(p, q uint64) int {
	d := 63 - bits.LeadingZeros64(q-p)
	if p != 0 {
		if tz := bits.TrailingZeros64(p); tz < d {
			d = tz
		}
	}
	return d
}

// decompose calls fn with the flat index of each block of the canonical
// decomposition of leaves [p, q): the largest aligned blocks, left to right.
// decompose(0, n) yields the roots of a tree of n leaves.
func decompose(p, q uint64, fn func(idx uint64)) {
	for p < q {
		d := nextBlock(p, q)
		fn(blockIndex(p, d))
		p += uint64(1) << d
	}
}

// countBlocks returns how many blocks decompose(p, q) yields.
func countBlocks(p, q uint64) int {
	n := 0
	for p < q {
		p += uint64(1) << nextBlock(p, q)
		n++
	}
	return n
}

// rootIndexes returns the flat indexes of the roots of a tree of n leaves.
func rootIndexes(n uint64) []uint64 {
	out := make([]uint64, 0, bits.OnesCount64(n))
	decompose(0, n, func(i uint64) { out = append(out, i) })
	return out
}
