// Package protocol is the crow feed-replication protocol as a pure state
// machine: no goroutines, no I/O, no clock. One Machine serves all peers of a
// node. Its driver (package sync's Node) owns it from a single goroutine.
//
// # Caller contract
//
//  1. Before anything else, report every feed held with LocalHead (own feed and
//     replicas, heads as verified by package feed), and the peers to keep
//     connected with SetPeers.
//  2. Report inputs as they happen, each with the current time: PeerUp /
//     PeerDown (per transport session, strictly alternating), PeerHeads (heads
//     a peer announced, only after package feed verified their signatures),
//     Receive (Request, Data and Error messages), LocalHead (a head advanced
//     locally: an append to the own feed), DialDone, Tick (about once a second).
//  3. After each input call Ready and carry out its Output in this order:
//     a. Store: verify and store each range through package feed, in order,
//     and report each outcome with Stored before doing anything else. A range
//     is never stored without verification; a failure does not move the
//     feed's length.
//     b. Serve: read the asked range with its proof and send it as Data (or an
//     Error), reporting the entries sent with Served.
//     c. Send the messages, Disconnect the peers, start the Dials (answered
//     later by DialDone) and log/count the Events.
//     Stored and Served are inputs too: call Ready again after them.
//
// # Behaviour
//
// On PeerUp the machine announces the heads of all held feeds. For every feed
// where a connected peer announced a longer head than the local one it requests
// the missing entries from the local length on, in batches of at most
// MaxBatchEntries, with at most one request per feed at a time (across all
// peers, so a range is fetched once) and at most MaxInflight requests per
// peer. Replicas are requested like any feed, so entries travel through any
// peer that holds them. A stored range or a local append is announced to the
// connected peers (live push). A range that fails verification is dropped,
// reported as EventRejected and not asked again from that peer until it
// announces a new head (or after RejectHold); a fork stops that feed with
// that peer for good (EventFork). A request unanswered after RequestTimeout,
// while the peer sent nothing else either, disconnects the peer. Lost peers in the SetPeers list are redialled with
// exponential backoff and jitter.
//
// The scripts in testdata/ (run by TestScenarios) show this behaviour message
// by message: initial sync, live push, stale ranges, request timeouts, forks,
// bounded in-flight requests, rejected ranges and reconnects.
package protocol
