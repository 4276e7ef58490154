package sync

import (
	"errors"

	"github.com/crow-sync/crow/sync/wire"
)

// FeedKey, Head and Range are the wire types the Feeds interface speaks.
type (
	FeedKey = wire.FeedKey
	Head    = wire.Head
	Range   = wire.Range
)

// Errors a Feeds implementation returns (wrapped with %w) so the Node can tell
// a hostile peer from a local problem. Package feed's adapter maps its own
// errors onto these.
var (
	// ErrRejected: a head or range failed verification (bad signature, bad
	// proof, entry not matching). The Node logs a security event, counts it and
	// keeps syncing other feeds and peers.
	ErrRejected = errors.New("sync: verification failed")
	// ErrFork: a validly signed head or range conflicts with a verified head of
	// the same feed (not an extension of it). The feed package records the
	// evidence; the Node stops that feed with that peer and raises an event.
	ErrFork = errors.New("sync: feed forked")
	// ErrUnknownFeed: VerifyHead was given a feed this instance does not
	// replicate (not a registered, non-revoked instance). The head is ignored.
	ErrUnknownFeed = errors.New("sync: feed not replicated")
	// ErrNotFound: ReadRange was asked for a feed not held or a start at or past
	// its length. The peer gets a not-found answer.
	ErrNotFound = errors.New("sync: range not held")
	// ErrStale: a range checked out on its own terms but is proven against a
	// head this replica cannot use yet (typically a peer's older head, when
	// the nodes to re-prove it against the newer head held are not at hand).
	// Not the peer's fault: the Node asks that peer again once it announces a
	// newer head, and meanwhile asks the others.
	ErrStale = errors.New("sync: range proven against an unusable head")
)

// A Head here is {feed key, held length, latest verified signed head}: Length
// counts the contiguous entries stored from index 0, and Signed (package
// feed's encoding, opaque to sync) may cover more entries than that when only
// a prefix of a newer batch was fetched. ReadRange proves entries against
// Signed, so a replica must keep what it needs to prove its prefix against the
// newest signed head it holds (the right-hand subtree hashes of the last
// proof it verified).
//
// Feeds is what replication needs from package feed: every feed held (the own
// one and the verified replicas), as signed heads and provable ranges.
// Implementations must be safe for concurrent use (the Node calls it from its
// loop goroutine while the local write path appends). Slices passed in are
// owned by the callee afterwards; slices returned are not modified later.
type Feeds interface {
	// Heads returns the verified signed head of every feed held, own included.
	Heads() ([]Head, error)

	// Changed returns a channel that receives a value after any head advances
	// (own append or stored replica range). It must be buffered (capacity 1)
	// and sent to without blocking: a pending value means "call Heads again".
	Changed() <-chan struct{}

	// VerifyHead checks a head a peer announced: h.Signed is signed by the key
	// h.Feed and covers at least h.Length entries. It returns the head as verified, or
	// an error wrapping ErrRejected, ErrFork (it conflicts with a stored head,
	// e.g. same length and different tree hash) or ErrUnknownFeed. It may
	// record fork evidence but stores nothing else.
	VerifyHead(h Head) (Head, error)

	// ReadRange returns entries [start, end) of feed, or a non-empty prefix of
	// them whose entries total at most maxBytes (always at least one entry),
	// with a proof against the feed's newest signed head (r.Head, whose Length
	// is the held length as in Heads). Asking
	// past the head returns what exists; a start at or past the length, or a
	// feed not held, returns ErrNotFound. An entry whose data was cleared
	// (forgotten) is returned as nil with its leaf in r.Cleared.
	ReadRange(feed FeedKey, start, end uint64, maxBytes int) (Range, error)

	// VerifyAndStore verifies r (signature of r.Head, proof of r.Entries
	// against it, with the leaves of r.Cleared for the cleared entries, r.Head
	// extending the stored head) and, only if all of it verifies, stores the
	// entries not yet held in one transaction (cleared ones as cleared). r.Start
	// must be at most the stored length. It creates the replica of a feed not
	// held yet (when the feed is one to replicate). It returns the feed's
	// head after the store (held length, newest verified signed head), or an
	// error wrapping ErrRejected, ErrFork,
	// ErrUnknownFeed, or another error for local failures.
	VerifyAndStore(r Range) (Head, error)
}
