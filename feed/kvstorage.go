package feed

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
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
//	f/s/<pk>            → state: 0x01 ‖ uint64(stored length) ‖ head (137 bytes)
//	f/e/<pk><uint64 k>  → chunk k: the records of entries [16k, 16k+16), each
//	                      as uint32(len) ‖ record (nodes completed by the entry, then data;
//	                      a cleared entry's record has the nodes only)
//	f/n/<pk><uint64 j>  → node j beyond the stored entries: hash (32) ‖ uint64(size)
//	f/x/<pk>            → fork evidence (ForkEvidence encoding)
//
// Entries are packed 16 to a key (a write rewrites the partial chunk at the
// end of the feed), so a bulk write costs one badger key per 16 entries;
// the head is written last, in the same transaction when the batch fits one.
// Bytes of a chunk beyond the state's length (left by a crash between a
// split write and its state) are ignored and overwritten by the next write.
// Clearing an entry rewrites its chunk (one Set of the whole value, in one
// transaction with the other chunks cleared when they fit one), so a chunk
// is never half cleared.
const (
	keyPrefixLen = 4 // "f/?/"
	feedKeyLen   = keyPrefixLen + 32
	entryKeyLen  = feedKeyLen + 8
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
	if err := s.stageData(txn.Set, txn.Get, b); err != nil {
		return err
	}
	return s.stageState(txn, b)
}

// frameRecords returns recs framed as in Batch.Frames.
func frameRecords(recs [][]byte) []byte {
	n := 0
	for _, r := range recs {
		n += 4 + len(r)
	}
	out := make([]byte, 0, n)
	for _, r := range recs {
		out = binary.BigEndian.AppendUint32(out, uint32(len(r)))
		out = append(out, r...)
	}
	return out
}

// chunkPrefix returns the first n records of chunk value v (n ≤ stored).
func chunkPrefix(v []byte, n int) ([]byte, error) {
	o := 0
	for j := 0; j < n; j++ {
		if len(v)-o < 4 {
			return nil, ErrCorrupt
		}
		l := int(binary.BigEndian.Uint32(v[o:]))
		if len(v)-o-4 < l {
			return nil, ErrCorrupt
		}
		o += 4 + l
	}
	return v[:o], nil
}

func (s *KVStorage) stageData(set func(k, v []byte) error, get func(k []byte) ([]byte, bool, error), b *Batch) error {
	if len(b.Records) > 0 {
		end := b.Start + uint64(len(b.Records))
		first, last := b.Start/chunkEntries, (end-1)/chunkEntries
		// Records already in the first chunk, before b.Start, are kept.
		prefix := b.Prior
		if keep := int(b.Start % chunkEntries); keep > 0 && prefix == nil {
			v, ok, err := get(indexKey('e', b.Key, first))
			if err == nil && !ok {
				err = ErrCorrupt
			}
			if err == nil {
				prefix, err = chunkPrefix(v, keep)
			}
			if err != nil {
				return fmt.Errorf("reading chunk %d of %s: %w", first, b.Key, err)
			}
		}
		frames := b.Frames
		if frames == nil {
			frames = frameRecords(b.Records)
		}
		// Chunk c holds the frames of the records [c*16, c*16+16); the
		// first one keeps the stored records before b.Start. The KV keeps
		// the values until commit; frames is never modified.
		proto := feedKey('e', b.Key)
		keys := make([]byte, (last-first+1)*entryKeyLen)
		from, to := 0, 0
		for j, rec := range b.Records {
			to += 4 + len(rec)
			i := b.Start + uint64(j)
			if (i+1)%chunkEntries != 0 && i+1 != end {
				continue
			}
			c := i / chunkEntries
			k := keys[(c-first)*entryKeyLen : (c-first+1)*entryKeyLen : (c-first+1)*entryKeyLen]
			copy(k, proto)
			binary.BigEndian.PutUint64(k[feedKeyLen:], c)
			v := frames[from:to:to]
			if c == first && len(prefix) > 0 {
				v = append(append(make([]byte, 0, len(prefix)+len(v)), prefix...), v...)
			}
			if err := set(k, v); err != nil {
				return fmt.Errorf("writing entries of %s at %d: %w", b.Key, i, err)
			}
			if end%chunkEntries != 0 && c == last {
				b.lastChunk = v
			}
			from = to
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
	return s.stageClear(set, get, b)
}

// stageClear rewrites each chunk holding an entry of b.Clear without that
// entry's data (a chunk whose entries are all cleared already is left).
func (s *KVStorage) stageClear(set func(k, v []byte) error, get func(k []byte) ([]byte, bool, error), b *Batch) error {
	for j := 0; j < len(b.Clear); {
		c := b.Clear[j] / chunkEntries
		k := j
		for k < len(b.Clear) && b.Clear[k]/chunkEntries == c {
			k++
		}
		key := indexKey('e', b.Key, c)
		v, ok, err := get(key)
		if err == nil && !ok {
			err = ErrCorrupt
		}
		var changed bool
		if err == nil {
			v, changed, err = clearRecords(v, c*chunkEntries, b.Clear[j:k])
		}
		if err == nil && changed {
			err = set(key, v)
		}
		if err != nil {
			return fmt.Errorf("clearing entries of %s in chunk %d: %w", b.Key, c, err)
		}
		j = k
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
	get := func(k []byte) (v []byte, ok bool, err error) {
		err = s.view(func(txn KVTxn) error { v, ok, err = txn.Get(k); return err })
		return v, ok, err
	}
	if err := s.stageData(wb.Set, get, b); err != nil {
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
	v, ok, err := r.get(indexKey('e', key, i/chunkEntries))
	if err != nil {
		return nil, err
	}
	if ok {
		if p, err := chunkPrefix(v, int(i%chunkEntries)); err == nil {
			if rest := v[len(p):]; len(rest) >= 4 {
				if l := int(binary.BigEndian.Uint32(rest)); len(rest)-4 >= l {
					return rest[4 : 4+l], nil
				}
			}
		}
	}
	return nil, fmt.Errorf("record %d of %s missing: %w", i, key, ErrCorrupt)
}

func (r kvReader) Records(key PublicKey, start, end uint64, fn func(uint64, []byte) error) error {
	if start >= end {
		return nil
	}
	want := start
	err := r.txn.Iterate(feedKey('e', key), indexKey('e', key, start/chunkEntries), func(k, v []byte) error {
		c := want / chunkEntries
		if want >= end || len(k) != entryKeyLen || binary.BigEndian.Uint64(k[feedKeyLen:]) != c {
			return errStop
		}
		for i, o := c*chunkEntries, 0; i < (c+1)*chunkEntries && want < end; i++ {
			if len(v)-o < 4 {
				return nil
			}
			l := int(binary.BigEndian.Uint32(v[o:]))
			if len(v)-o-4 < l {
				return nil
			}
			if i == want {
				if err := fn(i, v[o+4:o+4+l]); err != nil {
					return err
				}
				want++
			}
			o += 4 + l
		}
		return nil
	})
	if err != nil && !errors.Is(err, errStop) {
		return err
	}
	if want != end {
		return fmt.Errorf("record %d of %s missing: %w", want, key, ErrCorrupt)
	}
	return nil
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
