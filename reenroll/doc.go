// Package reenroll is the recovery of an instance that runs from a restored
// or cloned copy of its $CROW_HOME (SPEC §4 "Fork detection"): the own feed
// forked, so local writes are refused (Refusal) until the copy takes a new
// instance id and key, certified by home through an invitation (Start), and
// the writes it made on the fork branch are replayed as new writes under
// the new identity (Replayer).
//
// The fork branch is what the copy's old feed holds after the common prefix
// with the genuine branch. The copy cannot see the genuine branch while it
// is its own key (the own feed is never replicated from peers); after the
// new identity the old key is a peer's feed like any other. So at the first
// start under the new identity (Archive, before replication starts) the old
// feed's entries are moved aside (n/reenroll/entry/) and the old feed is
// deleted; replication then fetches the genuine branch from peers, and the
// Replayer compares it entry by entry with the archive: the first entry
// that differs is the end of the common prefix. Every row a fork-branch
// entry wrote is written again by the new identity (its current local
// state, unless the new identity wrote it already): nothing lost; rows
// written only on the genuine branch arrive through the old feed; rows of
// the common prefix are not written again: nothing duplicated.
package reenroll
