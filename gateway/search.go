package gateway

import (
	"context"
	"errors"

	"github.com/crow-sync/crow/federation"
	"github.com/crow-sync/crow/memory"
)

// Searcher fans a search out to other instances (package federation's
// Client.Search).
type Searcher = federation.Fanout

// DefaultSearchDeadline bounds each instance's part of a federated search.
const DefaultSearchDeadline = federation.DefaultSearchDeadline

// searchResponse is the answer of GET /v1/memories/search and
// crow_search_memories (federation.SearchResponse: partial is always
// present).
type searchResponse = federation.SearchResponse

// searcher runs searches over a scope (federation owns the rules).
func (s *Server) searcher() federation.Searcher {
	fs := federation.Searcher{SelfID: s.cfg.Self.InstanceID, Local: s.cfg.Memories.Search, Deadline: s.cfg.SearchDeadline}
	if s.cfg.Federation != nil {
		fs.Fanout = s.cfg.Federation
	}
	return fs
}

// checkScope checks an instances argument, with a message for the caller.
func (s *Server) checkScope(instances string) error {
	if _, err := federation.ParseScope(instances, s.cfg.Self.InstanceID); err != nil {
		return toolErrorf("%s", err.Error())
	}
	return nil
}

// search runs a search over the scope. A federated call from a peer
// searches only this instance (it never fans out again).
func (s *Server) search(ctx context.Context, instances, query string, f memory.Filter, limit int) (searchResponse, error) {
	_, fromPeer := peerOf(ctx)
	res, err := s.searcher().Search(ctx, federation.SearchRequest{Instances: instances, Query: query, Filter: f,
		Limit: limit, FromPeer: fromPeer})
	if errors.Is(err, federation.ErrBadScope) || errors.Is(err, federation.ErrNoFederation) {
		return searchResponse{}, toolErrorf("%s", err.Error())
	}
	return res, err
}
