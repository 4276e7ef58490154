package anchor

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"weak"

	"github.com/crow-sync/crow/memory"
	"github.com/crow-sync/crow/store"
)

// The batch index finds the root row that commits a version (batch.go).
//
// Why a local index and not a row id the reader could compute: a state
// root commits versions of many projects, so no row id derived from
// (project, version) names it; memory roots cover number ranges that
// usually follow each other, but a root dropped by a reorg whose memories
// changed is anchored again later, beside newer numbers, so ranges can
// overlap. The index is derived from the root rows themselves, in memory,
// per store: nothing is written for it, nothing replicates, and a store
// written by any version of crow (or restored, or replicated from home)
// indexes the same way. Root rows are few (one per up to 10,000 state
// versions or one AnchorMemories transaction, ~300 memories), so building
// it reads little; a lookup that misses refreshes it when the store has
// changed since (Txn.QueueSeq: every row written, locally or applied from
// a peer, advances it), reading only the root rows written since (from the
// store's change queue, while it holds them), and a hit is always checked
// against the root row it names (a root deleted after a reorg makes it
// rebuild).
//
// Trees are rebuilt from Batch on demand (about two keccak hashes per
// leaf); the most recently used are kept, up to treeCacheLeaves leaves in
// all (and always the last one used), with the root row's bytes they were
// parsed from: a row whose bytes did not change is not decoded again.

const treeCacheLeaves = 16 << 10 // ~4 MiB: 64k leaves measured 15.4 MiB (~240 B a leaf, tree and indexes)

// cachedRoot is a parsed root row and its tree.
type cachedRoot struct {
	seq  uint64 // the store's queue seq before it was read: while unchanged, so is the row
	data []byte // the row's data it was parsed from
	rr   RootRecord
	tree *batchTree
}

// batchIndex is one store's index.
type batchIndex struct {
	mu       sync.Mutex             // guards every field below
	seq      uint64                 // the store's queue seq at the last refresh
	built    bool                   // refreshed at least once
	roots    map[string]int32       // root row id → position in rootIDs (live at the last refresh)
	rootIDs  []string               //
	items    map[string]int32       // state record id → root (position in rootIDs)
	numbers  map[uint64]int32       // memory number → root
	projects map[string]string      // project → its project id (0x-hex), from its newest indexed version
	versions map[string]uint64      // project → that version
	trees    map[string]*cachedRoot // root row id → its parsed row and tree
	treeLRU  []string               // trees' keys, least recently used first
	cached   int                    // leaf inputs of the trees in trees
	rebuilds int                    // full rebuilds (tests)
}

var (
	indexesMu sync.Mutex
	indexes   = map[weak.Pointer[store.DB]]*batchIndex{} // guarded by indexesMu
)

// indexOf is db's index, made on first use and dropped when db is
// collected.
func indexOf(db *store.DB) *batchIndex {
	key := weak.Make(db)
	indexesMu.Lock()
	defer indexesMu.Unlock()
	if ix, ok := indexes[key]; ok {
		return ix
	}
	ix := &batchIndex{}
	indexes[key] = ix
	runtime.AddCleanup(db, func(k weak.Pointer[store.DB]) {
		indexesMu.Lock()
		delete(indexes, k)
		indexesMu.Unlock()
	}, key)
	return ix
}

// maxQueueScan bounds how many change-queue entries a refresh reads to
// find the root rows written since the last one; with more, it rereads
// every root row instead.
const maxQueueScan = 20_000

// refreshLocked brings the index up to the store's current sequence: it
// reads the root rows written since the last refresh, found in the store's
// change queue (q/, one entry per row written, locally or applied), or, if
// the queue no longer holds them all (pruned) or force is set, every root
// row. A root row deleted since (a reorg dropped it and its memories
// changed) makes it rebuild.
func (ix *batchIndex) refreshLocked(db *store.DB, force bool) error {
	seq, err := storeSeq(db)
	if err != nil {
		return err
	}
	if ix.built && seq == ix.seq && !force {
		return nil
	}
	if !ix.built || force || seq < ix.seq {
		return ix.rebuildLocked(db, seq)
	}
	ids, complete, err := changedRoots(db, ix.seq, seq)
	if err != nil {
		return err
	}
	if !complete {
		return ix.rebuildLocked(db, seq)
	}
	for _, id := range ids {
		r, err := db.Get(store.TableAnchors, id)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("reading %s: %w", id, err)
		}
		_, indexed := ix.roots[id]
		if err != nil || r.Deleted {
			if indexed {
				return ix.rebuildLocked(db, seq)
			}
			continue
		}
		if indexed {
			continue // a root's Batch never changes: its status did
		}
		var rr RootRecord
		if json.Unmarshal(r.Data, &rr) == nil && rr.Kind == RecordRoot && len(rr.Batch) > 0 {
			ix.addLocked(id, rr)
		}
	}
	ix.seq = seq
	return nil
}

// errEnough ends a queue scan.
var errEnough = errors.New("enough")

// changedRoots is the root row ids written at sequences in (from, to],
// from the store's change queue; complete is false when the queue does not
// hold every one of those entries (pruned since) or holds too many to read.
func changedRoots(db *store.DB, from, to uint64) (ids []string, complete bool, err error) {
	if to-from > maxQueueScan {
		return nil, false, nil
	}
	var n uint64
	next := from + 1
	err = db.View(func(txn *store.Txn) error {
		return txn.ScanQueue(from+1, maxQueueScan, func(e store.QueueEntry) error {
			if e.Seq > to {
				return errEnough
			}
			if e.Seq != next {
				return errEnough // a gap: pruned
			}
			next++
			n++
			if e.Table == store.TableAnchors && strings.HasPrefix(e.RowID, "root/") {
				ids = append(ids, e.RowID)
			}
			return nil
		})
	})
	if err != nil && !errors.Is(err, errEnough) {
		return nil, false, fmt.Errorf("reading the change queue: %w", err)
	}
	return ids, n == to-from, nil
}

// rebuildLocked indexes every root row anew, at the store's sequence seq
// (read before the rows).
func (ix *batchIndex) rebuildLocked(db *store.DB, seq uint64) error {
	ix.roots, ix.rootIDs = map[string]int32{}, nil
	ix.items, ix.numbers = map[string]int32{}, map[uint64]int32{}
	ix.projects, ix.versions = map[string]string{}, map[string]uint64{}
	ix.trees, ix.treeLRU, ix.cached = map[string]*cachedRoot{}, nil, 0
	ix.built = false
	ix.rebuilds++
	err := scanAnchors(db, "root/", func(r *store.Row) error {
		var rr RootRecord
		if json.Unmarshal(r.Data, &rr) != nil || rr.Kind != RecordRoot || len(rr.Batch) == 0 {
			return nil // written before issue 16 (Items), or not a root
		}
		ix.addLocked(r.RowID, rr)
		return nil
	})
	if err != nil {
		return err
	}
	ix.seq, ix.built = seq, true
	return nil
}

// addLocked indexes the versions of batch row rowID.
func (ix *batchIndex) addLocked(rowID string, rr RootRecord) {
	pos := int32(len(ix.rootIDs))
	ix.roots[rowID], ix.rootIDs = pos, append(ix.rootIDs, rowID)
	switch rr.Leaves {
	case RecordState:
		ls, err := decodeStateBatch(rr.Batch)
		if err != nil {
			return // a corrupt row: its versions read as pending
		}
		for _, l := range ls {
			ix.items[StateRecordID(l.Project, l.Version)] = pos
			if v, ok := ix.versions[l.Project]; !ok || l.Version >= v {
				ix.projects[l.Project], ix.versions[l.Project] = HashHex(l.ProjectID), l.Version
			}
		}
	case RecordMemory:
		ms, err := decodeMemoryBatch(rr.Batch)
		if err != nil {
			return
		}
		for _, m := range ms {
			ix.numbers[m.Number] = pos
		}
	}
}

// rootOfLocked is the root row id indexed for record id (a state record id
// or, with n > 0, memory number n).
func (ix *batchIndex) rootOfLocked(id string, n uint64) (string, bool) {
	var pos int32
	var ok bool
	if n > 0 {
		pos, ok = ix.numbers[n]
	} else {
		pos, ok = ix.items[id]
	}
	if !ok {
		return "", false
	}
	return ix.rootIDs[pos], true
}

// rootLocked reads root row rowID and its tree, from the cache while the
// store has not changed, or the row's bytes have not (ok false: no such
// live row with a batch). Reading the row is most of a lookup's cost (the
// store checks its JSON), so a quiet store is not read again.
func (ix *batchIndex) rootLocked(db *store.DB, rowID string) (*cachedRoot, bool, error) {
	seq, err := storeSeq(db)
	if err != nil {
		return nil, false, err
	}
	if c, ok := ix.trees[rowID]; ok && c.seq == seq {
		ix.touchLocked(rowID)
		return c, true, nil
	}
	r, err := db.Get(store.TableAnchors, rowID)
	if errors.Is(err, store.ErrNotFound) || (err == nil && r.Deleted) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	if c, ok := ix.trees[rowID]; ok && bytes.Equal(c.data, r.Data) {
		c.seq = seq
		ix.touchLocked(rowID)
		return c, true, nil
	}
	var rr RootRecord
	if err := json.Unmarshal(r.Data, &rr); err != nil {
		return nil, false, fmt.Errorf("decoding anchor record %s: %w", rowID, err)
	}
	if len(rr.Batch) == 0 {
		return nil, false, nil
	}
	var tree *batchTree
	if c, ok := ix.trees[rowID]; ok {
		tree = c.tree // the status changed, not the batch
	} else if tree, err = buildBatchTree(rr); err != nil {
		return nil, false, fmt.Errorf("reading %s: %w", rowID, err)
	}
	c := &cachedRoot{seq: seq, data: r.Data, rr: rr, tree: tree}
	if old, ok := ix.trees[rowID]; ok {
		ix.cached -= old.tree.size()
	}
	ix.trees[rowID] = c
	ix.cached += tree.size()
	ix.touchLocked(rowID)
	for ix.cached > treeCacheLeaves && len(ix.treeLRU) > 1 {
		old := ix.treeLRU[0]
		ix.treeLRU = ix.treeLRU[1:]
		ix.cached -= ix.trees[old].tree.size()
		delete(ix.trees, old)
	}
	return c, true, nil
}

// touchLocked makes rowID the most recently used tree.
func (ix *batchIndex) touchLocked(rowID string) {
	if n := len(ix.treeLRU); n > 0 && ix.treeLRU[n-1] == rowID {
		return
	}
	if i := slices.Index(ix.treeLRU, rowID); i >= 0 {
		ix.treeLRU = slices.Delete(ix.treeLRU, i, i+1)
	}
	ix.treeLRU = append(ix.treeLRU, rowID)
}

// lookup finds the Record of id (n > 0: memory number n) under a batch
// row: ok false when no root row commits it (pending). A hit is checked
// against the root row it names, so it needs no refresh; a miss refreshes
// the index if the store changed since (an index refreshed at the store's
// current sequence is exact); a hit whose row is gone (deleted after a
// reorg) refreshes, then rebuilds.
func (ix *batchIndex) lookup(db *store.DB, id string, n uint64) (Record, bool, error) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	for attempt := 0; attempt < 3; attempt++ {
		if attempt > 0 || !ix.built {
			if err := ix.refreshLocked(db, attempt == 2); err != nil {
				return Record{}, false, err
			}
		}
		rowID, ok := ix.rootOfLocked(id, n)
		if !ok {
			if attempt == 0 {
				continue
			}
			return Record{}, false, nil
		}
		c, found, err := ix.rootLocked(db, rowID)
		if err != nil {
			return Record{}, false, err
		}
		if !found {
			continue
		}
		rec, ok := c.tree.record(id, n, c.rr)
		return rec, ok, nil
	}
	return Record{}, false, nil
}

// StateRecord returns the anchoring Record of project's version: its own
// row (written before issue 16) or the one derived from the batch row of
// the root that commits it. ok is false when there is neither (pending).
func StateRecord(db *store.DB, project string, version uint64) (Record, bool, error) {
	return itemRecord(db, StateRecordID(project, version), 0)
}

// itemRecord is id's per-version row if it has a root, else the record
// derived from the batch row that commits it, else the per-version row
// from before roots (anchored again under a root since: the batch row
// wins), else none. A memory record derived from a batch takes its
// MemoryID from the version's memory_versions row (batches hold numbers).
func itemRecord(db *store.DB, id string, n uint64) (Record, bool, error) {
	rec, ok, err := readItemRow(db, id)
	if err != nil || (ok && rec.Root != "") {
		return rec, ok, err
	}
	brec, bok, err := indexOf(db).lookup(db, id, n)
	if err != nil {
		return brec, bok, err
	}
	if !bok {
		return rec, ok, nil
	}
	if n > 0 {
		r, err := db.Get(store.TableMemoryVersions, memory.VersionRowID(n))
		var v struct {
			MemoryID string `json:"memory_id"`
		}
		if err == nil && json.Unmarshal(r.Data, &v) == nil {
			brec.MemoryID = v.MemoryID
		}
	}
	return brec, true, nil
}

// MemoryRecord returns the anchoring Record of memory version number n:
// its own row "memory/<n>" (written before issue 16) or the one derived
// from its root's batch row. Records by memory id, from before memories
// had versions (MemoryRecordID), are the caller's to read.
func MemoryRecord(db *store.DB, n uint64) (Record, bool, error) {
	return itemRecord(db, VersionRecordID(n), n)
}

// batchProjectID is the project id of project's newest version under a
// batch row (ok false: none).
func batchProjectID(db *store.DB, project string) (string, bool, error) {
	ix := indexOf(db)
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if pid, ok := ix.projects[project]; ok && ix.built {
		return pid, true, nil
	}
	if err := ix.refreshLocked(db, false); err != nil {
		return "", false, err
	}
	pid, ok := ix.projects[project]
	return pid, ok, nil
}

// errNoBatch: a root row without Batch.
var errNoBatch = errors.New("anchor: root record has no batch")

// batchIDs is the record ids rr commits (Batch, or Items for a row written
// before issue 16).
func batchIDs(rr RootRecord) ([]string, error) {
	if len(rr.Batch) == 0 {
		if len(rr.Items) == 0 {
			return nil, errNoBatch
		}
		return rr.Items, nil
	}
	ids, err := batchItemIDs(rr)
	if err != nil {
		return nil, fmt.Errorf("root %s: %w", strings.ToLower(rr.Root), err)
	}
	return ids, nil
}

// storeSeq is the store's queue seq: every row written advances it.
func storeSeq(db *store.DB) (uint64, error) {
	var seq uint64
	if err := db.View(func(txn *store.Txn) (err error) { seq, err = txn.QueueSeq(); return err }); err != nil {
		return 0, fmt.Errorf("reading the store's sequence: %w", err)
	}
	return seq, nil
}
