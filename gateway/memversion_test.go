package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/crow-sync/crow/memory"
)

// Memory numbers name immutable versions, through a real MCP client and
// REST on a home gateway: an edit of #1 is numbered #2 (supersedes 1);
// crow_get_memory and GET /v1/memory/{n} with 1 return the old content with
// superseded_by 2, with 2 the new one; an unknown number is a 404 / tool error
// naming the highest number; and the project state citing #1 flags it as
// stale evidence (#1 → #2) beside the unchanged, hashed state.
func TestMemoryVersionsByNumber(t *testing.T) {
	env := newGatewayEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- memory.NewNumberer(env.db, env.writer, slog.New(slog.DiscardHandler)).Serve(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	c := owner(t, env.url+mcpPath)
	sc := newSchemaChecker(t, c)
	waitNumber := func(id string, want float64) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
			if got := restGet(t, env.url+"/v1/memory/"+id); got["number"] == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("memory %s never got #%v", id, want)
			}
		}
	}
	stored := ok(t, c, "crow_store_memory", map[string]any{"content": "deploy from the staging branch", "project": "crow"})
	id := stored["id"].(string)
	waitNumber(id, 1)
	res := ok(t, c, "update_project_state", map[string]any{"project": "crow", "ops": []any{
		map[string]any{"op": "add_decision", "title": "Staging", "statement": "deploy from staging", "evidence_memory_ids": []any{1}},
	}})
	hash := res["state_hash"]
	ok(t, c, "crow_update_memory", map[string]any{"id": id, "content": "deploy from the main branch"})
	waitNumber(id, 2)

	for _, get := range []func(string) map[string]any{
		func(n string) map[string]any { return ok(t, c, "crow_get_memory", map[string]any{"id": n}) },
		func(n string) map[string]any { return restGet(t, env.url+"/v1/memory/"+n) },
	} {
		old, cur := get("1"), get("2")
		sc.check(t, "crow_get_memory", old)
		sc.check(t, "crow_get_memory", cur)
		if old["id"] != id || old["number"] != 1.0 || old["content"] != "deploy from the staging branch" ||
			old["superseded_by"] != 2.0 || old["supersedes"] != nil || old["content_hash"] != stored["content_hash"] {
			t.Fatalf("#1: %v", old)
		}
		if cur["id"] != id || cur["number"] != 2.0 || cur["content"] != "deploy from the main branch" ||
			cur["supersedes"] != 1.0 || cur["superseded_by"] != nil {
			t.Fatalf("#2: %v", cur)
		}
	}
	toolErr(t, c, "crow_get_memory", map[string]any{"id": "3"}, "no memory #3", "highest is #2")
	req, _ := http.NewRequest(http.MethodGet, env.url+"/v1/memory/3", nil)
	req.Header.Set("Authorization", "Bearer "+testKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var body map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound || fmt.Sprint(body["error"]) != "no memory #3 (numbers are assigned by home; highest is #2)" {
		t.Fatalf("GET /v1/memory/3: %d %v", resp.StatusCode, body)
	}

	for _, st := range []map[string]any{
		ok(t, c, "get_project_state", map[string]any{"project": "crow"}),
		restGet(t, env.url+"/v1/project/crow/state"),
	} {
		sc.check(t, "get_project_state", st)
		stale, _ := json.Marshal(st["stale_evidence"])
		if string(stale) != `{"dec_0001":[{"number":1,"superseded_by":2}]}` || st["state_hash"] != hash {
			t.Fatalf("state: stale evidence %s, hash %v (was %v)", stale, st["state_hash"], hash)
		}
	}
}
