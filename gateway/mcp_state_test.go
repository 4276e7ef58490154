package gateway_test

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/crow-sync/crow/memory"
)

// The Project State through a real MCP client and REST on a home gateway:
// memories numbered by home's Numberer are cited, update_project_state
// creates version 1 (an invalid op is rejected with its reason, the rest
// applies), get_project_state and GET /v1/project/{name}/state return it,
// and GET /v1/projects lists the project with its version.
func TestProjectStateToolsAndREST(t *testing.T) {
	env := newGatewayEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- memory.NewNumberer(env.db, env.writer, slog.New(slog.DiscardHandler)).Serve(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	m, err := env.mem.Add(ctx, memory.CreateInput{Content: "we chose badger", Project: "crow"})
	if err != nil {
		t.Fatal(err)
	}
	var number float64
	for deadline := time.Now().Add(10 * time.Second); ; {
		got, _ := env.mem.Get(ctx, m.ID)
		if got.Number != nil && got.EventHash != nil {
			number = float64(*got.Number)
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("never numbered")
		}
		time.Sleep(5 * time.Millisecond)
	}
	c := owner(t, env.url+mcpPath)
	sc := newSchemaChecker(t, c)
	toolErr(t, c, "get_project_state", map[string]any{"project": "crow"}, "no state version yet")
	res := ok(t, c, "update_project_state", map[string]any{"project": "crow", "consolidated_until_event": number, "ops": []any{
		map[string]any{"op": "add_decision", "title": "Badger", "statement": "badger is the embedded store", "evidence_memory_ids": []any{number}},
		map[string]any{"op": "add_decision", "title": "No evidence", "statement": "x", "evidence_memory_ids": []any{}},
	}})
	sc.check(t, "update_project_state", res)
	if res["version"] != 1.0 || res["applied_count"] != 1.0 || len(res["rejected"].([]any)) != 1 {
		t.Fatalf("update_project_state = %v", res)
	}
	v := ok(t, c, "get_project_state", map[string]any{"project": "crow"})
	sc.check(t, "get_project_state", v)
	decisions := v["state"].(map[string]any)["decisions"].([]any)
	if v["state_hash"] != res["state_hash"] || len(decisions) != 1 || decisions[0].(map[string]any)["status"] != "proposed" {
		t.Fatalf("get_project_state = %v", v)
	}
	rest := restGet(t, env.url+"/v1/project/crow/state")
	if rest["state_hash"] != res["state_hash"] {
		t.Fatalf("REST state = %v", rest)
	}
	list := restGet(t, env.url+"/v1/projects")
	ps := list["projects"].([]any)
	if len(ps) != 1 || ps[0].(map[string]any)["state_version"] != 1.0 || ps[0].(map[string]any)["memories"] != 1.0 {
		t.Fatalf("projects = %v", list)
	}
	// REST errors: unknown project 404, a mark past the highest number 400.
	req, _ := http.NewRequest("GET", env.url+"/v1/project/nope/state", nil)
	req.Header.Set("Authorization", "Bearer "+testKey)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 404 {
		t.Fatalf("unknown project: %v %v", resp, err)
	}
	req, _ = http.NewRequest("POST", env.url+"/v1/project/crow/state/ops",
		strings.NewReader(`{"ops":[{"op":"set_focus","focus":"x"}],"consolidated_until_event":99}`))
	req.Header.Set("Authorization", "Bearer "+testKey)
	req.Header.Set("Content-Type", "application/json")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 400 {
		t.Fatalf("a mark ahead: %v %v", resp, err)
	}
}
