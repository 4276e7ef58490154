package federation

import (
	"container/heap"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/crow-sync/crow/clock"
)

// DefaultReplayCacheSize is the number of live tokens a Verifier remembers.
// A token is remembered until it can no longer verify (its expiry plus
// MaxSkew, at most MaxLifetime+MaxSkew after it was accepted), so the cap
// allows a sustained 100,000 / 5.5 min ≈ 300 accepted tokens a second. An
// entry costs about 100 bytes.
const DefaultReplayCacheSize = 100_000

var (
	// ErrReplayed is returned by a Verifier for a token it has already
	// accepted: each token is good for one request.
	ErrReplayed = errors.New("token already used (replay)")
	// ErrReplayCacheFull is returned by a Verifier when it remembers
	// DefaultReplayCacheSize live tokens: it refuses new tokens rather than
	// forget a live one, which could then be replayed.
	ErrReplayCacheFull = errors.New("too many live tokens; try again shortly")
)

// ReplayCache remembers the tokens a verifier accepted, each until it
// expires (plus MaxSkew), so that no token is accepted twice. It holds at
// most its size of entries and refuses new tokens when full. It reads the
// time from its clock. Safe for concurrent use.
type ReplayCache struct {
	clk  clock.Clock
	size int

	// persist, if set, records each admitted token before Admit returns
	// (a ReplayLog); an error refuses the token.
	persist func(e ReplayEntry, live func() []ReplayEntry) error

	mu   sync.Mutex // guards seen and byEnd
	seen map[nonceKey]struct{}
	// byEnd orders the entries of seen by the time they may be forgotten.
	byEnd endHeap
}

// nonceKey names a token: its issuer and nonce. Only tokens whose signature
// verified are recorded, so an issuer cannot use up another's nonces.
type nonceKey struct {
	issuer string
	nonce  [nonceLen]byte
}

type entry struct {
	key nonceKey
	end time.Time
}

// NewReplayCache returns an empty cache on clk (nil: clock.System) holding
// at most size entries (size ≤ 0: DefaultReplayCacheSize).
func NewReplayCache(clk clock.Clock, size int) *ReplayCache {
	if size <= 0 {
		size = DefaultReplayCacheSize
	}
	return &ReplayCache{clk: clock.Or(clk), size: size, seen: make(map[nonceKey]struct{})}
}

// Admit records the token with claims c, which Verify accepted, and
// reports ErrReplayed if it was recorded before and has not expired since,
// or ErrReplayCacheFull if the cache has no room for it.
func (r *ReplayCache) Admit(c Claims) error { return r.admit(c, r.clk.Now()) }

// admit is Admit at now.
func (r *ReplayCache) admit(c Claims, now time.Time) error {
	key := nonceKey{issuer: c.Issuer, nonce: c.Nonce}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.expireLocked(now)
	if _, ok := r.seen[key]; ok {
		return fmt.Errorf("%w: issuer %q, expires %s", ErrReplayed, c.Issuer, c.Expiry.Format(time.RFC3339))
	}
	if len(r.seen) >= r.size {
		return fmt.Errorf("%w (%d remembered)", ErrReplayCacheFull, len(r.seen))
	}
	end := c.Expiry.Add(MaxSkew)
	if r.persist != nil {
		if err := r.persist(ReplayEntry{Issuer: c.Issuer, Nonce: c.Nonce, End: end}, r.liveLocked); err != nil {
			return fmt.Errorf("recording the token against replays: %w", err)
		}
	}
	r.seen[key] = struct{}{}
	heap.Push(&r.byEnd, entry{key: key, end: end})
	return nil
}

// liveLocked lists the entries remembered (r.mu held).
func (r *ReplayCache) liveLocked() []ReplayEntry {
	out := make([]ReplayEntry, len(r.byEnd))
	for i, e := range r.byEnd {
		out[i] = ReplayEntry{Issuer: e.key.issuer, Nonce: e.key.nonce, End: e.end}
	}
	return out
}

// Restore remembers entries (a ReplayLog's, at open) as if admitted, and
// from then on persists every admitted token with persist (nil: none),
// which is given the entries remembered (to rewrite a log).
func (r *ReplayCache) Restore(entries []ReplayEntry, persist func(e ReplayEntry, live func() []ReplayEntry) error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range entries {
		key := nonceKey{issuer: e.Issuer, nonce: e.Nonce}
		if _, ok := r.seen[key]; ok {
			continue
		}
		r.seen[key] = struct{}{}
		heap.Push(&r.byEnd, entry{key: key, end: e.End})
	}
	r.persist = persist
}

// Len returns the number of tokens remembered now.
func (r *ReplayCache) Len() int {
	now := r.clk.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.expireLocked(now)
	return len(r.seen)
}

// expireLocked forgets the tokens that Verify refuses as expired at now
// (expiry ≤ now − MaxSkew). r.mu must be held.
func (r *ReplayCache) expireLocked(now time.Time) {
	for len(r.byEnd) > 0 && !r.byEnd[0].end.After(now) {
		e := heap.Pop(&r.byEnd).(entry)
		delete(r.seen, e.key)
	}
}

// endHeap is a min-heap of entries by end.
type endHeap []entry

func (h endHeap) Len() int           { return len(h) }
func (h endHeap) Less(i, j int) bool { return h[i].end.Before(h[j].end) }
func (h endHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *endHeap) Push(x any)        { *h = append(*h, x.(entry)) }
func (h *endHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}
