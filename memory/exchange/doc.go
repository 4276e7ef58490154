// Package exchange reads and writes memories as files (docs/EXCHANGE.md): crow's own JSONL
// export, the official MCP memory server's memory.jsonl (@modelcontextprotocol/server-memory)
// and a mem0 export. Every format is mapped here to Record, the crow JSONL line, which the
// memory.import operation takes; package memory validates and writes it.
//
// # The crow format (version 1)
//
// A UTF-8 text file, one JSON object a line. The first line is the header
//
//	{"format":"crow-memories","version":1}
//
// and every other line is one memory (Record): id, project, content, content_hash, category,
// importance, tags, source, created_at, updated_at (RFC 3339), and number, event_hash, origin
// where they are known (informational: an import never takes them). Readers ignore fields they
// do not know; a header with a higher version is refused (it was written by a newer crow).
// A file without header is read as version 1.
//
// # Mapping to crow
//
//  1. crow: every field is kept, the id too, so re-importing an export (of this instance or
//     of another instance of the same crow) finds the memories already there.
//  2. mcp-memory: one memory per entity, its content "NAME (TYPE)", then one "- observation"
//     line per observation and a "Relations:" list of the entity's outgoing relations
//     ("- NAME RELATION TO"); category "entity", tags "mcp-memory" and the entity type. A
//     relation whose source entity is not in the file is a memory of its own (category
//     "relation"). The id is derived from the entity's name (memory.DerivedID with the zero
//     time: the file has no times), so the same entity always maps to the same memory.
//  3. mem0: one memory per mem0 memory, content its "memory"; category its first category
//     (or "general"), tags "mem0", its categories and "user:USER_ID"; created_at and
//     updated_at kept; the id derived from mem0's id and created_at. A JSON array, a
//     {"results": [...]} (or "memories") document, or one mem0 memory a line are accepted.
//
// Parse reads a whole file (at most MaxFileBytes, a line at most MaxLineBytes) and reports the
// first bad line as a *LineError naming it; nothing is returned then, so an import of a bad
// file writes nothing.
package exchange
