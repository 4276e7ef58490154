// Package app is crow's application layer: every operation (store a memory,
// list conflicts, consolidate a project, …) is defined once, as a Def in
// the package-level table (define). A Def carries its names on every surface
// (REST method and path, MCP tool), who may call it (Access: Owner, Peer,
// Public; HomePeer), its MCP annotations, a typed input whose struct tags
// hold its limits (checked once, for REST, MCP and Go calls alike, plus an
// optional Validate for rules across fields), a typed output, and Impl, the
// call into the domain package that owns the rule.
//
// Failures carry a Kind (errors.go); the domain packages' errors are mapped
// to kinds once, in classify.go. Package gateway serves the table as REST
// routes, MCP tools and the OpenAPI document and maps a Kind to an HTTP
// status and a tool error; package client is the typed REST client over the
// same table. Neither knows what an operation does.
package app
