package gateway

import (
	"context"
	"encoding/json"

	"github.com/crow-sync/crow/clock"
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

// LocalSummary computes this instance's own summary from its memories
// (federation.Local); the daemon hands it to federation.NewSummaries, which
// puts it first.
func (s *Server) LocalSummary(ctx context.Context) (federation.Summary, error) {
	return federation.Local{InstanceID: s.cfg.Self.InstanceID, Name: s.cfg.Self.Name, Memories: s.cfg.Memories,
		Clock: clock.System{}}.Summary(ctx)
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
