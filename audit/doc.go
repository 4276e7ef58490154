// Package audit recomputes, from what an instance stores, every hash crow
// commits to, and checks each against what is recorded and, where the
// instance reads one, against the chain (SPEC §10, `crow audit`). The rules
// live here; app exposes them as the operation audit.run (GET /v1/audit, MCP
// crow_audit) and cmd/crow prints them.
//
// # Checks
//
// Run walks, in this order:
//
//  1. Memories (Source.Memories): every memory content version.
//     content_hash: the stored content_hash equals memory.ContentHash of the
//     stored content. event_hash: for a numbered version, the recorded event
//     hash equals memory.EventHash(number, project, content_hash, created_at,
//     origin). numbering: the memory_numbers record is well formed and names
//     this version with the same event hash. memory_anchor: home's anchors
//     record of the version names the same event hash and, when the chain is
//     read (Options.MemoryChain), the block it names holds a MemoryAnchored
//     event with that hash.
//  2. Numbers (Source.Numbers, auditing every project only): each number is
//     recorded once, and 1..highest has no hole.
//  3. State versions (Source.StateVersions), project by project, version by
//     version. evidence_root: each item's root equals state.EvidenceRoot of
//     the recorded event hashes of its evidence_memory_ids. state_hash: the
//     stored state_hash equals state.Hash of the stored state, and the row is
//     the version it says it is. state_chain: version n+1 follows version n
//     and its previous_state_hash is version n's state_hash
//     (state.VerifyLink's rules). state_anchor: anchor.Verifier's verdict
//     (Options.StateAnchors): anchored is ok, mismatch or conflict a
//     mismatch, pending or unverified a skip.
//
// A mismatch names the memory (id and number) or the project, version and
// item, with Want (what recomputation, or the chain, gives) and Got (what is
// stored). A skip is an item that cannot be checked yet or here: not
// anchored yet ("pending"), no chain read here ("unverified"), content
// forgotten ("forgotten": only its number and event hash are checked), or,
// without a memory_versions table, a memory edited after it was numbered
// (its numbered version is not kept, so its event record cannot be
// rebuilt). A skip is not a failure.
//
// # Sources
//
// StoreSource reads a store.DB. Where the store has a memory_versions table
// (every numbered content version, row id = number as %020d) it audits those
// versions, and the memories rows for their content hashes only; otherwise it
// audits the memories rows joined with memory_numbers.
//
// # Pages and progress
//
// A large store is audited in pages, so a client can draw progress without a
// long-held request or a server-side job: Options.Limit caps the items (memory
// versions and state versions) one Run visits, Report.Next is the cursor of
// the next page ("" on the last), and Report.Total (first page only) is how
// many items the whole audit visits. Concatenating the pages' reports with
// Report.Add gives the report of one Run without a limit, except that each
// page reads its own snapshot: writes between pages are seen by later pages
// only. The state phase is cut at project boundaries (a page finishes the
// project it starts). Options.Progress reports progress within one Run.
//
// Cursors are opaque: "m:" and a source cursor while in the memories, "n:"
// before the numbers check, "s:" and the next project while in the states.
package audit
