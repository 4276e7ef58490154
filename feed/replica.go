package feed

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
)

// Replicas holds verified replicas of other instances' feeds in a Storage
// and serves every stored feed (its own included) onward. Safe for
// concurrent use; Apply calls are serialized.
type Replicas struct {
	st   Storage
	self PublicKey

	mu    sync.Mutex
	feeds map[PublicKey]*replica // guarded by mu: loaded on first use
	w     *walker                // guarded by mu

	// held is what Held and Fork answer with without mu (which an Apply
	// holds through its storage write and fsync): every replica's state and
	// fork, published under mu after each change. nil until first loaded.
	held atomic.Pointer[heldSnap]
}

// heldSnap is an immutable view of the replicas held.
type heldSnap struct {
	infos []FeedInfo // replicas with a stored head, by key
	forks map[PublicKey]*ForkError
}

// replica is the in-memory state of one held feed.
type replica struct {
	state State
	has   bool       // a verified head is stored
	roots []Node     // roots at state.Length
	fork  *ForkError // non-nil once forked
}

// FeedInfo describes one feed in storage.
type FeedInfo struct {
	Key    PublicKey
	State  State
	Forked bool
}

// OpenReplicas serves the feeds in st. self is the instance's own feed key:
// Apply refuses it (the author writes it through Log).
func OpenReplicas(st Storage, self PublicKey) *Replicas {
	return &Replicas{st: st, self: self, feeds: make(map[PublicKey]*replica), w: newWalker(newHasher())}
}

// loadLocked returns the replica of key, reading it from storage once.
func (rs *Replicas) loadLocked(key PublicKey) (*replica, error) {
	if r := rs.feeds[key]; r != nil {
		return r, nil
	}
	r := &replica{}
	err := rs.st.View(func(rd Reader) error {
		if ev, ok, err := rd.Fork(key); err != nil {
			return err
		} else if ok {
			var fe ForkError
			if err := fe.UnmarshalBinary(ev); err != nil {
				return err
			}
			r.fork = &fe
		}
		s, ok, err := rd.State(key)
		if err != nil || !ok {
			return err
		}
		r.state, r.has = s, true
		r.roots, err = readRoots(rd, key, s.Length, s.Length)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("loading replica %s: %w", key, err)
	}
	rs.feeds[key] = r
	return r, nil
}

// Apply verifies p with entries and stores what extends the replica of
// p.Head.Key. It is the replica's only write path.
//
// The fast path is a range starting at the replica's stored length under a
// head that is the replica's head or extends it (p.Since == its length):
// entries are hashed once, nodes come from the replica's own roots and the
// proof, and one signature is checked. Entries already held are checked,
// not rewritten. Nothing is stored unless everything verifies.
//
// A proof against another head than the held one is also accepted when its
// Since is not the held head's length (a server that does not know what the
// replica holds proves with Since = Start): if the entries reach the held
// head's length, the walk rebuilds the tree there and checks the extension;
// if they end before it (a prefix fetched under a newer head, or a range
// from a relay with an older head), the entries are re-proved against the
// held head with the proof's nodes and the held head's stored right-hand
// nodes, and stored under the held head (see applyUnderHeldLocked). Only
// when those nodes are not available is ErrUpgradeRequired or ErrStaleHead
// returned.
//
// Errors: ErrNotContiguous (range starts after the stored length),
// ErrUpgradeRequired, ErrStaleHead, ErrInvalidProof, ErrBadSignature,
// ErrWrongFeed (the own feed), a *ForkError (new fork, or the feed was
// forked before), or a storage error. On any error nothing was stored
// except, for a new fork, the fork evidence.
func (rs *Replicas) Apply(p *Proof, entries [][]byte) (State, error) {
	return rs.ApplySparse(p, entries, nil)
}

// ApplySparse is Apply for a range with cleared entries (as a peer's
// ReadSparse returns it): for each entry in cleared (in index order, within
// the range, of size > 0) its leaf stands in for its data, which must be
// absent (nil or empty) in entries. The range verifies against the signed
// head like any other (a leaf that is not the entry's is ErrInvalidProof),
// and the cleared entries are stored cleared: their nodes, never data.
// Entries already held are not rewritten, cleared or not.
func (rs *Replicas) ApplySparse(p *Proof, entries [][]byte, cleared []Cleared) (State, error) {
	key := p.Head.Key
	if err := p.checkShape(); err != nil {
		return State{}, fmt.Errorf("applying to %s: %w", key, err)
	}
	if uint64(len(entries)) != p.Count {
		return State{}, fmt.Errorf("applying to %s: %d entries for a proof of %d: %w", key, len(entries), p.Count, ErrInvalidProof)
	}
	if key == rs.self {
		return State{}, fmt.Errorf("applying to own feed %s: %w", key, ErrWrongFeed)
	}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	r, err := rs.loadLocked(key)
	if err != nil {
		return State{}, err
	}
	if r.fork != nil {
		return r.state, r.fork
	}
	c := r.state.Length
	h0 := r.state.Head
	b1 := p.Head.Length
	end := p.End()
	if p.Start > c {
		return r.state, fmt.Errorf("applying [%d,%d) to %s holding %d: %w", p.Start, end, key, c, ErrNotContiguous)
	}
	if r.has {
		switch {
		case b1 > h0.Length && p.Since != h0.Length && end < h0.Length:
			// The tree at the held head's length cannot be rebuilt from p
			// (when the entries reach it, the walk rebuilds it whatever
			// Since is): prove the entries against the held head instead.
			return rs.applyUnderHeldLocked(r, key, p, entries, cleared,
				fmt.Errorf("applying head %d to %s at head %d, proof since %d: %w", b1, key, h0.Length, p.Since, ErrUpgradeRequired))
		case b1 < h0.Length && b1 > c:
			return rs.applyUnderHeldLocked(r, key, p, entries, cleared,
				fmt.Errorf("applying head %d to %s at head %d with %d stored: %w", b1, key, h0.Length, c, ErrStaleHead))
		}
	}
	return rs.applyLocked(r, key, p, entries, cleared)
}

// applyLocked is Apply after its shape checks: p.Start <= the stored length,
// and (if a head is held) p.Head is the held head, or is longer and p
// rebuilds the tree at the held head's length (Since is that length or the
// entries reach it), or is shorter and within the stored entries.
func (rs *Replicas) applyLocked(r *replica, key PublicKey, p *Proof, entries [][]byte, cleared []Cleared) (State, error) {
	c := r.state.Length
	h0 := r.state.Head
	b1 := p.Head.Length
	end := p.End()
	w := rs.w
	w.reset()
	var (
		forkAtC   bool
		sinceHash [HashSize]byte
		newRoots  []Node
		extra     []Node
		recs      [][]byte
		slab      []byte
		off       int
	)
	if p.Start <= c && c <= end {
		w.captureAt(c)
	}
	if r.has && b1 > h0.Length {
		w.captureAt(h0.Length)
	}
	if end > c {
		w.captureAt(end)
		size := 0
		for i := c; i < end; i++ {
			size += recordHeader(i) + len(entries[i-p.Start])
		}
		slab = make([]byte, size)
		recs = make([][]byte, 0, end-c)
		w.onLeaf = func(i uint64, made []Node) {
			if i < c {
				return
			}
			e := entries[i-p.Start]
			h := recordHeader(i)
			rec := slab[off : off+h+len(e) : off+h+len(e)]
			for d := range made {
				putNode(rec[d*nodeWireSize:], &made[d])
			}
			copy(rec[h:], e)
			recs = append(recs, rec)
			off += len(rec)
		}
	}
	keep := max(c, end)
	w.onNode = func(made []Node) {
		for _, n := range made {
			if _, e := span(n.Index); e > keep {
				extra = append(extra, n)
			}
		}
	}
	w.capture = func(at uint64, roots []Node) error {
		if at == c && p.Start <= c && c <= end && !sameRoots(roots, r.roots) {
			forkAtC = true
		}
		if r.has && at == h0.Length && b1 > h0.Length {
			sinceHash = w.x.tree(roots)
		}
		if at == end && end > c {
			newRoots = append([]Node(nil), roots...)
		}
		return nil
	}
	roots, err := w.walk(p, entries, cleared)
	if err == nil {
		err = w.finish(p, roots)
	}
	if err != nil {
		return r.state, fmt.Errorf("applying [%d,%d) of %s: %w", p.Start, end, key, err)
	}

	// p is valid and signed. Does it agree with what is held?
	if r.has {
		fork := forkAtC ||
			(b1 == h0.Length && p.Head.TreeHash != h0.TreeHash) ||
			(b1 > h0.Length && sinceHash != h0.TreeHash)
		if !fork && b1 < h0.Length {
			var mine []Node
			err := rs.st.View(func(rd Reader) error {
				var err error
				mine, err = readRoots(rd, key, c, b1)
				return err
			})
			if err != nil {
				return r.state, fmt.Errorf("checking head %d of %s: %w", b1, key, err)
			}
			fork = w.x.tree(mine) != p.Head.TreeHash
		}
		if fork {
			return r.state, rs.recordForkLocked(r, key, h0, p.Head)
		}
		if b1 < h0.Length {
			return r.state, nil // an older head of what is held: nothing new
		}
	}

	next := State{Head: p.Head, Length: keep}
	if r.has && b1 == h0.Length {
		next.Head = h0
	}
	b := &Batch{Key: key, Start: c, Records: recs, Nodes: extra, State: &next}
	if err := rs.st.Write(b); err != nil {
		return r.state, fmt.Errorf("storing [%d,%d) of %s: %w", c, end, key, err)
	}
	r.state, r.has = next, true
	if newRoots != nil {
		r.roots = newRoots
	}
	rs.publishLocked(false)
	return r.state, nil
}

// ObserveHead checks a head received without a proof (heads are exchanged
// on connect): its signature, and whether it contradicts what is held.
// It returns nil if h is consistent or cannot be checked without a proof
// (it is longer than the stored entries), ErrBadSignature, or a *ForkError
// (recorded like Apply's). Nothing else is stored.
func (rs *Replicas) ObserveHead(h Head) error {
	if err := h.Verify(); err != nil {
		return err
	}
	if h.Key == rs.self {
		return nil
	}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	r, err := rs.loadLocked(h.Key)
	if err != nil {
		return err
	}
	if r.fork != nil {
		return r.fork
	}
	if !r.has {
		return nil
	}
	h0 := r.state.Head
	fork := h.Length == h0.Length && h.TreeHash != h0.TreeHash
	if !fork && h.Length <= r.state.Length && h.Length != h0.Length {
		var mine []Node
		err := rs.st.View(func(rd Reader) error {
			var err error
			mine, err = readRoots(rd, h.Key, r.state.Length, h.Length)
			return err
		})
		if err != nil {
			return fmt.Errorf("checking head %d of %s: %w", h.Length, h.Key, err)
		}
		fork = rs.w.x.tree(mine) != h.TreeHash
	}
	if fork {
		return rs.recordForkLocked(r, h.Key, h0, h)
	}
	return nil
}

// recordForkLocked persists fork evidence and marks the replica forked.
func (rs *Replicas) recordForkLocked(r *replica, key PublicKey, held, other Head) error {
	fe := &ForkError{Key: key, Held: held, Other: other}
	ev, _ := fe.MarshalBinary()
	if err := rs.st.Write(&Batch{Key: key, Fork: ev}); err != nil {
		return fmt.Errorf("recording fork of %s: %w (fork: %w)", key, err, fe)
	}
	r.fork = fe
	rs.publishLocked(false)
	return fe
}

func sameRoots(a, b []Node) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// State returns the stored state of a feed (replica or own), or ErrNotFound.
func (rs *Replicas) State(key PublicKey) (State, error) {
	var s State
	err := rs.st.View(func(r Reader) error {
		var ok bool
		var err error
		s, ok, err = r.State(key)
		if err == nil && !ok {
			err = ErrNotFound
		}
		return err
	})
	if err != nil {
		return State{}, fmt.Errorf("state of feed %s: %w", key, err)
	}
	return s, nil
}

// List returns every feed held (own and replicas), ordered by key.
func (rs *Replicas) List() ([]FeedInfo, error) {
	var out []FeedInfo
	err := rs.st.View(func(r Reader) error {
		return r.Feeds(func(k PublicKey, s State) error {
			_, forked, err := r.Fork(k)
			out = append(out, FeedInfo{Key: k, State: s, Forked: forked})
			return err
		})
	})
	if err != nil {
		return nil, fmt.Errorf("listing feeds: %w", err)
	}
	return out, nil
}

// Read returns copies of entries [start, end) of a held feed, or
// ErrCleared (wrapped, naming the entry) if one of them was cleared
// (ReadSparse reads such a range).
func (rs *Replicas) Read(key PublicKey, start, end uint64) ([][]byte, error) {
	return readRange(rs.st, key, start, end)
}

// Proof proves entries [start, end) of a held feed against its stored head,
// upgrading from an older head of length since (0 for none), so the
// replica can be served onward.
func (rs *Replicas) Proof(key PublicKey, start, end, since uint64) (*Proof, error) {
	return proveRange(rs.st, key, start, end, since)
}

// Fork returns the recorded fork of a feed, or nil if it is not forked.
// For a replica it answers from memory, without waiting for an Apply in
// progress (the registry asks it for every instance it describes).
func (rs *Replicas) Fork(key PublicKey) (*ForkError, error) {
	if key != rs.self {
		snap, err := rs.snapshot()
		if err != nil {
			return nil, err
		}
		return snap.forks[key], nil
	}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	r, err := rs.loadLocked(key)
	if err != nil {
		return nil, err
	}
	return r.fork, nil
}

// Held returns the replicas held (not the own feed) with a stored head, by
// key: List without the own feed and without reading storage. It does not
// wait for an Apply in progress; what it returns is stored.
func (rs *Replicas) Held() ([]FeedInfo, error) {
	snap, err := rs.snapshot()
	if err != nil {
		return nil, err
	}
	return slices.Clone(snap.infos), nil
}

// snapshot returns the published view of the replicas, loading every
// replica in storage the first time.
func (rs *Replicas) snapshot() (*heldSnap, error) {
	if snap := rs.held.Load(); snap != nil {
		return snap, nil
	}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if snap := rs.held.Load(); snap != nil {
		return snap, nil
	}
	var keys []PublicKey
	err := rs.st.View(func(r Reader) error {
		return r.Feeds(func(k PublicKey, _ State) error {
			if k != rs.self {
				keys = append(keys, k)
			}
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("listing feeds: %w", err)
	}
	for _, k := range keys {
		if _, err := rs.loadLocked(k); err != nil {
			return nil, err
		}
	}
	rs.publishLocked(true)
	return rs.held.Load(), nil
}

// publishLocked publishes the loaded replicas for Held and Fork; unless
// first, only once snapshot has loaded them all.
func (rs *Replicas) publishLocked(first bool) {
	if !first && rs.held.Load() == nil {
		return
	}
	snap := &heldSnap{forks: map[PublicKey]*ForkError{}}
	for k, r := range rs.feeds {
		if k == rs.self {
			continue
		}
		if r.fork != nil {
			snap.forks[k] = r.fork
		}
		if r.has {
			snap.infos = append(snap.infos, FeedInfo{Key: k, State: r.state, Forked: r.fork != nil})
		}
	}
	slices.SortFunc(snap.infos, func(a, b FeedInfo) int { return bytes.Compare(a.Key[:], b.Key[:]) })
	rs.held.Store(snap)
}

// Delete removes a replica with everything stored for it, fork evidence
// included: the operator's action on a forked feed (replication then starts
// again from nothing). It refuses the own feed.
func (rs *Replicas) Delete(key PublicKey) error {
	if key == rs.self {
		return fmt.Errorf("deleting own feed %s: %w", key, ErrWrongFeed)
	}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	delete(rs.feeds, key)
	err := rs.st.Delete(key)
	rs.publishLocked(false)
	return err
}

// applyUnderHeldLocked applies a range that ends before the held head h0
// but is proven against another head b1 (newer, with a Since the replica
// cannot use, or older than h0 but beyond the stored entries): the usual
// case of a replica that fetched a prefix of a long batch and then asks
// another peer, or the same author after it appended again.
//
// It verifies p on its own (entries, nodes, signature of b1), then re-proves
// the same entries against h0 with nodes taken from p's verified tree and
// from what the replica stored under h0 (the right-hand nodes of h0 it
// verified before), and applies that proof: the entries are stored under h0,
// which stays the held head (b1 is adopted once a range reaches h0's
// length). If such a proof cannot be built, orig is returned. If the
// entries or p's nodes contradict h0, both heads are validly signed: a fork.
func (rs *Replicas) applyUnderHeldLocked(r *replica, key PublicKey, p *Proof, entries [][]byte, cleared []Cleared, orig error) (State, error) {
	c := r.state.Length
	h0 := r.state.Head
	end := p.End()

	// 1. p on its own, keeping the nodes right of the entries it proves
	// (authenticated by b1's signature once finish succeeds) and its roots
	// at the stored length.
	w := rs.w
	w.reset()
	known := make(map[uint64]Node)
	keepRight := func(made []Node) {
		for _, n := range made {
			if _, e := span(n.Index); e > end {
				known[n.Index] = n
			}
		}
	}
	w.onLeaf = func(_ uint64, made []Node) { keepRight(made) }
	w.onNode = keepRight
	forkAtC := false
	if c <= end {
		w.captureAt(c)
		w.capture = func(_ uint64, roots []Node) error {
			forkAtC = !sameRoots(roots, r.roots)
			return nil
		}
	}
	roots, err := w.walk(p, entries, cleared)
	if err == nil {
		err = w.finish(p, roots)
	}
	if err != nil {
		return r.state, fmt.Errorf("applying [%d,%d) of %s: %w", p.Start, end, key, err)
	}
	if forkAtC {
		return r.state, rs.recordForkLocked(r, key, h0, p.Head)
	}

	// 2. The same entries against h0.
	q := &Proof{Head: h0, Start: p.Start, Count: p.Count, Since: p.Start}
	q.Nodes = make([]Node, 0, proofNodeCount(p.Start, end, p.Start, h0.Length))
	missing := false
	err = rs.st.View(func(rd Reader) error {
		var err error
		proofIndexes(p.Start, end, p.Start, h0.Length, func(idx uint64) {
			if err != nil || missing {
				return
			}
			var n Node
			var ok bool
			n, ok, err = resolveNode(rd, key, c, known, idx, 0)
			missing = !ok
			q.Nodes = append(q.Nodes, n)
		})
		return err
	})
	if err != nil {
		return r.state, fmt.Errorf("re-proving [%d,%d) of %s against head %d: %w", p.Start, end, key, h0.Length, err)
	}
	if missing {
		return r.state, orig
	}
	st, err := rs.applyLocked(r, key, q, entries, cleared)
	if errors.Is(err, ErrInvalidProof) {
		// Everything in q is authenticated by b1 (entries, p's nodes) or
		// by h0 (stored prefix and nodes): the two heads disagree.
		return r.state, rs.recordForkLocked(r, key, h0, p.Head)
	}
	return st, err
}

// resolveNode returns node idx from known, else from the replica's storage
// (entry records below the stored length c, verified nodes beyond it), else
// built from its children. ok is false if it cannot be had.
func resolveNode(rd Reader, key PublicKey, c uint64, known map[uint64]Node, idx uint64, depth int) (n Node, ok bool, err error) {
	if n, ok := known[idx]; ok {
		return n, true, nil
	}
	if _, e := span(idx); e <= c {
		n, err := readNode(rd, key, c, idx, 0)
		return n, err == nil, err
	}
	if n, ok, err := rd.Node(key, idx); err != nil || ok {
		return n, ok, err
	}
	if depthOf(idx) == 0 || depth > 64 {
		return Node{}, false, nil
	}
	li, ri := children(idx)
	l, ok, err := resolveNode(rd, key, c, known, li, depth+1)
	if err != nil || !ok {
		return Node{}, ok, err
	}
	rn, ok, err := resolveNode(rd, key, c, known, ri, depth+1)
	if err != nil || !ok {
		return Node{}, ok, err
	}
	x := newHasher()
	return Node{Index: idx, Size: l.Size + rn.Size, Hash: x.parent(l.Size+rn.Size, &l.Hash, &rn.Hash)}, true, nil
}
