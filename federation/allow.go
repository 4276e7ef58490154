package federation

import (
	"maps"
	"slices"
)

// AllowList is a set of tool names. The zero AllowList allows nothing. It is
// immutable, so safe for concurrent use. Which tools peers may call is
// decided by package app's table (Spec.Access); Client uses
// DefaultAllowList, the same read tools, to know which calls a retry cannot
// harm (app's tests pin the two together).
type AllowList struct {
	tools map[string]struct{}
}

// defaultAllowed are the search and read tools peers may call: none of
// them changes anything.
var defaultAllowed = []string{
	"crow_search_memories",
	"crow_get_memory",
	"crow_list_memories",
	"crow_list_instances",
	"crow_sync_status",
	"crow_instance_summaries",
	"get_project_state",
	"crow_list_sync_conflicts",
	PingTool,
	CheckTool,
}

// DefaultAllowList allows the search and read tools only.
func DefaultAllowList() AllowList { return NewAllowList(defaultAllowed...) }

// NewAllowList allows exactly tools.
func NewAllowList(tools ...string) AllowList {
	a := AllowList{tools: make(map[string]struct{}, len(tools))}
	for _, t := range tools {
		a.tools[t] = struct{}{}
	}
	return a
}

// Allowed reports whether peers may call tool.
func (a AllowList) Allowed(tool string) bool {
	_, ok := a.tools[tool]
	return ok
}

// Tools returns the allowed tools, sorted.
func (a AllowList) Tools() []string { return slices.Sorted(maps.Keys(a.tools)) }
