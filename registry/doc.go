// Package registry is the crow_instances registry (SPEC §7): which
// instances belong to this user, where to reach them, and whether they may
// connect.
//
// # Synced facts, local observations
//
// The crow_instances table is synced: a row registered on one machine
// replicates to every other through the feeds. A row (see Row) holds only
// identity facts — id, name, role, gateway_url, sync_addrs, public_key,
// created_at — and revocation (revoked, revoked_at). status and last_seen are
// each machine's own observations from its health probes and live in a
// local-only Observations store: were probe results written into the synced
// row, every probe would become a feed entry and machines probing the same
// peer would produce concurrent updates (conflicts). List and Get return the
// merged view (see Instance). A revoked row is never deleted, so its id
// cannot come back; its status is "revoked".
//
// # The caller's contract
//
//  1. Build the Registry with New (it loads the table into an in-memory
//     index and writes the mirror). Supply a Table over the store's
//     crow_instances rows and, to keep last_seen across restarts, an
//     Observations over a local-only key prefix.
//  2. Once the gateway and the sync listener are bound, call RegisterSelf so
//     the table contains this instance (ErrRevoked means this instance was
//     revoked elsewhere: stop).
//  3. After the apply loop applies crow_instances changes that arrived by
//     replication (after their transaction commits), call Reload. It rebuilds
//     the index, rewrites the mirror and emits Events.
//  4. The sync layer's gater asks IsAdmitted / IsAdmittedKey (lock-free
//     reads of the index), keeps Peers connected, and Subscribes to drop
//     connections on EventRevoked and dial on EventAdded/EventUpdated. It may
//     call SetSyncing while a peer session is active.
//  5. Run a Prober's Serve in the daemon's service tree.
//
// Every change of the table (local or by Reload) and every probe round
// rewrites $CROW_HOME/instances.json atomically (temp → fsync → rename);
// ReadMirror reads it without the database.
//
// # Registration
//
// Register(url) proves that the gateway at url belongs to our identity before
// storing anything: its /health must echo a fresh 32-byte challenge signed
// with the key our master seed derives for the instance id it reports
// (identity.InstancePublicKey, identity.VerifyChallenge), and carry our crow
// id. A new row takes the instance's advertised gateway_url (when it answers
// from here) and its reported created_at, so the row home writes for a
// satellite and the row the satellite writes for itself at start are
// byte-identical: replication treats the two inserts as equivalent, not as a
// collision. (This needs /health to report "gateway_url" and "created_at";
// without them the rows differ and the sync layer records an insert
// collision, whose winner is still a valid row.)
//
// Exactly one non-revoked home may be registered; that rule is checked
// against the local index, so two machines registering two different homes
// before they sync can still both succeed (Home then picks the earliest).
package registry
