package feed

import (
	"encoding/binary"
	"fmt"
	"slices"
)

// Cleared is what is kept of an entry whose data was cleared (Log.Clear,
// Replicas.Clear): its leaf node, which stands in for the data in proofs
// and in the ranges served to peers (ReadSparse, ApplySparse).
type Cleared struct {
	// Index is the entry's index in the feed (its leaf's flat index is 2·Index).
	Index uint64
	// Size is the length of the cleared data in bytes (never 0: an empty
	// entry has nothing to clear).
	Size uint64
	// Hash is the entry's leaf hash H(0x00 ‖ uint64BE(Size) ‖ data).
	Hash [HashSize]byte
}

// leaf returns c as a tree node.
func (c *Cleared) leaf() Node { return Node{Index: 2 * c.Index, Size: c.Size, Hash: c.Hash} }

// A cleared record is the record of the entry without its data: only the
// nodes (leaf first), with the leaf's Size > 0. An entry whose data is empty
// has the same record whether cleared or not, so Clear leaves it as it is.

// recordState classifies record rec of entry i: its data, or cleared (data
// nil, leaf returned), or ErrCorrupt when the data does not have the
// length its leaf says.
func recordState(i uint64, rec []byte) (data []byte, cleared bool, leaf Node, err error) {
	h := recordHeader(i)
	if len(rec) < h {
		return nil, false, Node{}, fmt.Errorf("record %d: %d bytes: %w", i, len(rec), ErrCorrupt)
	}
	size := binary.BigEndian.Uint64(rec[HashSize:])
	switch d := rec[h:]; {
	case uint64(len(d)) == size:
		return d, false, Node{}, nil
	case len(d) == 0:
		leaf, err = recordNode(i, rec, 0)
		return nil, true, leaf, err
	default:
		return nil, false, Node{}, fmt.Errorf("record %d: %d data bytes, leaf says %d: %w", i, len(d), size, ErrCorrupt)
	}
}

// clearRecords rewrites chunk value v (the framed records of entries
// [first, …)) with the data of the entries in clear dropped. It returns
// the new value and whether anything changed; v is not modified.
func clearRecords(v []byte, first uint64, clear []uint64) ([]byte, bool, error) {
	out := make([]byte, 0, len(v))
	changed := false
	for i, o := first, 0; o < len(v); i++ {
		if len(v)-o < 4 {
			return nil, false, ErrCorrupt
		}
		w := binary.BigEndian.Uint32(v[o:])
		l := int(w &^ recordFlags)
		if len(v)-o-4 < l {
			return nil, false, ErrCorrupt
		}
		frame := v[o : o+4+l]
		o += 4 + l
		if _, found := slices.BinarySearch(clear, i); found {
			rec, err := recordOf(i, frame[4:], w&recordFlags)
			if err != nil {
				return nil, false, err
			}
			if h := recordHeader(i); len(rec) > h {
				if _, _, _, err := recordState(i, rec); err != nil {
					return nil, false, err
				}
				// The nodes only, leaf included: nothing to recompute it from.
				out = binary.BigEndian.AppendUint32(out, uint32(h))
				out = append(out, rec[:h]...)
				changed = true
				continue
			}
		}
		out = append(out, frame...)
	}
	return out, changed, nil
}

// checkClear sorts and de-duplicates indexes and checks they are below
// length.
func checkClear(key PublicKey, indexes []uint64, length uint64) ([]uint64, error) {
	idx := slices.Clone(indexes)
	slices.Sort(idx)
	idx = slices.Compact(idx)
	if len(idx) > 0 && idx[len(idx)-1] >= length {
		return nil, fmt.Errorf("clearing entry %d of %s holding %d: %w", idx[len(idx)-1], key, length, ErrOutOfRange)
	}
	return idx, nil
}

// checkSparse checks the cleared leaves given for the entries [start, end):
// in index order, within the range, of non-empty entries whose data is
// absent (nil or empty).
func checkSparse(start, end uint64, entries [][]byte, cleared []Cleared) error {
	for j := range cleared {
		c := &cleared[j]
		switch {
		case c.Index < start || c.Index >= end:
			return fmt.Errorf("cleared entry %d outside [%d,%d): %w", c.Index, start, end, ErrInvalidProof)
		case j > 0 && c.Index <= cleared[j-1].Index:
			return fmt.Errorf("cleared entries out of order at %d: %w", c.Index, ErrInvalidProof)
		case c.Size == 0:
			return fmt.Errorf("cleared entry %d of size 0: %w", c.Index, ErrInvalidProof)
		case len(entries[c.Index-start]) != 0:
			return fmt.Errorf("cleared entry %d comes with data: %w", c.Index, ErrInvalidProof)
		}
	}
	return nil
}

// Clear drops the data of entries of the own feed, keeping their tree nodes
// (leaf hash and size, and the parents), in one storage transaction. After
// it, Read of a range with a cleared entry returns ErrCleared, ReadSparse
// returns the entry's leaf instead of its data, and every proof and head
// still verifies: the length, the head and the tree do not change, and
// appends go on. Clearing an entry again, or an entry with no data, does
// nothing. Indexes must be below the head's length (else ErrOutOfRange and
// nothing is cleared).
//
// The data is deleted from the storage (the KV's value is rewritten without
// it; reclaiming the old value's disk space is the database's compaction).
// It is not deleted from peers that replicated the entry, nor from backups.
//
// Clear is a write of the log like Stage: call it from the write path that
// serializes Stage and its commit. A Clear between the two writes other
// keys than the Stage (it rewrites keys of stored entries; a Stage writes
// new keys from the stored length on), so both take effect.
func (l *Log) Clear(indexes ...uint64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	idx, err := checkClear(l.key, indexes, l.head.Length)
	if err != nil || len(idx) == 0 {
		return err
	}
	if err := l.st.Write(&Batch{Key: l.key, Clear: idx}); err != nil {
		return fmt.Errorf("clearing %d entries of %s: %w", len(idx), l.key, err)
	}
	return nil
}

// Clear drops the data of entries of a held replica, keeping their tree
// nodes, in one storage transaction: Log.Clear for a replica (same
// guarantees). Indexes must be below the stored length. The own feed is
// refused (ErrWrongFeed: Log.Clear clears it), an unknown feed is
// ErrNotFound. A forked replica can be cleared too.
//
// A range applied later never stores data for a cleared entry: an entry
// held is not rewritten, whether the range carries its data or its leaf.
func (rs *Replicas) Clear(key PublicKey, indexes ...uint64) error {
	if key == rs.self {
		return fmt.Errorf("clearing own feed %s through replicas: %w", key, ErrWrongFeed)
	}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	r, err := rs.loadLocked(key)
	if err != nil {
		return err
	}
	if !r.has {
		return fmt.Errorf("clearing entries of %s: %w", key, ErrNotFound)
	}
	idx, err := checkClear(key, indexes, r.state.Length)
	if err != nil || len(idx) == 0 {
		return err
	}
	if err := rs.st.Write(&Batch{Key: key, Clear: idx}); err != nil {
		return fmt.Errorf("clearing %d entries of %s: %w", len(idx), key, err)
	}
	return nil
}

// ReadSparse returns copies of the entries [start, end) of the own feed
// with its cleared ones: data[j] is nil for a cleared entry, whose leaf is
// in cleared (in index order).
func (l *Log) ReadSparse(start, end uint64) (data [][]byte, cleared []Cleared, err error) {
	return readSparse(l.st, l.key, start, end)
}

// ReadSparse returns copies of the entries [start, end) of a held feed
// with its cleared ones: data[j] is nil for a cleared entry, whose leaf is
// in cleared (in index order). This is what is served to peers.
func (rs *Replicas) ReadSparse(key PublicKey, start, end uint64) (data [][]byte, cleared []Cleared, err error) {
	return readSparse(rs.st, key, start, end)
}
