// Package store is crow's badger database: tables as keyspaces, row envelopes with version
// vectors, the persisted Lamport counter (sync_state), a durable row-change queue for derived
// indexes, and the batched durable local write path.
//
// # Keyspace
//
// store owns these prefixes of the shared badger DB (feed owns f/):
//
//	t/<table>/<row_id>      row envelope JSON (see Row)
//	s/lamport               local Lamport counter, uint64 big-endian
//	s/seq                   last allocated q/ sequence number, uint64 big-endian
//	s/applied/<feed hex>    next feed index to apply for that replica, uint64 big-endian
//	s/updated_at            time sync_state last changed, Unix nanoseconds big-endian
//	q/<seq BE>              "<table>/<row_id>" NUL flags: the row changed at seq (for search
//	                        and others); flags (queue.go) say whether that version is a forget's
//	                        tombstone; entries written before flags have no NUL and no flags
//	s/queue-pruned          every q/ entry below this seq is deleted (the last prune's end)
//	m/schema                store schema version
//	m/counts, m/count/      maintained row counts per table, state and counted field
//	                        (counts.go), written in the transaction of the rows they count
//
// # The local write path (Writer)
//
// A caller's Write is handed to the one goroutine running Writer.Serve. For every batch of
// pending writes that goroutine:
//
//  1. opens one transaction (through DB.Update's retry loop: a batch that conflicts with
//     another row writer is re-run from step 2);
//  2. for each caller, in arrival order, reads each affected row (seeing the rows written by
//     earlier mutations of the same batch), runs the default op checks and the caller's Check;
//     a failing caller is answered with its error and drops out without touching the batch;
//  3. for each surviving mutation bumps s/lamport, bumps vv[self], builds the row envelope and
//     its change record, allocates a q/ seq;
//  4. writes rows, q/ entries, s/lamport, s/seq into the transaction, and (DB.update, just
//     before the commit) the changes of the maintained row counts under m/count/;
//  5. calls Journal.Stage once with the batch's change records, in order (one entry per
//     row; a WriteEntry call's rows in one batch record, see ParseChanges);
//  6. commits (SyncWrites: fsync) — if that fails every caller gets the error and nothing is
//     visible; a batch too large for one transaction is split in two and each half re-run;
//  7. calls the journal's commit func, publishes the new queue head, then acknowledges callers.
//
// So an acknowledged write is durable and is in the feed, and concurrency costs one fsync per
// batch (group commit), not per write.
//
// # Transactions: Txn, View and Update
//
// Callers never see badger. DB.View and DB.Update hand their fn a *Txn, store's transaction,
// valid only during fn. Its row methods (GetRow, GetRows, PutRow, ScanRows, ScanQueue,
// ObserveLamport, Applied/SetApplied, BeginBatch) read and write store's keyspace; its raw key
// methods (Get, Set, Delete, Iterate, IterateKeys) serve packages that keep their own data in
// the database under their own prefixes (feed under f/, the others under n/) and refuse
// store's prefixes (ErrReservedKey). WriteBatch is the non-atomic bulk variant (feed's large writes).
//
// DB.Update is the one retry loop: it re-runs fn (up to 20 times) when the commit conflicts,
// and returns ErrConflict if it never got through. Because PutRow allocates a q/ sequence
// number from s/seq, any two transactions that write rows conflict and are serialised: queue
// order is commit order. After commit Update publishes the new queue head, so the search
// indexer sees the rows at once. Errors from badger are translated: a missing key is ok=false
// (raw Get) or ErrNotFound (GetRow), an oversized transaction is ErrTooLarge.
package store
