package federation

import (
	"cmp"
	"context"
	"slices"

	"github.com/crow-sync/crow/clock"
	"github.com/crow-sync/crow/memory"
)

// MemoryCounter counts this instance's live memories (package memory's
// Service).
type MemoryCounter interface {
	Count(ctx context.Context) (memory.Counts, error)
}

// Local computes this instance's own Summary from its memories; its
// Summary method is what NewSummaries takes as local.
type Local struct {
	InstanceID, Name string
	Memories         MemoryCounter
	Clock            clock.Clock // stamps UpdatedAt (nil: clock.System)
}

// Summary counts the memories now: in total, per category and per project
// (projects sorted by count, most first, then by name; never nil). Health
// is ok: an instance that answers is up.
func (l Local) Summary(ctx context.Context) (Summary, error) {
	c, err := l.Memories.Count(ctx)
	if err != nil {
		return Summary{}, err
	}
	clk := cmp.Or[clock.Clock](l.Clock, clock.System{})
	sum := Summary{InstanceID: l.InstanceID, Name: l.Name, Memories: c.Total, Categories: c.Categories,
		Health: HealthOK, UpdatedAt: clk.Now().UTC(), Projects: make([]ProjectCount, 0, len(c.Projects))}
	for name, n := range c.Projects {
		sum.Projects = append(sum.Projects, ProjectCount{ID: name, Name: name, Memories: n})
	}
	slices.SortFunc(sum.Projects, func(a, b ProjectCount) int {
		return cmp.Or(cmp.Compare(b.Memories, a.Memories), cmp.Compare(a.Name, b.Name))
	})
	return sum, nil
}
