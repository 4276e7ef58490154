// Package memory is the memory domain (SPEC §10) used by REST, MCP and the CLI: the Memory
// type, strict input validation, and Service, which stores memories as rows of the memories
// table through the store's durable write path and searches them through the bleve index.
//
// # Row shape
//
// A memory is stored at t/memories/<id> with data
//
//	{"id","project","content","content_hash","category","importance","tags","source",
//	 "origin","created_at","updated_at"}
//
// (package search indexes content, project, category, tags, importance and created_at by
// these names). The number and event hash are not part of that row: home numbers every
// content version of a memory in the home-written table memory_versions (row id = the
// number, 20 digits; data Version: the version's content, hash, event hash, supersedes and
// superseded_by) and records the memory's latest number in memory_numbers (row id = memory
// id, data {"number","event_hash"}), so numbering never conflicts with an edit; Service joins
// the latest number on read, and GetVersion reads a version by number (numbering.go).
//
// # Read-your-writes
//
// Service.Search first waits until the index has caught up with the store's queue head at
// the time of the call (search.Index.WaitFor), so a memory added before a search is found by
// it.
package memory
