// Package feed is crow's signed append-only log (SPEC §4): a Hypercore-style
// Merkle tree over entries with one Ed25519 signature per append batch.
//
// # Structure
//
// Entries are leaves of a binary Merkle tree indexed as a flat tree (leaf i
// at index 2i, parents at odd indexes). With H = SHA-256:
//
//	leaf   = H(0x00 ‖ uint64BE(len(data)) ‖ data)
//	parent = H(0x01 ‖ uint64BE(bytes covered) ‖ left ‖ right)
//	tree   = H(0x02 ‖ for each root, left to right: hash ‖ uint64BE(index) ‖ uint64BE(bytes))
//
// A Head is the author's signature over SignableBytes:
// "crow-feed-v1" ‖ public key ‖ tree hash ‖ uint64BE(length). A Proof
// carries the hashes needed to rebuild the tree hash of a head from a range
// of entries; it can also prove that the head extends an older one (Since).
// Heads, proofs and fork evidence have frozen, versioned binary encodings
// pinned by golden tests (testdata/golden.txt).
//
// # Author contract (Log)
//
//  1. OpenLog(storage, privateKey) on start: it loads the stored feed (and
//     checks it against its signed head) or starts an empty one.
//  2. In the daemon's write transaction, Stage(txn, entries) writes the
//     entries, their tree nodes and the new signed head into txn. The log
//     itself does not change.
//  3. Commit txn (durably). Only if the commit succeeded, call the returned
//     commit func: it advances the in-memory head. If the txn is discarded
//     or fails, drop the func; the log is as before Stage.
//  4. Call commit before the next Stage. A Stage that supersedes an
//     uncommitted one makes the old commit func panic, since both
//     transactions wrote the same entry indexes.
//
// Append(entries) is steps 2–3 in one call on the log's own storage.
//
// # Replica contract (Replicas)
//
//  1. Receive a peer's heads; ObserveHead checks each signature and reports
//     a head that contradicts what is held (a fork).
//  2. Ask the peer for the range [stored length, …) with a proof against
//     its head, Since = the length of the head held (0 if none). A server
//     that does not know the held head may prove with Since = Start: Apply
//     then re-proves a prefix against the held head (see Apply).
//  3. Apply(proof, entries) verifies everything before storing: hashes the
//     entries, rebuilds the tree with the replica's own roots and the proof
//     nodes, checks the tree hash and the one signature, and that the new
//     head extends the held one. Only then it writes entries, nodes and the
//     new state (head last).
//  4. The returned State is the new checkpoint: request from State.Length.
//     Entries below State.Length are final and may be applied and served
//     onward (Read, Proof).
//
// On error nothing is stored and the checkpoint does not move. The caller
// logs the rejection (security log and metric) and, by error:
//   - ErrInvalidProof, ErrBadSignature: drop the data; the peer is faulty or
//     hostile.
//   - ErrNotContiguous: request from State.Length first.
//   - ErrUpgradeRequired, ErrStaleHead: request a proof with Since = the
//     held head's length, against a head at least as long as the held one.
//   - *ForkError (errors.Is ErrForked): the author signed two histories.
//     Both heads are persisted as evidence; the feed refuses every further
//     range until the operator acts (Replicas.Delete starts it over).
//
// # Clearing entries (forgetting)
//
// Log.Clear and Replicas.Clear drop the data of entries while keeping every
// tree node, as Hypercore's clear does:
//
//   - The data is deleted from the feed's storage in one transaction (the
//     record is rewritten without it; the KV reclaims the old value's space
//     when it compacts). Read of a range with a cleared entry returns
//     ErrCleared; ReadSparse returns nil data and the entry's leaf (hash and
//     size) in its place.
//   - The leaf hash, its size and every parent stay, so the stored length,
//     the head and its signature do not change, appends go on, and proofs of
//     every entry, the cleared one included (Proof.VerifySparse), verify.
//   - A cleared entry is served as its leaf (ReadSparse + Proof); a replica
//     verifies such a range against the signed head like any other
//     (ApplySparse: a leaf that is not the entry's is ErrInvalidProof) and
//     stores it cleared, so a peer that replicates a feed after the clear
//     never receives the data. An entry held is never rewritten, so a
//     cleared entry is not refilled by a range that carries its data.
//   - Clearing is local. It does not reach the peers that replicated the
//     entry before (each clears its own copy when told to, e.g. by a forget
//     record), nor backups of the database, nor the KV's older versions
//     until compaction: anyone who held the entry before may still have it.
//   - Clear is idempotent; an entry with no data has nothing to clear and
//     reads as empty.
//   - The leaf proves what the entry was, not that its author asked for it
//     to be cleared: any holder knows every leaf and may serve an entry
//     cleared, and the replica then holds it cleared for good. So a peer can
//     withhold an entry (as it could by not serving the feed); it cannot
//     alter one. Which entries are cleared is decided above this package
//     (a forget record), on every instance.
//
// # Storage
//
// Storage has an in-memory implementation (MemStorage) and a key-value one
// (KVStorage) over a small KV interface, which the daemon's store.DB
// implements: feeds share its database under keys "f/…" (layout in
// kvstorage.go), so a local write stages its feed entries in the row's
// transaction (Log.Stage). A write stores its entries under one key per chunk of 16
// it touches (the chunk's base, or a part from the entry it starts at), each entry
// framed with the tree nodes it completed; a cleared entry keeps only those nodes (no
// new key). An append writes its own entries only: it neither reads nor rewrites what
// the chunk holds already, and the author's Log builds its records already framed, so
// they are not copied again. A write
// larger than one transaction is split, with the state (head)
// written last, so a crash leaves the previous state.
package feed
