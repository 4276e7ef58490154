// Package apply is the apply loop (SPEC §5): it applies the entries of the
// verified feed replicas held by package feed to this instance's tables,
// with Lamport clocks, version vectors and convergent conflicts.
//
// # The caller's contract
//
//  1. Build one Applier per instance with New over the instance's store.DB,
//     its feed.Replicas (Self = its own feed key, never applied), a
//     conflicts.Store and its instance id. Run Serve in the daemon's service
//     tree; shutdown is the context.
//  2. Give it FeedTrust, the registry's view of each feed key's membership
//     certificate (SPEC §2): only a certified feed is applied, and only its
//     entries naming the instance it is certified for.
//  3. Call Notify whenever a replica grows (the sync layer stored a range)
//     and whenever the registry's certificates or revocations change.
//     Notify never blocks; Serve also rescans every Rescan as a safety net.
//  4. OnApplied is called after each transaction commits, for every row it
//     changed, in order: the registry reloads when crow_instances rows arrive.
//  5. Nothing else writes the s/applied/ checkpoints or the n/apply/ and
//     n/parked/ keys.
//
// # Per entry: one transaction with its checkpoint and Lamport update
//
// For each replica feed, entries are applied in feed order from the
// checkpoint s/applied/<feed hex> (the next index). For every entry the loop
// stages, in one store transaction (store.Txn): the row change (store.TxnBatch.PutRow,
// which also queues the search index), the conflict records, the advance of
// the Lamport clock to max(local, remote)+1 and the checkpoint = index+1. Up
// to MaxBatch consecutive entries of one feed share a transaction (group
// commit, one fsync); the clock, the queue seq and the checkpoint are kept in
// memory while the batch is staged and written once before commit: the
// transaction is atomic and only a key's last value in it commits, so this
// is exactly the per-entry update. An entry is never committed without its
// checkpoint nor the checkpoint without it, so a crash neither re-applies
// nor skips. A
// conflict with the local Writer re-runs the batch (store.DB.Update, the
// store's one retry loop; the batch is staged again); post-commit effects
// (metrics, OnApplied) run only after a successful commit.
//
// An entry whose change record cannot be applied (unknown schema, malformed,
// no origin counter in its vector, carrying this instance's own id, or
// naming another instance than the one its feed is certified for) is parked
// under n/parked/<feed hex>/<index BE> with the reason and the raw entry,
// counted, logged, and the checkpoint moves on (Parked lists them).
//
// An entry whose data was cleared (feed's Clear: a forgotten memory's
// change; it reads as nil from Replicas.ReadSparse) is skipped: nothing is
// applied or parked, the checkpoint moves past it in the same transaction,
// and it is counted (Stats.Cleared, crow_apply_entries_total{outcome=
// "cleared"}). Clearing an entry already applied changes nothing here: what
// it wrote is the forget's to erase.
//
// # Feed trust: a feed is applied only while its key is certified
//
// A feed whose key has no valid, unrevoked membership certificate is parked
// as a whole, whoever relayed it: before each batch the loop asks
// Options.FeedTrust once. TrustUnknown (no certificate yet) and TrustRevoked
// skip the feed: nothing is applied or parked and its checkpoint stays, so a
// feed certified later is applied from where it stopped, and a revocation
// that lands mid-catch-up stops the feed at its next batch (the batch being
// committed is the last). A change of a key's trust is logged once; the
// gauge crow_apply_feeds_parked and Stats count the feeds skipped.
//
// # The rules
//
// A version of a row is (origin, lamport, own vv, deleted, data); (origin,
// vv[origin]) identifies it. Lamport clocks follow causality, so a version
// that dominates another has a higher lamport.
//
//   - Live row: the version with the highest (lamport, instance id) among all
//     versions applied, with the merge of all their vectors. So an incoming
//     vector that dominates the live one fast-forwards; one that the live
//     vector dominates (or equals) is a stale duplicate, skipped; a concurrent
//     one is merged: the higher (lamport, instance id) is live and the vectors
//     merge. max and merge do not depend on arrival order. A tombstone is a
//     version like any other, so an old update cannot resurrect a delete.
//   - Forgotten rows (SPEC §10; a forget is a tombstone with forgotten_at,
//     store.IsForget): a forget always wins and a forgotten row stays
//     forgotten. The live row is the highest forget by (lamport, instance
//     id) with the merge of every vector; an incoming forget applies over
//     any other version, an incoming version that is not a forget only
//     merges its vector (its data is dropped, no conflict record), every
//     record of the row is retracted and its apply state deleted (both hold
//     data). A function of the set of versions: it converges. Its limit: a
//     version whose feed entry was cleared (package forget) before this
//     instance applied it never merges its vector here, so the vectors of a
//     forgotten row may differ between instances by such versions; its data,
//     lamport and origin do not, and no later decision depends on the
//     difference (every later non-forget version is dropped anyway).
//   - crow_context (and sync_conflicts) rows: just that (last write wins by
//     (lamport, instance id) on the composite key), never conflict records.
//   - Conflict records: for two concurrent versions x ‖ y that are not
//     equivalent in wire form (same canonical data and tombstone flag, or
//     both tombstones), a record exists iff no other concurrent pair
//     (x', y') dominates it: x ≤ x' where x' has seen nothing of y's history
//     that x had not seen (min(x', y) ≤ x componentwise), and y ≤ y' where
//     y' has seen nothing new of x's (min(y', x) ≤ y). That is, a pair is
//     superseded only when each side's own line went on without news from
//     the other side; a merge (a version that saw anything new of the other
//     side) supersedes nothing. Dominance is a relation between the four
//     vectors only and it is transitive, so (1) the record set is a
//     function of the set of versions applied: every instance that has
//     applied the same entries holds the same records, whatever the order;
//     (2) a retracted pair is never recorded again; (3) a pair that is not
//     recorded is dominated by one that is (or by an equivalent pair: both
//     lines ended in the same data), which holds the newer version of each
//     line: a losing version leaves the records only when its own line's
//     newer version, which never saw the winner, takes its place.
//     Example: with A1 < A2 < A3 and B1 < B2 all concurrent to A's line only
//     (A3, B2) is recorded; a pair seen early, (A3, B1), is retracted when
//     B2 arrives (counted as superseded). A ‖ B, then E merging both, then
//     A2 continuing A without B: (A2, B) and (A2, E) are recorded — E does
//     not continue B against A2, since E saw A. Three mutually concurrent
//     versions give three records. The op is delete if exactly one side is
//     a tombstone, insert if both sides are independent creations (each
//     vector holds only its own origin), else update. The record id is
//     derived (conflicts.ID).
//
// To decide pairs without keeping every version forever, the loop keeps per
// row (n/apply/r/<table>/<row_id>, binary: statecodec.go) the versions that
// may still pair with a version not yet applied, and Seen, the highest
// counter applied per origin.
// A version x is dropped once a version y above it is a single step on top
// of it (y's vector minus y's own increment is at or below x's): for any
// z ‖ x, applied or not, (y, z) then dominates (x, z). The sides of a merge
// stay (a later version that saw one side but not the other pairs with the
// other). When only the live version is left, "closed" (every version below
// it has been applied: Seen covers its vector), and its own vector is the
// merged one, the key is deleted: the common, conflict-free case keeps no
// extra state and costs one missed read per entry.
//
// The rules are a pure function (rules.decide); the property test checks
// the loop against a brute-force computation over all versions.
package apply
