package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/crow-sync/crow/federation"
	"github.com/crow-sync/crow/memory"
)

// Searcher fans a search out to other instances (package federation's
// Client.Search).
type Searcher interface {
	Search(ctx context.Context, targets []string, args json.RawMessage, deadline time.Duration,
		local func(ctx context.Context) ([]json.RawMessage, error)) federation.SearchResult
}

// DefaultSearchDeadline bounds each instance's part of a federated search.
const DefaultSearchDeadline = 3 * time.Second

// searchResponse is the answer of GET /v1/memories/search and
// crow_search_memories. Instances and Partial are set for a search of other
// instances (instances=all or a list of ids): each instance's status (ok,
// timeout, error, skipped_offline), and whether some answer is missing.
type searchResponse struct {
	Query     string                      `json:"query"`
	Results   []searchResult              `json:"results"`
	Instances []federation.InstanceStatus `json:"instances,omitempty"`
	Partial   bool                        `json:"partial,omitempty"`
}

// searchResult is a memory with its score; FoundOn lists the instances a
// federated search found it on (a replicated memory is on several).
type searchResult struct {
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
func (s *Server) parseScope(instances string) (searchScope, error) {
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
		case "local", s.app.Self().InstanceID:
			sc.local = true
		default:
			sc.remote = true
			sc.targets = append(sc.targets, id)
		}
	}
	if !sc.local && !sc.remote {
		return sc, fmt.Errorf("instances must be local, all, or a comma-separated list of instance ids")
	}
	return sc, nil
}

// search runs a search over the scope. A federated call from a peer
// searches only this instance (it never fans out again).
func (s *Server) search(ctx context.Context, instances, query string, f memory.Filter, limit int) (searchResponse, error) {
	sc, err := s.parseScope(instances)
	if err != nil {
		return searchResponse{}, err
	}
	if _, fromPeer := peerOf(ctx); fromPeer {
		sc = searchScope{local: true}
	}
	opts := memory.SearchOptions{Filter: f, Query: query, Limit: limit}
	if !sc.remote {
		res, err := s.cfg.Memories.Search(ctx, opts)
		if err != nil {
			return searchResponse{}, err
		}
		out := searchResponse{Query: query, Results: make([]searchResult, len(res))}
		for i, r := range res {
			out.Results[i] = searchResult{Result: r}
		}
		return out, nil
	}
	if s.cfg.Federation == nil {
		return searchResponse{}, toolErrorf("instances=%s: federation is not available on this gateway, so only this "+
			"instance can be searched; omit instances or pass \"local\"", instances)
	}
	a := map[string]any{"query": query}
	for k, v := range map[string]string{"project": f.Project, "category": f.Category} {
		if v != "" {
			a[k] = v
		}
	}
	if f.MinImportance > 0 {
		a["min_importance"] = f.MinImportance
	}
	if len(f.Tags) > 0 {
		a["tags"] = f.Tags
	}
	if limit > 0 {
		a["limit"] = limit
	}
	args, err := json.Marshal(a)
	if err != nil {
		return searchResponse{}, err
	}
	var local func(ctx context.Context) ([]json.RawMessage, error)
	if sc.local {
		local = func(ctx context.Context) ([]json.RawMessage, error) {
			res, err := s.cfg.Memories.Search(ctx, opts)
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
	deadline := s.cfg.SearchDeadline
	if deadline <= 0 {
		deadline = DefaultSearchDeadline
	}
	fr := s.cfg.Federation.Search(ctx, sc.targets, args, deadline, local)
	out := searchResponse{Query: query, Results: make([]searchResult, 0, len(fr.Results)),
		Instances: fr.Instances, Partial: fr.Partial}
	for _, h := range fr.Results {
		var r memory.Result
		if err := json.Unmarshal(h.Memory, &r); err != nil {
			continue // checked by federation already; a shape we cannot read is dropped
		}
		r.Score = h.Score
		out.Results = append(out.Results, searchResult{Result: r, FoundOn: h.FoundOn})
	}
	return out, nil
}
