package anchor

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"

	"github.com/crow-sync/crow/anchor/merkle"
	"github.com/crow-sync/crow/store"
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

// readHash reads a 32-byte hash.
func readHash(d *store.BinDecoder) (h [32]byte) {
	copy(h[:], d.Fixed(32))
	return h
}

func decodeStateBatch(b []byte) ([]stateLeafIn, error) {
	if len(b) == 0 || b[0] != batchStates {
		return nil, fmt.Errorf("%w: not a state batch", ErrBadBatch)
	}
	r := store.NewBinDecoder(b[1:])
	var out []stateLeafIn
	for len(r.Rest()) > 0 && !r.Bad() {
		var l stateLeafIn
		l.Project = string(r.Bytes())
		l.ProjectID = readHash(r)
		l.Version = r.Uvarint()
		l.StateHash = readHash(r)
		out = append(out, l)
	}
	if r.Bad() {
		return nil, fmt.Errorf("%w: state batch truncated after %d leaves", ErrBadBatch, len(out))
	}
	return out, nil
}

func decodeMemoryBatch(b []byte) ([]memoryLeafIn, error) {
	if len(b) == 0 || b[0] != batchMemories {
		return nil, fmt.Errorf("%w: not a memory batch", ErrBadBatch)
	}
	r := store.NewBinDecoder(b[1:])
	var out []memoryLeafIn
	var prev uint64
	for len(r.Rest()) > 0 && !r.Bad() {
		n := prev + uint64(r.Varint())
		out = append(out, memoryLeafIn{Number: n, EventHash: readHash(r)})
		prev = n
	}
	if r.Bad() {
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

// batchTree is what a batch row's leaves make: the tree and the leaf
// inputs, indexed by record id. A version's Record is built when asked
// (record). It depends only on Batch, which never changes for a root.
type batchTree struct {
	tree   *merkle.Tree
	states []stateLeafIn    // RecordState: the leaves, in order
	mems   []memoryLeafIn   // RecordMemory: the versions, in order
	byID   map[string]int32 // state record id → index in states
	byNum  map[uint64]int32 // memory number → index in mems
}

// size is how many leaf inputs t holds (the cache's measure).
func (t *batchTree) size() int { return len(t.states) + len(t.mems) }

// buildBatchTree rebuilds rr's tree from its Batch and checks that it
// makes rr.Root.
func buildBatchTree(rr RootRecord) (*batchTree, error) {
	t := &batchTree{}
	var leaves []merkle.Hash
	switch rr.Leaves {
	case RecordState:
		ls, err := decodeStateBatch(rr.Batch)
		if err != nil {
			return nil, err
		}
		t.states, t.byID = ls, make(map[string]int32, len(ls))
		for i, l := range ls {
			leaves = append(leaves, merkle.StateLeaf(l.ProjectID, l.Version, l.StateHash))
			t.byID[StateRecordID(l.Project, l.Version)] = int32(i)
		}
	case RecordMemory:
		ms, err := decodeMemoryBatch(rr.Batch)
		if err != nil {
			return nil, err
		}
		t.mems, t.byNum = ms, make(map[uint64]int32, len(ms))
		seen := map[[32]byte]bool{}
		for i, m := range ms {
			if !seen[m.EventHash] { // one leaf per event hash, in order of first appearance
				seen[m.EventHash] = true
				leaves = append(leaves, merkle.HashLeaf(m.EventHash))
			}
			t.byNum[m.Number] = int32(i)
		}
	default:
		return nil, fmt.Errorf("%w: leaves %q", ErrBadBatch, rr.Leaves)
	}
	tree, err := merkle.New(leaves)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadBatch, err)
	}
	if HashHex(tree.Root()) != strings.ToLower(rr.Root) {
		return nil, fmt.Errorf("%w: its leaves make root %s, not %s", ErrBadBatch, HashHex(tree.Root()), rr.Root)
	}
	t.tree = tree
	return t, nil
}

// record is the Record, under rr, of state record id (n == 0) or memory
// number n, with the fields the per-item rows had: the proof of its leaf
// as the worker computed it (tree.Proof; nil for a root of one leaf, as
// Record.Proof is omitempty and a per-item row decodes to nil), Status
// included (the status when it was written: the current one is the
// root's, StatusOf), and the root's transaction, chain and time (the
// current transaction: readers take it from the root record anyway).
func (t *batchTree) record(id string, n uint64, rr RootRecord) (Record, bool) {
	var rec Record
	var leaf merkle.Hash
	if n > 0 {
		i, ok := t.byNum[n]
		if !ok {
			return Record{}, false
		}
		m := t.mems[i]
		rec = Record{Kind: RecordMemory, Number: m.Number, EventHash: HashHex(m.EventHash), Encryption: EncryptionDataKey}
		leaf = merkle.HashLeaf(m.EventHash)
	} else {
		i, ok := t.byID[id]
		if !ok {
			return Record{}, false
		}
		l := t.states[i]
		rec = Record{Kind: RecordState, Project: l.Project, ProjectID: HashHex(l.ProjectID), Version: l.Version, StateHash: HashHex(l.StateHash)}
		leaf = merkle.StateLeaf(l.ProjectID, l.Version, l.StateHash)
	}
	if p, _ := t.tree.Proof(leaf); len(p) > 0 {
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
	out := make(map[string]Record, t.size())
	for id := range t.byID {
		out[id], _ = t.record(id, 0, rr)
	}
	for n := range t.byNum {
		out[VersionRecordID(n)], _ = t.record("", n, rr)
	}
	return out, nil
}
