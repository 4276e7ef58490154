// Package state is the Project State of ChainMemory (SPEC §10): the schema-2 model, the
// closed grammar of ops that changes it, the deterministic builder that applies them, the
// evidence roots that tie items to memories and the state hash that anchoring puts on chain.
// It is pure: no clock, no storage, no network. The daemon stores versions (table
// state_versions), resolves memory numbers (Evidence) and serves REST and MCP.
//
// # Caller's contract (home instance, one project)
//
//  1. Load the project's latest Version (nil if it has none) and the highest memory number
//     home has assigned. Hold the project's consolidation lock until step 4, so that two calls
//     never build on the same previous version.
//  2. Call Apply(prev, project, Request{Ops, ConsolidatedUntilEvent, GeneratedAt}, evidence,
//     highest). GeneratedAt comes from the daemon's clock; Apply reads none. If the caller
//     sent no consolidated_until_event, pass prev's (a lower one is refused).
//  3. An error refuses the whole request (errors.go says which are the caller's fault). If
//     Result.Unchanged, store nothing: no op applied, so there is no new version (SPEC: "no
//     valid op → no new version"), even if consolidated_until_event moved.
//  4. Otherwise store Result.Version as the next row of state_versions (it is
//     prev.Version+1), then queue it for anchoring. Versions are append-only: never rewrite
//     a stored one.
//  5. Answer with unchanged, version, state_hash, applied_count, Result.Applied (each with
//     the event hashes of the memories it cited) and Result.Rejected ({index, op, error}).
//
// A replica or a third party checks a stored version with Verify and a chain with VerifyLink.
// Apply verifies prev itself (one extra hash of the previous state) so that a damaged row is
// never built upon.
//
// Evidence is the daemon's view of memories: Lookup(number) returns the memory's project and
// event hash (ParseHash decodes the "0x…" form memory_numbers stores; EvidenceFunc adapts a
// closure). Lookups happen only inside Apply, at most once per number per call.
//
// # Version (JSON)
//
//	{"project": "sistema-pagos", "schema_version": 2, "version": 4,
//	 "state_hash": "0x…", "generated_at": "2026-09-13T22:02:35Z",
//	 "state": {
//	   "phase": "beta", "current_focus": "…",
//	   "decisions":      [{"id","title","statement","status","superseded_by", …provenance}],
//	   "milestones":     [{"id","title","status", …}],
//	   "risks":          [{"id","title","severity","status", …}],
//	   "assumptions":    [{"id","title","statement","status", …}],
//	   "open_questions": [{"id","title","status","answer", …}],
//	   "priorities":     [{"id","title","rank","status", …}],
//	   "constraints":    [{"id","title","statement","status", …}],
//	   "vision":         [{"id","statement","status","superseded_by", …}],
//	   "vocabulary":     [{"id","term","definition", …}],
//	   "metrics":        [{"id","name","value","unit","target", …}],
//	   "state_meta": {"version": 4, "consolidated_until_event": 150, "previous_state_hash": "0x…"}}}
//
// where …provenance, on every item, is "evidence_memory_ids" (memory numbers, ascending,
// de-duplicated, never empty), "evidence_root", "created_version" and "updated_version" (the
// versions that added the item and last changed it). Empty lists are [], never null. Unset
// phase and current_focus are "". superseded_by, answer and previous_state_hash are null
// until set (previous_state_hash is null exactly in version 1). Items are never removed;
// lists keep creation order and ids count up per list: dec_0001, mil_0001, risk_0001,
// asm_0001, oq_0001, pri_0001, con_0001, vis_0001, voc_0001, met_0001.
//
// Statuses: decisions proposed → confirmed | rejected, or superseded (final); milestones
// planned | in_progress | done; risks open | mitigated | closed | accepted (severity low |
// med | high); assumptions holding → invalidated; open questions open → answered;
// priorities active | done | dropped (rank 1 = most important, up to 1000); constraints
// active → removed; vision current → superseded (at most one current).
//
// # Ops
//
// An op is a JSON object {"op": name, fields…}. Unknown ops, unknown fields, a field given
// twice and null values are rejected; so is a field of the wrong JSON type. Ops marked
// "adds" must cite at least one memory in evidence_memory_ids (at most 100 per op); "ev?"
// means evidence_memory_ids is optional. Cited memories are added to the item's evidence.
//
//	add_decision          {title, statement, evidence_memory_ids}          adds; status proposed
//	set_decision_status   {id, status, evidence_memory_ids?}               confirmed | rejected
//	supersede_decision    {id, by_id, evidence_memory_ids?}                id → superseded, superseded_by = by_id
//	add_milestone         {title, status?, evidence_memory_ids}            adds; status defaults to planned
//	set_milestone_status  {id, status}
//	add_risk              {title, severity, evidence_memory_ids}           adds; status open
//	set_risk_status       {id, status}
//	set_focus             {focus}                                          sets current_focus
//	set_phase             {phase}
//	add_assumption        {title, statement?, evidence_memory_ids}         adds; status holding
//	invalidate_assumption {id, evidence_memory_ids?}                       holding → invalidated
//	add_open_question     {title, evidence_memory_ids}                     adds; title is the question; status open
//	answer_open_question  {id, answer, evidence_memory_ids}                open → answered; evidence required
//	add_priority          {title, rank, evidence_memory_ids}               adds; status active
//	set_priority_status   {id, status}                                     active | done | dropped
//	add_constraint        {title, statement?, evidence_memory_ids}         adds; status active
//	remove_constraint     {id, evidence_memory_ids?}                       active → removed (the item stays)
//	set_vision            {statement, evidence_memory_ids}                 adds a current vision; the previous one → superseded
//	add_vocabulary        {term, definition, evidence_memory_ids}          adds, or redefines the term (case-insensitive match)
//	set_metric            {name, value, unit?, target?, evidence_memory_ids} adds, or updates the metric (case-insensitive name);
//	                                                                        an omitted unit/target keeps its value, "" clears it
//
// Rules checked against the state: ids must exist in their list and have its prefix;
// supersede_decision needs two different decisions, neither superseded; a superseded
// decision's status no longer changes; an op that would change nothing (a status the item
// already has, the same focus, phase, vision, definition or metric) is rejected as "already
// …"; a list holds at most 10000 items and an item at most 1000 evidence memories.
//
// Lengths, in Unicode code points: title ≤ 200; statement, answer, definition ≤ 2000; phase ≤
// 100; focus ≤ 500; term, metric name ≤ 100; metric value, target ≤ 200; unit ≤ 32. Required
// strings may not be blank. One-line fields (all but statement, answer and definition) may
// not hold control characters; the others allow tab and line breaks only. An op's JSON is at
// most 64 KiB and a request at most 100 ops.
//
// # Evidence
//
// A cited memory must exist, belong to the project being consolidated and have its event hash
// (home computes it when it numbers the memory); otherwise the op is rejected saying which
// memory and why. The item's evidence_root is the Merkle root of the event hashes of all its
// evidence_memory_ids, with H = SHA3-256 (FIPS 202):
//
//  1. Take the 32-byte event hashes, sort them ascending (bytewise) and drop duplicates.
//  2. Leaves: leaf_i = H(0x00 ‖ hash_i).
//  3. Repeat until one node is left: pair the nodes of the level left to right, parent =
//     H(0x01 ‖ left ‖ right); a last node without a partner moves up unchanged.
//  4. The root is that node ("0x" + 64 lowercase hex digits). One memory: root = its leaf.
//
// So for hashes a < b < c: root = H(0x01 ‖ H(0x01 ‖ H(0x00‖a) ‖ H(0x00‖b)) ‖ H(0x00‖c)).
// testdata/golden.txt pins vectors.
//
// # State hash
//
// state_hash = "0x" + hex(SHA3-256("CM_PROJECT_STATE_V2" ‖ JCS(state))), where state is the
// "state" object above (state_meta included, nothing outside it) and JCS is the RFC 8785
// canonical JSON: no whitespace, object members sorted by the UTF-16 code units of their
// names, strings escaped minimally (only ", \ and U+0000–U+001F, as \b \t \n \f \r or
// \u00xx), numbers as ECMAScript prints them — every number in a state is an integer below
// 2^53, printed as plain decimal digits. Canonical returns the exact bytes; testdata/ pins a
// state, its canonical form and its hash.
//
// Because a state's member names are ASCII and its numbers small integers, any JSON library
// that sorts keys, drops whitespace and does not escape non-ASCII produces the same bytes. In
// Python, for example:
//
//	c = json.dumps(state, ensure_ascii=False, separators=(",", ":"), sort_keys=True).encode()
//	"0x" + hashlib.sha3_256(b"CM_PROJECT_STATE_V2" + c).hexdigest()
//
// reproduces every state_hash in testdata/ (so does the Merkle recipe above with
// hashlib.sha3_256).
//
// # Compatibility
//
// The JSON names, the id prefixes, the statuses, the Merkle construction and the hash input
// are frozen for schema version 2; the golden tests fail if any of them changes. A change of
// any of them is a new schema version with its own domain separator.
package state
