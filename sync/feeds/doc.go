// Package feeds adapts package feed (the author Log and the verified
// Replicas) to the sync.Feeds interface the replication Node needs: it is
// what makes crow's real signed Merkle feeds replicate.
//
// # Caller contract
//
//  1. Open the feed storage, the Log (own feed) and the Replicas on it, then
//     New(log, replicas, opts).
//  2. Give the store's Writer Journal(log) instead of the log itself, so that
//     every committed local append signals Changed (the Node then announces
//     the new head to connected peers: live push).
//  3. Give the Feeds to sync.NewNode. The Node calls Heads, VerifyHead,
//     ReadRange and VerifyAndStore from its loop goroutine.
//  4. Options.OnStored is called after every range that was verified and
//     durably stored in a replica (the daemon's apply loop wakes on it). It
//     runs on the Node's goroutine and must not block.
//
// # Heads
//
// Heads announces the own feed (once it has at least one entry: an empty
// feed has no signed head) and every replica: Length is the contiguous
// entries stored, Signed the newest verified signed head, which may be longer
// than Length when only a prefix of a newer batch was fetched.
//
// A forked replica is still announced with what it holds (its entries were
// verified against a validly signed head, and announcing that head lets every
// other instance detect the fork too), and its held prefix is still served;
// but package feed refuses every further range for it (VerifyAndStore returns
// ErrFork) until the operator deletes the replica.
//
// # Proofs and partial prefixes
//
// A request carries only [start, end): the server does not know the newest
// head the requester holds. ReadRange therefore proves the range against the
// server's newest head with Since = start. That proof has exactly the nodes of
// a plain range proof (Since cuts nothing outside the entries), so any holder
// can build it, including a relay that holds only a prefix of its head. The
// receiver's Replicas.Apply accepts it when its held head is the proof's head,
// when its held head ends inside the range (the tree at that length is rebuilt
// from the entries), and otherwise (the range ends before the held head: a
// partial prefix under a newer or an older head from another peer) by
// re-proving the entries against the held head from the proof's nodes and the
// right-hand nodes it verified before, keeping the held head.
//
// # Cleared entries
//
// An entry cleared in the own feed or a replica (feed's Clear: a forgotten
// memory) is served as its Merkle leaf (wire.Range.Cleared, sent as
// wire.TypeDataCleared) and verified and stored as cleared by the receiver
// (Replicas.ApplySparse): a replica that syncs after the clear never
// receives the data, and every proof still verifies. A cleared claim whose
// leaf is not the entry's is rejected (sync.ErrRejected) like tampered data.
//
// # Errors
//
// VerifyHead and VerifyAndStore map package feed's errors onto sync's:
// ErrInvalidProof, ErrBadSignature, ErrMalformed and ErrWrongFeed wrap
// sync.ErrRejected (the peer sent bad data); a *feed.ForkError wraps
// sync.ErrFork; a feed outside Options.Allow, or the own feed offered by a
// peer, wraps sync.ErrUnknownFeed. ErrUpgradeRequired and ErrStaleHead (a
// proof shape this replica cannot use yet, typically from a peer whose head
// is older than the one held) wrap sync.ErrStale: not the peer's fault, and
// not a local failure either; the Node asks that peer again when it announces
// a newer head. ErrNotContiguous and storage errors are returned as plain
// errors, so the Node retries after its RetryHold.
package feeds
