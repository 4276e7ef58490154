package store

// Synced tables (SPEC §3). Each is a keyspace t/<table>/.
const (
	TableMemories      = "memories"
	TableProjects      = "projects"
	TableSources       = "sources"
	TableNotes         = "notes"
	TableBlogPosts     = "blog_posts"
	TableContacts      = "contacts"
	TableSettings      = "settings"
	TableCrowInstances = "crow_instances"
	TableCrowContext   = "crow_context"

	// Home-written tables: only the home instance writes them, so they never conflict; they
	// replicate read-only everywhere.

	// TableMemoryNumbers maps a memory id to the number and event hash home assigned it
	// (data: {"number":N,"event_hash":"…"}). Kept apart from memories so numbering never
	// races a satellite's edit of the memory.
	TableMemoryNumbers = "memory_numbers"
	// TableMemoryVersions holds every numbered content version of a memory (row id = the
	// number as 20 decimal digits; data: package memory's Version). A version's content,
	// content hash and event hash never change; superseded_by is set once, when the next
	// version of the same memory is numbered.
	TableMemoryVersions = "memory_versions"
	// TableStateVersions holds Project State versions.
	TableStateVersions = "state_versions"
	// TableAnchors holds anchoring status of memories and state versions.
	TableAnchors = "anchors"
	// TableCrowRevocations holds the root-signed revocations (row id = the
	// revoked key, hex; registry.RevocationRow). Written once per key by home.
	TableCrowRevocations = "crow_revocations"

	// TableSyncConflicts holds conflict records; resolutions replicate.
	TableSyncConflicts = "sync_conflicts"
)

// tableSingular gives the change record type prefix (<singular>_<op>, SPEC §5).
var tableSingular = map[string]string{
	TableMemories:        "memory",
	TableProjects:        "project",
	TableSources:         "source",
	TableNotes:           "note",
	TableBlogPosts:       "blog",
	TableContacts:        "contact",
	TableSettings:        "setting",
	TableCrowInstances:   "crow_instance",
	TableCrowContext:     "crow_context",
	TableMemoryNumbers:   "memory_number",
	TableMemoryVersions:  "memory_version",
	TableStateVersions:   "state_version",
	TableAnchors:         "anchor",
	TableCrowRevocations: "crow_revocation",
	TableSyncConflicts:   "sync_conflict",
}

// Tables returns the names of all known tables.
func Tables() []string {
	return []string{TableMemories, TableProjects, TableSources, TableNotes, TableBlogPosts,
		TableContacts, TableSettings, TableCrowInstances, TableCrowContext, TableMemoryNumbers,
		TableMemoryVersions, TableStateVersions, TableAnchors, TableCrowRevocations, TableSyncConflicts}
}

// ValidTable reports whether name is a known table.
func ValidTable(name string) bool {
	_, ok := tableSingular[name]
	return ok
}

// ChangeType returns the change record type for an op on a table, e.g. "memory_insert".
func ChangeType(table string, op Op) string {
	return tableSingular[table] + "_" + string(op)
}
