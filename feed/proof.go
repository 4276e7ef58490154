package feed

import (
	"encoding/binary"
	"fmt"
	"math/bits"
)

// Proof proves that the entries [Start, Start+Count) belong to the feed as
// signed by Head, and optionally (Since > 0) that Head extends an older head
// of length Since. Entries travel beside the proof, not inside it.
//
// Nodes are the hashes the verifier cannot compute from the entries: the
// roots of the tree at Start, the canonical blocks covering
// [Start+Count, Head.Length), each run split at Since so that the tree at
// Since can be rebuilt too. Their indexes follow from (Start, Count, Since,
// Head.Length), so the encoding carries only hashes and sizes.
//
// The same type serves three uses:
//   - a range extending a replica's prefix (Start = replica length): the
//     replica checks Nodes' prefix roots equal its own and stores the rest;
//   - a random-access proof of any range: verified with Verify, statelessly;
//   - an upgrade proof (Count = 0, Since = old length): VerifyUpgrade.
//
// Compatibility: the encoding (MarshalBinary, version 1) is frozen and pinned
// by golden tests. A new layout gets a new version byte.
type Proof struct {
	Head  Head
	Start uint64
	Count uint64
	Since uint64
	Nodes []Node
}

const (
	proofVersion1 = 1
	proofFixed    = 1 + HeadSize + 3*8 + 2
	nodeWireSize  = HashSize + 8
	// maxProofNodes bounds the node count of any proof: at most five
	// decomposed runs of at most 2·62 blocks each.
	maxProofNodes = 5 * 2 * 62
)

// End returns Start+Count.
func (p *Proof) End() uint64 { return p.Start + p.Count }

// checkShape validates the numeric fields against each other.
func (p *Proof) checkShape() error {
	b := p.Head.Length
	if b > maxLength || p.Start > b || p.Count > b-p.Start || p.Since > b {
		return fmt.Errorf("proof shape start=%d count=%d since=%d length=%d: %w", p.Start, p.Count, p.Since, b, ErrInvalidProof)
	}
	return nil
}

// segment is one run of a proof's walk over [0, length).
type segment struct {
	from, to uint64
	leaves   bool // entries supplied by the caller, else proof nodes
}

// segments cuts [0, length) at start, end and since. The run [start, end)
// holds the entries; every other run is covered by canonical blocks.
func segments(start, end, since, length uint64, out *[5]segment) []segment {
	cuts := [5]uint64{0, start, end, since, length}
	// insertion sort of five values
	for i := 1; i < len(cuts); i++ {
		for j := i; j > 0 && cuts[j] < cuts[j-1]; j-- {
			cuts[j], cuts[j-1] = cuts[j-1], cuts[j]
		}
	}
	segs := out[:0]
	for i := 0; i+1 < len(cuts); i++ {
		x, y := cuts[i], cuts[i+1]
		if x == y {
			continue
		}
		segs = append(segs, segment{x, y, start <= x && y <= end})
	}
	return segs
}

// proofIndexes calls fn with the flat index of every node a proof of this
// shape carries, in order.
func proofIndexes(start, end, since, length uint64, fn func(uint64)) {
	var buf [5]segment
	for _, s := range segments(start, end, since, length, &buf) {
		if !s.leaves {
			decompose(s.from, s.to, fn)
		}
	}
}

func proofNodeCount(start, end, since, length uint64) int {
	n := 0
	var buf [5]segment
	for _, s := range segments(start, end, since, length, &buf) {
		if !s.leaves {
			n += countBlocks(s.from, s.to)
		}
	}
	return n
}

// MarshalBinary encodes the proof (frozen, version 1):
//
//	0x01 ‖ head (137 bytes, Head.MarshalBinary) ‖ uint64BE(start) ‖ uint64BE(count) ‖
//	uint64BE(since) ‖ uint16BE(n) ‖ n × (hash (32) ‖ uint64BE(size))
//
// Node indexes are implied by the shape and not encoded.
func (p *Proof) MarshalBinary() ([]byte, error) {
	return p.AppendBinary(make([]byte, 0, proofFixed+len(p.Nodes)*nodeWireSize))
}

// AppendBinary appends the encoding of MarshalBinary to b.
func (p *Proof) AppendBinary(b []byte) ([]byte, error) {
	if len(p.Nodes) > maxProofNodes {
		return nil, fmt.Errorf("encoding proof: %d nodes: %w", len(p.Nodes), ErrInvalidProof)
	}
	b = append(b, proofVersion1)
	b, _ = p.Head.AppendBinary(b)
	b = binary.BigEndian.AppendUint64(b, p.Start)
	b = binary.BigEndian.AppendUint64(b, p.Count)
	b = binary.BigEndian.AppendUint64(b, p.Since)
	b = binary.BigEndian.AppendUint16(b, uint16(len(p.Nodes)))
	for i := range p.Nodes {
		b = append(b, p.Nodes[i].Hash[:]...)
		b = binary.BigEndian.AppendUint64(b, p.Nodes[i].Size)
	}
	return b, nil
}

// UnmarshalBinary decodes a proof encoded by MarshalBinary and fills in the
// node indexes. It returns ErrMalformed for any other input, including a
// node count that does not match the shape. It verifies nothing else.
func (p *Proof) UnmarshalBinary(b []byte) error {
	if len(b) < proofFixed {
		return fmt.Errorf("decoding proof: %d bytes: %w", len(b), ErrMalformed)
	}
	if b[0] != proofVersion1 {
		return fmt.Errorf("decoding proof: version %d: %w", b[0], ErrMalformed)
	}
	var out Proof
	if err := out.Head.UnmarshalBinary(b[1 : 1+HeadSize]); err != nil {
		return fmt.Errorf("decoding proof: %w", err)
	}
	o := 1 + HeadSize
	out.Start = binary.BigEndian.Uint64(b[o:])
	out.Count = binary.BigEndian.Uint64(b[o+8:])
	out.Since = binary.BigEndian.Uint64(b[o+16:])
	n := int(binary.BigEndian.Uint16(b[o+24:]))
	o += 26
	if err := out.checkShape(); err != nil {
		return fmt.Errorf("decoding proof: %w", ErrMalformed)
	}
	if len(b)-o != n*nodeWireSize {
		return fmt.Errorf("decoding proof: %d node bytes for %d nodes: %w", len(b)-o, n, ErrMalformed)
	}
	if want := proofNodeCount(out.Start, out.End(), out.Since, out.Head.Length); n != want {
		return fmt.Errorf("decoding proof: %d nodes, shape needs %d: %w", n, want, ErrMalformed)
	}
	out.Nodes = make([]Node, 0, n)
	proofIndexes(out.Start, out.End(), out.Since, out.Head.Length, func(idx uint64) {
		var nd Node
		nd.Index = idx
		copy(nd.Hash[:], b[o:])
		nd.Size = binary.BigEndian.Uint64(b[o+HashSize:])
		o += nodeWireSize
		out.Nodes = append(out.Nodes, nd)
	})
	*p = out
	return nil
}

// walker rebuilds the roots of a proof's tree from entries and proof nodes,
// left to right, keeping the canonical roots of the prefix seen so far on a
// stack. Hooks let callers capture the tree at a length and collect the
// nodes it computes. Not safe for concurrent use.
type walker struct {
	x     *hasher
	stack []Node
	made  []Node // nodes created by the last push (the pushed node first)

	// capture, if set, is called with the roots at each length in at
	// (checked when the walk reaches that length).
	at      [3]uint64
	nAt     int
	capture func(length uint64, roots []Node) error
	// onLeaf, if set, is called after leaf i is pushed with the leaf and the
	// parents it completed (w.made).
	onLeaf func(i uint64, made []Node)
	// onNode, if set, is called after a proof node is pushed with it and
	// the parents it completed (w.made).
	onNode func(made []Node)
}

func newWalker(x *hasher) *walker {
	return &walker{x: x, stack: make([]Node, 0, 130), made: make([]Node, 0, 66)}
}

func (w *walker) reset() {
	w.stack = w.stack[:0]
	w.nAt = 0
	w.capture, w.onLeaf, w.onNode = nil, nil, nil
}

// captureAt asks for the roots at length n (at most three lengths).
func (w *walker) captureAt(n uint64) { w.at[w.nAt] = n; w.nAt++ }

// push appends node n (the next block to the right) and merges siblings.
func (w *walker) push(n Node) error {
	w.made = append(w.made[:0], n)
	for len(w.stack) > 0 {
		top := &w.stack[len(w.stack)-1]
		d := depthOf(top.Index)
		if depthOf(n.Index) != d || (top.Index>>(d+1))&1 != 0 {
			break
		}
		// top is a left child at n's depth and ends where n starts: siblings.
		size, carry := bits.Add64(top.Size, n.Size, 0)
		if carry != 0 {
			return fmt.Errorf("node sizes overflow: %w", ErrInvalidProof)
		}
		p := Node{Index: top.Index + uint64(1)<<d, Size: size}
		p.Hash = w.x.parent(size, &top.Hash, &n.Hash)
		w.stack = w.stack[:len(w.stack)-1]
		n = p
		w.made = append(w.made, p)
	}
	w.stack = append(w.stack, n)
	return nil
}

func (w *walker) checkCapture(pos uint64) error {
	if w.capture == nil {
		return nil
	}
	for i := 0; i < w.nAt; i++ {
		if w.at[i] == pos {
			if err := w.capture(pos, w.stack); err != nil {
				return err
			}
		}
	}
	return nil
}

// walk rebuilds the roots at p.Head.Length from entries and p.Nodes and
// returns them (valid until the next use of w). It checks shapes, not the
// tree hash or signature.
//
// cleared (checked with checkSparse) gives the leaves of the entries whose
// data is absent: they are pushed instead of hashing the data.
func (w *walker) walk(p *Proof, entries [][]byte, cleared []Cleared) ([]Node, error) {
	if err := p.checkShape(); err != nil {
		return nil, err
	}
	if uint64(len(entries)) != p.Count {
		return nil, fmt.Errorf("%d entries for a proof of %d: %w", len(entries), p.Count, ErrInvalidProof)
	}
	if err := checkSparse(p.Start, p.End(), entries, cleared); err != nil {
		return nil, err
	}
	end := p.End()
	if want := proofNodeCount(p.Start, end, p.Since, p.Head.Length); len(p.Nodes) != want {
		return nil, fmt.Errorf("%d proof nodes, shape needs %d: %w", len(p.Nodes), want, ErrInvalidProof)
	}
	if err := w.checkCapture(0); err != nil {
		return nil, err
	}
	var buf [5]segment
	next := 0
	for _, s := range segments(p.Start, end, p.Since, p.Head.Length, &buf) {
		if s.leaves {
			for i := s.from; i < s.to; i++ {
				var leaf Node
				for len(cleared) > 0 && cleared[0].Index < i {
					cleared = cleared[1:]
				}
				if len(cleared) > 0 && cleared[0].Index == i {
					leaf = cleared[0].leaf()
				} else {
					data := entries[i-p.Start]
					leaf = Node{Index: 2 * i, Size: uint64(len(data)), Hash: w.x.leaf(data)}
				}
				if err := w.push(leaf); err != nil {
					return nil, err
				}
				if w.onLeaf != nil {
					w.onLeaf(i, w.made)
				}
				if w.nAt > 0 {
					if err := w.checkCapture(i + 1); err != nil {
						return nil, err
					}
				}
			}
			continue
		} else {
			var err error
			decompose(s.from, s.to, func(idx uint64) {
				if err != nil {
					return
				}
				n := p.Nodes[next]
				next++
				if n.Index != idx {
					err = fmt.Errorf("proof node %d has index %d, want %d: %w", next-1, n.Index, idx, ErrInvalidProof)
					return
				}
				if err = w.push(n); err == nil && w.onNode != nil {
					w.onNode(w.made)
				}
			})
			if err != nil {
				return nil, err
			}
		}
		if err := w.checkCapture(s.to); err != nil {
			return nil, err
		}
	}
	return w.stack, nil
}

// finish checks the rebuilt roots against the head's tree hash and
// signature.
func (w *walker) finish(p *Proof, roots []Node) error {
	if th := w.x.tree(roots); th != p.Head.TreeHash {
		return fmt.Errorf("proof of [%d,%d) against length %d: tree hash mismatch: %w", p.Start, p.End(), p.Head.Length, ErrInvalidProof)
	}
	return p.Head.Verify()
}

// Verify checks that entries are the entries [Start, Start+Count) of the
// feed signed by p.Head. It returns ErrInvalidProof or ErrBadSignature
// (wrapped) when they are not. It does not check Since against any head.
func (p *Proof) Verify(entries [][]byte) error { return p.VerifySparse(entries, nil) }

// VerifySparse is Verify for a range with cleared entries (as ReadSparse
// returns it): for each entry in cleared, its leaf stands in for its data,
// which must be absent (nil) in entries. A leaf that is not the entry's is
// ErrInvalidProof like wrong data.
func (p *Proof) VerifySparse(entries [][]byte, cleared []Cleared) error {
	w := newWalker(newHasher())
	roots, err := w.walk(p, entries, cleared)
	if err != nil {
		return fmt.Errorf("verifying proof: %w", err)
	}
	return w.finish(p, roots)
}

// VerifyUpgrade is Verify plus a check that p.Head extends old (a head of
// the same feed of length p.Since, whose signature is verified too). If both
// heads are validly signed but the tree at old.Length differs, it returns a
// *ForkError.
func (p *Proof) VerifyUpgrade(old *Head, entries [][]byte) error {
	if old.Key != p.Head.Key {
		return fmt.Errorf("verifying upgrade: %w", ErrWrongFeed)
	}
	if old.Length != p.Since {
		return fmt.Errorf("verifying upgrade from %d: proof is since %d: %w", old.Length, p.Since, ErrUpgradeRequired)
	}
	if err := old.Verify(); err != nil {
		return err
	}
	w := newWalker(newHasher())
	var atOld [HashSize]byte
	w.captureAt(old.Length)
	w.capture = func(_ uint64, roots []Node) error { atOld = w.x.tree(roots); return nil }
	roots, err := w.walk(p, entries, nil)
	if err != nil {
		return fmt.Errorf("verifying upgrade proof: %w", err)
	}
	if err := w.finish(p, roots); err != nil {
		return err
	}
	if atOld != old.TreeHash {
		return &ForkError{Key: old.Key, Held: *old, Other: p.Head}
	}
	return nil
}
