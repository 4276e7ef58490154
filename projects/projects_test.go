package projects_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
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

// TestStaleEvidence: after an edit of a cited memory is numbered, the state
// read flags the citation with the newest number of the memory (following
// the whole supersede chain); the stored version and its hash are unchanged,
// and the superseded number can still be cited (it names an immutable
// version).
func TestStaleEvidence(t *testing.T) {
	env := storetest.Start(t, t.TempDir())
	mem := memory.NewService(env.DB, env.Writer, nil, memory.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- memory.NewNumberer(env.DB, env.Writer, slog.New(slog.DiscardHandler)).Serve(ctx) }()
	defer func() { cancel(); <-done }()
	a, _ := mem.Add(ctx, memory.CreateInput{Content: "deploy to staging", Project: "crow"})
	b, _ := mem.Add(ctx, memory.CreateInput{Content: "badger is the store", Project: "crow"})
	waitNumber := func(id string, want uint64) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
			if m, err := mem.Get(ctx, id); err == nil && m.Number != nil && *m.Number == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("memory %s never got #%d", id, want)
			}
		}
	}
	waitNumber(a.ID, 1)
	waitNumber(b.ID, 2)
	svc := projects.New(env.DB, env.Writer, true)
	res, err := svc.Consolidate(ctx, "crow", projects.Request{Ops: ops(t,
		map[string]any{"op": "add_decision", "title": "Staging", "statement": "deploy to staging", "evidence_memory_ids": []uint64{1, 2}},
		map[string]any{"op": "add_risk", "title": "Badger", "severity": "low", "evidence_memory_ids": []uint64{2}})})
	if err != nil || res.AppliedCount != 2 {
		t.Fatalf("consolidate: %+v %v", res, err)
	}
	anchors := fakeAnchors{}
	st, err := svc.LatestWithAnchor("crow", anchors)
	if err != nil || st.StaleEvidence == nil || len(st.StaleEvidence) != 0 {
		t.Fatalf("before the edit: %+v %v", st.StaleEvidence, err)
	}

	two := "deploy to production"
	if _, err := mem.Update(ctx, a.ID, memory.PatchInput{Content: &two}); err != nil {
		t.Fatal(err)
	}
	waitNumber(a.ID, 3)
	three := "deploy to production, on Fridays never"
	if _, err := mem.Update(ctx, a.ID, memory.PatchInput{Content: &three}); err != nil {
		t.Fatal(err)
	}
	waitNumber(a.ID, 4)
	st, err = svc.LatestWithAnchor("crow", anchors)
	if err != nil {
		t.Fatal(err)
	}
	want := projects.StaleEvidence{"dec_0001": {{Number: 1, SupersededBy: 4}}}
	if got, _ := json.Marshal(st.StaleEvidence); string(got) != `{"dec_0001":[{"number":1,"superseded_by":4}]}` {
		t.Fatalf("stale evidence %s, want %v", got, want)
	}
	if st.StateHash != res.StateHash || state.Verify(st.Version) != nil {
		t.Fatalf("the annotation changed the state: %s, was %s", st.StateHash, res.StateHash)
	}
	doc, _ := json.Marshal(st)
	var top struct {
		State map[string]any `json:"state"`
	}
	if json.Unmarshal(doc, &top) != nil || strings.Contains(fmt.Sprint(top.State), "stale") {
		t.Fatalf("stale evidence inside the hashed state: %s", doc)
	}
	// #1 still names its version: it may be cited, and is flagged.
	res, err = svc.Consolidate(ctx, "crow", projects.Request{Ops: ops(t,
		map[string]any{"op": "add_milestone", "title": "Old text", "evidence_memory_ids": []uint64{1, 3}})})
	if err != nil || res.AppliedCount != 1 {
		t.Fatalf("citing a superseded number: %+v %v", res, err)
	}
	if st, _ = svc.LatestWithAnchor("crow", anchors); len(st.StaleEvidence["mil_0001"]) != 2 {
		t.Fatalf("stale evidence %+v", st.StaleEvidence)
	}
}
