// Package daemon builds a crow instance's tree of parts and runs it: the one
// place that composes the packages. cmd/crow parses flags and calls New and
// Serve; tests (see package daemon/cluster) call them with Deps that swap
// the sync transport, the store and the clock.
//
// # Stages
//
// New builds the tree in four stages, each using only what the earlier ones
// built (no forward references; the two signals that point "up" the tree
// are small types made before either end, see below):
//
//  1. storage: the serve lock, the badger store, the own feed and the
//     replicas, the own-feed signal (feeds.Changes), the Writer (whose
//     journal raises that signal), the search index and its indexer.
//  2. domain: the registry, memories, conflict records and recovery, the fork
//     notifier, projects, the prober.
//  3. replication: the apply loop (which reloads the registry after a
//     crow_instances row arrives), the sync Feeds (the registry's
//     revoked-feed rule, waking the apply loop), the transport (the
//     registry's admission rule and the operator's pause switch) and the
//     sync node (forks go to the fork notifier).
//  4. edges: the federation client (peers and home from the registry), the
//     anchoring chain and, on home, its worker, the gateway listener and the
//     gateway itself (buildGateway: all of the gateway's wiring).
//
// The peer signal (registry events and the pause switch → FollowPeers) is
// the only value set after its consumer is made, and before Serve starts
// any part.
//
// # Serving
//
// Serve writes $CROW_HOME/gateway.addr, runs every part as Serve(ctx) until
// ctx ends or one fails, then stops them all, removes gateway.addr and
// closes what New opened (index, chain, transport, store, serve lock). A
// Daemon serves once; Close releases a Daemon that never served.
package daemon
