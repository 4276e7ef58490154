package gateway_test

import (
	"cmp"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/crow-sync/crow/app"
	"github.com/crow-sync/crow/conflicts"
	"github.com/crow-sync/crow/gateway"
	"github.com/crow-sync/crow/identity"
	"github.com/crow-sync/crow/memory"
	"github.com/crow-sync/crow/projects"
	"github.com/crow-sync/crow/records"
	"github.com/crow-sync/crow/registry"
	"github.com/crow-sync/crow/registry/registrytest"
	"github.com/crow-sync/crow/search"
	"github.com/crow-sync/crow/store"
	"github.com/crow-sync/crow/store/storetest"
)

const (
	testKey = "owner-key-for-tests"
	selfID  = "inst-test" // storetest's writer writes as this instance
	peerID  = "sat-1"
	mcpPath = "/mcp"
	rtrPath = "/router/mcp"
	// configuredURL is the gateway URL the test gateway is configured with (a
	// Tailscale-like address: only the Host header uses it).
	configuredURL = "http://100.64.0.1:3001"
	initBody      = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`
)

// specTools are the tools SPEC §8 names: every one must be served.
var specTools = []string{
	"crow_store_memory", "crow_search_memories", "crow_get_memory", "crow_list_memories",
	"crow_update_memory", "crow_delete_memory", "crow_list_instances", "crow_register_instance",
	"crow_revoke_instance", "crow_sync_status", "crow_list_sync_conflicts", "crow_sync_conflicts_keep_current",
	"crow_sync_conflicts_restore_other", "crow_sync_conflicts_resolve_all", "crow_instance_summaries",
	"get_project_state", "update_project_state",
}

// toolsOf are the tools path serves: every operation of app's table with a
// tool (so a new operation needs no edit here); /router/mcp leaves out the
// operations about this instance only (app.Spec.NoRoute: registering and
// revoking).
func toolsOf(path string) []string {
	var out []string
	for _, op := range app.Ops() {
		if sp := op.Info(); sp.Tool != "" && (path != rtrPath || !sp.NoRoute) {
			out = append(out, sp.Tool)
		}
	}
	return out
}

// TestSpecToolsServed: the table serves at least the tools SPEC §8 names.
func TestSpecToolsServed(t *testing.T) {
	served := toolsOf(mcpPath)
	for _, name := range specTools {
		if !slices.Contains(served, name) {
			t.Errorf("SPEC §8 names %s, which no operation serves", name)
		}
	}
}

func testSeed() identity.Seed {
	var s identity.Seed
	for i := range s {
		s[i] = byte(i + 7)
	}
	return s
}

// gatewayEnv is a gateway over a real store, search index, memory service and
// registry, served by httptest.
type gatewayEnv struct {
	url    string
	mem    *memory.Service
	reg    *registry.Registry
	db     *store.DB
	writer *store.Writer
	cs     *conflicts.Store
}

func newGatewayEnv(tb testing.TB, opts ...func(*app.Deps, *gateway.Config)) *gatewayEnv {
	tb.Helper()
	return newGatewayEnvStore(tb, store.Options{}, opts...)
}

// newGatewayEnvStore is newGatewayEnv over a store opened with sopts.
func newGatewayEnvStore(tb testing.TB, sopts store.Options, opts ...func(*app.Deps, *gateway.Config)) *gatewayEnv {
	tb.Helper()
	senv := storetest.StartOptions(tb, tb.TempDir(), sopts)
	ix, err := search.Open(filepath.Join(tb.TempDir(), "index"), slog.New(slog.DiscardHandler))
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- search.NewIndexer(senv.DB, ix).Serve(ctx) }()
	tb.Cleanup(func() {
		cancel()
		<-done
		ix.Close()
	})
	mem := memory.NewService(senv.DB, senv.Writer, ix, memory.Options{})
	cs := conflicts.NewStore(senv.DB, nil)
	env := startGateway(tb, mem, cs, conflicts.NewRecovery(cs, senv.Writer), append([]func(*app.Deps, *gateway.Config){func(d *app.Deps, c *gateway.Config) {
		d.DB, d.Writer = senv.DB, senv.Writer
		d.Records = records.NewService(senv.DB, senv.Writer, ix, records.Options{})
		d.Projects = projects.New(senv.DB, senv.Writer, true)
		d.ProjectID = func(p string) ([32]byte, bool) { return sha256.Sum256([]byte(p)), true }
	}}, opts...)...)
	env.db = senv.DB
	env.writer = senv.Writer
	return env
}

// serveGateway serves a gateway over the operations of app.New(deps) and
// cfg (whose Writer defaults to deps'), and returns its URL.
func serveGateway(tb testing.TB, deps app.Deps, cfg gateway.Config) string {
	tb.Helper()
	if deps.Logger == nil {
		deps.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Logger == nil {
		cfg.Logger = deps.Logger
	}
	cfg.Writer = cmp.Or(cfg.Writer, deps.Writer)
	if cfg.Keys == nil {
		cfg.Keys = gateway.NewKeyChecker(sha256.Sum256([]byte(testKey)))
	}
	cfg.App = app.New(deps)
	srv := httptest.NewServer(gateway.New(cfg).Handler())
	tb.Cleanup(srv.Close)
	return srv.URL
}

// newRegistry returns a fresh in-memory registry holding this instance
// (home, of testSeed's identity).
func newRegistry(tb testing.TB) *registry.Registry {
	tb.Helper()
	cfg := registrytest.SeedConfig(testSeed(), selfID, registry.RoleHome, "home")
	cfg.HealthTimeout, cfg.Logger = 5*time.Second, slog.New(slog.DiscardHandler)
	reg, err := registry.New(context.Background(), cfg)
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := reg.RegisterSelf(context.Background(), registry.SelfInfo{
		Name: "home", Role: registry.RoleHome, GatewayURL: "http://127.0.0.1:1",
	}); err != nil {
		tb.Fatal(err)
	}
	return reg
}

// testSelf is this instance's description in the test gateways.
func testSelf() app.Self {
	return app.Self{
		InstanceID: selfID, Name: "home", Role: registry.RoleHome, CrowID: testSeed().CrowID(),
		PublicKey: "00", Version: "test", GatewayURL: configuredURL,
		SyncAddrs: func() []string { return nil },
	}
}

// startGateway serves a gateway over mem and the conflict store cs (nil:
// none) with a fresh in-memory registry; opts adjust the app's parts and the
// gateway's configuration.
func startGateway(tb testing.TB, mem *memory.Service, cs *conflicts.Store, rec *conflicts.Recovery, opts ...func(*app.Deps, *gateway.Config)) *gatewayEnv {
	tb.Helper()
	reg := newRegistry(tb)
	key := testSeed().InstanceKey(selfID)
	deps := app.Deps{
		Self:      testSelf(),
		Sign:      func(c []byte) []byte { return ed25519.Sign(key, c) },
		Memories:  mem,
		Instances: reg,
		Conflicts: cs,
		Recovery:  rec,
	}
	var cfg gateway.Config
	for _, o := range opts {
		o(&deps, &cfg)
	}
	return &gatewayEnv{url: serveGateway(tb, deps, cfg), mem: mem, reg: reg, cs: cs}
}

// dial connects a real mcp-go streamable-HTTP client to path with headers.
func dial(tb testing.TB, url string, headers map[string]string) (*client.Client, error) {
	tb.Helper()
	c, err := client.NewStreamableHttpClient(url, transport.WithHTTPHeaders(headers))
	if err != nil {
		return nil, err
	}
	tb.Cleanup(func() { c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Start(ctx); err != nil {
		return nil, err
	}
	req := mcp.InitializeRequest{}
	req.Params.ClientInfo = mcp.Implementation{Name: "crow-test", Version: "1"}
	if _, err := c.Initialize(ctx, req); err != nil {
		return nil, err
	}
	return c, nil
}

func owner(tb testing.TB, url string) *client.Client {
	tb.Helper()
	c, err := dial(tb, url, map[string]string{"Authorization": "Bearer " + testKey})
	if err != nil {
		tb.Fatalf("connecting to %s: %v", url, err)
	}
	return c
}

// call calls tool and returns its result (tool errors included).
func call(tb testing.TB, c *client.Client, tool string, args map[string]any) *mcp.CallToolResult {
	tb.Helper()
	req := mcp.CallToolRequest{}
	req.Params.Name = tool
	req.Params.Arguments = args
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := c.CallTool(ctx, req)
	if err != nil {
		tb.Fatalf("%s: protocol error: %v", tool, err)
	}
	return res
}

// ok calls tool, requires success and returns the structured result as a map.
func ok(tb testing.TB, c *client.Client, tool string, args map[string]any) map[string]any {
	tb.Helper()
	res := call(tb, c, tool, args)
	if res.IsError {
		tb.Fatalf("%s(%v): tool error: %s", tool, args, text(res))
	}
	m, isMap := res.StructuredContent.(map[string]any)
	if !isMap {
		tb.Fatalf("%s: structured content is %T, want a JSON object", tool, res.StructuredContent)
	}
	// the text content carries the same JSON for clients without structured content
	var fromText map[string]any
	if err := json.Unmarshal([]byte(text(res)), &fromText); err != nil {
		tb.Fatalf("%s: text content is not the JSON result: %v", tool, err)
	}
	return m
}

// toolErr calls tool, requires a tool error (IsError, not a protocol error)
// whose text contains every want, and returns the text.
func toolErr(tb testing.TB, c *client.Client, tool string, args map[string]any, want ...string) string {
	tb.Helper()
	res := call(tb, c, tool, args)
	msg := text(res)
	if !res.IsError {
		tb.Fatalf("%s(%v): succeeded (%s), want a tool error", tool, args, msg)
	}
	for _, w := range want {
		if !strings.Contains(msg, w) {
			tb.Errorf("%s(%v): error %q does not mention %q", tool, args, msg, w)
		}
	}
	return msg
}

func text(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, isText := c.(mcp.TextContent); isText {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// listTools returns the tools of c by name.
func listTools(t *testing.T, c *client.Client) map[string]mcp.Tool {
	t.Helper()
	res, err := c.ListTools(context.Background(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]mcp.Tool{}
	for _, tl := range res.Tools {
		out[tl.Name] = tl
	}
	return out
}

func TestMCPListTools(t *testing.T) {
	env := newGatewayEnv(t)
	for _, path := range []string{mcpPath, rtrPath} {
		tools := listTools(t, owner(t, env.url+path))
		if len(tools) != len(toolsOf(path)) {
			t.Errorf("%s: %d tools, want %d", path, len(tools), len(toolsOf(path)))
		}
		for _, name := range toolsOf(path) {
			tl, found := tools[name]
			if !found {
				t.Errorf("%s: tool %s missing", path, name)
				continue
			}
			if len(tl.Description) < 40 {
				t.Errorf("%s %s: description %q is too thin for an AI to act on", path, name, tl.Description)
			}
			if tl.OutputSchema.Type != "object" {
				t.Errorf("%s %s: no output schema", path, name)
			}
			for prop, schema := range tl.InputSchema.Properties {
				if d, _ := schema.(map[string]any)["description"].(string); d == "" {
					t.Errorf("%s %s: argument %s has no description", path, name, prop)
				}
			}
			hasID := slices.Contains(tl.InputSchema.Required, "instance_id")
			if (path == rtrPath) != hasID {
				t.Errorf("%s %s: instance_id required = %v", path, name, hasID)
			}
		}
	}
	// ranges and defaults are in the schema
	tools := listTools(t, owner(t, env.url+mcpPath))
	imp := tools["crow_store_memory"].InputSchema.Properties["importance"].(map[string]any)
	if imp["minimum"] != 1.0 || imp["maximum"] != 10.0 || imp["default"] != 5.0 || imp["type"] != "integer" {
		t.Errorf("importance schema = %v", imp)
	}
	if !slices.Equal(tools["crow_store_memory"].InputSchema.Required, []string{"content"}) {
		t.Errorf("store required = %v", tools["crow_store_memory"].InputSchema.Required)
	}
	order := tools["crow_list_memories"].InputSchema.Properties["order"].(map[string]any)
	if !slices.Equal(order["enum"].([]any), []any{"newest", "oldest"}) {
		t.Errorf("order enum = %v", order["enum"])
	}
	if _, found := tools["crow_search_memories"].InputSchema.Properties["instances"]; !found {
		t.Error("search has no instances argument")
	}
}

// schemaChecker validates structured results against the tools' output schemas.
type schemaChecker map[string]*jsonschema.Schema

func newSchemaChecker(t *testing.T, c *client.Client) schemaChecker {
	t.Helper()
	out := schemaChecker{}
	for name, tl := range listTools(t, c) {
		b, err := json.Marshal(tl.OutputSchema)
		if err != nil {
			t.Fatal(err)
		}
		doc, err := jsonschema.UnmarshalJSON(strings.NewReader(string(b)))
		if err != nil {
			t.Fatal(err)
		}
		comp := jsonschema.NewCompiler()
		if err := comp.AddResource(name+".json", doc); err != nil {
			t.Fatal(err)
		}
		sch, err := comp.Compile(name + ".json")
		if err != nil {
			t.Fatalf("%s: output schema does not compile: %v", name, err)
		}
		out[name] = sch
	}
	return out
}

func (sc schemaChecker) check(t *testing.T, tool string, v map[string]any) {
	t.Helper()
	// round-trip so numbers are what the validator expects
	b, _ := json.Marshal(v)
	inst, err := jsonschema.UnmarshalJSON(strings.NewReader(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	if err := sc[tool].Validate(inst); err != nil {
		t.Errorf("%s: result does not match its output schema: %v\n%s", tool, err, b)
	}
}

// restGet GETs path with the owner key and decodes the JSON answer.
func restGet(t *testing.T, url string) map[string]any {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Authorization", "Bearer "+testKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %v", url, resp.StatusCode, m)
	}
	return m
}

func TestMCPMemoryLifecycle(t *testing.T) {
	env := newGatewayEnv(t)
	c := owner(t, env.url+mcpPath)
	sc := newSchemaChecker(t, c)

	stored := ok(t, c, "crow_store_memory", map[string]any{
		"content": "The staging database moved to Frankfurt in March", "project": "infra",
		"category": "decision", "importance": 8, "tags": []string{"db", "staging", "db"},
	})
	sc.check(t, "crow_store_memory", stored)
	id, _ := stored["id"].(string)
	if id == "" || stored["source"] != "mcp" || stored["importance"] != 8.0 || stored["origin"] != selfID {
		t.Fatalf("stored = %v", stored)
	}
	if tags := stored["tags"].([]any); len(tags) != 2 {
		t.Errorf("tags not de-duplicated: %v", tags)
	}
	// the same object, field for field, as REST returns
	if rest := restGet(t, env.url+"/v1/memory/"+id); !jsonEqual(rest, stored) {
		t.Errorf("MCP result %v differs from REST %v", stored, rest)
	}
	other := ok(t, c, "crow_store_memory", map[string]any{"content": "Lunch is at noon"})
	if other["project"] != "default" || other["category"] != "general" || other["importance"] != 5.0 {
		t.Errorf("defaults not applied: %v", other)
	}

	found := ok(t, c, "crow_search_memories", map[string]any{"query": "Frankfurt database"})
	sc.check(t, "crow_search_memories", found)
	results := found["results"].([]any)
	if len(results) != 1 || results[0].(map[string]any)["id"] != id || results[0].(map[string]any)["score"].(float64) <= 0 {
		t.Fatalf("search = %v", found)
	}
	rest := restGet(t, env.url+"/v1/memories/search?q=Frankfurt+database")
	if !jsonEqual(rest, found) {
		t.Errorf("MCP search %v differs from REST %v", found, rest)
	}
	filtered := ok(t, c, "crow_search_memories", map[string]any{
		"query": "Frankfurt", "instances": "local", "project": "other", "min_importance": 2, "limit": 5,
	})
	if n := len(filtered["results"].([]any)); n != 0 {
		t.Errorf("project filter ignored: %d results", n)
	}
	ok(t, c, "crow_search_memories", map[string]any{"query": "Frankfurt", "instances": selfID})

	got := ok(t, c, "crow_get_memory", map[string]any{"id": id})
	sc.check(t, "crow_get_memory", got)
	if !jsonEqual(got, stored) {
		t.Errorf("get = %v, want %v", got, stored)
	}

	upd := ok(t, c, "crow_update_memory", map[string]any{"id": id, "importance": 9, "tags": []string{"db"}})
	sc.check(t, "crow_update_memory", upd)
	if upd["importance"] != 9.0 || upd["content"] != stored["content"] || len(upd["tags"].([]any)) != 1 {
		t.Errorf("update = %v", upd)
	}

	page := ok(t, c, "crow_list_memories", map[string]any{"limit": 1})
	sc.check(t, "crow_list_memories", page)
	mems := page["memories"].([]any)
	if len(mems) != 1 || mems[0].(map[string]any)["id"] != other["id"] || page["next_cursor"] == "" {
		t.Fatalf("newest-first page = %v", page)
	}
	next := ok(t, c, "crow_list_memories", map[string]any{"limit": 1, "cursor": page["next_cursor"]})
	if m := next["memories"].([]any); len(m) != 1 || m[0].(map[string]any)["id"] != id {
		t.Errorf("second page = %v", next)
	}
	oldest := ok(t, c, "crow_list_memories", map[string]any{"order": "oldest", "project": "infra", "tags": []string{"db"}})
	if m := oldest["memories"].([]any); len(m) != 1 || m[0].(map[string]any)["id"] != id {
		t.Errorf("filtered oldest-first = %v", oldest)
	}
	if rest := restGet(t, env.url+"/v1/memories/list?limit=1"); !jsonEqual(rest, page) {
		t.Errorf("MCP list %v differs from REST %v", page, rest)
	}

	del := ok(t, c, "crow_delete_memory", map[string]any{"id": id})
	sc.check(t, "crow_delete_memory", del)
	if del["id"] != id || del["deleted"] != true {
		t.Errorf("delete = %v", del)
	}
	toolErr(t, c, "crow_get_memory", map[string]any{"id": id}, "no memory with id", id)
	toolErr(t, c, "crow_delete_memory", map[string]any{"id": id}, "no memory with id")
	if n := len(ok(t, c, "crow_search_memories", map[string]any{"query": "Frankfurt"})["results"].([]any)); n != 0 {
		t.Errorf("deleted memory still found")
	}
}

func jsonEqual(a, b any) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}

func TestMCPToolErrors(t *testing.T) {
	env := newGatewayEnv(t)
	c := owner(t, env.url+mcpPath)
	id := ok(t, c, "crow_store_memory", map[string]any{"content": "x"})["id"]

	toolErr(t, c, "crow_store_memory", map[string]any{"content": "x", "importance": 11}, "importance", "from 1 to 10", "11")
	toolErr(t, c, "crow_store_memory", map[string]any{"importance": 3}, "content", "required")
	toolErr(t, c, "crow_store_memory", map[string]any{"content": "   "}, "content")
	toolErr(t, c, "crow_store_memory", map[string]any{"content": "x", "importance": "high"}, `"importance"`, "whole number")
	toolErr(t, c, "crow_store_memory", map[string]any{"content": "x", "source": "api"}, "unknown argument", "source")
	toolErr(t, c, "crow_store_memory", map[string]any{"content": "x", "tags": []string{" padded"}}, "tags[0]")
	toolErr(t, c, "crow_get_memory", map[string]any{"id": "01NOPE"}, "no memory with id", "01NOPE")
	toolErr(t, c, "crow_get_memory", map[string]any{}, "id is required")
	toolErr(t, c, "crow_update_memory", map[string]any{"id": "01NOPE", "content": "y"}, "no memory with id")
	toolErr(t, c, "crow_update_memory", map[string]any{"id": id}, "nothing to change", "content")
	toolErr(t, c, "crow_update_memory", map[string]any{"id": id, "importance": 0}, "importance")
	toolErr(t, c, "crow_search_memories", map[string]any{"query": " "}, "query is required")
	toolErr(t, c, "crow_search_memories", map[string]any{"query": "x", "instances": "all"}, "federation is not available on this gateway")
	toolErr(t, c, "crow_search_memories", map[string]any{"query": "x", "instances": selfID + ",sat-9"}, "federation")
	toolErr(t, c, "crow_search_memories", map[string]any{"query": "x", "min_importance": 0}, "min_importance", "1 to 10")
	toolErr(t, c, "crow_list_memories", map[string]any{"limit": 5000}, "limit", "1000")
	toolErr(t, c, "crow_list_memories", map[string]any{"order": "random"}, "order")
	toolErr(t, c, "crow_revoke_instance", map[string]any{"id": "nobody"}, "not found", "crow_list_instances")
	toolErr(t, c, "crow_revoke_instance", map[string]any{"id": selfID}, "refusing to revoke this instance itself")
	toolErr(t, c, "crow_register_instance", map[string]any{"gateway_url": "ftp://x"}, "invalid gateway URL")
	toolErr(t, c, "crow_sync_status", map[string]any{"verbose": true}, "unknown argument")

	// an unknown tool is a protocol error, as MCP says
	req := mcp.CallToolRequest{}
	req.Params.Name = "crow_nope"
	if _, err := c.CallTool(context.Background(), req); err == nil {
		t.Error("unknown tool: no error")
	}
}

func TestMCPInstancesAndSyncStatus(t *testing.T) {
	env := newGatewayEnv(t)
	c := owner(t, env.url+mcpPath)
	sc := newSchemaChecker(t, c)

	list := ok(t, c, "crow_list_instances", nil)
	sc.check(t, "crow_list_instances", list)
	if list["self"] != selfID || len(list["instances"].([]any)) != 1 {
		t.Fatalf("instances = %v", list)
	}

	// a satellite of the same identity registers; it cannot register us back
	// (its stub gateway has no announce endpoint), which is a warning
	hs := registrytest.NewHealthServer(testSeed(), peerID, "laptop", registry.RoleSatellite, "/ip4/127.0.0.1/tcp/4001")
	peer := httptest.NewServer(hs)
	defer peer.Close()
	reg := ok(t, c, "crow_register_instance", map[string]any{"gateway_url": peer.URL})
	sc.check(t, "crow_register_instance", reg)
	if reg["id"] != peerID || reg["status"] != "online" || reg["warning"] == nil {
		t.Errorf("register = %v", reg)
	}
	if n := len(ok(t, c, "crow_list_instances", nil)["instances"].([]any)); n != 2 {
		t.Errorf("%d instances after register", n)
	}
	// an instance of another identity is refused
	foreign := httptest.NewServer(registrytest.NewHealthServer(identity.Seed{9}, "intruder", "x", registry.RoleSatellite))
	defer foreign.Close()
	toolErr(t, c, "crow_register_instance", map[string]any{"gateway_url": foreign.URL}, "another identity")

	rev := ok(t, c, "crow_revoke_instance", map[string]any{"id": peerID})
	sc.check(t, "crow_revoke_instance", rev)
	if rev["status"] != "revoked" || rev["revoked_at"] == "" {
		t.Errorf("revoke = %v", rev)
	}
	toolErr(t, c, "crow_register_instance", map[string]any{"gateway_url": peer.URL}, "revoked")

	st := ok(t, c, "crow_sync_status", map[string]any{})
	sc.check(t, "crow_sync_status", st)
	if st["instance_id"] != selfID || st["paused"] == true || len(st["feeds"].([]any)) != 0 || len(st["peers"].([]any)) != 0 {
		t.Errorf("sync status without a sync node = %v", st)
	}
	if rest := restGet(t, env.url+"/v1/sync/status"); !jsonEqual(rest, st) {
		t.Errorf("MCP sync status %v differs from REST %v", st, rest)
	}
}

func TestMCPRouter(t *testing.T) {
	env := newGatewayEnv(t)
	c := owner(t, env.url+rtrPath)

	stored := ok(t, c, "crow_store_memory", map[string]any{"instance_id": selfID, "content": "routed here"})
	got := ok(t, c, "crow_get_memory", map[string]any{"instance_id": selfID, "id": stored["id"]})
	if !jsonEqual(got, stored) {
		t.Errorf("get through router = %v", got)
	}
	found := ok(t, c, "crow_search_memories", map[string]any{"instance_id": selfID, "query": "routed"})
	if len(found["results"].([]any)) != 1 {
		t.Errorf("search through router = %v", found)
	}
	if l := ok(t, c, "crow_list_instances", map[string]any{"instance_id": selfID}); l["self"] != selfID {
		t.Errorf("list instances through router = %v", l)
	}
	// errors of the local tool pass through
	toolErr(t, c, "crow_store_memory", map[string]any{"instance_id": selfID, "content": "x", "importance": 11}, "importance")
	toolErr(t, c, "crow_search_memories", map[string]any{"instance_id": selfID, "query": "x", "instances": "all"}, "instance_id alone")

	// a registered peer: not routable until federation
	hs := registrytest.NewHealthServer(testSeed(), peerID, "laptop", registry.RoleSatellite)
	peer := httptest.NewServer(hs)
	defer peer.Close()
	ok(t, owner(t, env.url+mcpPath), "crow_register_instance", map[string]any{"gateway_url": peer.URL})
	for _, tool := range toolsOf(rtrPath) {
		toolErr(t, c, tool, map[string]any{"instance_id": peerID, "query": "x"}, "has no federation client", peerID)
	}
	toolErr(t, c, "crow_get_memory", map[string]any{"instance_id": "ghost", "id": "x"}, "no instance \"ghost\" is registered")
	toolErr(t, c, "crow_get_memory", map[string]any{"id": "x"}, "instance_id is required")
	toolErr(t, c, "crow_get_memory", map[string]any{"instance_id": 7, "id": "x"}, "instance_id is required")
	ok(t, owner(t, env.url+mcpPath), "crow_revoke_instance", map[string]any{"id": peerID})
	toolErr(t, c, "crow_sync_status", map[string]any{"instance_id": peerID}, "revoked")
}

// rawPost posts an MCP initialize to path with the given headers and returns
// the status and body.
func rawPost(t *testing.T, url string, headers map[string]string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(initBody))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range headers {
		if k == "Host" {
			req.Host = v
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestMCPAuth(t *testing.T) {
	env := newGatewayEnv(t)
	for _, path := range []string{mcpPath, rtrPath} {
		url := env.url + path
		if _, err := dial(t, url, nil); err == nil {
			t.Errorf("%s: client without a key connected", path)
		}
		if _, err := dial(t, url, map[string]string{"Authorization": "Bearer wrong"}); err == nil {
			t.Errorf("%s: client with a wrong key connected", path)
		}
		c, err := dial(t, url, map[string]string{"x-api-key": testKey})
		if err != nil {
			t.Errorf("%s: x-api-key refused: %v", path, err)
		} else if len(listTools(t, c)) != len(toolsOf(path)) {
			t.Errorf("%s: tools missing over x-api-key", path)
		}
		for _, h := range []map[string]string{nil, {"Authorization": "Bearer wrong"}, {"x-api-key": "wrong"}, {"Authorization": "Basic " + testKey}} {
			if code, body := rawPost(t, url, h); code != http.StatusUnauthorized || !strings.Contains(body, `"error"`) {
				t.Errorf("%s with %v: %d %s, want 401", path, h, code, body)
			}
		}
		for _, m := range []string{http.MethodGet, http.MethodDelete} {
			req, _ := http.NewRequest(m, url, nil)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized {
				t.Errorf("%s %s without key: %d", m, path, resp.StatusCode)
			}
		}
	}
}

func TestMCPBrowserGuard(t *testing.T) {
	env := newGatewayEnv(t)
	self := strings.TrimPrefix(env.url, "http://")
	auth := "Bearer " + testKey
	cases := []struct {
		name    string
		headers map[string]string
		want    int
	}{
		{"CLI client, no Origin", map[string]string{}, http.StatusOK},
		{"same-origin loopback page", map[string]string{"Origin": env.url}, http.StatusOK},
		{"localhost host", map[string]string{"Host": "localhost:" + strings.Split(self, ":")[1]}, http.StatusOK},
		{"configured gateway host", map[string]string{"Host": "100.64.0.1:3001"}, http.StatusOK},
		{"other IP host", map[string]string{"Host": "100.64.0.2:3001"}, http.StatusForbidden},
		{"foreign Origin", map[string]string{"Origin": "https://evil.example"}, http.StatusForbidden},
		{"other local origin", map[string]string{"Origin": "http://localhost:9999"}, http.StatusForbidden},
		{"null Origin", map[string]string{"Origin": "null"}, http.StatusForbidden},
		{"rebound Host", map[string]string{"Host": "evil.example:" + strings.Split(self, ":")[1]}, http.StatusForbidden},
		{"cross-site fetch", map[string]string{"Sec-Fetch-Site": "cross-site"}, http.StatusForbidden},
		{"foreign Origin without key", map[string]string{"Origin": "https://evil.example", "Authorization": ""}, http.StatusForbidden},
	}
	for _, path := range []string{mcpPath, rtrPath} {
		for _, tc := range cases {
			h := map[string]string{"Authorization": auth}
			for k, v := range tc.headers {
				h[k] = v
			}
			if h["Authorization"] == "" {
				delete(h, "Authorization")
			}
			if code, body := rawPost(t, env.url+path, h); code != tc.want {
				t.Errorf("%s %s: %d %s, want %d", path, tc.name, code, body, tc.want)
			}
		}
	}
}

func TestMCPBodyLimit(t *testing.T) {
	env := newGatewayEnv(t)
	big := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"crow_store_memory","arguments":{"content":"` +
		strings.Repeat("x", gateway.MaxMCPBodyBytes) + `"}}}`
	req, _ := http.NewRequest(http.MethodPost, env.url+mcpPath, strings.NewReader(big))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+testKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(b), `"error":`) {
		t.Errorf("oversized body: %d %s", resp.StatusCode, b)
	}
	if n := len(ok(t, owner(t, env.url+mcpPath), "crow_list_memories", nil)["memories"].([]any)); n != 0 {
		t.Errorf("oversized call stored %d memories", n)
	}
}
