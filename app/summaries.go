package app

import (
	"context"

	"github.com/crow-sync/crow/federation"
)

// SummaryCache is the federation cache of other instances' summaries
// (package federation's Summaries).
type SummaryCache interface {
	All(ctx context.Context) []federation.Summary
}

// Summaries is the answer of instances.summaries.
type Summaries struct {
	Instances []federation.Summary `json:"instances"`
}

// SummariesIn is the input of instances.summaries.
type SummariesIn struct {
	SelfOnly bool `json:"self_only,omitempty" mcpdefault:"false" desc:"Only this instance's own summary (what peers ask each other for)."`
}

var InstancesSummaries = define(&Def[SummariesIn, Summaries]{
	Spec: Spec{Name: "instances.summaries", Tool: "crow_instance_summaries", Title: "What each instance holds",
		Description: "What each instance (machine) holds, to pick which ones to search: per instance its " +
			"projects with memory counts, memory counts per category, the total, and its health (ok, down, unauthorized, " +
			"unknown). Other instances' summaries are cached (refreshed hourly, health every 5 minutes); this " +
			"instance's is computed now. Returns {instances: [summary]}, this instance first.",
		Access: Peer, ReadOnly: true},
	Impl: (*App).instancesSummaries,
})

// instancesSummaries answers a peer (or self_only) with this instance's
// summary only: peers ask each other for their own, never for the cache.
func (a *App) instancesSummaries(ctx context.Context, in SummariesIn) (Summaries, error) {
	if _, fromPeer := PeerOf(ctx); in.SelfOnly || fromPeer || a.d.Summaries == nil {
		sum, err := a.LocalSummary(ctx)
		if err != nil {
			return Summaries{}, err
		}
		return Summaries{Instances: []federation.Summary{sum}}, nil
	}
	return Summaries{Instances: a.d.Summaries.All(ctx)}, nil
}

// LocalSummary computes this instance's own summary (federation.Local, as
// the daemon's summaries cache does for the first entry).
func (a *App) LocalSummary(ctx context.Context) (federation.Summary, error) {
	svc, err := a.memories()
	if err != nil {
		return federation.Summary{}, err
	}
	return federation.Local{InstanceID: a.d.Self.InstanceID, Name: a.d.Self.Name, Memories: svc, Clock: a.d.Clock}.Summary(ctx)
}
