// Package search is the bleve full-text index of memories and of the rows of the other synced
// tables (records: notes, sources, contacts, settings, blog posts, crow_context; records.go),
// kept in step with the store.
//
// # Consistency contract
//
//  1. Every row change committed to the store queues q/<seq> → <table>/<row_id> in the same
//     badger transaction (package store).
//  2. The Indexer reads q/ from the index's position + 1, reads the current row of each
//     entry of an indexed table (memories, RecordTables), and applies index/delete
//     operations together with the new position (internal key "crow_seq") in ONE bleve
//     batch. Batches are near-real-time (scorch's
//     unsafe_batch): a batch is searchable once Batch returns, and the persister writes it
//     in the background, napping persisterNap after each persist so the batches of a busy
//     period reach the disk merged, as one segment. Documents and position are persisted
//     together, in one snapshot.
//     Index.Seq is what searches see, Index.Durable what is on disk (the batch's persisted
//     callback). Searches never wait for a persist or its fsync.
//  3. Only q/ entries up to Durable are pruned from the store, by a pruner beside the
//     indexing loop (a prune never holds up indexing). A crash before a persist loses only
//     in-memory segments: the next Open reads the persisted position and the entries after
//     it are still queued, so they are indexed again.
//  4. On start, an index whose directory is missing, unreadable, of another mapping version, or
//     without a recorded position (a rebuild interrupted by a crash) is recreated and rebuilt
//     from the indexed tables at a badger snapshot; the position recorded is the snapshot's
//     q/ head, so later changes are picked up from q/.
//
// Indexing is idempotent (it always indexes the row's current state), so replaying entries
// after a crash is harmless and no change is skipped.
//
// Callers get read-your-writes with Index.WaitFor(ctx, seq), seq being a Row.Seq returned by
// the store or store.DB.QueueHead: it waits for the in-memory introduction of the batch, not
// for its persist.
//
// Indexing is background work: after a change the Indexer lingers (Linger) so a burst becomes
// one batch, and with Indexer.Foreground set (the daemon's clock.Quiet, touched by API writes
// and replication) it waits before each batch for a pause in that work (YieldPause, at most
// YieldMax). A WaitFor cuts both short, so a search never waits for them.
package search
