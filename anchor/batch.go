package anchor

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"

	"github.com/crow-sync/crow/anchor/merkle"
)

// Batch rows (issue 16). Since then the worker writes one anchors row per
// root, "root/<0x root>" (RootRecord), and no row per version: the root's
// row carries, in RootRecord.Batch, the ordered leaf inputs its tree is
// rebuilt from. A version's Record (root, proof, transaction) is derived
// from it (BatchRecords; StateRecord and MemoryRecord find it through a
// local index, batchindex.go). Rows written before (a Record per version
// and a RootRecord listing them in Items) stay and are read as before.
//
// Batch is binary (base64 in the row's JSON), frozen by
// TestBatchRowGolden. It starts with its format byte:
//
//	batchStates (1):   per leaf, in leaf order:
//	                   uvarint len(project) ‖ project ‖ project id (32) ‖
//	                   uvarint version ‖ state hash (32)
//	batchMemories (2): per memory version, in leaf order (the versions of
//	                   one leaf — the same event hash — one after another):
//	                   varint (number − previous number, from 0) ‖
//	                   event hash (32)
//
// A memory leaf is merkle.HashLeaf(event hash), one per distinct event
// hash in order of first appearance; a state leaf is
// merkle.StateLeaf(project id, version, state hash). Only the format bytes
// above are read; a new layout takes a new format byte.
const (
	batchStates   byte = 1
	batchMemories byte = 2
)

// ErrBadBatch is returned (wrapped) for a root row whose Batch does not
// decode, or whose leaves do not make its root.
var ErrBadBatch = errors.New("anchor: malformed batch in a root record")

// stateLeafIn is what a state leaf commits, and the version it names.
type stateLeafIn struct {
	Project   string
	ProjectID [32]byte
	Version   uint64
	StateHash [32]byte
}

// memoryLeafIn is a memory version under a root: its number and the event
// hash its leaf commits.
type memoryLeafIn struct {
	Number    uint64
	EventHash [32]byte
}

func encodeStateBatch(ls []stateLeafIn) []byte {
	b := make([]byte, 0, 1+len(ls)*(1+24+32+3+32))
	b = append(b, batchStates)
	for _, l := range ls {
		b = binary.AppendUvarint(b, uint64(len(l.Project)))
		b = append(b, l.Project...)
		b = append(b, l.ProjectID[:]...)
		b = binary.AppendUvarint(b, l.Version)
		b = append(b, l.StateHash[:]...)
	}
	return b
}

func encodeMemoryBatch(ms []memoryLeafIn) []byte {
	b := make([]byte, 0, 1+len(ms)*(2+32))
	b = append(b, batchMemories)
	var prev uint64
	for _, m := range ms {
		b = binary.AppendVarint(b, int64(m.Number-prev))
		b = append(b, m.EventHash[:]...)
		prev = m.Number
	}
	return b
}

// batchReader reads a Batch; a short or malformed input sets bad.
type batchReader struct {
	b   []byte
	bad bool
}

func (r *batchReader) uvarint() uint64 {
	x, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.bad, r.b = true, nil
		return 0
	}
	r.b = r.b[n:]
	return x
}

func (r *batchReader) varint() int64 {
	x, n := binary.Varint(r.b)
	if n <= 0 {
		r.bad, r.b = true, nil
		return 0
	}
	r.b = r.b[n:]
	return x
}

func (r *batchReader) bytes(n uint64) []byte {
	if n > uint64(len(r.b)) {
		r.bad, r.b = true, nil
		return nil
	}
	s := r.b[:n]
	r.b = r.b[n:]
	return s
}

func (r *batchReader) hash() (h [32]byte) {
	copy(h[:], r.bytes(32))
	return h
}

func decodeStateBatch(b []byte) ([]stateLeafIn, error) {
	if len(b) == 0 || b[0] != batchStates {
		return nil, fmt.Errorf("%w: not a state batch", ErrBadBatch)
	}
	r := batchReader{b: b[1:]}
	var out []stateLeafIn
	for len(r.b) > 0 && !r.bad {
		var l stateLeafIn
		l.Project = string(r.bytes(r.uvarint()))
		l.ProjectID = r.hash()
		l.Version = r.uvarint()
		l.StateHash = r.hash()
		out = append(out, l)
	}
	if r.bad {
		return nil, fmt.Errorf("%w: state batch truncated after %d leaves", ErrBadBatch, len(out))
	}
	return out, nil
}

func decodeMemoryBatch(b []byte) ([]memoryLeafIn, error) {
	if len(b) == 0 || b[0] != batchMemories {
		return nil, fmt.Errorf("%w: not a memory batch", ErrBadBatch)
	}
	r := batchReader{b: b[1:]}
	var out []memoryLeafIn
	var prev uint64
	for len(r.b) > 0 && !r.bad {
		n := prev + uint64(r.varint())
		out = append(out, memoryLeafIn{Number: n, EventHash: r.hash()})
		prev = n
	}
	if r.bad {
		return nil, fmt.Errorf("%w: memory batch truncated after %d versions", ErrBadBatch, len(out))
	}
	return out, nil
}

// batchItemIDs returns the record ids (StateRecordID, VersionRecordID) a
// batch row commits, in leaf order, without building its tree.
func batchItemIDs(rr RootRecord) ([]string, error) {
	switch rr.Leaves {
	case RecordState:
		ls, err := decodeStateBatch(rr.Batch)
		if err != nil {
			return nil, err
		}
		ids := make([]string, len(ls))
		for i, l := range ls {
			ids[i] = StateRecordID(l.Project, l.Version)
		}
		return ids, nil
	case RecordMemory:
		ms, err := decodeMemoryBatch(rr.Batch)
		if err != nil {
			return nil, err
		}
		ids := make([]string, len(ms))
		for i, m := range ms {
			ids[i] = VersionRecordID(m.Number)
		}
		return ids, nil
	}
	return nil, fmt.Errorf("%w: leaves %q", ErrBadBatch, rr.Leaves)
}

// batchTree is what a batch row's leaves make: the tree, and per version
// the parts of its Record that depend on the leaves only (all but the
// proof, computed on demand, and the root's transaction and status). It
// depends only on Batch, which never changes for a root.
type batchTree struct {
	tree   *merkle.Tree
	leaves []merkle.Hash
	recs   map[string]batchItem // by record id
}

type batchItem struct {
	rec  Record
	leaf int
}

// buildBatchTree rebuilds rr's tree from its Batch and checks that it
// makes rr.Root.
func buildBatchTree(rr RootRecord) (*batchTree, error) {
	t := &batchTree{recs: map[string]batchItem{}}
	switch rr.Leaves {
	case RecordState:
		ls, err := decodeStateBatch(rr.Batch)
		if err != nil {
			return nil, err
		}
		for i, l := range ls {
			t.leaves = append(t.leaves, merkle.StateLeaf(l.ProjectID, l.Version, l.StateHash))
			t.recs[StateRecordID(l.Project, l.Version)] = batchItem{leaf: i, rec: Record{Kind: RecordState, Project: l.Project,
				ProjectID: HashHex(l.ProjectID), Version: l.Version, StateHash: HashHex(l.StateHash)}}
		}
	case RecordMemory:
		ms, err := decodeMemoryBatch(rr.Batch)
		if err != nil {
			return nil, err
		}
		index := map[[32]byte]int{}
		for _, m := range ms {
			i, ok := index[m.EventHash]
			if !ok {
				i = len(t.leaves)
				index[m.EventHash] = i
				t.leaves = append(t.leaves, merkle.HashLeaf(m.EventHash))
			}
			t.recs[VersionRecordID(m.Number)] = batchItem{leaf: i, rec: Record{Kind: RecordMemory, Number: m.Number,
				EventHash: HashHex(m.EventHash), Encryption: EncryptionDataKey}}
		}
	default:
		return nil, fmt.Errorf("%w: leaves %q", ErrBadBatch, rr.Leaves)
	}
	tree, err := merkle.New(t.leaves)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadBatch, err)
	}
	if HashHex(tree.Root()) != strings.ToLower(rr.Root) {
		return nil, fmt.Errorf("%w: its leaves make root %s, not %s", ErrBadBatch, HashHex(tree.Root()), rr.Root)
	}
	t.tree = tree
	return t, nil
}

// record is id's Record under rr, with the fields the per-item rows had:
// the proof of its leaf as the worker computed it (tree.Proof; nil for a
// root of one leaf, as Record.Proof is omitempty and a per-item row
// decodes to nil), Status included (the status when it was written: the
// current one is the root's, StatusOf), and the root's transaction, chain
// and time (the current transaction: readers take it from the root record
// anyway).
func (t *batchTree) record(id string, rr RootRecord) (Record, bool) {
	it, ok := t.recs[id]
	if !ok {
		return Record{}, false
	}
	rec := it.rec
	if p, _ := t.tree.Proof(t.leaves[it.leaf]); len(p) > 0 {
		rec.Proof = hexes(p)
	}
	rec.Root = rr.Root
	rec.Status, rec.RootID, rec.TxHash, rec.Block = StatusIncluded, rr.RootID, rr.TxHash, rr.Block
	rec.ChainID, rec.Contract, rec.At = rr.ChainID, rr.Contract, rr.At
	return rec, true
}

// BatchRecords returns the Record of every version a batch row commits, by
// record id (StateRecordID or VersionRecordID), as the per-item rows
// written before issue 16 held them. A root row without Batch (written
// before) gives none.
func BatchRecords(rr RootRecord) (map[string]Record, error) {
	if len(rr.Batch) == 0 {
		return nil, nil
	}
	t, err := buildBatchTree(rr)
	if err != nil {
		return nil, err
	}
	out := make(map[string]Record, len(t.recs))
	for id := range t.recs {
		out[id], _ = t.record(id, rr)
	}
	return out, nil
}
