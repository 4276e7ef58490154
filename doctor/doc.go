// Package doctor holds the rules of `crow doctor` (GET /v1/doctor,
// crow_doctor): what is checked on an instance and its peers, when a
// finding is ok, a warning or a problem, and what the operator is told to
// do. It performs no I/O of its own: every fact comes from the probes in
// Env, which package app fills with the daemon's real parts and unit tests
// with fakes.
//
// The checks (docs/DOCTOR.md is the operator's version):
//
//  1. files: every $CROW_HOME file holding a secret exists (as the role
//     needs) and is not readable by group or others; $CROW_HOME is 0700.
//  2. seed: home's seed locked (encrypted at rest) or in clear; a satellite
//     holding one.
//  3. store: the database answers a read; disk: free space against the
//     free-space guard's threshold (warn below twice it, problem below it).
//  4. addresses: the gateway and sync addresses against where the peers are
//     (judged from the addresses alone: nothing is sent to them).
//  5. certificate: this instance's own membership is not revoked.
//  6. per peer: peer (reachable, its certificate valid and not revoked),
//     tokens (this instance's token accepted by the peer, and the peer's
//     accepted here by a callback), clock (skew against federation.MaxSkew).
//  7. chain: connectivity, the anchoring account's funds, transactions in
//     flight and roots not final yet.
//  8. fork: this instance's own feed forked.
//
// Run runs them all and returns a Report whose Status is the worst finding;
// the CLI exits 1 when it is a problem.
package doctor
