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
//	q/<seq BE>              "<table>/<row_id>": the row changed at seq (for search and others)
//	m/schema                store schema version
//
// # The local write path (Writer)
//
// A caller's Write is handed to the one goroutine running Writer.Serve. For every batch of
// pending writes that goroutine:
//
//  1. opens one badger transaction;
//  2. for each caller, in arrival order, reads each affected row (seeing the rows written by
//     earlier mutations of the same batch), runs the default op checks and the caller's Check;
//     a failing caller is answered with its error and drops out without touching the batch;
//  3. for each surviving mutation bumps s/lamport, bumps vv[self], builds the row envelope and
//     its change record, allocates a q/ seq;
//  4. writes rows, q/ entries, s/lamport, s/seq into the transaction;
//  5. calls Journal.Stage once with the batch's change records, in order;
//  6. commits (SyncWrites: fsync) — if that fails every caller gets the error and nothing is
//     visible;
//  7. calls the journal's commit func, publishes the new queue head, then acknowledges callers.
//
// So an acknowledged write is durable and is in the feed, and concurrency costs one fsync per
// batch (group commit), not per write.
//
// # Writing rows in your own transaction
//
// The apply loop and home-written tables use GetTxn, PutRowTxn and the sync_state helpers
// inside their own transaction. Because PutRowTxn allocates a q/ sequence number from s/seq,
// any two transactions that write rows conflict (badger.ErrConflict) and are serialised: queue
// order is commit order. Use DB.Update, which retries conflicts and publishes the queue head
// after commit; if you commit a raw badger transaction yourself, call DB.NotifyQueue after it.
package store
