// Package records is the domain of the synced tables besides memories that have typed
// operations: notes, sources, contacts, settings and blog posts (spec.go: one Spec of field
// rules per table), crow_context with its composite key (context.go), and the one search
// over memories and all of them (search.go).
//
// Rules:
//
//  1. A row is a JSON object: the fields of its table's Spec, checked on every write
//     (required, type, length, format, enum; a blog post's slug is made from its title and
//     its status is "draft" when left out), plus any extra fields, kept as given (together
//     at most MaxExtra bytes). created_at and updated_at are stamped here, never given.
//  2. Ids: ULIDs made at creation; a setting's id is its key; a crow_context row's id is
//     ContextRowID(section, device, project), so one key is one row on every instance.
//  3. Every write goes through the store's Writer (store.Mutation): it is durable, in the
//     feed, and replicates and conflicts like any write (SPEC §5; crow_context is
//     last-write-wins in the apply loop, never a conflict record). An update is a patch
//     applied in the write transaction to the row as it is then, and checked whole.
//  4. Search waits for the index to reflect every write committed before it (search.Index
//     .WaitFor), then reads each hit's live row: a row deleted meanwhile is left out.
package records
