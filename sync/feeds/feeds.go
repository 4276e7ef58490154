package feeds

import (
	"errors"
	"fmt"
	"log/slog"

	"github.com/crow-sync/crow/feed"
	"github.com/crow-sync/crow/store"
	crowsync "github.com/crow-sync/crow/sync"
	"github.com/crow-sync/crow/sync/wire"
)

// Options configures Feeds. The zero value is usable.
type Options struct {
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// OnStored, if set, is called after a verified range was durably stored in
	// the replica of key, with the replica's new state. It is called from the
	// Node's goroutine and must not block.
	OnStored func(key feed.PublicKey, st feed.State)
	// Allow selects the feeds that take new entries: a feed it refuses
	// (e.g. a revoked instance's) gets no new range from any peer, and its
	// announced heads are ignored; what is already held is still served and
	// announced. nil allows every feed.
	Allow func(key feed.PublicKey) bool
	// Changes, if set, is the signal Changed reads; give the Writer
	// Changes.Journal(log) when the Writer has to exist before the Feeds
	// (their Allow rule needs what the Writer builds). nil makes one.
	Changes *Changes
}

// Changes is the "own feed grew" signal a Node reads from Feeds.Changed: at
// most one pending wake-up, raised without blocking. Safe for concurrent use.
type Changes struct{ c chan struct{} }

// NewChanges returns a signal with no pending wake-up.
func NewChanges() *Changes { return &Changes{c: make(chan struct{}, 1)} }

// Notify raises the signal; it never blocks.
func (c *Changes) Notify() {
	select {
	case c.c <- struct{}{}:
	default:
	}
}

// Journal returns j (normally the own *feed.Log) wrapped so that the commit
// func of every Stage that appended entries also raises the signal.
func (c *Changes) Journal(j *feed.Log) store.Journal { return journal{j: j, c: c} }

// Feeds implements sync.Feeds over a feed.Log and feed.Replicas sharing one
// storage. Safe for concurrent use.
type Feeds struct {
	log     *feed.Log
	reps    *feed.Replicas
	self    feed.PublicKey
	opts    Options
	lg      *slog.Logger
	changes *Changes
}

var _ crowsync.Feeds = (*Feeds)(nil)

// New returns the adapter for the own feed log and the replicas reps (opened
// on the same storage, with log's key as their self).
func New(log *feed.Log, reps *feed.Replicas, opts Options) *Feeds {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Changes == nil {
		opts.Changes = NewChanges()
	}
	return &Feeds{
		log: log, reps: reps, self: log.Key(), opts: opts,
		lg:      opts.Logger.With("component", "sync-feeds"),
		changes: opts.Changes,
	}
}

// Self returns the key of the own feed.
func (f *Feeds) Self() feed.PublicKey { return f.self }

func (f *Feeds) notify() { f.changes.Notify() }

// journal adapts the own feed.Log to store.Journal and signals Changed on
// every commit.
type journal struct {
	j *feed.Log
	c *Changes
}

// Journal returns the own feed log j as the store's write path takes it:
// Stage stages into the store's transaction (a store.Txn is a feed.KVTxn),
// and the commit func of every Stage also signals Changed, so the Node
// announces the new head as soon as the local write is durable.
func (f *Feeds) Journal(j *feed.Log) store.Journal { return f.changes.Journal(j) }

func (j journal) Stage(txn *store.Txn, entries [][]byte) (func(), error) {
	commit, err := j.j.Stage(txn, entries)
	if err != nil || len(entries) == 0 {
		return commit, err
	}
	return func() { commit(); j.c.Notify() }, nil
}

// Append appends entries to the own feed outside a store transaction (one
// signature for the batch) and signals Changed. The daemon appends through
// Journal; Append serves tools, tests and benchmarks.
func (f *Feeds) Append(entries [][]byte) (feed.Head, error) {
	h, err := f.log.Append(entries)
	if err == nil && len(entries) > 0 {
		f.notify()
	}
	return h, err
}

func encodeHead(h feed.Head) []byte {
	b, _ := h.MarshalBinary()
	return b
}

func wireHead(key feed.PublicKey, st feed.State) wire.Head {
	return wire.Head{Feed: wire.FeedKey(key), Length: st.Length, Signed: encodeHead(st.Head)}
}

// Heads implements sync.Feeds: the own feed (if not empty) and every replica.
func (f *Feeds) Heads() ([]wire.Head, error) {
	// From memory: the Node asks at every change of a feed, and a read of
	// storage would wait for whatever commit is in flight (an apply's).
	infos, err := f.reps.Held()
	if err != nil {
		return nil, fmt.Errorf("listing feed heads: %w", err)
	}
	out := make([]wire.Head, 0, len(infos)+1)
	// A forked own feed is not announced: its branch would make every peer
	// record the fork and stop the genuine branch too.
	if own := f.log.Head(); own.Length > 0 && f.log.Forked() == nil {
		out = append(out, wireHead(f.self, feed.State{Head: own, Length: own.Length}))
	}
	for _, fi := range infos {
		if fi.Key == f.self || fi.State.Length == 0 && fi.State.Head.Length == 0 {
			continue
		}
		out = append(out, wireHead(fi.Key, fi.State))
	}
	return out, nil
}

// Changed implements sync.Feeds.
func (f *Feeds) Changed() <-chan struct{} { return f.changes.c }

// decodeHead decodes a wire head's signed head and checks that it is of the
// announced feed and covers the announced length. It does not verify the
// signature.
func decodeHead(h wire.Head) (feed.Head, error) {
	var sh feed.Head
	if err := sh.UnmarshalBinary(h.Signed); err != nil {
		return sh, fmt.Errorf("decoding head of %s: %w (%w)", h.Feed.Short(), crowsync.ErrRejected, err)
	}
	if sh.Key != feed.PublicKey(h.Feed) {
		return sh, fmt.Errorf("head announced for %s is signed for %s: %w", h.Feed.Short(), sh.Key, crowsync.ErrRejected)
	}
	if h.Length > sh.Length {
		return sh, fmt.Errorf("head of %s: held length %d over signed length %d: %w", h.Feed.Short(), h.Length, sh.Length, crowsync.ErrRejected)
	}
	return sh, nil
}

func (f *Feeds) allowed(key feed.PublicKey) bool {
	return f.opts.Allow == nil || f.opts.Allow(key)
}

// VerifyHead implements sync.Feeds: it checks the signature and whether the
// head contradicts what is held (a fork, recorded as evidence for replicas).
// A head of the own feed that this instance did not sign (longer than the
// log, or a different tree at a length it has) is a fork of the own key: a
// cloned machine or a restored backup. It is reported with ErrFork, and the
// own log is marked forked (feed.Log.MarkForked: persisted, local writes
// refused, the own feed no longer announced).
func (f *Feeds) VerifyHead(h wire.Head) (wire.Head, error) {
	sh, err := decodeHead(h)
	if err != nil {
		return wire.Head{}, err
	}
	if err := sh.Verify(); err != nil {
		return wire.Head{}, fmt.Errorf("head of %s: %w (%w)", h.Feed.Short(), crowsync.ErrRejected, err)
	}
	key := sh.Key
	if key == f.self {
		if err := f.checkOwn(sh); err != nil {
			return wire.Head{}, err
		}
		return h, nil
	}
	if !f.allowed(key) {
		return wire.Head{}, fmt.Errorf("head of %s: %w", h.Feed.Short(), crowsync.ErrUnknownFeed)
	}
	if err := f.reps.ObserveHead(sh); err != nil {
		return wire.Head{}, mapErr(fmt.Sprintf("head of %s at %d", h.Feed.Short(), sh.Length), err)
	}
	return h, nil
}

// checkOwn checks a validly signed head of the own feed against the log.
func (f *Feeds) checkOwn(h feed.Head) error {
	own := f.log.Head()
	fork := &feed.ForkError{Key: f.self, Held: own, Other: h}
	switch {
	case h.Length > own.Length:
	case h.Length == own.Length:
		if h.TreeHash == own.TreeHash {
			return nil
		}
	default:
		p, err := f.log.Proof(0, 0, h.Length)
		if err != nil {
			return fmt.Errorf("checking a head of the own feed at %d: %w", h.Length, err)
		}
		err = p.VerifyUpgrade(&h, nil)
		if err == nil {
			return nil
		}
		var fe *feed.ForkError
		if !errors.As(err, &fe) {
			return fmt.Errorf("checking a head of the own feed at %d: %w", h.Length, err)
		}
	}
	first := f.log.Forked() == nil
	if _, err := f.log.MarkForked(h); err != nil {
		return fmt.Errorf("own feed forked (%w), and recording it failed: %w", fork, err)
	}
	if first {
		f.lg.Error("fork of the own feed: a head signed with this instance's key that it did not write; "+
			"local writes are refused until `crow instance reenroll`",
			"held_length", own.Length, "other_length", h.Length)
	}
	return fmt.Errorf("own feed: %w (%w)", crowsync.ErrFork, fork)
}

// mapErr maps package feed's errors onto sync's sentinels.
func mapErr(doing string, err error) error {
	switch {
	case errors.Is(err, feed.ErrForked):
		return fmt.Errorf("%s: %w (%w)", doing, crowsync.ErrFork, err)
	case errors.Is(err, feed.ErrInvalidProof), errors.Is(err, feed.ErrBadSignature),
		errors.Is(err, feed.ErrMalformed), errors.Is(err, feed.ErrWrongFeed):
		return fmt.Errorf("%s: %w (%w)", doing, crowsync.ErrRejected, err)
	case errors.Is(err, feed.ErrStaleHead), errors.Is(err, feed.ErrUpgradeRequired):
		return fmt.Errorf("%s: %w (%w)", doing, crowsync.ErrStale, err)
	default:
		// ErrNotContiguous, storage errors:
		// not evidence against the peer; the Node retries later.
		return fmt.Errorf("%s: %w", doing, err)
	}
}

// ReadRange implements sync.Feeds: entries [start, end) of a held feed (own
// or replica), cut to maxBytes (at least one entry), proven against the
// newest signed head held with Since = start (see the package doc). A
// cleared entry is sent as its leaf (Range.Cleared), never its data.
func (f *Feeds) ReadRange(k wire.FeedKey, start, end uint64, maxBytes int) (wire.Range, error) {
	key := feed.PublicKey(k)
	st, err := f.reps.State(key)
	if errors.Is(err, feed.ErrNotFound) {
		return wire.Range{}, fmt.Errorf("reading %s: %w", k.Short(), crowsync.ErrNotFound)
	}
	if err != nil {
		return wire.Range{}, fmt.Errorf("reading %s: %w", k.Short(), err)
	}
	if start >= st.Length || end <= start {
		return wire.Range{}, fmt.Errorf("reading [%d,%d) of %s holding %d: %w", start, end, k.Short(), st.Length, crowsync.ErrNotFound)
	}
	end = min(end, st.Length)
	entries, cleared, err := f.reps.ReadSparse(key, start, end)
	if err != nil {
		return wire.Range{}, fmt.Errorf("reading [%d,%d) of %s: %w", start, end, k.Short(), err)
	}
	size := 0
	for i, e := range entries {
		n := len(e)
		if e == nil {
			n = clearedWireSize
		}
		if i > 0 && size+n > maxBytes {
			entries = entries[:i]
			break
		}
		size += n
	}
	end = start + uint64(len(entries))
	var wcl []wire.Cleared
	for _, c := range cleared {
		if c.Index < end {
			wcl = append(wcl, wire.Cleared{Index: c.Index, Size: c.Size, Leaf: c.Hash})
		}
	}
	p, err := f.reps.Proof(key, start, end, start)
	if err != nil {
		return wire.Range{}, fmt.Errorf("proving [%d,%d) of %s: %w", start, end, k.Short(), err)
	}
	pb, err := p.MarshalBinary()
	if err != nil {
		return wire.Range{}, fmt.Errorf("encoding proof of [%d,%d) of %s: %w", start, end, k.Short(), err)
	}
	// The proof may be against a head newer than st (an append in between):
	// announce its head with the length known held.
	return wire.Range{
		Head:    wire.Head{Feed: k, Length: st.Length, Signed: encodeHead(p.Head)},
		Start:   start,
		Entries: entries,
		Proof:   pb,
		Cleared: wcl,
	}, nil
}

// clearedWireSize is what a cleared entry counts against ReadRange's
// maxBytes: its size and leaf hash.
const clearedWireSize = 8 + feed.HashSize

// VerifyAndStore implements sync.Feeds through Replicas.ApplySparse: nothing
// is stored unless the proof, the signature and the extension of the held
// head verify, the leaves given for cleared entries (Range.Cleared) included;
// cleared entries are stored cleared. Then OnStored is called and Changed
// signalled.
func (f *Feeds) VerifyAndStore(r wire.Range) (wire.Head, error) {
	key := feed.PublicKey(r.Head.Feed)
	doing := fmt.Sprintf("storing [%d,%d) of %s", r.Start, r.End(), r.Head.Feed.Short())
	if key == f.self {
		return wire.Head{}, fmt.Errorf("%s: the own feed is not replicated from peers: %w", doing, crowsync.ErrUnknownFeed)
	}
	if !f.allowed(key) {
		return wire.Head{}, fmt.Errorf("%s: %w", doing, crowsync.ErrUnknownFeed)
	}
	sh, err := decodeHead(r.Head)
	if err != nil {
		return wire.Head{}, err
	}
	var p feed.Proof
	if err := p.UnmarshalBinary(r.Proof); err != nil {
		return wire.Head{}, fmt.Errorf("%s: %w (%w)", doing, crowsync.ErrRejected, err)
	}
	if p.Head != sh || p.Start != r.Start || p.Count != uint64(len(r.Entries)) {
		return wire.Head{}, fmt.Errorf("%s: proof of [%d,%d) against head %d does not match the range: %w",
			doing, p.Start, p.End(), p.Head.Length, crowsync.ErrRejected)
	}
	var cleared []feed.Cleared
	if len(r.Cleared) > 0 {
		cleared = make([]feed.Cleared, len(r.Cleared))
		for i, c := range r.Cleared {
			cleared[i] = feed.Cleared{Index: c.Index, Size: c.Size, Hash: c.Leaf}
		}
	}
	st, err := f.reps.ApplySparse(&p, r.Entries, cleared)
	if err != nil {
		return wire.Head{}, mapErr(doing, err)
	}
	if f.opts.OnStored != nil {
		f.opts.OnStored(key, st)
	}
	f.notify()
	return wireHead(key, st), nil
}
