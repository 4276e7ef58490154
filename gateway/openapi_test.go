package gateway_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/crow-sync/crow/app"
	"github.com/crow-sync/crow/conflicts"
	"github.com/crow-sync/crow/gateway"
	"github.com/crow-sync/crow/memory"
	"github.com/crow-sync/crow/records"
	"github.com/crow-sync/crow/search"
	"github.com/crow-sync/crow/store/storetest"
	crowsync "github.com/crow-sync/crow/sync"
)

// fakeFeeds reports fixed heads.
type fakeFeeds []crowsync.Head

func (f fakeFeeds) Heads() ([]crowsync.Head, error) { return f, nil }

// fullEnv is a gateway over every part a test can build without a network:
// store, writer, search, memories, registry, conflicts, fixed feeds.
type fullEnv struct {
	url string
	reg *prometheus.Registry
}

func newFullEnv(t *testing.T) *fullEnv {
	t.Helper()
	senv := storetest.Start(t, t.TempDir())
	ix, err := search.Open(filepath.Join(t.TempDir(), "index"), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- search.NewIndexer(senv.DB, ix).Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-done
		ix.Close()
	})
	seed := testSeed()
	metrics := prometheus.NewRegistry()
	var paused bool
	var feedKey crowsync.FeedKey
	copy(feedKey[:], seed.InstanceKey(selfID).Public().(ed25519.PublicKey))
	self := testSelf()
	self.SyncAddrs = nil
	url := serveGateway(t, app.Deps{
		Self:       self,
		Sign:       func(c []byte) []byte { return c },
		Memories:   memory.NewService(senv.DB, senv.Writer, ix, memory.Options{}),
		Records:    records.NewService(senv.DB, senv.Writer, ix, records.Options{}),
		Instances:  newRegistry(t),
		DB:         senv.DB,
		Writer:     senv.Writer,
		Conflicts:  conflicts.NewStore(senv.DB, time.Now),
		SyncFeeds:  fakeFeeds{{Feed: feedKey, Length: 42}},
		SyncPause:  func(id string, p bool) error { paused = p; return nil },
		SyncPaused: func() (bool, []string) { return paused, nil },
	}, gateway.Config{Metrics: metrics})
	return &fullEnv{url: url, reg: metrics}
}

// call sends a request with the owner key and returns the status and body.
func (e *fullEnv) call(t *testing.T, method, path string, body any) (int, []byte) {
	t.Helper()
	var r io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		r = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, e.url+path, r)
	req.Header.Set("Authorization", "Bearer "+testKey)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// openAPIChecker validates answers against the response schemas of the
// gateway's own OpenAPI document.
type openAPIChecker struct {
	comp *jsonschema.Compiler
}

func newOpenAPIChecker(t *testing.T, url string) *openAPIChecker {
	t.Helper()
	resp, err := http.Get(url + gateway.OpenAPIPath) // public: no key
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s = %d", gateway.OpenAPIPath, resp.StatusCode)
	}
	doc, err := jsonschema.UnmarshalJSON(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	comp := jsonschema.NewCompiler()
	comp.DefaultDraft(jsonschema.Draft2020)
	if err := comp.AddResource("openapi.json", doc); err != nil {
		t.Fatal(err)
	}
	return &openAPIChecker{comp: comp}
}

func pointerEscape(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// check validates body against the schema documented for method path status.
func (c *openAPIChecker) check(t *testing.T, method, path string, status int, body []byte) {
	t.Helper()
	ptr := "openapi.json#/paths/" + pointerEscape(path) + "/" + strings.ToLower(method) + "/responses/" +
		strconv.Itoa(status) + "/content/application~1json/schema"
	sch, err := c.comp.Compile(ptr)
	if err != nil {
		t.Fatalf("%s %s %d: no usable schema in the document: %v", method, path, status, err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("%s %s: answer is not JSON: %s", method, path, body)
	}
	if err := sch.Validate(inst); err != nil {
		t.Errorf("%s %s %d: the answer does not match the documented schema: %v\n%s", method, path, status, err, body)
	}
}

// TestRESTAnswersMatchTheOpenAPIDocument drives the REST surface and checks
// each answer against the schema the document gives for it.
func TestRESTAnswersMatchTheOpenAPIDocument(t *testing.T) {
	env := newFullEnv(t)
	oc := newOpenAPIChecker(t, env.url)
	do := func(method, path, docPath string, body any, want int) []byte {
		t.Helper()
		st, b := env.call(t, method, path, body)
		if st != want {
			t.Fatalf("%s %s = %d, want %d: %s", method, path, st, want, b)
		}
		oc.check(t, method, docPath, st, b)
		return b
	}
	var m struct{ ID string }
	json.Unmarshal(do("POST", "/v1/memory", "/v1/memory", map[string]any{
		"content": "The gateway documents itself", "project": "crow", "importance": 6, "tags": []string{"api"},
	}, 201), &m)
	do("POST", "/v1/memory", "/v1/memory", map[string]any{"content": "No tags, no importance"}, 201)
	do("GET", "/v1/memory/"+m.ID, "/v1/memory/{id}", nil, 200)
	do("PATCH", "/v1/memory/"+m.ID, "/v1/memory/{id}", map[string]any{"importance": 7}, 200)
	do("GET", "/v1/memories/list?limit=1", "/v1/memories/list", nil, 200)
	do("GET", "/v1/memories/list?project=crow&tags=api&min_importance=5", "/v1/memories/list", nil, 200)
	do("GET", "/v1/memories/search?q=documents", "/v1/memories/search", nil, 200)
	do("GET", "/v1/instances", "/v1/instances", nil, 200)
	do("GET", "/v1/sync/status", "/v1/sync/status", nil, 200)
	do("POST", "/v1/sync/pause", "/v1/sync/pause", nil, 200)
	do("POST", "/v1/sync/resume", "/v1/sync/resume", nil, 200)
	do("GET", "/v1/sync/conflicts?unresolved=true", "/v1/sync/conflicts", nil, 200)
	do("GET", "/v1/sync/conflicts?limit=5", "/v1/sync/conflicts", nil, 200)
	do("GET", "/v1/notifications", "/v1/notifications", nil, 200)
	do("GET", "/v1/notifications?limit=5", "/v1/notifications", nil, 200)
	if st, b := env.call(t, "GET", "/v1/notifications?cursor=garbage", nil); st != 400 || !strings.Contains(string(b), "cursor") {
		t.Errorf("a bad cursor = %d %s", st, b)
	}
	for _, id := range []string{"n1", "n2", "n3"} {
		do("PUT", "/v1/tables/notes/rows/"+id, "/v1/tables/{table}/rows/{row_id}", map[string]any{"title": id}, 200)
	}
	do("GET", "/v1/tables/notes/rows/n1", "/v1/tables/{table}/rows/{row_id}", nil, 200)
	do("DELETE", "/v1/tables/notes/rows/n2", "/v1/tables/{table}/rows/{row_id}", nil, 200)
	do("DELETE", "/v1/memory/"+m.ID, "/v1/memory/{id}", nil, 200)
	resp, err := http.Get(env.url + "/health?challenge=" + strings.Repeat("ab", 16))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	oc.check(t, "GET", "/health", 200, b)

	// Rows page by cursor; tombstones only when asked.
	var page struct {
		Rows []struct {
			RowID   string `json:"row_id"`
			Deleted bool   `json:"deleted"`
		} `json:"rows"`
		NextCursor string `json:"next_cursor"`
	}
	rowIDs := func(path string) (ids []string, next string) {
		t.Helper()
		page.Rows, page.NextCursor = nil, ""
		json.Unmarshal(do("GET", path, "/v1/tables/{table}/rows", nil, 200), &page)
		for _, r := range page.Rows {
			ids = append(ids, r.RowID)
		}
		return ids, page.NextCursor
	}
	if ids, next := rowIDs("/v1/tables/notes/rows?limit=1"); strings.Join(ids, ",") != "n1" || next != "n1" {
		t.Errorf("first page = %v next %q", ids, next)
	}
	if ids, next := rowIDs("/v1/tables/notes/rows?limit=1&cursor=n1"); strings.Join(ids, ",") != "n3" || next != "" {
		t.Errorf("second page = %v next %q", ids, next)
	}
	if ids, _ := rowIDs("/v1/tables/notes/rows?deleted=true&order=desc"); strings.Join(ids, ",") != "n3,n2,n1" {
		t.Errorf("with tombstones, descending = %v", ids)
	}
	if st, b := env.call(t, "GET", "/v1/tables/nope/rows", nil); st != 404 || !strings.Contains(string(b), "unknown table") {
		t.Errorf("unknown table = %d %s", st, b)
	}
}

// TestMetricsFamilies scrapes /metrics of a gateway with a writer, conflicts
// and feeds and checks the families those feed.
func TestMetricsFamilies(t *testing.T) {
	env := newFullEnv(t)
	for i := range 3 {
		if st, b := env.call(t, "POST", "/v1/memory", map[string]any{"content": "metric " + strconv.Itoa(i)}); st != 201 {
			t.Fatalf("write: %d %s", st, b)
		}
	}
	c := owner(t, env.url+mcpPath)
	ok(t, c, "crow_list_memories", map[string]any{})

	st, body := env.call(t, "GET", "/metrics", nil)
	if st != 200 {
		t.Fatalf("GET /metrics = %d", st)
	}
	text := string(body)
	for _, want := range []string{
		"crow_store_writes_total 3",
		"crow_store_write_commits_total ",
		`crow_feed_length{feed="`,
		`instance="home"} 42`,
		"crow_sync_conflicts_unresolved 0",
		`crow_mcp_tool_call_duration_seconds_count{endpoint="mcp",outcome="ok",tool="crow_list_memories"} 1`,
		`crow_mcp_tool_call_duration_seconds_count{endpoint="router",outcome="ok",tool="crow_store_memory"} 0`,
		`crow_http_request_duration_seconds_count{route="POST /v1/memory"} 3`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	// A failing tool call is counted as an error.
	toolErr(t, c, "crow_get_memory", map[string]any{"id": "01NOPE"}, "no memory")
	_, body = env.call(t, "GET", "/metrics", nil)
	if want := `crow_mcp_tool_call_duration_seconds_count{endpoint="mcp",outcome="error",tool="crow_get_memory"} 1`; !strings.Contains(string(body), want) {
		t.Errorf("/metrics lacks %q after a failing call", want)
	}
}
