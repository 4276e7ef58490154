package app

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/crow-sync/crow/federation"
	"github.com/crow-sync/crow/memory"
)

// MemorySearchIn is the input of memory.search.
type MemorySearchIn struct {
	Query     string `json:"query" in:"query,name=q" required:"true" desc:"The words to search for in memory content."`
	Instances string `json:"instances,omitempty" in:"query" mcpdefault:"\"local\"" desc:"Which instances to search: \"local\" (default, this instance), \"all\" (every instance, in parallel, each within a deadline), or a comma-separated list of instance ids (crow_list_instances). A search of other instances also returns each instance's status (ok, timeout, error, skipped_offline) and partial: true when some answer is missing; a memory found on several instances appears once, with found_on."`
	MemoryFilter
	Limit int `json:"limit,omitempty" in:"query" min:"1" max:"1000" mcpdefault:"20" desc:"Maximum number of results, 1-1000 (MCP default 20)."`
}

// Validate checks the scope.
func (in MemorySearchIn) Validate() error {
	_, err := parseScope(in.Instances, "")
	return err
}

var MemorySearch = define(&Def[MemorySearchIn, SearchResult]{
	Spec: Spec{Name: "memory.search", Method: "GET", Path: "/v1/memories/search", Tool: "crow_search_memories",
		Title: "Search memories", Tag: "memories", Summary: "Full-text search of memories, best first",
		Description: "Full-text search of memories, best match first. Sees every memory stored before the call. " +
			"Returns {query, results: [memory fields + score]}, plus {instances, partial} when other instances are searched.",
		Access: Peer, ReadOnly: true},
	Impl: func(a *App, ctx context.Context, in MemorySearchIn) (SearchResult, error) {
		if _, err := a.memories(); err != nil {
			return SearchResult{}, err
		}
		return a.search(ctx, in.Instances, strings.TrimSpace(in.Query), in.filter(), in.Limit)
	},
})

// Searcher fans a search out to other instances (package federation's
// Client.Search).
type Searcher interface {
	Search(ctx context.Context, targets []string, args json.RawMessage, deadline time.Duration,
		local func(ctx context.Context) ([]json.RawMessage, error)) federation.SearchResult
}

// DefaultSearchDeadline bounds each instance's part of a federated search.
const DefaultSearchDeadline = 3 * time.Second

// SearchResult is the answer of GET /v1/memories/search and
// crow_search_memories. Instances and Partial are set for a search of other
// instances (instances=all or a list of ids): each instance's status (ok,
// timeout, error, skipped_offline), and whether some answer is missing.
type SearchResult struct {
	Query     string                      `json:"query"`
	Results   []SearchHit                 `json:"results"`
	Instances []federation.InstanceStatus `json:"instances,omitempty"`
	Partial   bool                        `json:"partial"`
}

// searchResult is a memory with its score; FoundOn lists the instances a
// federated search found it on (a replicated memory is on several).
type SearchHit struct {
	memory.Result
	FoundOn []string `json:"found_on,omitempty"`
}

// searchScope is what an instances argument selects.
type searchScope struct {
	local   bool     // search this instance
	remote  bool     // search others: targets, or every peer when targets is nil
	targets []string // peer ids (nil with remote: all)
}

// parseScope reads instances: "" or "local" (this instance), "all", or a
// comma-separated list of instance ids ("local" and this instance's id
// name this instance).
func parseScope(instances, self string) (searchScope, error) {
	instances = strings.TrimSpace(instances)
	switch instances {
	case "", "local":
		return searchScope{local: true}, nil
	case "all":
		return searchScope{local: true, remote: true}, nil
	}
	var sc searchScope
	for _, id := range strings.Split(instances, ",") {
		switch id = strings.TrimSpace(id); id {
		case "":
		case "local", self:
			sc.local = true
		default:
			sc.remote = true
			sc.targets = append(sc.targets, id)
		}
	}
	if !sc.local && !sc.remote {
		return sc, Invalidf("instances must be local, all, or a comma-separated list of instance ids")
	}
	return sc, nil
}

// search runs a search over the scope. A federated call from a peer
// searches only this instance (it never fans out again).
func (a *App) search(ctx context.Context, instances, query string, f memory.Filter, limit int) (SearchResult, error) {
	sc, err := parseScope(instances, a.d.Self.InstanceID)
	if err != nil {
		return SearchResult{}, err
	}
	if _, fromPeer := PeerOf(ctx); fromPeer {
		sc = searchScope{local: true}
	}
	opts := memory.SearchOptions{Filter: f, Query: query, Limit: limit}
	if !sc.remote {
		res, err := a.d.Memories.Search(ctx, opts)
		if err != nil {
			return SearchResult{}, err
		}
		out := SearchResult{Query: query, Results: make([]SearchHit, len(res))}
		for i, r := range res {
			out.Results[i] = SearchHit{Result: r}
		}
		return out, nil
	}
	if a.d.Federation == nil {
		return SearchResult{}, Invalidf("instances=%s: federation is not available on this gateway, so only this "+
			"instance can be searched; omit instances or pass \"local\"", instances)
	}
	fa := map[string]any{"query": query}
	for k, v := range map[string]string{"project": f.Project, "category": f.Category} {
		if v != "" {
			fa[k] = v
		}
	}
	if f.MinImportance > 0 {
		fa["min_importance"] = f.MinImportance
	}
	if len(f.Tags) > 0 {
		fa["tags"] = f.Tags
	}
	if limit > 0 {
		fa["limit"] = limit
	}
	args, err := json.Marshal(fa)
	if err != nil {
		return SearchResult{}, err
	}
	var local func(ctx context.Context) ([]json.RawMessage, error)
	if sc.local {
		local = func(ctx context.Context) ([]json.RawMessage, error) {
			res, err := a.d.Memories.Search(ctx, opts)
			if err != nil {
				return nil, err
			}
			out := make([]json.RawMessage, len(res))
			for i, r := range res {
				if out[i], err = json.Marshal(r); err != nil {
					return nil, err
				}
			}
			return out, nil
		}
	}
	deadline := a.d.SearchDeadline
	if deadline <= 0 {
		deadline = DefaultSearchDeadline
	}
	fr := a.d.Federation.Search(ctx, sc.targets, args, deadline, local)
	out := SearchResult{Query: query, Results: make([]SearchHit, 0, len(fr.Results)),
		Instances: fr.Instances, Partial: fr.Partial}
	for _, h := range fr.Results {
		var r memory.Result
		if err := json.Unmarshal(h.Memory, &r); err != nil {
			continue // checked by federation already; a shape we cannot read is dropped
		}
		r.Score = h.Score
		out.Results = append(out.Results, SearchHit{Result: r, FoundOn: h.FoundOn})
	}
	return out, nil
}
