package federation

import (
	"maps"
	"slices"
)

// AllowList is the set of tools peers may call on this instance (SPEC §9):
// deny by default. The zero AllowList allows nothing. It is immutable, so
// safe for concurrent use.
type AllowList struct {
	tools map[string]struct{}
}

// defaultAllowed are the search and read tools: none of them changes
// anything.
var defaultAllowed = []string{
	"crow_search_memories",
	"crow_get_memory",
	"crow_list_memories",
	"crow_list_instances",
	"crow_sync_status",
	"crow_instance_summaries",
	"get_project_state",
	"crow_list_sync_conflicts",
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

// PeerAllowList is the policy of what peers may call on an instance: the
// default search and read tools everywhere, and on home also ConsolidateTool,
// which satellites call to forward consolidations (SPEC §10: only home
// consolidates; the owner may ask any instance, which forwards).
func PeerAllowList(home bool) AllowList {
	tools := slices.Clone(defaultAllowed)
	if home {
		tools = append(tools, ConsolidateTool)
	}
	return NewAllowList(tools...)
}
