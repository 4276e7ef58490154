package projects_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/crow-sync/crow/memory"
	"github.com/crow-sync/crow/projects"
	"github.com/crow-sync/crow/store/storetest"
)

// ConsolidateOnHome consolidates on home; off home it forwards through the
// Forwarder, never for a peer's call, and classifies what went wrong.
func TestConsolidateOnHomeForwardsOffHome(t *testing.T) {
	env := storetest.Start(t, t.TempDir())
	mem := memory.NewService(env.DB, env.Writer, nil, memory.Options{})
	nums := numbered(t, env, mem, memory.CreateInput{Content: "we chose badger", Project: "crow"})
	ctx := context.Background()
	req := projects.Request{Ops: ops(t, map[string]any{"op": "add_decision", "title": "Badger",
		"statement": "badger is the store", "evidence_memory_ids": []uint64{nums[0]}})}

	home := projects.New(env.DB, env.Writer, true)
	res, stored, err := home.ConsolidateOnHome(ctx, "crow", req, projects.Route{})
	if err != nil || !stored || res.Version != 1 {
		t.Fatalf("on home: %+v stored=%v %v", res, stored, err)
	}
	if res, stored, err := home.ConsolidateOnHome(ctx, "crow", projects.Request{Ops: ops(t, map[string]any{"op": "set_phase", "phase": ""})},
		projects.Route{}); err != nil || stored || !res.Unchanged {
		t.Fatalf("unchanged on home: %+v stored=%v %v", res, stored, err)
	}

	sat := projects.New(env.DB, env.Writer, false)
	var forwarded []string
	ok := projects.ForwarderFunc(func(_ context.Context, project string, _ projects.Request) (projects.Response, error) {
		forwarded = append(forwarded, project)
		return projects.Response{Project: project, Version: 2}, nil
	})
	res, stored, err = sat.ConsolidateOnHome(ctx, "crow", req, projects.Route{Forwarder: ok})
	if err != nil || stored || res.Version != 2 || len(forwarded) != 1 {
		t.Fatalf("forwarded: %+v stored=%v %v %v", res, stored, err, forwarded)
	}

	// Refused: no forwarder, or a peer's call (never forwarded again).
	for name, route := range map[string]projects.Route{
		"no forwarder": {Self: "laptop", Role: "satellite"},
		"from a peer":  {Forwarder: ok, FromPeer: true, Self: "laptop", Role: "satellite"},
	} {
		_, _, err := sat.ConsolidateOnHome(ctx, "crow", req, route)
		if !errors.Is(err, projects.ErrNotHome) ||
			err.Error() != "only the home instance consolidates project state, and this instance (laptop) is a satellite" {
			t.Errorf("%s: %v", name, err)
		}
	}
	if len(forwarded) != 1 {
		t.Fatalf("a refused call was forwarded: %v", forwarded)
	}

	// Home's refusal is the caller's error; anything else: home unreachable.
	bad := projects.ForwarderFunc(func(context.Context, string, projects.Request) (projects.Response, error) {
		return projects.Response{}, fmt.Errorf("%w: home answered: ops is empty", projects.ErrInvalid)
	})
	if _, _, err := sat.ConsolidateOnHome(ctx, "crow", req, projects.Route{Forwarder: bad}); !errors.Is(err, projects.ErrInvalid) ||
		errors.Is(err, projects.ErrHomeUnreachable) {
		t.Fatalf("home refused: %v", err)
	}
	down := projects.ForwarderFunc(func(context.Context, string, projects.Request) (projects.Response, error) {
		return projects.Response{}, errors.New("dial tcp: connection refused")
	})
	_, _, err = sat.ConsolidateOnHome(ctx, "crow", req, projects.Route{Forwarder: down})
	if !errors.Is(err, projects.ErrHomeUnreachable) || !strings.Contains(err.Error(), "connection refused") ||
		!strings.Contains(err.Error(), "try again when it is online") {
		t.Fatalf("home down: %v", err)
	}
}
