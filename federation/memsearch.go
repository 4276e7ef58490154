package federation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/crow-sync/crow/memory"
)

// DefaultSearchDeadline bounds each instance's part of a federated search.
const DefaultSearchDeadline = 3 * time.Second

// ErrNoFederation is returned (wrapped) by Searcher.Search for a scope
// naming other instances when the Searcher has no Fanout.
var ErrNoFederation = errors.New("federation is not available on this gateway")

// SearchResponse is the answer of GET /v1/memories/search and
// crow_search_memories. JSON field names are part of the REST and MCP APIs.
//
// Instances is set when other instances were searched (instances=all or a
// list of ids): each instance's status (ok, timeout, error,
// skipped_offline). Partial is always present: true when some instance's
// answer is missing, false otherwise (and always false for a search of
// this instance only).
type SearchResponse struct {
	Query     string           `json:"query"`
	Results   []MemoryHit      `json:"results"`
	Instances []InstanceStatus `json:"instances,omitempty"`
	Partial   bool             `json:"partial"`
}

// MemoryHit is a memory with its score; FoundOn lists the instances a
// federated search found it on (a replicated memory is on several).
type MemoryHit struct {
	memory.Result
	FoundOn []string `json:"found_on,omitempty"`
}

// LocalSearch searches this instance's memories (package memory's
// Service.Search).
type LocalSearch func(ctx context.Context, o memory.SearchOptions) ([]memory.Result, error)

// Fanout runs a search on other instances and merges it with this one's
// (Client.Search).
type Fanout interface {
	Search(ctx context.Context, targets []string, args json.RawMessage, deadline time.Duration,
		local func(ctx context.Context) ([]json.RawMessage, error)) SearchResult
}

// SearchRequest is one memory search.
type SearchRequest struct {
	Instances string // the scope, as ParseScope reads it
	Query     string
	Filter    memory.Filter
	Limit     int // 0: the default
	// FromPeer marks a federated call from another instance: it searches
	// only this instance, whatever Instances says (it never fans out again).
	FromPeer bool
}

// Searcher runs memory searches over a scope: this instance through Local,
// others through Fanout.
type Searcher struct {
	SelfID string // this instance's id, which names it in a scope
	Local  LocalSearch
	// Fanout reaches the other instances (nil: only this one can be
	// searched).
	Fanout Fanout
	// Deadline bounds each instance's part (0: DefaultSearchDeadline).
	Deadline time.Duration
}

// Search runs req. Errors: ErrBadScope (wrapped) for an unreadable scope,
// ErrNoFederation (wrapped) for other instances without a Fanout, and
// Local's errors for a search of this instance only (in a federated search
// a failing local part makes the answer partial instead).
func (s Searcher) Search(ctx context.Context, req SearchRequest) (SearchResponse, error) {
	sc, err := ParseScope(req.Instances, s.SelfID)
	if err != nil {
		return SearchResponse{}, err
	}
	if req.FromPeer {
		sc = Scope{Local: true}
	}
	opts := memory.SearchOptions{Filter: req.Filter, Query: req.Query, Limit: req.Limit}
	if !sc.Remote {
		res, err := s.Local(ctx, opts)
		if err != nil {
			return SearchResponse{}, err
		}
		out := SearchResponse{Query: req.Query, Results: make([]MemoryHit, len(res))}
		for i, r := range res {
			out.Results[i] = MemoryHit{Result: r}
		}
		return out, nil
	}
	if s.Fanout == nil {
		return SearchResponse{}, fmt.Errorf("instances=%s: %w, so only this instance can be searched; omit instances or pass \"local\"",
			req.Instances, ErrNoFederation)
	}
	args, err := PeerSearchArgs(req.Query, req.Filter, req.Limit)
	if err != nil {
		return SearchResponse{}, err
	}
	var local func(ctx context.Context) ([]json.RawMessage, error)
	if sc.Local {
		local = func(ctx context.Context) ([]json.RawMessage, error) {
			res, err := s.Local(ctx, opts)
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
	deadline := s.Deadline
	if deadline <= 0 {
		deadline = DefaultSearchDeadline
	}
	return MergeSearch(req.Query, s.Fanout.Search(ctx, sc.Targets, args, deadline, local)), nil
}

// PeerSearchArgs is the crow_search_memories arguments a peer gets: the
// query, the filter fields that are set and the limit (never instances: a
// peer searches only itself).
func PeerSearchArgs(query string, f memory.Filter, limit int) (json.RawMessage, error) {
	a := map[string]any{"query": query}
	if f.Project != "" {
		a["project"] = f.Project
	}
	if f.Category != "" {
		a["category"] = f.Category
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
	return json.Marshal(a)
}

// MergeSearch turns a federated SearchResult into the answer: each merged
// hit decoded as a memory result with its merged score and FoundOn, the
// instances' statuses and Partial. A hit that does not decode as a memory
// is dropped (Client.Search has checked its shape already).
func MergeSearch(query string, fr SearchResult) SearchResponse {
	out := SearchResponse{Query: query, Results: make([]MemoryHit, 0, len(fr.Results)),
		Instances: fr.Instances, Partial: fr.Partial}
	for _, h := range fr.Results {
		var r memory.Result
		if err := json.Unmarshal(h.Memory, &r); err != nil {
			continue
		}
		r.Score = h.Score
		out.Results = append(out.Results, MemoryHit{Result: r, FoundOn: h.FoundOn})
	}
	return out
}
