// Package conflicts keeps the sync_conflicts records (SPEC §5, §6) and the
// notifications that point the operator at them.
//
// # Records
//
// A Conflict is one pair of concurrent versions of a row that really differ:
// the version that is live (the winner, higher (lamport, instance_id)) and the
// version it overwrote (the loser). Its id is derived (ID) from the table, the
// row id and the two versions' identities, so every instance that detects the
// same pair writes the same record, and writing it twice is a no-op. Records
// are derived, local state: each instance computes them from the versions it
// has applied (package sync/apply), so they need no replication; a later
// issue replicates resolutions keyed by the same id (Resolved, ResolvedAt are
// there for it).
//
// # The caller's contract
//
//  1. The apply loop writes and retracts records inside its own store.Txn
//     with UpdateRowTxn (or PutTxn, DeleteTxn, RetractTxn one at a time),
//     reading a row's record ids and vectors with RowIndexTxn (the full
//     records with ForRowTxn); it commits through store.DB.Update, which
//     re-runs the transaction on conflicts (these writes conflict with
//     MarkRead on the open-notification pointer).
//  2. PutTxn raises a notification only when the record is new and no unread
//     conflict notification exists: one notification per burst of conflicts.
//  3. Readers use Get, List, Notifications and MarkRead (each its own
//     transaction). All methods are safe for concurrent use.
//
// # Keyspace (prefixes of the shared store DB owned by this package)
//
//	n/conflicts/c/<id>                         Conflict JSON
//	n/conflicts/r/<table>/<row_id>             the row's record ids and vectors, sorted by id
//	                                           (binary, store.go; a JSON id array from earlier builds is read)
//	n/notifications/i/<id>                     Notification JSON
//	n/notifications/seq                        last notification number, uint64 BE
//	n/notifications/open/<kind>                id of the unread notification of kind
package conflicts
