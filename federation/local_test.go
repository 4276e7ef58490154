package federation_test

import (
	"context"
	"testing"
	"time"

	"github.com/crow-sync/crow/clock"
	"github.com/crow-sync/crow/federation"
	"github.com/crow-sync/crow/memory"
)

// fixedClock is a clock.Clock stopped at t (tickers are the system's).
type fixedClock struct {
	clock.System
	t time.Time
}

func (c fixedClock) Now() time.Time { return c.t }

type counts memory.Counts

func (c counts) Count(context.Context) (memory.Counts, error) { return memory.Counts(c), nil }

func TestLocalSummary(t *testing.T) {
	at := time.Date(2026, 5, 6, 7, 8, 9, 0, time.FixedZone("x", 3600))
	l := federation.Local{InstanceID: "i1", Name: "laptop", Clock: fixedClock{t: at},
		Memories: counts{Total: 8, Projects: map[string]int{"b": 2, "a": 2, "c": 1, "top": 3}, Categories: map[string]int{"fact": 8}}}
	sum, err := l.Summary(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if sum.InstanceID != "i1" || sum.Name != "laptop" || sum.Memories != 8 || sum.Health != federation.HealthOK ||
		!sum.UpdatedAt.Equal(at) || sum.UpdatedAt.Location() != time.UTC || sum.Categories["fact"] != 8 {
		t.Fatalf("summary: %+v", sum)
	}
	want := []string{"top", "a", "b", "c"} // most memories first, then by name
	if len(sum.Projects) != len(want) {
		t.Fatalf("projects: %+v", sum.Projects)
	}
	for i, name := range want {
		if p := sum.Projects[i]; p.Name != name || p.ID != name {
			t.Errorf("project %d: %+v, want %s", i, p, name)
		}
	}
	empty, err := federation.Local{Memories: counts{}}.Summary(context.Background())
	if err != nil || empty.Projects == nil || len(empty.Projects) != 0 || empty.UpdatedAt.IsZero() {
		t.Fatalf("no memories: %+v %v", empty, err)
	}
}
