package app

import (
	"cmp"
	"context"
	"slices"
	"time"

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
	Impl: func(a *App, ctx context.Context, in SummariesIn) (Summaries, error) {
		if _, fromPeer := PeerOf(ctx); in.SelfOnly || fromPeer || a.d.Summaries == nil {
			sum, err := a.LocalSummary(ctx)
			if err != nil {
				return Summaries{}, err
			}
			return Summaries{Instances: []federation.Summary{sum}}, nil
		}
		return Summaries{Instances: a.d.Summaries.All(ctx)}, nil
	},
})

// LocalSummary computes this instance's own summary from its memories; the
// daemon hands it to federation.NewSummaries, which puts it first.
func (a *App) LocalSummary(ctx context.Context) (federation.Summary, error) {
	svc, err := a.memories()
	if err != nil {
		return federation.Summary{}, err
	}
	c, err := svc.Count(ctx)
	if err != nil {
		return federation.Summary{}, err
	}
	now := time.Now
	if a.d.Now != nil {
		now = a.d.Now
	}
	sum := federation.Summary{InstanceID: a.d.Self.InstanceID, Name: a.d.Self.Name, Memories: c.Total,
		Categories: c.Categories, Health: federation.HealthOK, UpdatedAt: now().UTC()}
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
