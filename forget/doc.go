// Package forget carries out forgets (SPEC §10: "erase the content of every version of a
// memory from every instance"). memory.Service.Forget writes the forget: the memories row
// becomes a tombstone of only {"id","forgotten_at"} (store.ForgetData), an ordinary change
// record that replicates like any write, and that the apply loop lets win over every
// other version of the row, for good (sync/apply). Every instance runs a Forgetter, which
// erases the rest when it sees a forgotten row, however late it sees it.
//
// # The caller's contract
//
//  1. Build one Forgetter per instance with New (Home set on the home instance, with Shred
//     = anchor.ShredMemoryKey) and run Serve in the daemon's service tree.
//  2. Call Notify when a replica grows (the sync layer stored a range).
//  3. Nothing else writes under n/forget/ or the queue consumer "forget".
//
// # What a Forgetter erases, per forgotten memory, idempotently
//
// It follows the store's change queue as the registered consumer "forget" (so a restart,
// or an instance offline for weeks, resumes from its position; on a first start it finds
// the memories forgotten before in the memories table). For a newly forgotten memory:
//
//  1. Its conflict records (conflicts.EraseRowTxn: they hold the winning and losing data)
//     and its apply state (the versions kept to pair conflicts, with their data).
//  2. The content of every memory_versions row of it held here. Home rewrites each row
//     through the Writer (a replicated update; the version keeps number, memory id,
//     project, content hash, created_at, origin, event hash, supersedes and superseded_by,
//     and gets forgotten_at = the forget's: memory.ForgetVersion); another instance
//     rewrites the row in place, keeping its envelope, with the same data, until home's
//     rewrite arrives. The content hash is kept so the event record still recomputes to
//     the event hash (proofs and evidence roots verify); it is a SHA-256 of the content,
//     so it confirms a guessed content. A version with content that arrives later (home's
//     numbering racing the forget) is erased when the queue shows it.
//  3. Home only: its data key (Shred), so its ciphertext on chain decrypts with nothing.
//  4. Every feed entry that carries its content, in the own feed and every replica: a
//     memories change record of the row that is not the forget itself (inserts, edits,
//     deletes, whose tombstone kept the data), and a memory_versions record with content
//     of the memory (in a batch record: any of its records). Home first re-writes the other
//     rows of a batch entry of its own feed it is about to clear (home's numbering writes
//     several memories' versions in one entry), so their current versions are in a new
//     entry; a replica's copy is cleared as is, and home's re-publish reaches its peers
//     like any write. Entries are cleared (feed's Clear): the Merkle tree keeps their
//     hashes, so every proof still verifies and a peer that syncs later receives the
//     leaf, never the data. Own-feed clears run on the Writer's goroutine between batches
//     (store.Writer.Do), never between a Stage and its commit. A new forget scans every
//     entry held; afterwards, while any memory is forgotten, entries that arrive later
//     (a peer's edit made before it saw the forget) are scanned as they come (Notify, and
//     every Rescan), from a position kept per feed under n/forget/feed/.
//  5. The search index drops the document itself (the indexer deletes a tombstone's).
//  6. Then, debounced (Debounce after the last erasure, so a burst compacts once):
//     search.Index.Compact (one merged segment) and store.DB.Compact (the newest value log
//     file closed, memtables flushed, levels flattened, the value log GC run until nothing
//     is left), so no older copy stays in the files under $CROW_HOME/db and
//     $CROW_HOME/index. A pending compaction survives a restart (n/forget/compact).
//
// # The guarantee, and its limits
//
// Within seconds of applying the forget (the debounce plus the feed scan and the
// compaction, which grow with the store: about 15 s at 100,000 memories; see
// docs/ARCHITECTURE.md, Forgetting), an instance holds no copy of the memory's content in any file of
// its database or search index: not in a row, a tombstone, a version, a conflict record,
// a feed entry, the index, nor an older badger or bleve file. Number, event hash, content
// hash and forgotten_at remain. What it does not reach:
//
//   - an instance that has not applied the forget yet: it forgets when it does (when it
//     comes back, however late); until then it holds the content;
//   - backups and copies of $CROW_HOME made before (a restored backup resurrects nothing,
//     since the forget wins on apply, but it holds the content until its Forgetter runs);
//   - the device: files badger and bleve delete are unlinked, not overwritten, so their
//     blocks may remain until reused (and swap, snapshots, the OS page cache);
//   - what left crow: answers already given to clients, exports, logs of a client;
//   - ciphertexts anchored on chain in format 1 (under the seed key, before per-memory data
//     keys): they still decrypt with the seed; format 2 ones do not;
//   - entries parked by the apply loop (unknown schema or uncertified author: n/parked/)
//     are not scanned;
//   - text derived from the memory elsewhere (a Project State item someone wrote from it);
//   - a read transaction open across the compaction keeps the versions it may read until
//     it ends; they go at the next compaction (the next forget, or the next start if one
//     is pending).
package forget
