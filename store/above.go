package store

import (
	"bytes"
	"slices"

	"github.com/dgraph-io/badger/v4"
)

// Known-absent reads. A replica's first sync writes rows (and the applier's per-row state)
// whose ids sort above every key the store holds under their prefix: ULIDs made later than
// anything held. Each one is read first (is there a live version to compare with?), and
// each read misses, through every memtable and the bloom filter of every level. A
// read-write transaction that expects such keys (ExpectNewKeys) finds, once per prefix, the
// highest key held under it and answers a read of any key above that as absent without
// looking it up; it still marks the key read, so a transaction that writes the key after
// this one began conflicts with it as if it had been read.

// aboveBounds is, per prefix looked up, the highest key under it in the transaction: its
// snapshot's, raised by the keys the transaction wrote since.
type aboveBounds struct {
	prefixes [][]byte
	highest  [][]byte // highest[i] for prefixes[i]; nil: no key under it
	answered int      // reads answered without a lookup (tests)
}

// ExpectNewKeys turns on known-absent reads for the rest of t, a read-write transaction
// that will read many keys before creating them: GetRow, and GetIn with its prefix, then
// answer "absent" without a lookup for a key that sorts above every key under its prefix
// (the table's rows for GetRow). The first such read of a prefix costs one reverse seek;
// a transaction that reads a handful of keys should not turn it on.
func (t *Txn) ExpectNewKeys() {
	if t.seen == nil || t.above != nil { // read-only, or already on
		return
	}
	t.above = &aboveBounds{}
}

// GetIn is Get for a key under prefix (prefix must be a prefix of key): with
// ExpectNewKeys on, a key above every key held under prefix is known absent.
func (t *Txn) GetIn(prefix, key []byte) (val []byte, ok bool, err error) {
	if err := checkKey(key); err != nil {
		return nil, false, err
	}
	absent, err := t.knownAbsent(prefix, key)
	if err != nil || absent {
		return nil, false, err
	}
	return t.Get(key)
}

// knownAbsent reports whether key, under prefix, is known to be absent from t without a
// lookup; when it is, it marks key read in t as a lookup would.
func (t *Txn) knownAbsent(prefix, key []byte) (bool, error) {
	a := t.above
	// A key whose next byte after prefix is 0xFF may sort above the seek that finds the
	// bound (prefix+0xFF): it is always looked up.
	if a == nil || len(key) <= len(prefix) || !bytes.HasPrefix(key, prefix) || key[len(prefix)] == 0xFF {
		return false, nil
	}
	i := slices.IndexFunc(a.prefixes, func(p []byte) bool { return bytes.Equal(p, prefix) })
	if i < 0 {
		h, err := t.highestUnder(prefix)
		if err != nil {
			return false, err
		}
		a.prefixes = append(a.prefixes, bytes.Clone(prefix))
		a.highest = append(a.highest, h)
		i = len(a.prefixes) - 1
	}
	if h := a.highest[i]; h != nil && bytes.Compare(key, h) <= 0 {
		return false, nil
	}
	t.txn.MarkRead(key)
	a.answered++
	return true, nil
}

// highestUnder returns the highest live key under prefix in t (its snapshot and its own
// writes), among the keys whose next byte after prefix is below 0xFF; nil if none.
func (t *Txn) highestUnder(prefix []byte) ([]byte, error) {
	it := t.txn.NewIterator(badger.IteratorOptions{Reverse: true, Prefix: prefix})
	defer it.Close()
	it.Seek(append(bytes.Clone(prefix), 0xFF))
	if !it.Valid() {
		return nil, nil
	}
	return it.Item().KeyCopy(nil), nil
}

// raiseAbove records that t wrote key: a bound it falls under rises to it, so a later read
// of key in t is looked up (and finds the write).
func (t *Txn) raiseAbove(key []byte) {
	a := t.above
	if a == nil {
		return
	}
	for i, p := range a.prefixes {
		if bytes.HasPrefix(key, p) && bytes.Compare(key, a.highest[i]) > 0 {
			a.highest[i] = bytes.Clone(key)
		}
	}
}
