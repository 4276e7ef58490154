// Package federation lets one crow instance use another's tools (SPEC §9):
// it authenticates instances to each other with short-lived signed bearer
// tokens, calls a peer's MCP server at /mcp, fans searches out to several
// peers under a deadline, and caches each peer's summary.
//
// The package does not speak HTTP as a server. The daemon wires it as
// follows:
//
//  1. Calling out. Build one TokenSource from this instance's id and
//     instance key, and one Client over it with a Peers func that returns the
//     registered, non-revoked instances other than self (with their
//     last-probe Online flag). Client.CallTool runs one tool on one peer
//     (the gateway's router uses it); the typed calls (calls.go:
//     SearchMemories, Consolidate) and Searcher's fan-out run on it.
//     Close the Client on shutdown: it waits for the calls it abandoned.
//  2. Being called. Verifier(self, clock, keyOf) is the gateway's check of
//     every request to /mcp that carries "Authorization: Bearer crowtok1.…":
//     keyOf returns the public key of a registered, non-revoked instance (and
//     an error otherwise). The gateway refuses the request with 401 when the
//     token fails; otherwise the request comes from Claims.Issuer, and
//     package app's table decides which tools it may call (deny by default).
//     Build one Verifier per instance and keep it: it holds the replay
//     cache, which accepts each token once (ErrReplayed afterwards) and
//     refuses a token this instance issued itself (ErrSelfIssued). So a
//     TokenSource makes a new token for every request, retries included.
//  3. Summaries. Run Summaries.Serve under the daemon's context. The tool
//     crow_instance_summaries answers Summaries.All; called with
//     {"self_only": true} it answers only this instance's own summary, as
//     {"instances": [summary]} — that is how peers fetch it (hourly), so a
//     summary never travels more than one hop. Health is a crow_sync_status
//     call every five minutes.
//
// Ordering rules: Verify's checks run in the documented order and the first
// failure is returned, so an unregistered issuer is reported as such even
// when its signature is also wrong. Client.Search never waits past its
// deadline: it returns with whatever has answered, and reports the rest as
// timeouts.
//
// # Token format (crowtok1, frozen)
//
// A token is ASCII:
//
//	"crowtok1." + base64url(payload) + "." + base64url(signature)
//
// base64url is RFC 4648 §5 without padding, and non-zero trailing bits are
// rejected, so each token has one spelling. The payload is binary:
//
//	"crow-fed-token-v1"                  17 bytes, domain separation
//	u16 big-endian len(issuer), issuer   instance id, UTF-8, non-empty
//	u16 big-endian len(audience), audience
//	i64 big-endian issued-at             Unix seconds
//	i64 big-endian expiry                Unix seconds
//	16 bytes nonce                       random
//
// with nothing after the nonce. The signature is Ed25519 (RFC 8032) by the
// issuer's instance key over the payload bytes exactly as encoded. A token
// is at most MaxTokenLen (1 KiB) long. It is valid for audience A at time
// now when the issuer is registered and not revoked, the signature verifies,
// A is the audience, 0 < expiry − issued-at ≤ 5 min, expiry > now − 30 s,
// and issued-at ≤ now + 30 s. TestTokenGolden pins the exact bytes; any
// change to the encoding is a new format with a new prefix and domain.
package federation
