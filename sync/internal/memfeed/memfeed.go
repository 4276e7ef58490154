// Package memfeed is an honest in-memory stand-in for package feed, for tests
// of sync: each feed is a SHA-256 hash chain whose heads are Ed25519-signed by
// the feed key, so any tampered entry, proof or head is detected. It is not
// the production Merkle format (proofs grow with the distance to the head).
//
// Signed head: "memfeed1" ‖ feed [32] ‖ length u64 ‖ chain hash [32] ‖ sig [64],
// sig over everything before it. Chain: c0 = 0³², c(i+1) = H(c(i) ‖ H(entry i)).
// Proof of [s, e) against a head of length L: c(s) ‖ H(entry j) for j in [e, L).
// A replica holding a prefix of a newer signed head keeps the entry hashes
// past its prefix (the "tail") to prove what it holds against that head.
//
// It has no cleared entries (package feed's Clear): it never serves
// Range.Cleared, and a range that has some fails its chain check (rejected).
// The cleared path is tested over real feeds in sync/feeds.
package memfeed

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	stdsync "sync"

	crowsync "github.com/crow-sync/crow/sync"
	"github.com/crow-sync/crow/sync/wire"
)

const magic = "memfeed1"

type log struct {
	entries [][]byte
	chain   [][32]byte // chain[i] = c(i); len = len(entries)+1
	signed  []byte     // newest verified signed head
	sigLen  uint64     // its length
	sigHash [32]byte   // its chain hash
	tail    [][32]byte // entry hashes of [len(entries), sigLen)
}

func (l *log) held() uint64 { return uint64(len(l.entries)) }

func (l *log) head(k wire.FeedKey) wire.Head {
	return wire.Head{Feed: k, Length: l.held(), Signed: l.signed}
}

// Feeds holds one own feed and replicas. Safe for concurrent use.
type Feeds struct {
	priv    ed25519.PrivateKey
	self    wire.FeedKey
	changed chan struct{}
	allow   func(wire.FeedKey) bool

	mu   stdsync.Mutex
	logs map[wire.FeedKey]*log // guarded by mu
}

var _ crowsync.Feeds = (*Feeds)(nil)

// New returns Feeds authoring the feed of priv. allow selects the replicated
// feeds (nil: all).
func New(priv ed25519.PrivateKey, allow func(wire.FeedKey) bool) *Feeds {
	var self wire.FeedKey
	copy(self[:], priv.Public().(ed25519.PublicKey))
	f := &Feeds{priv: priv, self: self, changed: make(chan struct{}, 1), allow: allow,
		logs: map[wire.FeedKey]*log{}}
	l := &log{chain: [][32]byte{{}}}
	l.signed = f.sign(self, 0, [32]byte{})
	f.logs[self] = l
	return f
}

// Self returns the own feed's key.
func (f *Feeds) Self() wire.FeedKey { return f.self }

func (f *Feeds) sign(k wire.FeedKey, n uint64, c [32]byte) []byte {
	b := append([]byte(magic), k[:]...)
	b = binary.BigEndian.AppendUint64(b, n)
	b = append(b, c[:]...)
	return append(b, ed25519.Sign(f.priv, b)...)
}

func next(c [32]byte, eh [32]byte) [32]byte {
	return sha256.Sum256(append(c[:], eh[:]...))
}

// Append adds entries to the own feed under one new signed head.
func (f *Feeds) Append(entries ...[]byte) wire.Head {
	f.mu.Lock()
	l := f.logs[f.self]
	for _, e := range entries {
		l.entries = append(l.entries, append([]byte(nil), e...))
		l.chain = append(l.chain, next(l.chain[len(l.chain)-1], sha256.Sum256(e)))
	}
	l.sigLen, l.sigHash = l.held(), l.chain[l.held()]
	l.signed = f.sign(f.self, l.sigLen, l.sigHash)
	h := l.head(f.self)
	f.mu.Unlock()
	f.notify()
	return h
}

func (f *Feeds) notify() {
	select {
	case f.changed <- struct{}{}:
	default:
	}
}

// Entries returns a copy of the entries held of feed k.
func (f *Feeds) Entries(k wire.FeedKey) [][]byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	if l := f.logs[k]; l != nil {
		return append([][]byte(nil), l.entries...)
	}
	return nil
}

// Len returns the held length of feed k.
func (f *Feeds) Len(k wire.FeedKey) uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	if l := f.logs[k]; l != nil {
		return l.held()
	}
	return 0
}

// Heads implements sync.Feeds.
func (f *Feeds) Heads() ([]wire.Head, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]wire.Head, 0, len(f.logs))
	for k, l := range f.logs {
		out = append(out, l.head(k))
	}
	return out, nil
}

// Changed implements sync.Feeds.
func (f *Feeds) Changed() <-chan struct{} { return f.changed }

// parseSigned checks a signed head of feed k and returns its length and hash.
func parseSigned(k wire.FeedKey, s []byte) (uint64, [32]byte, error) {
	var c [32]byte
	if len(s) != len(magic)+32+8+32+64 || string(s[:len(magic)]) != magic {
		return 0, c, fmt.Errorf("head encoding: %w", crowsync.ErrRejected)
	}
	body, sig := s[:len(s)-64], s[len(s)-64:]
	if !bytes.Equal(body[len(magic):len(magic)+32], k[:]) {
		return 0, c, fmt.Errorf("head of another feed: %w", crowsync.ErrRejected)
	}
	if !ed25519.Verify(ed25519.PublicKey(k[:]), body, sig) {
		return 0, c, fmt.Errorf("head signature: %w", crowsync.ErrRejected)
	}
	copy(c[:], body[len(magic)+40:])
	return binary.BigEndian.Uint64(body[len(magic)+32:]), c, nil
}

// VerifyHead implements sync.Feeds.
func (f *Feeds) VerifyHead(h wire.Head) (wire.Head, error) {
	n, c, err := parseSigned(h.Feed, h.Signed)
	if err != nil {
		return wire.Head{}, err
	}
	if h.Length > n {
		return wire.Head{}, fmt.Errorf("held length %d over signed length %d: %w", h.Length, n, crowsync.ErrRejected)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	l := f.logs[h.Feed]
	if l == nil {
		if f.allow != nil && !f.allow(h.Feed) {
			return wire.Head{}, crowsync.ErrUnknownFeed
		}
		return h, nil
	}
	if err := l.consistent(n, c); err != nil {
		return wire.Head{}, err
	}
	return h, nil
}

// consistent checks a validly signed (n, c) against what l knows.
func (l *log) consistent(n uint64, c [32]byte) error {
	switch {
	case n <= l.held() && l.chain[n] != c:
		return fmt.Errorf("signed head %d differs from stored entries: %w", n, crowsync.ErrFork)
	case n == l.sigLen && l.signed != nil && c != l.sigHash:
		return fmt.Errorf("two signed heads of length %d: %w", n, crowsync.ErrFork)
	}
	return nil
}

// ReadRange implements sync.Feeds.
func (f *Feeds) ReadRange(k wire.FeedKey, start, end uint64, maxBytes int) (wire.Range, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	l := f.logs[k]
	if l == nil || start >= l.held() {
		return wire.Range{}, crowsync.ErrNotFound
	}
	end = min(end, l.held())
	r := wire.Range{Head: l.head(k), Start: start}
	size := 0
	for i := start; i < end; i++ {
		e := l.entries[i]
		if len(r.Entries) > 0 && size+len(e) > maxBytes {
			break
		}
		size += len(e)
		r.Entries = append(r.Entries, append([]byte(nil), e...))
	}
	proof := append([]byte(nil), l.chain[start][:]...)
	for i := r.End(); i < l.held(); i++ {
		eh := sha256.Sum256(l.entries[i])
		proof = append(proof, eh[:]...)
	}
	for _, eh := range l.tail {
		proof = append(proof, eh[:]...)
	}
	r.Proof = proof
	return r, nil
}

// VerifyAndStore implements sync.Feeds.
func (f *Feeds) VerifyAndStore(r wire.Range) (wire.Head, error) {
	k := r.Head.Feed
	L, c, err := parseSigned(k, r.Head.Signed)
	if err != nil {
		return wire.Head{}, err
	}
	if r.End() > L || len(r.Proof) != 32*int(1+L-r.End()) {
		return wire.Head{}, fmt.Errorf("proof shape: %w", crowsync.ErrRejected)
	}
	// Recompute the chain from the proven prefix to the signed head.
	var cur [32]byte
	copy(cur[:], r.Proof)
	chain := [][32]byte{cur}
	for _, e := range r.Entries {
		cur = next(cur, sha256.Sum256(e))
		chain = append(chain, cur)
	}
	var tail [][32]byte
	for i := 32; i < len(r.Proof); i += 32 {
		var eh [32]byte
		copy(eh[:], r.Proof[i:])
		tail = append(tail, eh)
		cur = next(cur, eh)
	}
	if cur != c {
		return wire.Head{}, fmt.Errorf("range [%d,%d) of %s does not match its head: %w",
			r.Start, r.End(), k.Short(), crowsync.ErrRejected)
	}

	f.mu.Lock()
	l := f.logs[k]
	if l == nil {
		if f.allow != nil && !f.allow(k) {
			f.mu.Unlock()
			return wire.Head{}, crowsync.ErrUnknownFeed
		}
		l = &log{chain: [][32]byte{{}}}
	}
	h, changed, err := l.store(r, L, c, chain, tail)
	if err == nil {
		f.logs[k] = l
		h = l.head(k)
	}
	f.mu.Unlock()
	if changed {
		f.notify()
	}
	return h, err
}

// store adds the verified range to l after the consistency checks.
func (l *log) store(r wire.Range, L uint64, c [32]byte, chain, tail [][32]byte) (wire.Head, bool, error) {
	have := l.held()
	if r.Start > have {
		return wire.Head{}, false, fmt.Errorf("range starts at %d past held length %d", r.Start, have)
	}
	if err := l.consistent(L, c); err != nil {
		return wire.Head{}, false, err
	}
	// Everything proven that we already hold must be what we hold.
	for i := r.Start; i <= min(have, r.End()); i++ {
		if l.chain[i] != chain[i-r.Start] {
			return wire.Head{}, false, fmt.Errorf("entry %d differs from stored: %w", i, crowsync.ErrFork)
		}
	}
	// New entries proven against an older signed head must match the tail we
	// kept from the newer one.
	if L < l.sigLen {
		for i := have; i < r.End(); i++ {
			if sha256.Sum256(r.Entries[i-r.Start]) != l.tail[i-have] {
				return wire.Head{}, false, fmt.Errorf("entry %d differs from signed head %d: %w", i, l.sigLen, crowsync.ErrFork)
			}
		}
	}
	if r.End() <= have && L <= l.sigLen {
		return wire.Head{}, false, nil
	}
	for i := have; i < r.End(); i++ {
		l.entries = append(l.entries, append([]byte(nil), r.Entries[i-r.Start]...))
		l.chain = append(l.chain, chain[i-r.Start+1])
	}
	if L >= l.sigLen {
		// Adopt the newer signed head; keep the hashes past what we hold.
		if r.End() < have {
			// We hold more than the range: recompute the tail from our entries.
			tail = tail[have-r.End():]
		}
		l.signed, l.sigLen, l.sigHash, l.tail = r.Head.Signed, L, c, tail
	} else {
		l.tail = l.tail[max(r.End(), have)-have:]
	}
	return wire.Head{}, true, nil
}
