package feed

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/crow-sync/crow/internal/hashpack"
	"github.com/crow-sync/crow/internal/parallel"
)

// KVTxn is one transaction of the key-value database a KVStorage keeps feeds in (in the
// daemon, *store.Txn). It is used by one goroutine, only during the View or Update fn that
// received it.
type KVTxn interface {
	// Get returns a copy of key's value; ok is false if key is not set.
	Get(key []byte) (val []byte, ok bool, err error)
	// Set sets key to val, which the transaction keeps (unmodified) until it ends. When
	// the transaction cannot take more writes it fails with an error that has a method
	// TooLarge() bool reporting true.
	Set(key, val []byte) error
	// Iterate calls fn, in key order, with each key that starts with prefix and sorts at
	// or after from, and its value (both valid only during fn). An error from fn ends the
	// iteration and is returned.
	Iterate(prefix, from []byte, fn func(key, val []byte) error) error
	// IterateKeys is Iterate without the values.
	IterateKeys(prefix, from []byte, fn func(key []byte) error) error
}

// KVBatch writes many keys outside a transaction, in as many commits as it needs (a crash
// may leave any prefix of them). Set keeps val (unmodified) until Flush.
type KVBatch interface {
	Set(key, val []byte) error
	Delete(key []byte) error
	Flush() error
	// Cancel drops what is not flushed; it may be called after Flush.
	Cancel()
}

// KV is the database a KVStorage keeps feeds in: the daemon's *store.DB, with T = *store.Txn
// and B = *store.WriteBatch. Safe for concurrent use.
type KV[T KVTxn, B KVBatch] interface {
	// View runs fn in a read-only transaction.
	View(fn func(txn T) error) error
	// Update runs fn in a read-write transaction and commits it (re-running fn if the
	// commit conflicts).
	Update(ctx context.Context, fn func(txn T) error) error
	// NewWriteBatch returns an empty batch.
	NewWriteBatch() B
}

// isTooLarge reports whether err says a transaction could not take the writes.
func isTooLarge(err error) bool {
	var tl interface{ TooLarge() bool }
	return errors.As(err, &tl) && tl.TooLarge()
}

// errStop ends an iteration early (see kvReader).
var errStop = errors.New("stop")

// Key layout (all under the feed package's prefix "f/"; pk is the
// feed's raw 32-byte public key, integers are big-endian):
//
//	f/s/<pk>                    → state: 0x01 ‖ uint64(stored length) ‖ head (137 bytes)
//	f/e/<pk><uint64 c>          → chunk c's base: the records of entries [16c, 16c+n),
//	                              each as uint32(len) ‖ record (nodes completed by the
//	                              entry, then data; a cleared entry's record has the
//	                              nodes only); len's top bits are flags: the data is
//	                              packed (packedRecord), the leaf node is left out and
//	                              recomputed from the data (leaflessRecord)
//	f/e/<pk><uint64 c><uint8 o> → a part of chunk c (0 < o < 16): the records of
//	                              entries [16c+o, 16c+o+n), framed the same way
//	f/n/<pk><uint64 j>          → node j beyond the stored entries: hash (32) ‖ uint64(size)
//	f/x/<pk>                    → fork evidence (ForkEvidence encoding)
//
// A write stores its records under one key per chunk it touches: the base
// for a chunk it starts at the beginning of, a part at its offset for the
// chunk it starts inside of. So a bulk write costs one badger key per 16
// entries, and an append never rewrites what is stored (a write of one
// entry writes that entry only). A chunk's keys, in key order (base, then
// parts by offset), hold consecutive entries: every write starts at the
// stored length, so each key starts where the keys before it end. Records
// beyond the state's length (left by a crash between a split write and its
// state) are ignored, and overwritten under the same key by the next write,
// which starts at the same length. The head is written last, in the same
// transaction when the batch fits one. Clearing an entry rewrites the key
// holding it (one Set of its whole value, in one transaction with the
// others cleared when they fit one), so a key is never half cleared.
const (
	keyPrefixLen = 4 // "f/?/"
	feedKeyLen   = keyPrefixLen + 32
	entryKeyLen  = feedKeyLen + 8
	partKeyLen   = entryKeyLen + 1
	chunkEntries = 16
)

// KVStorage is the Storage of the daemon: feeds in the shared database (a KV), under keys
// starting with "f/". Safe for concurrent use.
type KVStorage struct {
	view   func(fn func(KVTxn) error) error
	update func(fn func(KVTxn) error) error
	batch  func() KVBatch
	// splitBytes is the batch size above which Write splits records over
	// several transactions (state last) instead of one.
	splitBytes int
}

// NewKVStorage keeps feeds in kv (opened and closed by the caller).
func NewKVStorage[T KVTxn, B KVBatch](kv KV[T, B]) *KVStorage {
	return &KVStorage{
		view: func(fn func(KVTxn) error) error { return kv.View(func(txn T) error { return fn(txn) }) },
		update: func(fn func(KVTxn) error) error {
			return kv.Update(context.Background(), func(txn T) error { return fn(txn) })
		},
		batch:      func() KVBatch { return kv.NewWriteBatch() },
		splitBytes: 4 << 20,
	}
}

func feedKey(kind byte, key PublicKey) []byte {
	b := make([]byte, feedKeyLen, entryKeyLen)
	b[0], b[1], b[2], b[3] = 'f', '/', kind, '/'
	copy(b[keyPrefixLen:], key[:])
	return b
}

func indexKey(kind byte, key PublicKey, i uint64) []byte {
	return binary.BigEndian.AppendUint64(feedKey(kind, key), i)
}

func batchBytes(b *Batch) (n int) {
	for _, r := range b.Records {
		n += len(r) + 4
	}
	n += (len(b.Records)/chunkEntries + 2) * (entryKeyLen + 16 + chunkEntries*(nodeWireSize*2+4))
	return n + len(b.Nodes)*(entryKeyLen+nodeWireSize+16) + len(b.Fork) + stateSize
}

// stage writes b into txn, state last.
func (s *KVStorage) stage(txn KVTxn, b *Batch) error {
	if err := s.stageData(txn.Set, txn.Iterate, b); err != nil {
		return err
	}
	return s.stageState(txn, b)
}

// chunkKey returns the key of the records of a write that starts at entry
// first: chunk first/16's base if first starts it, else its part at first%16.
func chunkKey(key PublicKey, first uint64) []byte {
	k := indexKey('e', key, first/chunkEntries)
	if o := first % chunkEntries; o != 0 {
		k = append(k, byte(o))
	}
	return k
}

// keyFirst returns the first entry of chunk key k (a key under f/e/<pk>).
func keyFirst(k []byte) (uint64, bool) {
	switch len(k) {
	case entryKeyLen:
		return binary.BigEndian.Uint64(k[feedKeyLen:]) * chunkEntries, true
	case partKeyLen:
		if o := uint64(k[entryKeyLen]); o > 0 && o < chunkEntries {
			return binary.BigEndian.Uint64(k[feedKeyLen:entryKeyLen])*chunkEntries + o, true
		}
	}
	return 0, false
}

// eachFrame calls fn with each record of the framed records v, the first
// being entry first's, up to the end of first's chunk, as stored: flags are
// its length word's (packedRecord, leaflessRecord; recordOf restores the
// record as written). It returns how many there were; records cut short end
// them (a crash's leftovers).
func eachFrame(v []byte, first uint64, fn func(i uint64, rec []byte, flags uint32) error) (uint64, error) {
	i, o := first, 0
	for limit := (first/chunkEntries + 1) * chunkEntries; i < limit; i++ {
		if len(v)-o < 4 {
			break
		}
		w := binary.BigEndian.Uint32(v[o:])
		l := int(w &^ recordFlags)
		if len(v)-o-4 < l {
			break
		}
		if err := fn(i, v[o+4:o+4+l], w&recordFlags); err != nil {
			return i - first, err
		}
		o += 4 + l
	}
	return i - first, nil
}

// recordOf returns stored record rec of entry i as it was written: rec
// itself, or a new record restored from its flags (see unpackRecord).
func recordOf(i uint64, rec []byte, flags uint32) ([]byte, error) {
	if flags == 0 {
		return rec, nil
	}
	return unpackRecord(make([]byte, 0, len(rec)+nodeWireSize+256), nil, i, rec, flags)
}

// unpackRecord appends to b stored record rec of entry i as it was written:
// its leaf node recomputed from the data when leafless (with x, or a new
// hasher if nil), its data unpacked when packed.
func unpackRecord(b []byte, x *hasher, i uint64, rec []byte, flags uint32) ([]byte, error) {
	h, stored := recordHeader(i), storedHeader(i, flags)
	if len(rec) < stored || flags&leaflessRecord != 0 && len(rec) == stored {
		return nil, fmt.Errorf("record %d: %d bytes stored: %w", i, len(rec), ErrCorrupt)
	}
	at := len(b)
	if flags&leaflessRecord != 0 {
		b = append(b, make([]byte, nodeWireSize)...) // the leaf, set below
	}
	b, err := appendData(append(b, rec[:stored]...), i, rec[stored:], flags)
	if err != nil {
		return nil, err
	}
	if flags&leaflessRecord != 0 {
		if x == nil {
			x = newHasher()
		}
		data := b[at+h:]
		leaf := Node{Hash: x.leaf(data), Size: uint64(len(data))}
		putNode(b[at:], &leaf)
	}
	return b, nil
}

// storedHeader is how many bytes of entry i's record header a stored record
// with flags holds: all of it, or all but the leaf when leafless.
func storedHeader(i uint64, flags uint32) int {
	if flags&leaflessRecord != 0 {
		return recordHeader(i) - nodeWireSize
	}
	return recordHeader(i)
}

// appendData appends stored data d of entry i's record to b, unpacked when the
// record is packed.
func appendData(b []byte, i uint64, d []byte, flags uint32) ([]byte, error) {
	if flags&packedRecord == 0 {
		return append(b, d...), nil
	}
	b, ok := hashpack.AppendUnpacked(b, d)
	if !ok {
		return nil, fmt.Errorf("record %d: malformed packed data: %w", i, ErrCorrupt)
	}
	return b, nil
}

// The flags of a stored record, in the top bits of its length word. Records
// are under 2²⁴ bytes (wire frames are at most 8 MiB), so both bits are
// clear in every length word written before they existed.
const (
	// packedRecord says the record's data is packed (internal/hashpack): the
	// hex hashes of the JSON change records crow's feeds carry, 34 bytes
	// each instead of 66–68 that badger's Snappy cannot shorten.
	packedRecord = 1 << 31
	// leaflessRecord says the record is stored without its first node, the
	// entry's leaf, which is H(0x00 ‖ size ‖ data) of the data that follows
	// and is recomputed from it on reads (40 bytes an entry that no
	// compression shortens). Only records with data are stored so, and only
	// when their leaf is that hash: a cleared record keeps its leaf.
	leaflessRecord = 1 << 30
	recordFlags    = packedRecord | leaflessRecord
)

// packRecords returns recs, the records of entries [first, …), framed as they are
// stored under one chunk key: uint32BE(len|flags) ‖ record, each record with data
// without its leaf node (leaflessRecord) and with its data packed when hashpack
// shortens it (packedRecord).
func packRecords(recs [][]byte, first uint64) []byte {
	n := 0
	for _, r := range recs {
		n += 4 + len(r)
	}
	out := make([]byte, 0, n)
	var scratch []byte
	x := newHasher()
	for j, rec := range recs {
		i := first + uint64(j)
		h := recordHeader(i)
		if len(rec) <= h {
			out = binary.BigEndian.AppendUint32(out, uint32(len(rec)))
			out = append(out, rec...)
			continue
		}
		head, data := rec[:h], rec[h:]
		var flags uint32
		if leaf, err := recordNode(i, rec, 0); err == nil && leaf.Size == uint64(len(data)) && leaf.Hash == x.leaf(data) {
			head, flags = head[nodeWireSize:], leaflessRecord
		}
		scratch = hashpack.Append(scratch[:0], data)
		if len(scratch) < len(data) {
			data, flags = scratch, flags|packedRecord
		}
		out = binary.BigEndian.AppendUint32(out, uint32(len(head)+len(data))|flags)
		out = append(append(out, head...), data...)
	}
	return out
}

// minParallelChunks is the fewest chunks (of up to 16 entries) per core worth packing
// beside the caller's goroutine.
const minParallelChunks = 8

func (s *KVStorage) stageData(set func(k, v []byte) error, iter iterFunc, b *Batch) error {
	if len(b.Records) > 0 {
		// One key per chunk touched, holding the records [from, i]; nothing
		// stored before b.Start is read or rewritten. The chunks are found, then
		// each packed (on every core when there are many: a bulk write's, a
		// replica's range), then written in order. The KV keeps the values until
		// commit; b's records are never modified.
		type chunk struct {
			j, k int    // records [j, k) of b: entries b.Start+j …
			v    []byte // packed
		}
		var chunks []chunk
		end := b.Start + uint64(len(b.Records))
		j0 := 0
		for j := range b.Records {
			if i := b.Start + uint64(j); (i+1)%chunkEntries == 0 || i+1 == end {
				chunks = append(chunks, chunk{j: j0, k: j + 1})
				j0 = j + 1
			}
		}
		parallel.Range(len(chunks), minParallelChunks, func(lo, hi int) {
			for c := lo; c < hi; c++ {
				chunks[c].v = packRecords(b.Records[chunks[c].j:chunks[c].k], b.Start+uint64(chunks[c].j))
			}
		})
		for _, c := range chunks {
			from := b.Start + uint64(c.j)
			if err := set(chunkKey(b.Key, from), c.v); err != nil {
				return fmt.Errorf("writing entries of %s at %d: %w", b.Key, from, err)
			}
		}
	}
	for i := range b.Nodes {
		v := make([]byte, nodeWireSize)
		putNode(v, &b.Nodes[i])
		if err := set(indexKey('n', b.Key, b.Nodes[i].Index), v); err != nil {
			return fmt.Errorf("writing node of %s: %w", b.Key, err)
		}
	}
	if b.Fork != nil {
		if err := set(feedKey('x', b.Key), b.Fork); err != nil {
			return fmt.Errorf("writing fork evidence of %s: %w", b.Key, err)
		}
	}
	return s.stageClear(set, iter, b)
}

// iterFunc is KVTxn.Iterate, of the writing transaction or of a read.
type iterFunc func(prefix, from []byte, fn func(key, val []byte) error) error

// stageClear rewrites each key holding an entry of b.Clear without that
// entry's data (a key whose entries are all cleared already is left).
func (s *KVStorage) stageClear(set func(k, v []byte) error, iter iterFunc, b *Batch) error {
	for j := 0; j < len(b.Clear); {
		c := b.Clear[j] / chunkEntries
		next := c * chunkEntries // where the chunk's next key must start
		err := iter(indexKey('e', b.Key, c), nil, func(key, v []byte) error {
			first, ok := keyFirst(key)
			if !ok || first != next {
				return errStop
			}
			n, _ := eachFrame(v, first, func(uint64, []byte, uint32) error { return nil })
			next = first + n
			k := j
			for k < len(b.Clear) && b.Clear[k] < next {
				k++
			}
			if k > j {
				nv, changed, err := clearRecords(v, first, b.Clear[j:k])
				if err != nil {
					return err
				}
				if changed {
					if err := set(append([]byte(nil), key...), nv); err != nil {
						return err
					}
				}
				j = k
			}
			if j == len(b.Clear) || b.Clear[j]/chunkEntries != c {
				return errStop
			}
			return nil
		})
		if err != nil && !errors.Is(err, errStop) {
			return fmt.Errorf("clearing entries of %s in chunk %d: %w", b.Key, c, err)
		}
		if j < len(b.Clear) && b.Clear[j]/chunkEntries == c {
			return fmt.Errorf("clearing entry %d of %s: not stored: %w", b.Clear[j], b.Key, ErrCorrupt)
		}
	}
	return nil
}

func (s *KVStorage) stageState(txn KVTxn, b *Batch) error {
	if b.State == nil {
		return nil
	}
	if err := txn.Set(feedKey('s', b.Key), b.State.marshal()); err != nil {
		return fmt.Errorf("writing state of %s: %w", b.Key, err)
	}
	return nil
}

// Write implements Storage. A batch larger than a few MiB, or too large
// for one transaction, is written as records and nodes through a KVBatch
// (several transactions), then the state in a final transaction; a crash
// in between leaves the old state, which does not reach the new records.
func (s *KVStorage) Write(b *Batch) error {
	if batchBytes(b) <= s.splitBytes {
		err := s.update(func(txn KVTxn) error { return s.stage(txn, b) })
		if !isTooLarge(err) {
			return err
		}
	}
	wb := s.batch()
	defer wb.Cancel()
	iter := func(prefix, from []byte, fn func(k, v []byte) error) error {
		return s.view(func(txn KVTxn) error { return txn.Iterate(prefix, from, fn) })
	}
	if err := s.stageData(wb.Set, iter, b); err != nil {
		return err
	}
	if err := wb.Flush(); err != nil {
		return fmt.Errorf("writing entries of %s: %w", b.Key, err)
	}
	return s.update(func(txn KVTxn) error { return s.stageState(txn, b) })
}

// Delete implements Storage.
func (s *KVStorage) Delete(key PublicKey) error {
	wb := s.batch()
	defer wb.Cancel()
	err := s.view(func(txn KVTxn) error {
		for _, kind := range []byte{'e', 'n', 's', 'x'} {
			err := txn.IterateKeys(feedKey(kind, key), nil, func(k []byte) error {
				return wb.Delete(append([]byte(nil), k...))
			})
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("deleting feed %s: %w", key, err)
	}
	return wb.Flush()
}

// View implements Storage with one read transaction.
func (s *KVStorage) View(fn func(Reader) error) error {
	return s.view(func(txn KVTxn) error { return fn(kvReader{txn}) })
}

type kvReader struct{ txn KVTxn }

func (r kvReader) get(k []byte) ([]byte, bool, error) { return r.txn.Get(k) }

func (r kvReader) State(key PublicKey) (State, bool, error) {
	v, ok, err := r.get(feedKey('s', key))
	if err != nil || !ok {
		return State{}, false, err
	}
	var st State
	if err := st.unmarshal(v); err != nil {
		return State{}, false, fmt.Errorf("feed %s: %w", key, err)
	}
	return st, true, nil
}

func (r kvReader) Record(key PublicKey, i uint64) ([]byte, error) {
	// Most records are in their chunk's base: one read. Otherwise, or if
	// the chunk has parts, through Records.
	v, ok, err := r.get(indexKey('e', key, i/chunkEntries))
	if err != nil {
		return nil, err
	}
	var out []byte
	if ok {
		_, err := eachFrame(v, i-i%chunkEntries, func(j uint64, rec []byte, flags uint32) error {
			if j != i {
				return nil
			}
			var err error
			if out, err = recordOf(j, rec, flags); err != nil {
				return err
			}
			return errStop
		})
		if out != nil && errors.Is(err, errStop) {
			return out, nil
		}
	}
	err = r.Records(key, i, i+1, func(_ uint64, rec []byte) error {
		out = append([]byte(nil), rec...)
		return nil
	})
	return out, err
}

func (r kvReader) Records(key PublicKey, start, end uint64, fn func(i uint64, rec []byte) error) error {
	return r.records(key, start, end, false, func(i uint64, rec []byte, _ bool) error { return fn(i, rec) })
}

// eachEntry implements entryReader: a leafless record gives its data alone,
// its leaf not recomputed (which a range read of entries, say one served to a
// peer, does not need: a fifth of a home's CPU serving a full sync).
func (r kvReader) eachEntry(key PublicKey, start, end uint64, fn func(i uint64, b []byte, data bool) error) error {
	return r.records(key, start, end, true, fn)
}

// records calls fn for the records of entries [start, end) as they were
// written, or, when dataOnly, for a leafless record its data (data true).
func (r kvReader) records(key PublicKey, start, end uint64, dataOnly bool, fn func(i uint64, b []byte, data bool) error) error {
	if start >= end {
		return nil
	}
	want := start
	next := start - start%chunkEntries // where the next key must start
	var scratch []byte                 // stored records restored, one at a time
	var x *hasher                      // for leafless records
	err := r.txn.Iterate(feedKey('e', key), indexKey('e', key, start/chunkEntries), func(k, v []byte) error {
		first, ok := keyFirst(k)
		if want >= end || !ok || first != next {
			return errStop // done, or a gap: the entries from want are missing
		}
		n, err := eachFrame(v, first, func(i uint64, rec []byte, flags uint32) error {
			if i < want || i >= end {
				return nil
			}
			want++
			if dataOnly && flags&leaflessRecord != 0 {
				d, err := leaflessData(scratch[:0], i, rec, flags)
				if err != nil {
					return err
				}
				if flags&packedRecord != 0 {
					scratch = d // else d is inside v, never to be appended to
				}
				return fn(i, d, true)
			}
			if flags != 0 {
				if x == nil && flags&leaflessRecord != 0 {
					x = newHasher()
				}
				var err error
				if scratch, err = unpackRecord(scratch[:0], x, i, rec, flags); err != nil {
					return err
				}
				rec = scratch
			}
			return fn(i, rec, false)
		})
		next = first + n
		return err
	})
	if err != nil && !errors.Is(err, errStop) {
		return err
	}
	if want != end {
		return fmt.Errorf("record %d of %s missing: %w", want, key, ErrCorrupt)
	}
	return nil
}

// leaflessData returns the data of stored leafless record rec of entry i,
// unpacked into b when packed, else a subslice of rec.
func leaflessData(b []byte, i uint64, rec []byte, flags uint32) ([]byte, error) {
	stored := storedHeader(i, flags)
	if len(rec) <= stored {
		return nil, fmt.Errorf("record %d: %d bytes stored: %w", i, len(rec), ErrCorrupt)
	}
	if flags&packedRecord == 0 {
		return rec[stored:], nil
	}
	return appendData(b, i, rec[stored:], flags)
}

func (r kvReader) Node(key PublicKey, index uint64) (Node, bool, error) {
	v, ok, err := r.get(indexKey('n', key, index))
	if err != nil || !ok {
		return Node{}, false, err
	}
	if len(v) != nodeWireSize {
		return Node{}, false, fmt.Errorf("node %d of %s: %w", index, key, ErrCorrupt)
	}
	n := Node{Index: index, Size: binary.BigEndian.Uint64(v[HashSize:])}
	copy(n.Hash[:], v)
	return n, true, nil
}

func (r kvReader) Fork(key PublicKey) ([]byte, bool, error) {
	return r.get(feedKey('x', key))
}

func (r kvReader) Feeds(fn func(PublicKey, State) error) error {
	return r.txn.Iterate([]byte("f/s/"), nil, func(k, v []byte) error {
		if len(k) != feedKeyLen {
			return nil
		}
		var key PublicKey
		copy(key[:], k[keyPrefixLen:])
		var st State
		if err := st.unmarshal(v); err != nil {
			return fmt.Errorf("feed %s: %w", key, err)
		}
		return fn(key, st)
	})
}
