package gateway

import (
	"cmp"
	"context"
	"encoding/json"
	"slices"
	"time"

	"github.com/crow-sync/crow/federation"
)

// SummaryCache is the federation cache of other instances' summaries
// (package federation's Summaries).
type SummaryCache interface {
	All(ctx context.Context) []federation.Summary
	// Kick refreshes now the peers never fetched (after a registration).
	Kick()
}

// summariesResponse is the answer of crow_instance_summaries.
type summariesResponse struct {
	Instances []federation.Summary `json:"instances"`
}

// LocalSummary computes this instance's own summary from its memories; the
// daemon hands it to federation.NewSummaries, which puts it first.
func (s *Server) LocalSummary(ctx context.Context) (federation.Summary, error) {
	c, err := s.cfg.Memories.Count(ctx)
	if err != nil {
		return federation.Summary{}, err
	}
	sum := federation.Summary{InstanceID: s.app.Self().InstanceID, Name: s.app.Self().Name, Memories: c.Total,
		Categories: c.Categories, Health: federation.HealthOK, UpdatedAt: time.Now().UTC()}
	for name, n := range c.Projects {
		sum.Projects = append(sum.Projects, federation.ProjectCount{ID: name, Name: name, Memories: n})
	}
	slices.SortFunc(sum.Projects, func(a, b federation.ProjectCount) int {
		return cmp.Or(cmp.Compare(b.Memories, a.Memories), cmp.Compare(a.Name, b.Name))
	})
	if sum.Projects == nil {
		sum.Projects = []federation.ProjectCount{}
	}
	return sum, nil
}

func (s *Server) mcpInstanceSummaries(ctx context.Context, raw json.RawMessage) (any, error) {
	var a struct {
		SelfOnly bool `json:"self_only"`
	}
	if err := decodeArgs(raw, &a); err != nil {
		return nil, err
	}
	if _, fromPeer := peerOf(ctx); a.SelfOnly || fromPeer || s.cfg.Summaries == nil {
		sum, err := s.LocalSummary(ctx)
		if err != nil {
			return nil, err
		}
		return summariesResponse{Instances: []federation.Summary{sum}}, nil
	}
	return summariesResponse{Instances: s.cfg.Summaries.All(ctx)}, nil
}
