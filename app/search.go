package app

import (
	"context"
	"strings"
	"time"

	"github.com/crow-sync/crow/federation"
)

// MemorySearchIn is the input of memory.search.
type MemorySearchIn struct {
	Query     string `json:"query" in:"query,name=q" required:"true" desc:"The words to search for in memory content."`
	Instances string `json:"instances,omitempty" in:"query" route:"-" mcpdefault:"\"local\"" desc:"Which instances to search: \"local\" (default, this instance), \"all\" (every instance, in parallel, each within a deadline), or a comma-separated list of instance ids (crow_list_instances). A search of other instances also returns each instance's status (ok, timeout, error, skipped_offline); partial is true when some answer is missing; a memory found on several instances appears once, with found_on."`
	MemoryFilter
	Limit int `json:"limit,omitempty" in:"query" min:"1" max:"1000" mcpdefault:"20" desc:"Maximum number of results, 1-1000 (MCP default 20)."`
}

// Searcher fans a search out to other instances (package federation's
// Client).
type Searcher = federation.Fanout

// SearchResult is the answer of memory.search (partial is always present).
type SearchResult = federation.SearchResponse

var MemorySearch = define(&Def[MemorySearchIn, SearchResult]{
	Spec: Spec{Name: "memory.search", Method: "GET", Path: "/v1/memories/search", Tool: "crow_search_memories",
		Title: "Search memories", Tag: "memories", Summary: "Full-text search of memories, best first",
		Description: "Full-text search of memories, best match first. Sees every memory stored before the call. " +
			"Returns {query, results: [memory fields + score], partial}, plus instances (each one's status) when other instances are searched.",
		Access: Peer, ReadOnly: true},
	Impl: (*App).memorySearch,
})

// memorySearch runs the search over its scope (federation owns the rules:
// the scope, a peer's call never fanning out again, the merge).
func (a *App) memorySearch(ctx context.Context, in MemorySearchIn) (SearchResult, error) {
	svc, err := a.memories()
	if err != nil {
		return SearchResult{}, err
	}
	fs := federation.Searcher{SelfID: a.d.Self.InstanceID, Local: svc.Search, Deadline: a.d.SearchDeadline}
	if a.d.Federation != nil {
		fs.Fanout = a.d.Federation
	}
	_, fromPeer := PeerOf(ctx)
	return fs.Search(ctx, federation.SearchRequest{Instances: in.Instances, Query: strings.TrimSpace(in.Query),
		Filter: in.filter(), Limit: in.Limit, FromPeer: fromPeer})
}

// DefaultSearchDeadline bounds each instance's part of a federated search.
const DefaultSearchDeadline time.Duration = federation.DefaultSearchDeadline
