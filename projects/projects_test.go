package projects_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/crow-sync/crow/memory"
	"github.com/crow-sync/crow/projects"
	"github.com/crow-sync/crow/state"
	"github.com/crow-sync/crow/store/storetest"
)

// numbered writes memories and runs home's Numberer until they all have
// their numbers; it returns the memories' numbers in order.
func numbered(t *testing.T, env *storetest.Env, mem *memory.Service, inputs ...memory.CreateInput) []uint64 {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- memory.NewNumberer(env.DB, env.Writer, slog.New(slog.DiscardHandler)).Serve(ctx) }()
	defer func() { cancel(); <-done }()
	var ids []string
	for _, in := range inputs {
		m, err := mem.Add(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, m.ID)
	}
	out := make([]uint64, len(ids))
	deadline := time.Now().Add(10 * time.Second)
	for i, id := range ids {
		for {
			m, err := mem.Get(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if m.Number != nil && m.EventHash != nil {
				out[i] = *m.Number
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("memory %s never numbered", id)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	return out
}

func ops(t *testing.T, list ...map[string]any) []json.RawMessage {
	t.Helper()
	out := make([]json.RawMessage, len(list))
	for i, o := range list {
		b, err := json.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = b
	}
	return out
}

func TestConsolidateStoresVersionsOnHome(t *testing.T) {
	env := storetest.Start(t, t.TempDir())
	mem := memory.NewService(env.DB, env.Writer, nil, memory.Options{})
	nums := numbered(t, env, mem,
		memory.CreateInput{Content: "we chose badger", Project: "crow"},
		memory.CreateInput{Content: "tailscale carries sync", Project: "crow"},
		memory.CreateInput{Content: "the garden needs water", Project: "home"})
	svc := projects.New(env.DB, env.Writer, true)
	ctx := context.Background()

	if _, err := svc.Latest("crow"); !errors.Is(err, projects.ErrNoState) {
		t.Fatalf("Latest before any version: %v", err)
	}
	until := nums[1]
	res, err := svc.Consolidate(ctx, "crow", projects.Request{Ops: ops(t,
		map[string]any{"op": "add_decision", "title": "Badger", "statement": "badger is the store", "evidence_memory_ids": []uint64{nums[0]}},
		map[string]any{"op": "add_risk", "title": "Other project's memory", "severity": "low", "evidence_memory_ids": []uint64{nums[2]}},
		map[string]any{"op": "set_phase", "phase": "alpha"},
		map[string]any{"op": "no_such_op"},
	), ConsolidatedUntilEvent: &until})
	if err != nil {
		t.Fatal(err)
	}
	if res.Version != 1 || res.AppliedCount != 2 || len(res.Rejected) != 2 || res.Unchanged || res.StateHash == "" {
		t.Fatalf("first consolidation: %+v", res)
	}
	if res.Rejected[0].Index != 1 || res.Rejected[1].Index != 3 {
		t.Fatalf("rejected: %+v", res.Rejected)
	}
	if len(res.Applied[0].EventHashes) != 1 {
		t.Fatalf("applied op lacks its event hash: %+v", res.Applied[0])
	}
	v1, err := svc.Latest("crow")
	if err != nil || v1.Version != 1 || v1.StateHash != res.StateHash || v1.State.Meta.ConsolidatedUntilEvent != until {
		t.Fatalf("Latest = %+v, %v", v1, err)
	}
	if err := state.Verify(*v1); err != nil {
		t.Fatalf("stored version does not verify: %v", err)
	}

	// Only invalid ops: no new version, the current one is reported.
	res, err = svc.Consolidate(ctx, "crow", projects.Request{Ops: ops(t, map[string]any{"op": "set_phase", "phase": "alpha"})})
	if err != nil || !res.Unchanged || res.Version != 1 || res.StateHash != v1.StateHash {
		t.Fatalf("an unchanged consolidation: %+v %v", res, err)
	}
	// A second version chains to the first.
	res, err = svc.Consolidate(ctx, "crow", projects.Request{Ops: ops(t, map[string]any{"op": "set_focus", "focus": "ship"})})
	if err != nil || res.Version != 2 {
		t.Fatalf("second consolidation: %+v %v", res, err)
	}
	v2, _ := svc.Latest("crow")
	if string(v2.State.Meta.PreviousStateHash) != v1.StateHash || v2.State.Meta.ConsolidatedUntilEvent != until {
		t.Fatalf("version 2 does not chain to version 1: %+v", v2.State.Meta)
	}
	if got, err := svc.Version("crow", 1); err != nil || got.StateHash != v1.StateHash {
		t.Fatalf("Version(1) = %v %v", got, err)
	}
	// A project whose name extends another's is its own.
	if _, err := svc.Latest("crow/sub"); !errors.Is(err, projects.ErrNoState) {
		t.Fatalf("Latest of crow/sub: %v", err)
	}
	// Request errors.
	back := uint64(0)
	if _, err := svc.Consolidate(ctx, "crow", projects.Request{Ops: ops(t, map[string]any{"op": "set_focus", "focus": "x"}), ConsolidatedUntilEvent: &back}); !errors.Is(err, projects.ErrInvalid) {
		t.Fatalf("a mark going backwards: %v", err)
	}
	ahead := uint64(99)
	if _, err := svc.Consolidate(ctx, "crow", projects.Request{Ops: ops(t, map[string]any{"op": "set_focus", "focus": "x"}), ConsolidatedUntilEvent: &ahead}); !errors.Is(err, projects.ErrInvalid) {
		t.Fatalf("a mark past the highest number: %v", err)
	}
	if _, err := svc.Consolidate(ctx, "crow", projects.Request{}); !errors.Is(err, projects.ErrInvalid) {
		t.Fatalf("no ops: %v", err)
	}
	// Off home: refused, for the caller to forward.
	sat := projects.New(env.DB, env.Writer, false)
	if _, err := sat.Consolidate(ctx, "crow", projects.Request{Ops: ops(t, map[string]any{"op": "set_focus", "focus": "x"})}); !errors.Is(err, projects.ErrNotHome) {
		t.Fatalf("a satellite consolidated: %v", err)
	}
	if v, err := sat.Latest("crow"); err != nil || v.Version != 2 {
		t.Fatalf("a satellite cannot read the state: %v %v", v, err)
	}
}
