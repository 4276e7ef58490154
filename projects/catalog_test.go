package projects_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/crow-sync/crow/projects"
	"github.com/crow-sync/crow/state"
	"github.com/crow-sync/crow/store"
	"github.com/crow-sync/crow/store/storetest"
)

// The list joins the projects table, the memory counts and the newest state
// version, sorted by name; Create validates the name and the description.
func TestListAndCreate(t *testing.T) {
	env := storetest.Start(t, t.TempDir())
	ctx := context.Background()
	svc := projects.New(env.DB, env.Writer, true)

	if l, err := svc.List(nil); err != nil || l.Projects == nil || len(l.Projects) != 0 {
		t.Fatalf("empty list: %+v %v", l, err)
	}
	if info, err := svc.Create(ctx, projects.CreateInput{Name: "crow", Description: "the sync daemon"}); err != nil ||
		info != (projects.Info{Name: "crow", Description: "the sync daemon"}) {
		t.Fatalf("create: %+v %v", info, err)
	}
	if _, err := svc.Create(ctx, projects.CreateInput{Name: "attic"}); err != nil {
		t.Fatal(err)
	}
	for name, in := range map[string]projects.CreateInput{
		"no name":              {},
		"surrounding spaces":   {Name: " crow"},
		"too long":             {Name: strings.Repeat("x", 129)},
		"description too long": {Name: "ok", Description: strings.Repeat("d", projects.MaxDescriptionBytes+1)},
	} {
		if _, err := svc.Create(ctx, in); !errors.Is(err, projects.ErrInvalid) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := svc.Create(ctx, projects.CreateInput{Name: "ok", Description: strings.Repeat("d", projects.MaxDescriptionBytes)}); err != nil {
		t.Fatalf("description at the limit: %v", err)
	}

	// A state version of crow, written as home's consolidation would.
	writeVersion(t, env, &state.Version{Project: "crow", Version: 3, StateHash: "0xabc"})

	l, err := svc.List(map[string]int{"crow": 2, "garden": 5})
	if err != nil {
		t.Fatal(err)
	}
	want := []projects.Info{
		{Name: "attic"},
		{Name: "crow", Description: "the sync daemon", Memories: 2, StateVersion: 3, StateHash: "0xabc"},
		{Name: "garden", Memories: 5},
		{Name: "ok", Description: strings.Repeat("d", projects.MaxDescriptionBytes)},
	}
	if len(l.Projects) != len(want) {
		t.Fatalf("list: %+v", l.Projects)
	}
	for i := range want {
		if l.Projects[i] != want[i] {
			t.Errorf("entry %d: %+v, want %+v", i, l.Projects[i], want[i])
		}
	}
}

type fakeAnchors map[uint64]projects.StateAnchor

func (f fakeAnchors) StateAnchor(_ string, v uint64) (projects.StateAnchor, error) {
	if a, ok := f[v]; ok {
		return a, nil
	}
	if v == 99 {
		return projects.StateAnchor{}, errors.New("disk on fire")
	}
	return projects.StateAnchor{Status: "pending"}, nil
}

// LatestWithAnchor joins the newest version with its anchoring record.
func TestLatestWithAnchor(t *testing.T) {
	env := storetest.Start(t, t.TempDir())
	svc := projects.New(env.DB, env.Writer, false)
	anchors := fakeAnchors{2: {Status: "anchored", OnchainAnchorID: 4, TxHash: "0xt", BlockNumber: 8}}
	if _, err := svc.LatestWithAnchor("crow", anchors); !errors.Is(err, projects.ErrNoState) {
		t.Fatalf("no state: %v", err)
	}
	writeVersion(t, env, &state.Version{Project: "crow", Version: 1, StateHash: "0x1"})
	if got, err := svc.LatestWithAnchor("crow", anchors); err != nil || got.Version.Version != 1 || got.Anchor.Status != "pending" {
		t.Fatalf("pending: %+v %v", got, err)
	}
	writeVersion(t, env, &state.Version{Project: "crow", Version: 2, StateHash: "0x2"})
	got, err := svc.LatestWithAnchor("crow", anchors)
	if err != nil || got.StateHash != "0x2" || got.Anchor != anchors[2] {
		t.Fatalf("anchored: %+v %v", got, err)
	}
	if _, err := projects.WithAnchor(&state.Version{Project: "crow", Version: 99}, anchors); err == nil {
		t.Fatal("a failing record read was not reported")
	}
}

// writeVersion stores v as a state_versions row (home's consolidation does).
func writeVersion(t testing.TB, env *storetest.Env, v *state.Version) {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	id := fmt.Sprintf("%s/%020d", v.Project, v.Version)
	if _, err := env.Writer.Write(context.Background(), store.Mutation{Table: store.TableStateVersions, RowID: id, Op: store.OpInsert, Data: data}); err != nil {
		t.Fatal(err)
	}
}
