package feed

import (
	"crypto/ed25519"
	"fmt"
	"sync"

	"github.com/crow-sync/crow/internal/parallel"
)

// Log is the author side of a feed: the instance's own feed, appended to
// with its private key. Safe for concurrent use; appends are serialized.
type Log struct {
	st   Storage
	priv ed25519.PrivateKey
	key  PublicKey

	mu    sync.Mutex
	head  Head    // guarded by mu: the last committed head
	roots []Node  // guarded by mu: roots at head.Length
	gen   uint64  // guarded by mu: bumped by every Stage and commit
	w     *walker // guarded by mu

	// fork is guarded by mu: the recorded fork of the own feed (MarkForked),
	// nil if none; while set, nothing is appended.
	fork *ForkError
}

// OpenLog opens the author feed of priv in st, loading what was stored
// before (a restart) or starting an empty feed. It checks the stored head's
// signature and that the stored tree matches it.
func OpenLog(st Storage, priv ed25519.PrivateKey) (*Log, error) {
	if len(priv) != ed25519.PrivateKeySize {
		return nil, fmt.Errorf("opening feed: private key of %d bytes", len(priv))
	}
	l := &Log{st: st, priv: priv, w: newWalker(newHasher())}
	copy(l.key[:], priv.Public().(ed25519.PublicKey))
	err := st.View(func(r Reader) error {
		s, ok, err := r.State(l.key)
		if err != nil || !ok {
			return err
		}
		if s.Length != s.Head.Length || s.Head.Key != l.key {
			return fmt.Errorf("state of own feed: length %d, head %d: %w", s.Length, s.Head.Length, ErrCorrupt)
		}
		if err := s.Head.Verify(); err != nil {
			return err
		}
		roots, err := readRoots(r, l.key, s.Length, s.Length)
		if err != nil {
			return err
		}
		if l.w.x.tree(roots) != s.Head.TreeHash {
			return fmt.Errorf("stored tree of own feed does not match its head: %w", ErrCorrupt)
		}
		l.head, l.roots = s.Head, roots
		ev, ok, err := r.Fork(l.key)
		if err != nil || !ok {
			return err
		}
		var fe ForkError
		if err := fe.UnmarshalBinary(ev); err != nil {
			return fmt.Errorf("fork evidence of own feed: %w", err)
		}
		l.fork = &fe
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("opening feed %s: %w", l.key, err)
	}
	l.head.Key = l.key
	return l, nil
}

// Key returns the feed's public key.
func (l *Log) Key() PublicKey { return l.key }

// Head returns the last committed head (zero Length and Signature if the
// feed is empty).
func (l *Log) Head() Head {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.head
}

// minParallelLeaves is the fewest entries per core worth hashing beside the caller's
// goroutine (~1.5 µs each).
const minParallelLeaves = 128

// buildLocked hashes entries onto the current tree and signs the new head.
// It changes nothing in l but scratch space; the returned roots are fresh.
// The records are made in one allocation.
func (l *Log) buildLocked(entries [][]byte) (*Batch, []Node) {
	start := l.head.Length
	size := 0
	for j, e := range entries {
		size += recordHeader(start+uint64(j)) + len(e)
	}
	buf := make([]byte, size)
	recs := make([][]byte, len(entries))
	// The leaves' hashes first, on every core for a large batch (a bulk write's).
	leaves := make([][HashSize]byte, len(entries))
	parallel.Range(len(entries), minParallelLeaves, func(lo, hi int) {
		x := l.w.x
		if lo > 0 {
			x = newHasher()
		}
		for j := lo; j < hi; j++ {
			leaves[j] = x.leaf(entries[j])
		}
	})
	w := l.w
	w.reset()
	w.stack = append(w.stack, l.roots...)
	off := 0
	for j, e := range entries {
		i := start + uint64(j)
		// push cannot fail for leaves: sizes are real lengths.
		_ = w.push(Node{Index: 2 * i, Size: uint64(len(e)), Hash: leaves[j]})
		n := recordHeader(i) + len(e)
		rec := buf[off : off+n : off+n]
		for d := range w.made {
			putNode(rec[d*nodeWireSize:], &w.made[d])
		}
		copy(rec[recordHeader(i):], e)
		recs[j] = rec
		off += n
	}
	roots := append([]Node(nil), w.stack...)
	h := Head{Key: l.key, Length: start + uint64(len(entries)), TreeHash: w.x.tree(roots)}
	h.sign(l.priv)
	b := &Batch{Key: l.key, Start: start, Records: recs, State: &State{Head: h, Length: h.Length}}
	return b, roots
}

// advanceLocked makes the written batch b the committed state.
func (l *Log) advanceLocked(b *Batch, roots []Node) {
	l.gen++
	l.head, l.roots = b.State.Head, roots
}

// Append adds entries as one batch with one signature, writes them to the
// storage and returns the new head. Zero entries return the current head.
func (l *Log) Append(entries [][]byte) (Head, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(entries) == 0 {
		return l.head, nil
	}
	if err := l.refuseLocked(); err != nil {
		return l.head, err
	}
	if l.head.Length+uint64(len(entries)) > maxLength {
		return l.head, fmt.Errorf("appending to %s: %w", l.key, ErrOutOfRange)
	}
	b, roots := l.buildLocked(entries)
	if err := l.st.Write(b); err != nil {
		return l.head, fmt.Errorf("appending %d entries to %s: %w", len(entries), l.key, err)
	}
	l.advanceLocked(b, roots)
	return l.head, nil
}

// Stage writes entries (in order) into txn and returns a function that must be
// called after txn commits successfully to advance the in-memory head.
//
// The log must use a *KVStorage on the database txn belongs to. One
// signature covers the batch. Until commit is called the log is unchanged;
// if txn is discarded, simply drop commit. A later Stage supersedes an
// uncommitted one: calling the superseded commit panics, because its
// transaction and the later one wrote the same entry indexes (calling
// commit after every successful txn.Commit, before the next Stage, rules
// this out). Zero entries stage nothing and return a no-op commit. A batch
// too large for one transaction fails with txn's too-large error (wrapped;
// store.ErrTooLarge in the daemon); the caller splits it.
func (l *Log) Stage(txn KVTxn, entries [][]byte) (commit func(), err error) {
	bs, ok := l.st.(*KVStorage)
	if !ok {
		return nil, fmt.Errorf("staging into a transaction: feed storage is %T, not *KVStorage", l.st)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(entries) == 0 {
		return func() {}, nil
	}
	if err := l.refuseLocked(); err != nil {
		return nil, err
	}
	if l.head.Length+uint64(len(entries)) > maxLength {
		return nil, fmt.Errorf("staging to %s: %w", l.key, ErrOutOfRange)
	}
	b, roots := l.buildLocked(entries)
	if err := bs.stage(txn, b); err != nil {
		return nil, fmt.Errorf("staging %d entries to %s: %w", len(entries), l.key, err)
	}
	l.gen++
	gen := l.gen
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.gen != gen {
			panic("feed: commit of a superseded Stage (two transactions wrote the same entries)")
		}
		l.advanceLocked(b, roots)
	}, nil
}

// Read returns copies of the entries [start, end) as stored, or
// ErrCleared (wrapped, naming the entry) if one of them was cleared
// (ReadSparse reads such a range).
func (l *Log) Read(start, end uint64) ([][]byte, error) { return readRange(l.st, l.key, start, end) }

// Proof proves [start, end) against the stored head, upgrading from an
// older head of length since (0 for none).
func (l *Log) Proof(start, end, since uint64) (*Proof, error) {
	return proveRange(l.st, l.key, start, end, since)
}

func readRange(st Storage, key PublicKey, start, end uint64) ([][]byte, error) {
	out, _, err := readStored(st, key, start, end, false)
	return out, err
}

func readSparse(st Storage, key PublicKey, start, end uint64) ([][]byte, []Cleared, error) {
	return readStored(st, key, start, end, true)
}

func readStored(st Storage, key PublicKey, start, end uint64, sparse bool) (out [][]byte, cleared []Cleared, err error) {
	err = st.View(func(r Reader) error {
		s, ok, err := r.State(key)
		if err != nil {
			return err
		}
		if !ok {
			return ErrNotFound
		}
		if start > end || end > s.Length {
			return fmt.Errorf("[%d,%d) with %d stored: %w", start, end, s.Length, ErrOutOfRange)
		}
		out, cleared, err = readEntries(r, key, start, end, sparse)
		return err
	})
	if err != nil {
		return nil, nil, fmt.Errorf("reading feed %s: %w", key, err)
	}
	return out, cleared, nil
}

func proveRange(st Storage, key PublicKey, start, end, since uint64) (*Proof, error) {
	var p *Proof
	err := st.View(func(r Reader) error {
		s, ok, err := r.State(key)
		if err != nil {
			return err
		}
		if !ok {
			return ErrNotFound
		}
		p, err = makeProof(r, key, &s, start, end, since)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("proving feed %s: %w", key, err)
	}
	return p, nil
}
