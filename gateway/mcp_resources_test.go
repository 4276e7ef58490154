package gateway_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/crow-sync/crow/memory"
)

// The MCP resources and prompts through a real MCP client on /mcp of a home
// gateway (badger on disk, home's Numberer): resources/list names the
// instances, the numbered memory and the project's state; the templates are
// listed; reading each answers the JSON of its tool (same fields); a missing
// number and a malformed one are JSON-RPC errors that say so; the prompts
// name the right tools and state the project's version; /router/mcp has
// neither.
func TestMCPResourcesAndPrompts(t *testing.T) {
	env := newGatewayEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- memory.NewNumberer(env.db, env.writer, slog.New(slog.DiscardHandler)).Serve(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	m, err := env.mem.Add(ctx, memory.CreateInput{Content: "resources are read-only views", Project: "res"})
	if err != nil {
		t.Fatal(err)
	}
	var number uint64
	for deadline := time.Now().Add(10 * time.Second); ; {
		got, _ := env.mem.Get(ctx, m.ID)
		if got.Number != nil {
			number = *got.Number
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("never numbered")
		}
		time.Sleep(5 * time.Millisecond)
	}
	n := strconv.FormatUint(number, 10)
	c := owner(t, env.url+mcpPath)
	ok(t, c, "update_project_state", map[string]any{"project": "res", "consolidated_until_event": number, "ops": []any{
		map[string]any{"op": "set_focus", "focus": "resources"},
	}})
	rctx, rcancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer rcancel()

	list, err := c.ListResources(rctx, mcp.ListResourcesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	uris := map[string]string{}
	for _, r := range list.Resources {
		uris[r.URI] = r.MIMEType
	}
	for _, want := range []string{"crow://instances", "crow://memory/" + n, "crow://project/res/state"} {
		if uris[want] != "application/json" {
			t.Errorf("resources/list lacks %s (application/json): %v", want, uris)
		}
	}
	tl, err := c.ListResourceTemplates(rctx, mcp.ListResourceTemplatesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var templates []string
	for _, tt := range tl.ResourceTemplates {
		templates = append(templates, tt.URITemplate.Raw())
	}
	if strings.Join(templates, " ") != "crow://memory/{number} crow://project/{name}/state" {
		t.Errorf("templates = %v", templates)
	}

	read := func(uri string) (map[string]any, error) {
		req := mcp.ReadResourceRequest{}
		req.Params.URI = uri
		res, err := c.ReadResource(rctx, req)
		if err != nil {
			return nil, err
		}
		if len(res.Contents) != 1 {
			t.Fatalf("%s: %d contents", uri, len(res.Contents))
		}
		tc, isText := res.Contents[0].(mcp.TextResourceContents)
		if !isText || tc.URI != uri || tc.MIMEType != "application/json" {
			t.Fatalf("%s: contents %#v", uri, res.Contents[0])
		}
		var v map[string]any
		if err := json.Unmarshal([]byte(tc.Text), &v); err != nil {
			t.Fatalf("%s: not JSON: %v", uri, err)
		}
		return v, nil
	}
	mem, err := read("crow://memory/" + n)
	if err != nil {
		t.Fatal(err)
	}
	if mem["id"] != m.ID || mem["content"] != "resources are read-only views" || mem["number"] != float64(number) {
		t.Errorf("memory resource = %v", mem)
	}
	if tool := ok(t, c, "crow_get_memory", map[string]any{"id": n}); !jsonEqual(tool, mem) {
		t.Errorf("memory resource %v differs from crow_get_memory %v", mem, tool)
	}
	st, err := read("crow://project/res/state")
	if err != nil {
		t.Fatal(err)
	}
	if st["version"] != 1.0 || st["state"].(map[string]any)["current_focus"] != "resources" {
		t.Errorf("state resource = %v", st)
	}
	inst, err := read("crow://instances")
	if err != nil {
		t.Fatal(err)
	}
	if inst["self"] != testSelf().InstanceID {
		t.Errorf("instances resource = %v", inst)
	}
	if _, err := read("crow://memory/99999"); err == nil || !strings.Contains(err.Error(), "99999") {
		t.Errorf("missing number: %v", err)
	}
	if _, err := read("crow://memory/abc"); err == nil || !strings.Contains(err.Error(), "decimal digits") {
		t.Errorf("malformed number: %v", err)
	}
	if _, err := read("crow://project/nope/state"); err == nil {
		t.Error("state of an unknown project: no error")
	}

	pl, err := c.ListPrompts(rctx, mcp.ListPromptsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range pl.Prompts {
		names = append(names, p.Name)
	}
	if strings.Join(names, " ") != "consolidate_project review_sync_conflicts" {
		t.Errorf("prompts = %v", names)
	}
	get := func(name string, args map[string]string) (string, error) {
		req := mcp.GetPromptRequest{}
		req.Params.Name, req.Params.Arguments = name, args
		res, err := c.GetPrompt(rctx, req)
		if err != nil {
			return "", err
		}
		return res.Messages[0].Content.(mcp.TextContent).Text, nil
	}
	text, err := get("consolidate_project", map[string]string{"project": "res"})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"version 1", "get_project_state", "crow_list_memories", "update_project_state", "evidence_memory_ids", "add_decision"} {
		if !strings.Contains(text, want) {
			t.Errorf("consolidate_project lacks %q:\n%s", want, text)
		}
	}
	if _, err := get("consolidate_project", nil); err == nil || !strings.Contains(err.Error(), "project") {
		t.Errorf("consolidate_project without project: %v", err)
	}
	text, err = get("review_sync_conflicts", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"0 open", "crow_list_sync_conflicts", "crow_sync_conflicts_keep_current", "crow_sync_conflicts_restore_other", "confirmation"} {
		if !strings.Contains(text, want) {
			t.Errorf("review_sync_conflicts lacks %q:\n%s", want, text)
		}
	}

	rc := owner(t, env.url+"/router/mcp")
	if _, err := rc.ListResources(rctx, mcp.ListResourcesRequest{}); err == nil {
		t.Error("/router/mcp lists resources")
	}
}
