// Package sync replicates feeds between crow instances (SPEC §5).
//
// It is split in three layers:
//
//   - sync/wire: the frozen binary message format and framing;
//   - sync/transport: sessions between instances, over libp2p (TCP, Noise,
//     yamux, an admission gater) or in memory for tests;
//   - sync/protocol: the replication state machine, pure and single-threaded.
//     It links no network library: it sees peers as opaque protocol.PeerID
//     strings, converted from and to transport ids in this package.
//
// This package composes them: a Node drives one protocol.Machine from one
// goroutine (Serve), feeding it transport events, head changes of the local
// Feeds and clock ticks, and carrying out its output (verify+store ranges,
// serve ranges, send messages, dial peers with backoff). The Feeds interface
// is what it needs from package feed; it does not import feed or store.
//
// Applying replicated entries to the tables is not done here: the apply loop
// reads the replicas from package feed.
package sync
