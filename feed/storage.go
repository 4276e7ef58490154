package feed

import (
	"encoding/binary"
	"fmt"
)

// State is what a Storage keeps per feed besides entries and nodes.
type State struct {
	// Head is the newest verified (replica) or signed (author) head.
	Head Head
	// Length is how many entries are stored: [0, Length). An author has
	// Length == Head.Length; a replica may hold fewer entries than its head.
	Length uint64
}

const (
	stateVersion1 = 1
	stateSize     = 1 + 8 + HeadSize
)

func (s *State) marshal() []byte {
	b := make([]byte, 0, stateSize)
	b = append(b, stateVersion1)
	b = binary.BigEndian.AppendUint64(b, s.Length)
	b, _ = s.Head.AppendBinary(b)
	return b
}

func (s *State) unmarshal(b []byte) error {
	if len(b) != stateSize || b[0] != stateVersion1 {
		return fmt.Errorf("decoding feed state: %w", ErrCorrupt)
	}
	s.Length = binary.BigEndian.Uint64(b[1:9])
	if err := s.Head.UnmarshalBinary(b[9:]); err != nil {
		return fmt.Errorf("decoding feed state: %w", ErrCorrupt)
	}
	if s.Length > s.Head.Length {
		return fmt.Errorf("decoding feed state: length %d beyond head %d: %w", s.Length, s.Head.Length, ErrCorrupt)
	}
	return nil
}

// Batch is one write to a feed. Storage implementations write Records and
// Nodes first and State last: if a batch has to be split (the KV's
// transaction limit), a crash leaves the old State, which ignores records
// at or beyond its Length and nodes it does not reach.
type Batch struct {
	Key PublicKey
	// Start is the entry index of Records[0].
	Start uint64
	// Records are entry records (see the record layout in storage.go);
	// ownership passes to the storage, callers must not modify them.
	Records [][]byte
	// Nodes are verified nodes beyond the stored entries (a replica's head
	// may be longer than its entries), kept so proofs can be served.
	Nodes []Node
	// State, if not nil, replaces the feed's state.
	State *State
	// Fork, if not nil, is encoded fork evidence to persist for the feed.
	Fork []byte
	// Clear lists entries (sorted, distinct, below the stored length) whose
	// data the storage drops, keeping their records' nodes: each becomes a
	// cleared record (see the record layout). It is written after Records
	// and Nodes; Log and Replicas never combine it with Records.
	Clear []uint64
}

// Storage persists feeds. Implementations are safe for concurrent use.
// Callers serialize writes to one feed (Log and Replicas do).
type Storage interface {
	// View runs fn with a consistent read-only snapshot. Slices returned by
	// the Reader are valid only during fn.
	View(fn func(Reader) error) error
	// Write persists b: records and nodes, then state, atomically when it
	// fits one transaction, else state last.
	Write(b *Batch) error
	// Delete removes everything stored for a feed, fork evidence included.
	Delete(key PublicKey) error
}

// entryReader is a Reader that reads a range of entries more cheaply than
// their records (KVStorage). eachEntry calls fn for entries [start, end) in
// order with either the entry's data (data true) or its record, to be read
// as Records gives it; b is valid only during fn.
type entryReader interface {
	eachEntry(key PublicKey, start, end uint64, fn func(i uint64, b []byte, data bool) error) error
}

// Reader reads one snapshot of a Storage.
type Reader interface {
	// State returns the feed's state; ok is false if the feed is unknown.
	State(key PublicKey) (s State, ok bool, err error)
	// Record returns the record of entry i, or ErrCorrupt wrapped if missing.
	Record(key PublicKey, i uint64) ([]byte, error)
	// Records calls fn for the records of entries [start, end) in order; rec is
	// valid only during fn.
	Records(key PublicKey, start, end uint64, fn func(i uint64, rec []byte) error) error
	// Node returns an extra node stored by Batch.Nodes; ok is false if absent.
	Node(key PublicKey, index uint64) (n Node, ok bool, err error)
	// Fork returns the feed's fork evidence, if any.
	Fork(key PublicKey) (evidence []byte, ok bool, err error)
	// Feeds calls fn for every feed with a state.
	Feeds(fn func(key PublicKey, s State) error) error
}

// Entry record layout (one storage value per entry, frozen with the
// storage format): entry i stores the nodes completed when it was
// appended — its leaf, then the t = trailingOnes(i) parents whose rightmost
// leaf it is, bottom up — followed by the entry data:
//
//	(hash (32) ‖ uint64BE(size)) × (1+t) ‖ data
//
// So every node of the tree below the stored length lives in exactly one
// record and one key per entry suffices.
//
// A cleared entry's record is the same without the data: just the nodes,
// whose leaf still says the data's size (> 0). Data of another length than
// the leaf's size is corrupt.

// recordHeader returns the header length of entry i's record.
func recordHeader(i uint64) int { return (1 + depthOf(i)) * nodeWireSize }

// recordNode returns the node of depth d stored in record rec of entry i.
func recordNode(i uint64, rec []byte, d int) (Node, error) {
	if d > depthOf(i) || len(rec) < recordHeader(i) {
		return Node{}, fmt.Errorf("record %d: no node at depth %d: %w", i, d, ErrCorrupt)
	}
	o := d * nodeWireSize
	n := Node{Index: blockIndex(i+1-uint64(1)<<d, d), Size: binary.BigEndian.Uint64(rec[o+HashSize:])}
	copy(n.Hash[:], rec[o:])
	return n, nil
}

func putNode(b []byte, n *Node) {
	copy(b, n.Hash[:])
	binary.BigEndian.PutUint64(b[HashSize:], n.Size)
}

// readNode returns node idx of a feed whose stored entries are [0, length).
func readNode(r Reader, key PublicKey, length, idx uint64, depth int) (Node, error) {
	_, end := span(idx)
	if end <= length {
		rec, err := r.Record(key, end-1)
		if err != nil {
			return Node{}, err
		}
		return recordNode(end-1, rec, depthOf(idx))
	}
	n, ok, err := r.Node(key, idx)
	if err != nil || ok {
		return n, err
	}
	if depthOf(idx) == 0 || depth > 64 {
		return Node{}, fmt.Errorf("node %d of %s not stored: %w", idx, key, ErrOutOfRange)
	}
	// Not stored on its own: rebuild from its children.
	li, ri := children(idx)
	l, err := readNode(r, key, length, li, depth+1)
	if err != nil {
		return Node{}, err
	}
	rn, err := readNode(r, key, length, ri, depth+1)
	if err != nil {
		return Node{}, err
	}
	x := newHasher()
	return Node{Index: idx, Size: l.Size + rn.Size, Hash: x.parent(l.Size+rn.Size, &l.Hash, &rn.Hash)}, nil
}

// readRoots returns the roots of a feed's tree at length n ≤ stored length.
func readRoots(r Reader, key PublicKey, length, n uint64) ([]Node, error) {
	roots := make([]Node, 0, 64)
	var err error
	decompose(0, n, func(idx uint64) {
		if err != nil {
			return
		}
		var nd Node
		nd, err = readNode(r, key, length, idx, 0)
		roots = append(roots, nd)
	})
	return roots, err
}

// readEntries returns copies of the entries [start, end). A cleared entry
// is ErrCleared, unless sparse: then its data is nil and its leaf is in
// cleared.
func readEntries(r Reader, key PublicKey, start, end uint64, sparse bool) (out [][]byte, cleared []Cleared, err error) {
	out = make([][]byte, 0, end-start)
	visit := func(i uint64, b []byte, data bool) error {
		if data {
			out = append(out, append([]byte{}, b...))
			return nil
		}
		d, isCleared, leaf, err := recordState(i, b)
		switch {
		case err != nil:
			return err
		case isCleared && !sparse:
			return fmt.Errorf("entry %d of %s: %w", i, key, ErrCleared)
		case isCleared:
			cleared = append(cleared, Cleared{Index: i, Size: leaf.Size, Hash: leaf.Hash})
			out = append(out, nil)
		default:
			out = append(out, append([]byte{}, d...))
		}
		return nil
	}
	if er, ok := r.(entryReader); ok {
		err = er.eachEntry(key, start, end, visit)
	} else {
		err = r.Records(key, start, end, func(i uint64, rec []byte) error { return visit(i, rec, false) })
	}
	if err == nil && uint64(len(out)) != end-start {
		err = fmt.Errorf("entries [%d,%d) of %s: %d found: %w", start, end, key, len(out), ErrCorrupt)
	}
	return out, cleared, err
}

// makeProof builds a proof of [start, end) against st.Head, upgrading from
// since (0 for none).
func makeProof(r Reader, key PublicKey, st *State, start, end, since uint64) (*Proof, error) {
	if start > end || end > st.Length || since > st.Head.Length {
		return nil, fmt.Errorf("proof of [%d,%d) since %d: %d stored, head %d: %w", start, end, since, st.Length, st.Head.Length, ErrOutOfRange)
	}
	p := &Proof{Head: st.Head, Start: start, Count: end - start, Since: since}
	p.Nodes = make([]Node, 0, proofNodeCount(start, end, since, st.Head.Length))
	var err error
	proofIndexes(start, end, since, st.Head.Length, func(idx uint64) {
		if err != nil {
			return
		}
		var n Node
		n, err = readNode(r, key, st.Length, idx, 0)
		p.Nodes = append(p.Nodes, n)
	})
	if err != nil {
		return nil, fmt.Errorf("building proof of [%d,%d): %w", start, end, err)
	}
	return p, nil
}
