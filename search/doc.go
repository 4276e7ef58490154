// Package search is the bleve full-text index of memories, kept in step with the store.
//
// # Consistency contract
//
//  1. Every row change committed to the store queues q/<seq> → <table>/<row_id> in the same
//     badger transaction (package store).
//  2. The Indexer reads q/ from the index's recorded position + 1, reads the current row of
//     each memories entry, and applies index/delete operations together with the new position
//     (internal key "crow_seq") in ONE bleve batch. Bleve (scorch) returns from Batch once the
//     batch is persisted, so documents and position are durable together.
//  3. Only then are q/ entries up to that position pruned from the store.
//  4. On start, an index whose directory is missing, unreadable, of another mapping version, or
//     without a recorded position (a rebuild interrupted by a crash) is recreated and rebuilt
//     from the memories table at a badger snapshot; the position recorded is the snapshot's
//     q/ head, so later changes are picked up from q/.
//
// Indexing is idempotent (it always indexes the row's current state), so replaying entries
// after a crash is harmless and no change is skipped.
//
// Callers get read-your-writes with Index.WaitFor(ctx, seq), seq being a Row.Seq returned by
// the store or store.DB.QueueHead.
package search
