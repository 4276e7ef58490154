package feed

import (
	"errors"
	"fmt"
)

var (
	// ErrBadSignature is returned by Head.Verify, Proof.Verify and
	// Replicas.Apply when a head's signature does not verify against its key.
	ErrBadSignature = errors.New("feed: bad head signature")
	// ErrInvalidProof is returned by Proof.Verify and Replicas.Apply when the
	// entries and proof nodes do not hash to the signed tree hash, or when the
	// proof's shape does not match its range.
	ErrInvalidProof = errors.New("feed: invalid proof")
	// ErrMalformed is returned by the decoders (Head, Proof, ForkEvidence)
	// for input that is not a valid encoding.
	ErrMalformed = errors.New("feed: malformed encoding")
	// ErrForked is matched (errors.Is) by every *ForkError. Replicas.Apply
	// returns a *ForkError when it detects a fork and on every later call for
	// that feed until the operator deletes the replica.
	ErrForked = errors.New("feed: feed is forked")
	// ErrNotContiguous is returned by Replicas.Apply when a range starts after
	// the replica's stored prefix; request the missing entries first.
	ErrNotContiguous = errors.New("feed: range does not extend the stored prefix")
	// ErrUpgradeRequired is returned by Replicas.Apply when the proof's head is
	// longer than the replica's verified head but the proof does not prove the
	// extension (its Since is not the replica's head length).
	ErrUpgradeRequired = errors.New("feed: proof does not upgrade from the verified head")
	// ErrStaleHead is returned by Replicas.Apply for a proof against a head
	// shorter than the replica's verified head that would add entries the
	// replica cannot check against its newer head; ask for a proof against
	// the newer head instead.
	ErrStaleHead = errors.New("feed: proof is against an older head")
	// ErrWrongFeed is returned when a head or proof belongs to another feed
	// than the one it is used with (Log methods, Replicas.Apply with a head
	// of the author's own feed).
	ErrWrongFeed = errors.New("feed: wrong feed")
	// ErrOutOfRange is returned by the read and proof methods for ranges
	// beyond what is stored or beyond the head.
	ErrOutOfRange = errors.New("feed: range out of bounds")
	// ErrNotFound is returned by Replicas methods for a feed that is not held.
	ErrNotFound = errors.New("feed: feed not found")
	// ErrCleared is returned (wrapped, naming the entry) by Log.Read and
	// Replicas.Read for a range with an entry whose data was cleared
	// (Log.Clear, Replicas.Clear, or received cleared from a peer). Its
	// hashes are kept; ReadSparse returns them in its place.
	ErrCleared = errors.New("feed: entry data cleared")
	// ErrCorrupt is returned when stored data is inconsistent (a missing or
	// short record): the database was damaged or edited outside this package.
	ErrCorrupt = errors.New("feed: stored feed is corrupt")
)

// ForkError reports two validly signed heads of one feed that do not extend
// each other: the evidence that the author signed two different histories
// (a restored backup, a cloned machine). Replicas.Apply returns it; it is
// persisted (ForkEvidence) and the feed refuses further ranges.
type ForkError struct {
	Key   PublicKey
	Held  Head // the head the replica had verified
	Other Head // the conflicting head
}

func (e *ForkError) Error() string {
	return fmt.Sprintf("feed: fork of %s: head at length %d (tree %x) and head at length %d (tree %x) do not extend each other",
		e.Key, e.Held.Length, e.Held.TreeHash[:8], e.Other.Length, e.Other.TreeHash[:8])
}

// Is makes errors.Is(err, ErrForked) true for a *ForkError.
func (e *ForkError) Is(target error) bool { return target == ErrForked }
